"""Where one exporter's memory goes, phase by phase, as vsphere_shards.py runs it.

  python3 bench/vsphere_memory.py [--hosts 500] [--luns 8] [--vms 0] [--trace] [--top 25]

One storage simulator; one exporter in this process, run as vsphere_shards.py's worker runs it:
a cold start as `serve` starts (to the first complete /metrics, then the end of the walk), then
a fresh target walked and following, its collections, every host's esxcli, and the render.
For each phase: the resident set at its end and its peak during it (Linux: VmHWM, reset
between phases through /proc/self/clear_refs), so the phase that holds the process's peak is
named. With --trace, the same under tracemalloc (slower), with each phase's traced peak and, at
the render, the allocation sites that hold the most (tracemalloc's snapshot taken as the first
family is written: what the render holds on top of the state then is its own).
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import re
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # runnable as a script or with -m
from vsphere_common import StorageSim, Timer, following, password_file, render, series_count, status_mib, target  # noqa: E402

from exporter.collectors import textformat  # noqa: E402

MIB = 1024 * 1024


class _Mallinfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")
    ]


def allocators() -> tuple[float, float, float, float]:
    """pymalloc's arenas and the bytes in its allocated blocks; glibc malloc's heaps (every
    thread's arena, and the chunks it mmapped) and the bytes in use there; all in MiB."""
    with tempfile.TemporaryFile() as out:
        saved = os.dup(2)
        os.dup2(out.fileno(), 2)
        try:
            sys._debugmallocstats()  # writes to the C stderr
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        text = out.read().decode()

    def figure(label: str) -> float:
        # Under tracemalloc (--trace) pymalloc's own figures are not printed: NaN, not a crash.
        found = re.search(label + r"\s+=\s+([\d,]+)", text)
        return int(found.group(1).replace(",", "")) if found else float("nan")

    info = ctypes.CDLL("libc.so.6").mallinfo2
    info.restype = _Mallinfo2
    m = info()
    pymalloc = figure("# arenas allocated current") * 1024 * 1024  # 1 MiB arenas (64-bit, 3.10+)
    return pymalloc / MIB, figure("# bytes in allocated blocks") / MIB, (m.arena + m.hblkhd) / MIB, (m.uordblks + m.hblkhd) / MIB


class Phases:
    """Peak RSS (and traced memory) per phase of this process."""

    def __init__(self, trace: bool):
        self.trace = trace
        self.rows: list[tuple] = []

    def reset(self) -> None:
        Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
        if self.trace:
            tracemalloc.reset_peak()

    def done(self, name: str) -> None:
        traced, traced_peak = tracemalloc.get_traced_memory() if self.trace else (0, 0)
        self.rows.append((name, status_mib("VmRSS"), status_mib("VmHWM"), *allocators(), traced / MIB, traced_peak / MIB))
        self.reset()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], epilog=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hosts", type=int, default=500)
    parser.add_argument("--luns", type=int, default=8)
    parser.add_argument("--vms", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--trace", action="store_true", help="tracemalloc: traced peaks and the render's allocation sites")
    parser.add_argument("--top", type=int, default=25, help="allocation sites shown (--trace)")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-vsphere-memory-"))
    with Timer() as boot:
        sim = StorageSim(tmp, "-hosts", str(args.hosts), "-luns", str(args.luns), "-vms", str(args.vms), fixture=None)
    secret = password_file(tmp)
    phases = Phases(args.trace)
    snapshots = []
    if args.trace:
        tracemalloc.start(1)
        real = textformat.render

        def spied(families, **kwargs):
            def first_then_rest():
                it = iter(families)
                for family in it:
                    if not snapshots:
                        snapshots.append(tracemalloc.take_snapshot())
                    yield family

            return real(first_then_rest(), **kwargs)

        textformat.render = spied
        import exporter.serving.exposition as exposition

        exposition.render = spied
    try:
        phases.reset()
        gc.collect()
        phases.done("start (imports, simulator up)")
        t, stop = target(sim, secret), threading.Event()
        threads = t.start(stop)
        while t.topology is None or sum(1 for h in t.store.hosts.values() if h.samples) < len(t.topology.hosts):
            time.sleep(0.005)
        render(t)
        phases.done("cold start: to the first complete /metrics")
        while not t.walks:
            time.sleep(0.005)
        phases.done("cold start: to the end of the walk")
        stop.set()
        for thread in threads:
            thread.join(120)
        del threads, t
        gc.collect()
        phases.done("cold start's target dropped")
        t, stop = target(sim, secret), threading.Event()
        following(t, stop)
        phases.done("walked, following")
        for _ in range(args.rounds):
            t.last_timestamp.clear()
            assert t.collect(), t.error
        phases.done(f"{args.rounds} collections")
        t._read_esxcli(t.topology.hosts)
        phases.done("every host's esxcli")
        snapshots.clear()
        before = tracemalloc.take_snapshot() if args.trace else None
        body = render(t)
        phases.done("render")
        series = series_count(body)
        del body
        gc.collect()
        phases.done("body dropped")
        state = tracemalloc.take_snapshot() if args.trace else None
        stop.set()
    finally:
        sim.stop()
    print(
        f"# {args.hosts} hosts x {args.luns} LUNs, {args.vms} VMs a host (simulator built in {boot.wall:.0f} s), {series:,} series"
    )
    print(
        "| phase | RSS at its end MiB | peak RSS in it MiB | pymalloc arenas MiB | of which in use | malloc heaps MiB "
        "| of which in use |" + (" traced at its end MiB | traced peak MiB |" if args.trace else "")
    )
    print("|---|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if args.trace else ""))
    for name, rss, hwm, arenas, in_arenas, heaps, in_heaps, traced, peak in phases.rows:
        print(
            f"| {name} | {rss:.0f} | {hwm:.0f} | {arenas:.0f} | {in_arenas:.0f} | {heaps:.0f} | {in_heaps:.0f} |"
            + (f" {traced:.0f} | {peak:.0f} |" if args.trace else "")
        )
    if args.trace:
        _top("held once the body is dropped (the state)", state.statistics("lineno"), args.top)
        if snapshots:
            _top("the render's own, as its first family is written", snapshots[0].compare_to(before, "lineno"), args.top)
    return 0


def _top(title: str, stats, n: int) -> None:
    print(f"\n{title}:")
    for stat in stats[:n]:
        size = getattr(stat, "size_diff", stat.size)
        count = getattr(stat, "count_diff", stat.count)
        frame = stat.traceback[0]
        print(f"  {size / MIB:8.1f} MiB {count:>10,} blocks  {frame.filename.split('/exporter/')[-1]}:{frame.lineno}")


if __name__ == "__main__":
    sys.exit(main())
