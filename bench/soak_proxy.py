"""The soak's vCenter front: a local HTTPS proxy (simulators/hostile_vsphere.py's) in front of
the storage simulator, with a certificate of its own that outlives the simulator's restarts (a
vCenter keeps its certificate across a restart of vpxd).

- while the simulator is down, every request is answered 503 Service Unavailable, as vCenter's
  reverse proxy answers while vpxd restarts;
- `stall()` holds every answer until `release()`, then lets them go (a vCenter busy with a backup
  or a rescan: the answers come, late);
- it counts the requests and the bytes both ways (`take_counts`).
"""

from __future__ import annotations

import threading
from pathlib import Path

from simulators.hostile_vsphere import HostileProxy

UNAVAILABLE = b"<html><body>503 Service Unavailable</body></html>"


class SoakProxy(HostileProxy):
    def __init__(self, upstream_url: str, folder: Path):
        folder.mkdir(parents=True, exist_ok=True)
        super().__init__(upstream_url, folder)
        self.cert = folder / "proxy.crt"
        self.released = threading.Event()
        self.released.set()
        self.count_lock = threading.Lock()
        self.requests = 0
        self.bytes = 0

    def stall(self) -> None:
        self.released.clear()

    def release(self) -> None:
        self.released.set()

    def _is_slow(self, path: str, body: bytes) -> bool:
        self.released.wait()  # held here while stalled
        return False

    def _forward(self, method: str, path: str, body: bytes, headers):
        try:
            status, payload, kept = super()._forward(method, path, body, headers)
        except OSError:  # the simulator is down (refused, or closed mid-answer)
            status, payload, kept = 503, UNAVAILABLE, [("Content-Type", "text/html")]
        with self.count_lock:
            self.requests += 1
            self.bytes += len(body) + len(payload)
        return status, payload, kept

    def take_counts(self) -> tuple[int, int]:
        """Requests and bytes since the last call."""
        with self.count_lock:
            counts = self.requests, self.bytes
            self.requests = self.bytes = 0
        return counts
