"""When a render ahead keeps out of a source's round of writes (exporter.store.rounds: a vSphere collection,
seconds at 2,500 hosts, storing host after host). A render and a round share one interpreter: at
vCenter's maximum a render of seconds begun in the middle of a collection made it take three
times its own work (docs/scale.md). So a render ahead:

- waits for the rounds under way when it saw the change, to render each round once, whole;
- waits, when a round is due (Rounds.due: the next collection) before it would end (the last
  render's time ahead), for that round to begin and end;
- pauses once, between two collectors, for the rounds begun since it began and under way then;

each for ROUND_WAIT at most. Rounds begun later than the change are never waited for: where rounds
follow each other (three targets collecting every second) that starved the render.
"""

from __future__ import annotations

import time

ROUND_WAIT = 30.0  # seconds a change waits for rounds at most, and a render pauses for them
ROUND_POLL = 0.02  # seconds between two looks at a round a render pauses for
DUE_GRACE = 1.0  # seconds past a round's due time a render held back for it waits for it to begin


class RoundGate:
    """One exposition's render ahead and the store's rounds (see the module's docstring)."""

    def __init__(self, rounds):
        self.rounds = rounds  # exporter.store.rounds.Rounds
        self.held_since: float | None = None  # when this change was first held back for rounds
        self.waiting: frozenset[int] = frozenset()  # rounds it waits for the end of
        self.held: tuple[float, int] | None = None  # (due, rounds begun then): held back for a round due
        self.paused = 0.0  # seconds the current render paused for rounds

    def changed(self) -> None:
        """A change to render was seen: the rounds under way now are waited for."""
        self.waiting, self.held, self.held_since = self.rounds.under_way(), None, None

    def hold(self, now: float, render_seconds: float) -> bool:
        """True while the render ahead should wait (render_seconds: what the last render took)."""
        self.waiting &= self.rounds.under_way()
        # Counted from the first hold, not from the change: a render resting after the one before
        # (REST) must not reach its time limit before the round it waits for has ended.
        self.held_since = now if self.held_since is None else self.held_since
        if now - self.held_since >= ROUND_WAIT:
            return False
        if self.held is not None:
            begun = self.rounds.under_way(since=self.held[1])
            if begun:
                self.waiting, self.held = self.waiting | begun, None  # the round due began: wait for its end
            elif now < self.held[0] + DUE_GRACE:
                return True
            else:
                self.held = None  # it did not come
        if self.waiting:
            return True
        due = self.rounds.next_due(now)
        if due is not None and due < now + render_seconds:
            self.held = (due, self.rounds.begun)  # rendered now, it would run beside that round
            return True
        return False

    def pause(self):
        """For one render: a pause for between two collectors that, the first time rounds begun
        since the render began are under way, waits for those to end, ROUND_WAIT at most; once
        only, so rounds that follow each other stretch a render by one round, not by one round a
        collector (that missed a CI run's 5 s). Its wait is `paused`."""
        since: int | None = self.rounds.begun  # None once paused
        self.paused = 0.0

        def pause() -> None:
            nonlocal since
            if since is None:
                return  # paused once already
            waiting = self.rounds.under_way(since)
            if not waiting:
                return
            since, start = None, time.monotonic()
            while waiting and time.monotonic() - start < ROUND_WAIT:
                time.sleep(ROUND_POLL)
                waiting &= self.rounds.under_way()
            self.paused = time.monotonic() - start

        return pause
