"""Faults counted, and logged once per cause: the one helper every source reports its faults through.

A source that polls (a vSphere call every 20 s, a vSAN round every 5 min, esxcli every hour, an
event page, a log line) meets the same fault again on every round. Each is counted every time (the
source's errors counter), but logged only when its cause is new: the key (what failed, e.g.
(host, call)) starts failing, or fails with another message; and once more, at INFO, when it
answers again. A key that left (a host removed) is forgotten with its counts.

Keys are any hashable value; a source keeps one FaultLog per counter it publishes and reads
`counts` (key -> failures so far) when it builds its health record.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable


class FaultLog:
    """Thread-safe: sources call it from their worker pools."""

    def __init__(self, logger: logging.Logger):
        self.log = logger
        self.lock = threading.Lock()
        self.counts: dict[Hashable, int] = {}  # key -> failures so far (0 once it answered: a first failure is an increase)
        self.failing: dict[Hashable, str] = {}  # key -> its last message, while it fails

    def failed(
        self,
        key: Hashable,
        message: str,
        line: str | None = None,
        *,
        n: int = 1,
        level: int = logging.WARNING,
        quiet: bool = False,
    ) -> bool:
        """Count n failures of key; log `line` (default: message) when the cause is new: key was
        not failing, or failed with another message. True when it was new (logged, unless quiet:
        the caller writes one line for several keys)."""
        with self.lock:
            self.counts[key] = self.counts.get(key, 0) + n
            new = self.failing.get(key) != message
            self.failing[key] = message
        if new and not quiet:
            self.log.log(level, "%s", message if line is None else line)
        return new

    def answered(self, key: Hashable, line: str | None = None) -> bool:
        """key answered: counted from 0 from now on; `line` logged at INFO if it was failing
        (True then). A key that never failed logs nothing."""
        with self.lock:
            self.counts.setdefault(key, 0)
            recovered = self.failing.pop(key, None) is not None
        if recovered and line:
            self.log.info("%s", line)
        return recovered

    def recovered(
        self, match: Callable[[Hashable], bool], line: Callable[[Hashable], str | None] | None = None
    ) -> list[Hashable]:
        """Every failing key that matches answered (a round that asked them all and did not see
        them fail); line(key) logged at INFO for each, unless it is None. The keys, sorted."""
        with self.lock:
            keys = sorted((k for k in self.failing if match(k)), key=repr)
            for k in keys:
                del self.failing[k]
        for k in keys:
            text = None if line is None else line(k)
            if text is not None:
                self.log.info("%s", text)
        return keys

    def is_failing(self, key: Hashable) -> bool:
        with self.lock:
            return key in self.failing

    def snapshot(self, match: Callable[[Hashable], bool] | None = None) -> dict[Hashable, int]:
        """The counts of the keys that match (all by default), as a new dict."""
        with self.lock:
            return {k: v for k, v in self.counts.items() if match is None or match(k)}

    def forget(self, match: Callable[[Hashable], bool]) -> bool:
        """Keys that left (their host or cluster went): their counts and causes go. True if any did."""
        with self.lock:
            gone = [k for k in set(self.counts) | set(self.failing) if match(k)]
            for k in gone:
                self.counts.pop(k, None)
                self.failing.pop(k, None)
        return bool(gone)
