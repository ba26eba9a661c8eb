"""This checkout against another (an earlier commit) on the hot paths, alternating in one run:
per-sample parse and render (bench_core.py) and vSphere collection (vsphere_scale.py).

    git worktree add /tmp/base <commit>
    python3 bench/side_by_side.py --base /tmp/base [--rounds 3] [--hosts 200]

Prints each figure's median over the rounds for both checkouts and their ratio (this / base;
below 1 is faster). The machine is shared and noisy: compare the ratios, not the absolute times.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(checkout: Path, *args: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    return subprocess.run(
        [sys.executable, *args], cwd=checkout, env=env, check=True, capture_output=True, text=True, timeout=1800
    ).stdout


def core(checkout: Path) -> dict[str, float]:
    report = json.loads(run(checkout, "bench/bench_core.py", "--quick", "--json"))
    out = {f"parse ms/row, {r['columns']:,} columns": r["ours_ms"] for r in report["reader"]}
    # Keyed by size class: a change may add a few self-metric series to the same store.
    out.update({f"render ms, ~{round(r['series'], -3):,} series": r["render_ms"] for r in report["scrape"]})
    return out


def vsphere(checkout: Path, hosts: int) -> dict[str, float]:
    text = run(checkout, "bench/vsphere_scale.py", "--hosts", str(hosts), "--rounds", "3")
    found = re.search(r"\| collection \(median of \d+\) \| ([\d.]+) \|", text)
    render = re.search(r"\| render exposition \| ([\d.]+) \|", text)
    if not found or not render:
        raise SystemExit(f"vsphere_scale.py printed no figures in {checkout}:\n{text}")
    return {
        f"vSphere collection s, {hosts} hosts": float(found.group(1)),
        f"vSphere render s, {hosts} hosts": float(render.group(1)),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", type=Path, required=True, help="the other checkout (git worktree add DIR COMMIT)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--hosts", type=int, default=200, help="vSphere simulator hosts (0: skip)")
    args = parser.parse_args()
    results: dict[str, dict[str, list[float]]] = {"this": {}, "base": {}}
    for _ in range(args.rounds):
        for name, checkout in (("base", args.base.resolve()), ("this", ROOT)):  # alternate: drift hits both
            figures = core(checkout)
            if args.hosts:
                figures.update(vsphere(checkout, args.hosts))
            for key, value in figures.items():
                results[name].setdefault(key, []).append(value)
    print(f"| medians of {args.rounds} alternating rounds | base | this | this / base |")
    print("|---|---:|---:|---:|")
    for key in results["this"]:
        base, this = statistics.median(results["base"][key]), statistics.median(results["this"][key])
        print(f"| {key} | {base:.3g} | {this:.3g} | {this / base:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
