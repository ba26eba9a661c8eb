"""Where one VM collection's time goes: the target following its inventory as `serve` runs it,
one collection of every host and VM profiled (cProfile), phase by phase.

  python3 bench/vsphere_profile.py [--hosts 64] [--luns 8] [--vms 16] [--rounds 3]

The QueryPerf calls run one after another here (in serve they run up to max-parallel-queries at
once, in threads a profiler of one thread would not see), so all the collection's work is in the
profiled thread; the simulator's own time shows as waiting on the socket. Medians over --rounds
profiled collections, after as many unprofiled ones (wall and CPU of this process).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # runnable as a script or with -m
from vsphere_common import StorageSim, Timer, following, median, password_file, target  # noqa: E402

from exporter.vsphere import perf  # noqa: E402

# (phase, (file suffix, function), cumulative: True / own time: False)
PHASES = [
    ("QueryPerf requests written", ("vsphere/soap.py", "query_perf_request"), True),
    ("waiting for the server's answers (socket)", ("~", "<method 'read' of '_ssl._SSLSocket' objects>"), False),
    ("answers scanned (CSV series)", ("vsphere/soap.py", "scan_response"), True),
    ("series merged per entity (numbers, sample times)", ("vsphere/perf.py", "merge_csv"), True),
    ("samples built: routes, units, VMs joined to their host", ("vsphere/source.py", "_ingest_host"), True),
    ("  of which the VMs' totals over their disks", ("vsphere/mapping.py", "vm_totals"), True),
    ("  of which the store: counters integrated", ("store/store.py", "ingest"), True),
    ("the whole collection", ("vsphere/source.py", "collect"), True),
]


class _OneAtATime:
    """perf.query's thread pool, run in the calling thread."""

    def __init__(self, max_workers=1):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def map(self, fn, items):
        return map(fn, items)


def phase_times(stats: pstats.Stats) -> dict[str, float]:
    found = {}
    for (filename, _, function), (_, _, own, cumulative, _) in stats.stats.items():
        for phase, (suffix, name), whole in PHASES:
            if function == name and (suffix == "~" or filename.endswith(suffix)):
                found[phase] = found.get(phase, 0.0) + (cumulative if whole else own)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=64)
    parser.add_argument("--luns", type=int, default=8)
    parser.add_argument("--vms", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--top", type=int, default=0, help="also print the N functions of most own time (the last round)")
    args = parser.parse_args()
    perf.ThreadPoolExecutor = _OneAtATime
    tmp = Path(tempfile.mkdtemp(prefix="bench-vsphere-profile-"))
    sim = StorageSim(tmp, "-hosts", str(args.hosts), "-luns", str(args.luns), "-vms", str(args.vms), fixture=None)
    plain, profiled, phases = [], [], []
    try:
        t, stop = target(sim, password_file(tmp)), threading.Event()
        following(t, stop)
        counts = t.topology.counts()
        for _ in range(args.rounds):
            t.last_timestamp.clear()  # every host and VM answers with its newest sample, as every 20 s
            with Timer() as timer:
                assert t.collect(), t.error
            plain.append((timer.wall, timer.cpu))
        for _ in range(args.rounds):
            t.last_timestamp.clear()
            profile = cProfile.Profile()
            with Timer() as timer:
                profile.enable()
                assert t.collect(), t.error
                profile.disable()
            profiled.append(timer.wall)
            phases.append(phase_times(pstats.Stats(profile)))
            last = profile
        stop.set()
    finally:
        sim.stop()
    print(
        f"# One collection of {counts['host']} hosts and {counts['vm']} VMs ({counts['vdisk']} disks), following the inventory; "
        f"QueryPerf calls one at a time; medians of {args.rounds}"
    )
    print(f"without the profiler: {median([w for w, _ in plain]):.3f} s wall, {median([c for _, c in plain]):.3f} s CPU")
    whole = median([p["the whole collection"] for p in phases])
    print("| phase (under the profiler) | s | share |")
    print("|---|---:|---:|")
    top = 0.0
    for phase, _, _ in PHASES:
        seconds = median([p.get(phase, 0.0) for p in phases])
        if phase == "the whole collection":
            rest = whole - top
            print(f"| everything else: HTTP, query specs and chunking, threads, health | {rest:.3f} | {rest / whole:.0%} |")
        elif not phase.startswith(" "):
            top += seconds
        print(f"| {phase} | {seconds:.3f} | {seconds / whole:.0%} |")
    if args.top:
        pstats.Stats(last).sort_stats("tottime").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
