"""Shared by the vSphere benchmarks: the storage simulator, our collector timed in-process."""

from __future__ import annotations

import os
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from exporter.collectors import COLLECTORS  # noqa: E402
from exporter.serving.exposition import Exposition  # noqa: E402
from exporter.vsphere import TargetConfig, VsphereTarget  # noqa: E402
from tests.vcsim.sims import PASSWORD, USER, StorageSim  # noqa: E402


def password_file(tmp: Path) -> Path:
    path = tmp / "password"
    path.write_text(PASSWORD + "\n")
    os.chmod(path, 0o600)
    return path


def target(sim: StorageSim, secret: Path, **kw) -> VsphereTarget:
    kw.setdefault("ca_file", str(sim.cert))
    return VsphereTarget(TargetConfig(name="bench", url=sim.url, user=USER, password_file=str(secret), timeout=120.0, **kw))


class Timer:
    """Wall and CPU time (every thread of this process) of a block."""

    def __enter__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall, self.cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu


def series_count(body: bytes) -> int:
    return sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))


def render(t: VsphereTarget, skip: tuple[str, ...] = ()) -> bytes:
    """The exposition with every default collector but those in skip."""
    enabled = [name for name, (_, default) in COLLECTORS.items() if default and name not in skip]
    return Exposition(t.store, enabled=enabled).body()


def median(values):
    return statistics.median(values)


def cold_start(t: VsphereTarget, hosts: int) -> bytes:
    """A target started as `serve` starts it, until every host's first sample is in the store; then
    the exposition. The threads are stopped and joined after the clock, outside the measure."""
    stop = threading.Event()
    threads = t.start(stop)
    while sum(1 for h in t.store.hosts.values() if h.samples) < hosts:
        time.sleep(0.002)
    body = render(t)
    stop.set()
    for thread in threads:
        thread.join(60)
    return body
