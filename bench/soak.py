"""Memory soak: RSS across a long replay of a wide capture whose LUNs, paths and worlds come and go.

    python3 bench/soak.py              # 1,000 esxtop runs (10,000 rows), ~2-3 min
    python3 bench/soak.py --runs 200   # shorter

Each side runs in its own fresh process: the exporter's store with stale_after=60s (objects that
left esxtop are dropped a minute later) and, side by side, the counterfactual that never drops
them (stale_after=infinite). Every esxtop run (a new header) replaces 30 of 100 LUNs with their
paths and per-world rows; a scrape renders the exposition after each run. Printed: RSS, objects
held and exposition size at checkpoints, for both sides.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def side(runs: int, stale_after: float) -> list[dict]:
    from exporter.esxtop import EsxtopReader
    from exporter.esxtop.streams import pump
    from exporter.serving.exposition import Exposition
    from exporter.store.store import Store
    from simulators.esxtop_churn import rss_bytes, run_lines

    store = Store(stale_after=stale_after)
    exposition = Exposition(store)
    reader = EsxtopReader("soak")
    ts, marks, start = 1_700_000_000.0, [], time.monotonic()
    every = max(1, runs // 10)
    for run in range(runs):
        pump(run_lines(run, 10, ts), reader, store.ingest, store.count_parse_error)
        ts += 50.0
        body = exposition.body()
        if run % every == every - 1:
            gc.collect()
            objects = sum(len(f) for f in store.hosts["esx-churn"].objects.values())
            marks.append(
                {
                    "run": run + 1,
                    "rows": (run + 1) * 10,
                    "rss_mib": round(rss_bytes() / 2**20, 1),
                    "objects": objects,
                    "exposition_bytes": len(body),
                    "seconds": round(time.monotonic() - start, 1),
                }
            )
    return marks


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--counterfactual-runs", type=int, default=None, help="runs for the never-dropping side (default: same)")
    parser.add_argument("--side", choices=["stale", "never"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        print(json.dumps(side(args.runs, 60.0 if args.side == "stale" else float("inf"))))
        return 0
    results = {}
    for name, runs in (("stale", args.runs), ("never", args.counterfactual_runs or args.runs)):
        out = subprocess.run(
            [sys.executable, __file__, "--side", name, "--runs", str(runs)], check=True, capture_output=True, text=True
        ).stdout
        results[name] = json.loads(out)
    for name, title in (("stale", "stale_after=60s (the exporter)"), ("never", "never dropped (counterfactual)")):
        print(f"\n{title}")
        print("  run    rows   RSS MiB  objects  exposition bytes")
        for m in results[name]:
            print(f"  {m['run']:>4} {m['rows']:>7} {m['rss_mib']:>9} {m['objects']:>8} {m['exposition_bytes']:>17}")
    first, last = results["stale"][0], results["stale"][-1]
    print(f"\nexporter: RSS {first['rss_mib']} -> {last['rss_mib']} MiB from run {first['run']} to {last['run']}")
    first, last = results["never"][0], results["never"][-1]
    print(f"counterfactual: RSS {first['rss_mib']} -> {last['rss_mib']} MiB from run {first['run']} to {last['run']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
