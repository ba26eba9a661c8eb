"""What issue #43 as a whole (datastore space, VM snapshots, ESXi's storage events) costs `serve`
in CPU: the code before it and this checkout, side by side on one storage simulator.

  python3 bench/space_serve.py --base DIR [--hosts 64] [--vms 16] [--minutes 10] [--changes 2]
                               [--change-every 180] [--collections 10]

DIR is a checkout of the code before (git worktree add DIR REV, or git archive REV | tar -x -C DIR).
Both `python -m exporter serve` processes (every setting its default but the target's) run AT ONCE
against the one simulator, so the same load, the same simulator and the same changes hit both;
each is scraped with gzip every 15 s as Prometheus scrapes it. Once both have walked and read every
host's esxcli, and a minute more, their CPU (utime + stime of the process, every thread, from
/proc/PID/stat) is read every minute, for --minutes with nothing changing, then for --minutes
while --changes datastores' free space changes every --change-every seconds (POST
/storagesim/space; vCenter reports the change to the property collector). CPU per hour is the
median minute's times 60, and the whole window's.

Then, per code in turn (alternated), a child interpreter of that code walks the target, follows
it, and times --collections collections in process (vsphere_common.following, CPU of the process)
with nothing changing: the CPU of one collection.
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
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # runnable as a script or with -m
from serve_memory import scrape, serve, walked  # noqa: E402
from space_follow import change  # noqa: E402
from vsphere_common import (  # noqa: E402
    ROOT,
    cpu_seconds,
    password_file,
)

from simulators.storagesim.sims import PASSWORD, StorageSim  # noqa: E402

SCRAPE = 15.0

# Run by each code's own interpreter path: its bench/vsphere_common.py puts that code first.
CHILD = """
import json, sys, threading, time
from pathlib import Path
sys.path.insert(0, {bench!r})
from vsphere_common import Timer, following, target

class Sim:  # the parent's simulator, by its url and certificate
    url, cert = {url!r}, {cert!r}

t = target(Sim, Path({secret!r}), vms=True)
stop = threading.Event()
following(t, stop)
for _ in range(2):  # warm: the first collections set the counters' ids and sample times
    t.collect()
    time.sleep(1)
cpu = []
for _ in range({n}):
    time.sleep(1)
    with Timer() as one:
        assert t.collect(), t.error
    cpu.append(one.cpu)
print(json.dumps({{"cpu": cpu}}))
stop.set()
"""


def collection_cpu(code: Path, sim: StorageSim, secret: Path, n: int) -> list[float]:
    """CPU seconds of each of n collections of a following target, in a child of that code."""
    script = CHILD.format(bench=str(code / "bench"), url=sim.url, cert=str(sim.cert), secret=str(secret), n=n)
    done = subprocess.run([sys.executable, "-c", script], cwd=code, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1])["cpu"]


def datastores(body: bytes, n: int) -> list[str]:
    names = sorted(set(re.findall(rb'esxi_datastore_free_bytes\{datastore="([^"]+)"', body)))
    return [name.decode() for name in names[:n]]


class Window:
    """Per-minute CPU seconds of each process over a window."""

    def __init__(self, procs: dict):
        self.procs = procs
        self.minutes: dict[str, list[float]] = {name: [] for name in procs}
        self.total: dict[str, float] = {}

    def run(self, minutes: int, urls: dict, tick=None, every: float = 0.0) -> None:
        first = {name: cpu_seconds(p.pid) for name, p in self.procs.items()}
        last = dict(first)
        start = time.monotonic()
        next_minute, next_tick, next_scrape = start + 60, start + (every or 1e9), start
        while True:
            now = time.monotonic()
            if now >= next_scrape:
                for url in urls.values():
                    scrape(url)
                next_scrape += SCRAPE
            if tick and now >= next_tick:
                tick()
                next_tick += every
            if now >= next_minute:
                for name, p in self.procs.items():
                    if p.poll() is not None:
                        raise RuntimeError(f"{name}: serve exited {p.returncode}")
                    cpu = cpu_seconds(p.pid)
                    self.minutes[name].append(cpu - last[name])
                    last[name] = cpu
                next_minute += 60
                if len(self.minutes[next(iter(self.procs))]) == minutes:
                    break
            time.sleep(max(0.0, min(next_minute, next_scrape, next_tick) - time.monotonic()))
        self.total = {name: last[name] - first[name] for name in self.procs}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], epilog=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", type=Path, required=True, help="a checkout of the code before")
    parser.add_argument("--hosts", type=int, default=64)
    parser.add_argument("--vms", type=int, default=16)
    parser.add_argument("--minutes", type=int, default=10, help="minutes of each window (quiet, then changing)")
    parser.add_argument("--changes", type=int, default=2, help="datastores changed at each change")
    parser.add_argument("--change-every", type=float, default=180.0, help="seconds between two changes")
    parser.add_argument("--collections", type=int, default=10, help="collections timed in process per code")
    parser.add_argument("--rounds", type=int, default=2, help="in-process rounds per code, alternated")
    parser.add_argument(
        "--variant", action="append", default=[], metavar="ARG", help="a third serve: this checkout with this serve argument too"
    )
    parser.add_argument("--no-changes", action="store_true", help="the quiet window only")
    parser.add_argument("--no-collections", action="store_true", help="no in-process collections")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-space-serve-"))
    sim = StorageSim(tmp, "-hosts", str(args.hosts), "-vms", str(args.vms), fixture=None)
    secret = password_file(tmp)
    codes = {"before": args.base.resolve(), "this": ROOT}
    serves = {name: (code, ()) for name, code in codes.items()}
    serves.update({f"this {arg}": (ROOT, (arg,)) for arg in args.variant})
    procs, urls = {}, {}
    try:
        for name, (code, extra) in serves.items():
            procs[name], urls[name] = serve(code, sim, secret, tmp / f"{len(procs)}.log", extra)
        start = time.monotonic()
        pending = set(serves)
        while pending:  # both walked, every host's esxcli read
            for name in sorted(pending):
                try:
                    if walked(scrape(urls[name]), args.hosts):
                        pending.discard(name)
                        print(f"# {name}: walked and esxcli read in {time.monotonic() - start:.0f} s", flush=True)
                except OSError:
                    pass
                if procs[name].poll() is not None:
                    raise RuntimeError(f"{name}: serve exited {procs[name].returncode}: see {tmp}")
            if time.monotonic() - start > 1800:
                raise RuntimeError("not walked in 30 minutes")
            time.sleep(2)
        time.sleep(60)  # the walk's tail: the first collections after it
        names = datastores(scrape(urls["this"]), args.changes)
        loads = [round(os.getloadavg()[0], 1)]
        windows = {"quiet": Window(procs)}
        windows["quiet"].run(args.minutes, urls)
        loads.append(round(os.getloadavg()[0], 1))
        if not args.no_changes:
            step = iter(range(1, 1 << 30))

            def tick():
                i = next(step)
                for ds in names:
                    change(sim, ds, 10**11 - i * 10**9)

            windows["changing"] = Window(procs)
            windows["changing"].run(args.minutes, urls, tick, args.change_every)
            loads.append(round(os.getloadavg()[0], 1))
            for name in serves:  # did the change reach /metrics (the code before reads free space hourly)
                found = re.findall(
                    rb'esxi_datastore_free_bytes\{datastore="%s"[^}]*\} (\S+)' % names[0].encode(), scrape(urls[name])
                )
                print(f"# {name}: {names[0]} free bytes exposed at the end: {[v.decode() for v in found]}", flush=True)
    finally:
        for p in procs.values():
            p.terminate()
            p.wait(60)
    for log in tmp.glob("*.log"):
        if PASSWORD in log.read_text(errors="replace"):
            raise RuntimeError(f"the password is in {log}")
    per: dict[str, list[float]] = {name: [] for name in codes}
    try:
        for _ in range(0 if args.no_collections else args.rounds):
            for name, code in codes.items():
                per[name] += collection_cpu(code, sim, secret, args.collections)
    finally:
        sim.stop()
    loads.append(round(os.getloadavg()[0], 1))
    print(f"# {args.hosts} hosts x {args.vms} VMs; the serve processes at once, {args.minutes} min each window;")
    print(f"# changing: {len(names)} datastores ({', '.join(names)}) every {args.change_every:.0f} s; 1-min load {loads}")
    others = [name for name in serves if name != "before"]
    print("| figure | before | " + " | ".join(others) + " | " + " | ".join(f"{n} / before" for n in others) + " |")
    print("|---|" + "---:|" * (1 + 2 * len(others)))

    def row(label, figures: dict[str, float]):
        values = [f"{figures[n]:.1f}" for n in ("before", *others) if n in figures]
        ratios = [f"{figures[n] / figures['before']:.3f}" for n in others if n in figures]
        print(f"| {label} | " + " | ".join(values + ratios) + " |")

    for title, w in windows.items():
        row(f"{title}: CPU s an hour, median minute x 60", {n: statistics.median(w.minutes[n]) * 60 for n in serves})
        row(f"{title}: CPU s an hour, whole window", {n: w.total[n] * 3600 / (args.minutes * 60) for n in serves})
        print(f"# {title} minutes, CPU s: " + "; ".join(f"{n} {[round(m, 2) for m in w.minutes[n]]}" for n in serves))
    if per["this"]:
        row(
            f"one collection, nothing changing: CPU ms (median of {len(per['this'])})",
            {n: statistics.median(per[n]) * 1000 for n in codes},
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
