"""A 1,000-host inventory (8 LUNs, 2 FC HBAs, 16 paths per host) collected inside one 20 s
real-time interval: discovery once, then collections of every host's newest sample.

  python3 bench/vsphere_scale.py [--hosts 1000] [--luns 8] [--rounds 3]

Last, a cold start as `serve` runs it: a fresh target's own threads from login to every host's
first sample in the store, rendered (esxcli goes on after it, as in serve).

The storage simulator takes about a minute to build the inventory before timing starts, and
runs on the same machine (its CPU is not counted in "CPU s", which is this process only).
Each round forgets the newest timestamps, so every host answers with a sample, as it does
every 20 s in steady state.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # runnable as a script or with -m
from vsphere_common import StorageSim, Timer, cold_start, median, password_file, render, series_count, target  # noqa: E402

BUDGET = 20.0  # seconds: the real-time sampling interval


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--luns", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-vsphere-scale-"))
    with Timer() as boot:
        sim = StorageSim(tmp, "-hosts", str(args.hosts), "-luns", str(args.luns), fixture=None)
    try:
        t = target(sim, password_file(tmp))
        with Timer() as discovery:
            assert t.discover(), t.error
        counts = t.topology.counts()
        collections = []
        for _ in range(args.rounds):
            t.last_timestamp.clear()
            with Timer() as timer:
                assert t.collect(), t.error
            collections.append((timer.wall, timer.cpu))
        with Timer() as rendering:
            body = render(t)
        t.client.close()
        # As `serve` starts: login, discovery and the first collection of every host, rendered.
        _, cold_wall, cold_cpu, _, _ = cold_start(target(sim, password_file(tmp)), counts["host"])
    finally:
        sim.stop()
    wall = median([w for w, _ in collections])
    print(
        f"# {counts['host']} hosts, {counts['lun']} LUNs, {counts['adapter']} adapters, {counts['path']} paths, "
        f"{counts['datastore']} datastores (simulator built in {boot.wall:.0f} s)"
    )
    print("| | wall s | CPU s |")
    print("|---|---:|---:|")
    print(f"| discovery, then esxcli (all of discover()) | {discovery.wall:.2f} | {discovery.cpu:.2f} |")
    print(
        f"| of which the API topology (out first), esxcli | {t.durations['discovery']:.2f}, {t.durations.get('esxcli', 0):.2f} | |"
    )
    print(f"| collection (median of {args.rounds}) | {wall:.2f} | {median([c for _, c in collections]):.2f} |")
    print(f"| render exposition | {rendering.wall:.2f} | {rendering.cpu:.2f} |")
    print(f"| cold start: from start to the first complete /metrics | {cold_wall:.2f} | {cold_cpu:.2f} |")
    print(
        f"collections: {', '.join(f'{w:.2f}' for w, _ in collections)} s; "
        f"{'inside' if wall < BUDGET else 'OVER'} the {BUDGET:.0f} s interval"
    )
    print(f"series: {series_count(body)}; peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    return 0 if wall < BUDGET else 1


if __name__ == "__main__":
    sys.exit(main())
