"""A host's /var/log/vobd.log followed over SSH (`tail -F`), through the same SSH target as its
esxtop stream, reconnected with backoff; its lines counted by exporter.events.vobd.

The follower runs `tail -n 0 -F` on the host (counting starts at the exporter's start; -F follows a
rotated file by name); after a dropped connection it asks again with the last RESUME_LINES lines,
of which the follower skips those it read (exporter.events.vobd.VobdFollower.replayed).
"""

from __future__ import annotations

import logging
import os
import selectors
import shlex
import threading

from exporter.events.vobd import VobdFollower
from exporter.ssh import process

log = logging.getLogger(__name__)

# Why a session never started that is the host's, not this follower's: the esxtop stream on the same
# SSH target says it (once per cause); here it is counted and logged at debug only, so that one
# host that is down is one line, not one per session.
TARGET_REASONS = frozenset({"refused", "unreachable", "host_key", "auth"})

RESUME_LINES = 1000
MAX_LINE = 64 * 1024  # a longer line is cut here (the rest is read and thrown away)


class VobdOverSsh:
    """`tail -F` of the host's vobd.log over the host's SSH target, reconnected with backoff."""

    def __init__(
        self,
        target,
        store,
        stop: threading.Event,
        host_name,
        ssh: str = "ssh",
        path: str = "/var/log/vobd.log",
        max_label: int = 128,
    ):
        self.target, self.stop, self.ssh, self.path = target, stop, ssh, path
        self.follower = VobdFollower(target.label, store, host_name, max_label)
        self.sessions = 0

    def command(self) -> str:
        # from the end at first (no replay); after a reconnection the last lines again, of which
        # those counted are skipped (before any line came there is nothing to resume from)
        lines = RESUME_LINES if self.follower.last is not None else 0
        return f"tail -n {lines} -F {shlex.quote(self.path)}"

    def run(self) -> None:
        backoff = process.Backoff(1.0, 60.0)
        follower = self.follower
        while not self.stop.is_set():
            try:
                proc = process.spawn(self.target, self.command(), self.ssh)
            except OSError as err:
                follower.faults.failed("session", f"vobd.log on {self.target.label}: cannot start ssh: {err}")
                follower.publish(False)
                self.stop.wait(backoff.next(False))
                continue
            self.sessions += 1
            delivered = self._read(proc)
            stderr = proc.stderr.read().decode("utf-8", "replace") if proc.poll() is not None else ""
            code = process.release(proc)
            if self.stop.is_set():
                break
            follower.flush()
            reason, why = process.classify(code, stderr, delivered, "tail")
            follower.faults.failed(
                "session",
                f"vobd.log on {self.target.label}: the session ended ({reason}: {why}); following it again",
                level=logging.DEBUG if reason in TARGET_REASONS else logging.WARNING,
            )
            follower.publish(False)
            self.stop.wait(backoff.next(delivered) * (0.8 if delivered else 1.0))

    def _read(self, proc) -> bool:
        """Lines until the session ends or the exporter stops; True if any came."""
        follower, buffer, delivered = self.follower, bytearray(), False
        follower.publish(True)
        with selectors.DefaultSelector() as selector:
            selector.register(proc.stdout, selectors.EVENT_READ)
            while not self.stop.is_set():
                if not selector.select(0.5):
                    follower.flush()
                    follower.publish(True)
                    continue
                data = os.read(proc.stdout.fileno(), 1 << 16)
                if not data:
                    return delivered
                if not delivered:
                    follower.faults.answered("session", f"vobd.log on {self.target.label}: followed again")
                delivered = True
                buffer += data
                *lines, rest = buffer.split(b"\n")
                for raw in lines:
                    follower.feed(raw[:MAX_LINE].decode("utf-8", "replace"))
                buffer = bytearray(rest[: MAX_LINE + 1])  # a line past the cap keeps only its start
                follower.publish(True)
        return delivered
