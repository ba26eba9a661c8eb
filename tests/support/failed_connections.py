"""1,000 failed vSphere connections in a fresh interpreter: RSS, threads and open files before and
after, and the ERROR lines each target logged.

Run alone (`python -m tests.support.failed_connections PASSWORD_FILE`, one JSON line out) so that
the RSS is this loop's own: in a pytest-xdist worker it also counts whatever the worker's earlier
tests left running (threads, servers, caches), which made a 2 MiB bound flaky under load.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import socket
import sys
import threading

from exporter.vsphere import TargetConfig, VsphereTarget
from simulators.esxtop_churn import rss_bytes
from tests.support.servers import free_port

USER = "user"  # vcsim's default login; nothing answers here, so it is never checked


class Listener:
    """A TCP port that accepts connections and then does nothing (hang) or hangs up at once."""

    def __init__(self, hang: bool):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.hang, self.held, self.stop = hang, [], threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        self.sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            if self.hang:
                self.held.append(conn)
            else:
                conn.close()

    def close(self):
        self.stop.set()
        for conn in self.held:
            conn.close()
        self.sock.close()


def target(url: str, password_file, timeout: float = 2.0, name: str = "vc") -> VsphereTarget:
    return VsphereTarget(
        TargetConfig(name=name, url=url, user=USER, password_file=str(password_file), timeout=timeout, insecure=True)
    )


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


class _ErrorLines(logging.Handler):
    def __init__(self):
        super().__init__(logging.ERROR)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def measure(password_file, warm_up: int = 50, rounds: int = 500) -> dict:
    """Two targets, one on a closed port and one that hangs up at once, each failing
    warm_up + rounds times; figures are taken after the warm-up and at the end."""
    errors = _ErrorLines()
    logging.getLogger().addHandler(errors)
    logging.getLogger().setLevel(logging.INFO)
    refused = target(f"https://127.0.0.1:{free_port()}/sdk", password_file, name="refused")
    hangs_up = Listener(hang=False)
    reset = target(f"https://127.0.0.1:{hangs_up.port}/sdk", password_file, name="reset")
    failed = 0
    try:
        for _ in range(warm_up):  # imports, caches, the first pyVmomi stubs
            refused.run_once()
            reset.run_once()
        gc.collect()
        before = {"rss": rss_bytes(), "threads": threading.active_count(), "fds": open_fds()}
        for _ in range(rounds):
            failed += not refused.run_once()
            failed += not reset.run_once()
        gc.collect()
        after = {"rss": rss_bytes(), "threads": threading.active_count(), "fds": open_fds()}
    finally:
        hangs_up.close()
    return {
        "failed": failed,
        "before": before,
        "after": after,
        "targets": {
            t.config.name: {"up": t.up, "discovery_errors": t.errors["discovery"], "error": t.error} for t in (refused, reset)
        },
        "error_lines": errors.lines,
    }


if __name__ == "__main__":
    print(json.dumps(measure(sys.argv[1])))
