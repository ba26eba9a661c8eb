"""When a host's failed refresh is tried again: the refreshes that run on a long interval (esxcli's
configuration, every hour through vSphere or every 5 minutes over SSH; SMART rounds, every hour)
try a host whose last refresh failed again after a minute, then after twice as long each time it
fails again, never later than the interval itself. Without this one timed-out answer from a host's
hostd left it `esxi_esxcli_up 0` (and its per-device settings unknown) for the whole interval.

One place for the rule: the vSphere target's esxcli thread, the SSH hosts' esxcli and SMART loops
and the SMART rounds through vSphere all use it.
"""

from __future__ import annotations

import threading
import time

FIRST_RETRY = 60.0  # seconds after the first failure; a host's hostd is usually back by then


class Retries:
    """Per host: when its failed refresh is due again. Thread-safe (a refresh pool reports into it)."""

    def __init__(self, interval: float, first: float | None = None, clock=time.monotonic):
        """interval: the refresh's own interval, the longest wait; first: the first retry's delay
        (default FIRST_RETRY)."""
        first = FIRST_RETRY if first is None else first
        self.interval, self.first, self.clock = interval, min(first, interval), clock
        self.lock = threading.Lock()
        self.waits: dict[str, float] = {}  # host -> the wait after its last failure
        self.due_at: dict[str, float] = {}  # host -> when it is tried again

    def failed(self, host: str) -> float:
        """The host's refresh failed: it is due again after the returned delay (s)."""
        with self.lock:
            wait = self.first if host not in self.waits else min(self.waits[host] * 2, self.interval)
            self.waits[host] = wait
            self.due_at[host] = self.clock() + wait
            return wait

    def succeeded(self, host: str) -> None:
        """The host answered: its next failure waits the first delay again."""
        self.forget(host)

    def forget(self, host: str) -> None:
        with self.lock:
            self.waits.pop(host, None)
            self.due_at.pop(host, None)

    def keep_only(self, hosts) -> None:
        """Hosts no longer read (they left the inventory) are no longer retried."""
        hosts = set(hosts)
        with self.lock:
            for host in set(self.waits) - hosts:
                del self.waits[host]
                self.due_at.pop(host, None)

    def due(self) -> set[str]:
        """The hosts whose retry time has come (each handed out once: a failure schedules it again)."""
        now = self.clock()
        with self.lock:
            ready = {host for host, at in self.due_at.items() if at <= now}
            for host in ready:
                del self.due_at[host]
            return ready

    def wait_until(self, deadline: float) -> float:
        """Seconds to wait: until `deadline` (the clock's time of the next full round) or the next
        retry, whichever comes first; never below 0."""
        retry = self.next_in()
        wait = deadline - self.clock()
        return max(0.0, wait if retry is None else min(wait, retry))

    def next_in(self) -> float | None:
        """Seconds until the next retry is due (0 if one is), None if none is scheduled."""
        with self.lock:
            if not self.due_at:
                return None
            return max(0.0, min(self.due_at.values()) - self.clock())
