"""This checkout against another (an earlier commit) on the hot paths, alternating in one run:
per-sample parse and render (bench_core.py) and vSphere collection (vsphere_scale.py).

    git worktree add /tmp/base <commit>
    python3 bench/side_by_side.py --base /tmp/base [--rounds 3] [--hosts 200]
    python3 bench/side_by_side.py --base /tmp/base --hosts 500 --vms 16 --rounds 7 --no-core

Prints each figure's median over the rounds for both checkouts and their ratio (this / base;
below 1 is faster). The machine is shared and noisy: compare the ratios, not the absolute times.

--vms N: the vSphere collection with N VMs a host, as `serve` collects (the inventory followed),
against one storage simulator: each checkout's code in a process of its own (vsphere_worker.py),
both walked first, then their collections alternating, each one's wall and CPU (that process's,
every thread); last, each renders its exposition, whose series (names and labels) must match.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "bench"


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


def vsphere_following(checkouts: dict[str, Path], hosts: int, vms: int, rounds: int) -> dict[str, dict[str, list[float]]]:
    """--vms: one simulator, a worker per checkout, collections alternating (see the docstring)."""
    sys.path.insert(0, str(HERE))
    from vcenter_max import series_digest
    from vsphere_common import StorageSim, password_file, series_count

    tmp = Path(tempfile.mkdtemp(prefix="bench-side-by-side-"))
    sim = StorageSim(tmp, "-hosts", str(hosts), "-luns", "8", "-vms", str(vms), fixture=None)
    workers: dict[str, subprocess.Popen] = {}

    def ask(name: str, line: str) -> dict:
        workers[name].stdin.write(line + "\n")
        workers[name].stdin.flush()
        answer = workers[name].stdout.readline()
        if not answer:
            raise SystemExit(f"the {name} worker ended: see {tmp}/{name}.log")
        return json.loads(answer)

    label = f"{hosts} hosts, {vms} VMs a host"
    results: dict[str, dict[str, list[float]]] = {name: {} for name in checkouts}
    try:
        secret = password_file(tmp)
        for name, checkout in checkouts.items():  # one walk at a time
            workers[name] = subprocess.Popen(
                [sys.executable, str(HERE / "vsphere_worker.py"), str(checkout), sim.url, str(sim.cert), str(secret)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=open(tmp / f"{name}.log", "wb"),
                text=True,
            )
            if not workers[name].stdout.readline():
                raise SystemExit(f"the {name} worker never followed: see {tmp}/{name}.log")
        ask(next(iter(checkouts)), "collect")  # warm-up, not counted: the first collection after a walk
        ask(list(checkouts)[-1], "collect")
        for _ in range(rounds):
            for name in checkouts:
                figures = ask(name, "collect")
                if not figures["ok"]:
                    raise SystemExit(f"{name}: collection failed: {figures['error']}")
                results[name].setdefault(f"collection wall s, {label}", []).append(figures["wall"])
                results[name].setdefault(f"collection CPU s, {label}", []).append(figures["cpu"])
        for name in checkouts:
            print(
                f"# {name}, CPU s of each collection: {', '.join(f'{c:.3f}' for c in results[name][f'collection CPU s, {label}'])}"
            )
        series = {}
        for name in checkouts:
            peak = ask(name, f"render {tmp / name}.prom")["peak_mib"]
            results[name][f"worker peak RSS MiB (walk, collections, render), {label}"] = [peak]
            body = (tmp / f"{name}.prom").read_bytes()
            series[name] = (series_count(body), series_digest(body))
        print(f"# series (count, digest of names and labels): {series}; load average {os.getloadavg()}")
        if len(set(series.values())) != 1:  # named, not hidden: a dropped-series reason one run met and the other not
            names = [{line.rpartition(b" ")[0] for line in (tmp / f"{n}.prom").read_bytes().splitlines()} for n in checkouts]
            print(f"# SERIES DIFFER: only in {list(checkouts)[0]}: {sorted(names[0] - names[1])[:5]}")
            print(f"#                only in {list(checkouts)[1]}: {sorted(names[1] - names[0])[:5]}")
        for name in checkouts:
            (tmp / f"{name}.prom").unlink()
    finally:
        for proc in workers.values():
            proc.stdin.close()
            proc.wait(60)
        sim.stop()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", type=Path, required=True, help="the other checkout (git worktree add DIR COMMIT)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--hosts", type=int, default=200, help="vSphere simulator hosts (0: skip)")
    parser.add_argument("--vms", type=int, default=None, help="VMs a host: the collection as serve runs it (see above)")
    parser.add_argument("--no-core", action="store_true", help="leave out bench_core.py's parse and render")
    args = parser.parse_args()
    checkouts = {"base": args.base.resolve(), "this": ROOT}
    results: dict[str, dict[str, list[float]]] = {"this": {}, "base": {}}
    for _ in range(0 if args.no_core and args.vms is not None else args.rounds):
        for name, checkout in checkouts.items():  # alternate: drift hits both
            figures = {} if args.no_core else core(checkout)
            if args.hosts and args.vms is None:
                figures.update(vsphere(checkout, args.hosts))
            for key, value in figures.items():
                results[name].setdefault(key, []).append(value)
    if args.hosts and args.vms is not None:
        for name, figures in vsphere_following(checkouts, args.hosts, args.vms, args.rounds).items():
            results[name].update(figures)
    print(f"| medians of {args.rounds} alternating rounds | base | this | this / base |")
    print("|---|---:|---:|---:|")
    for key in results["this"]:
        base, this = statistics.median(results["base"][key]), statistics.median(results["this"][key])
        print(f"| {key} | {base:.3g} | {this:.3g} | {this / base:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
