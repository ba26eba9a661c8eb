"""Sources' rounds of writes, such as a vSphere collection storing host after host for seconds at
2,500 hosts, and when each source's next round is due. A render ahead keeps out of their way
(exporter.serving.rounds), so a round's work does not share the interpreter with a render of
seconds. Its own lock, not the store's: a render holds that for seconds."""

from __future__ import annotations

import contextlib
import threading


class Rounds:
    def __init__(self):
        self._lock = threading.Lock()
        self._begun = 0  # rounds numbered as they begin
        self._open: set[int] = set()  # the numbers of rounds under way
        self._due: dict[str, float] = {}  # source -> monotonic time its next round is due

    @contextlib.contextmanager
    def round(self):
        """One round of writes, from its beginning to its end."""
        with self._lock:
            self._begun += 1
            number = self._begun
            self._open.add(number)
        try:
            yield
        finally:
            with self._lock:
                self._open.discard(number)

    @property
    def begun(self) -> int:
        """The number of the last round begun."""
        return self._begun

    def under_way(self, since: int = 0) -> frozenset[int]:
        """The numbers of the rounds under way, of those begun after round number `since`."""
        with self._lock:
            return frozenset(n for n in self._open if n > since)

    def due(self, source: str, at: float | None) -> None:
        """The monotonic time the source's next round begins (None: none planned)."""
        with self._lock:
            if at is None:
                self._due.pop(source, None)
            else:
                self._due[source] = at

    def next_due(self, now: float) -> float | None:
        """The soonest round due after `now`, if any."""
        with self._lock:
            return min((at for at in self._due.values() if at > now), default=None)
