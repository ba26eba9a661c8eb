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
from simulators.storagesim.sims import PASSWORD, USER, StorageSim  # noqa: E402


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


def status_mib(field: str, pid: int | str = "self") -> float:
    """A memory field of /proc/PID/status (VmRSS, VmHWM, RssAnon, RssFile), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024  # kB -> MiB
    raise KeyError(field)


def cpu_seconds(pid: int | str = "self") -> float:
    """User and system CPU of the process so far (/proc/PID/stat, fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class RssTimeline:
    """A process's VmRSS every 0.2 s, in a thread of its own, from its making until stop(): which
    phase of a run holds the peak. points: (seconds since `start`, MiB)."""

    def __init__(self, pid: int, start: float):
        self.pid, self.start, self.points = pid, start, []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._done.wait(0.2):
            try:
                self.points.append((time.monotonic() - self.start, status_mib("VmRSS", self.pid)))
            except (OSError, KeyError):  # the process is gone
                return

    def stop(self) -> None:
        self._done.set()
        self._thread.join(5)

    def write(self, path: Path) -> None:
        """One "seconds<TAB>MiB" line a reading."""
        path.write_text("".join(f"{t:.2f}\t{rss:.1f}\n" for t, rss in self.points))


def series_count(body: bytes) -> int:
    """Sample lines, counted without splitting the body: 1.8 million line objects at 2,500 hosts
    were 250 MiB of the benchmark's own in the exporter's peak."""
    lines = body.count(b"\n") + (0 if body.endswith(b"\n") else 1)
    comments = body.count(b"\n#") + body.startswith(b"#")
    return lines - comments - body.count(b"\n\n")


def render(t: VsphereTarget, skip: tuple[str, ...] = ()) -> bytes:
    """The exposition with every default collector but those in skip."""
    enabled = [name for name, (_, default) in COLLECTORS.items() if default and name not in skip]
    return Exposition(t.store, enabled=enabled).body()


def median(values):
    return statistics.median(values)


def cold_start(t: VsphereTarget, hosts: int) -> tuple[bytes, float, float, float, float]:
    """A target started as `serve` starts it, until every host's first sample is in the store; then
    the exposition: (body, wall s, CPU s of this process); then until its walk is over, paths,
    mounts and VMs included (wall s, CPU s from the start). The threads are stopped and joined
    after the clock, outside the measure."""
    stop = threading.Event()
    with Timer() as first:
        threads = t.start(stop)
        while sum(1 for h in t.store.hosts.values() if h.samples) < hosts:
            time.sleep(0.002)
        body = render(t)
    with Timer() as rest:
        while not t.walks:
            time.sleep(0.002)
    stop.set()
    for thread in threads:
        thread.join(60)
    return body, first.wall, first.cpu, first.wall + rest.wall, first.cpu + rest.cpu


def following(t: VsphereTarget, stop: threading.Event, timeout: float = 600.0) -> threading.Thread:
    """The target as `serve` runs it, less its collection loop (the benchmark collects itself):
    walked, then following vCenter's changes (its VM state is current, as in serve)."""
    t.running = True
    t.collected.set()  # no collection loop: the walk's later stages wait for none
    thread = threading.Thread(target=t._discovery_loop, args=(stop,), name="bench-discovery", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not t.walks or not t._following():
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError(f"never following: {t.error}")
        time.sleep(0.01)
    return thread
