"""A one-line progress bar on stderr, drawn only when stderr is a terminal (quiet when piped)."""

from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, label: str, total: int, stream=None, enabled: bool | None = None):
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.label, self.total, self.done = label, max(total, 1), 0
        self._drawn = 0.0

    def advance(self, amount: int) -> None:
        self.done += amount
        now = time.monotonic()
        if self.enabled and now - self._drawn > 0.1:
            self._drawn = now
            share = min(self.done / self.total, 1.0)
            bar = "#" * int(share * 30)
            self.stream.write(f"\r{self.label} [{bar:<30}] {share:4.0%}")
            self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r" + " " * (len(self.label) + 40) + "\r")
            self.stream.flush()
