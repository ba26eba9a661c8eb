"""Churn soak of the vSphere source (issue 45): `serve`, every setting its default, against the
storage simulator while a driver changes the inventory under it, restarts the simulator, expires
the exporter's session and stalls the simulator's answers; /metrics is scraped every 15 s and
checked, at every scrape, against the simulator's own inventory at that moment.

    python3 bench/soak_vsphere.py                       # 60 minutes, seed 45
    python3 bench/soak_vsphere.py --minutes 3 --seed 7  # what CI runs (tests/integration/test_soak_vsphere.py)

The exporter talks to the simulator through a local proxy (bench/soak_proxy.py) with a certificate
of its own that outlives the simulator's restarts (a vCenter keeps its certificate across one):
the proxy answers 503 while the simulator is down, holds every answer while it is stalled, and
counts the exporter's requests and bytes. The driver's own session goes to the simulator directly.

Printed per window (5 minutes; 1 minute for runs under 15): RSS, CPU seconds, series, scrape
time, vCenter requests and bytes, and the checks that failed. The checks: bench/soak_checks.py.
A crash of the simulator (the driver starts it again) is printed last, as the simulator's
failure, apart from the exporter's checks (its down time excuses the exporter as a restart does);
the run fails all the same.

Left in the run's directory for reading a failure afterwards: the exporter's and the simulator's
logs, actions.log (every change and disturbance, seconds from the start, the object it acted on),
and each failing scrape with the one before it (scrape-<s>s.prom, scrape-<s>s-before.prom).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.soak_checks import Checks, Inventory  # noqa: E402
from bench.soak_driver import Driver, Simulator  # noqa: E402
from bench.soak_proxy import SoakProxy  # noqa: E402
from bench.soak_ssh import SMART_INTERVAL, SshSide  # noqa: E402
from bench.vsphere_common import cpu_seconds, status_mib  # noqa: E402
from simulators.storagesim.sims import PASSWORD, USER  # noqa: E402
from tests.support.servers import Exporter  # noqa: E402

SCRAPE_EVERY = 15.0  # as Prometheus scrapes
# The garbage collector's full collections: a step down in RSS is told from one (the hour-long runs'
# RSS halved at ~57 min, memory given back, not grown).
FULL_GCS = re.compile(r'^python_gc_collections_total\{generation="2"\} (\S+)$', re.M)
# Full walks, every reason: a window's CPU is read beside its walks (a vCenter restart, an expiry
# and a stall each cost one), not only beside its series.
WALKS = re.compile(r"^esxi_vsphere_walks_total\{[^}]*\} (\S+)$", re.M)
VSAN_INTERVAL = 60.0  # --vsan: vSAN read every minute (accelerated: 300 s by default)
VSAN_FIXTURE = ROOT / "simulators" / "storagesim" / "vsan.json"


@dataclass
class Window:
    start: float
    rss_mib: float = 0.0
    rss_anon_mib: float = 0.0  # RssAnon and RssFile apart: is memory the exporter's own, or mapped files?
    rss_file_mib: float = 0.0
    full_gcs: float | None = None  # python_gc_collections_total{generation="2"} at the window's last scrape
    walks: float | None = None  # esxi_vsphere_walks_total, every reason, at the window's last scrape
    disturbances: dict[str, int] = field(default_factory=dict)  # restarts, expiries, stalls begun in the window
    load1: float = 0.0  # the machine's 1-minute load average at the window's end: how shared the cores were
    cpu_start: float = 0.0
    cpu_s: float = 0.0
    series: int = 0
    scrape_s: list[float] = field(default_factory=list)
    requests: int = 0
    bytes: int = 0
    failed: list[str] = field(default_factory=list)
    end_minute: float = 0.0


def run(
    tmp: Path,
    minutes: float = 60.0,
    seed: int = 45,
    every: float = 4.0,
    window: float | None = None,
    out=print,
    extra: tuple[str, ...] = (),
    vsan: bool = False,
    ssh: bool = False,
) -> dict:
    """The soak; returns its summary (windows, failures, events). `every`: seconds between two
    changes of the inventory. vsan: the vSAN fixture, its hosts in the churn, vSAN read every
    minute. ssh: an esxtop-over-SSH host beside the target, its session dropped now and then
    (bench/soak_ssh.py)."""
    tmp.mkdir(parents=True, exist_ok=True)
    duration = minutes * 60.0
    window = window or (300.0 if minutes >= 15 else 60.0)
    if vsan:  # vsan.json: two vSAN clusters (OSA and ESA) beside a plain host; vSAN read every minute
        sim = Simulator(tmp / "sim", "-vsan-sample-seconds", str(int(VSAN_INTERVAL)), fixture=VSAN_FIXTURE)
        extra = (*extra, f"--vsphere.vsan-interval={int(VSAN_INTERVAL)}s")
    else:
        sim = Simulator(tmp / "sim")
    proxy = SoakProxy(sim.url, tmp)
    secret = tmp / "password"
    secret.write_text(PASSWORD + "\n")
    secret.chmod(0o600)
    side = SshSide(tmp / "sshd", seed, duration) if ssh else None
    if side is not None:
        extra = (*extra, *side.args())
    log = tmp / "exporter.log"
    args = ["--vsphere", proxy.url, "--vsphere.user", USER, "--vsphere.password-file", str(secret)]
    exporter = Exporter(*args, "--vsphere.ca-file", str(proxy.cert), *extra, log_path=log)
    inventory = Inventory()
    driver = Driver(sim, proxy, inventory, seed=seed, every=every, duration=duration, vsan=vsan, journal=tmp / "actions.log")
    checks = Checks(inventory, log, driver.timeline, vsan_interval=VSAN_INTERVAL, ssh=side.host if side else None)
    windows: list[Window] = []
    # (seconds from the start, the exporter's CPU seconds so far) at every scrape: where in a window
    # its CPU went, beside actions.log and the exporter's log
    cpu_at: list[tuple[float, float]] = []
    stop = threading.Event()
    started = time.monotonic()
    try:
        driver.start(stop)
        if side is not None:
            side.start(stop)
        next_scrape = started
        previous = ""
        while time.monotonic() - started < duration:
            now = time.monotonic()
            if not windows or now - windows[-1].start >= window - 1.0:
                if windows:
                    close(windows[-1], exporter, proxy, out, started, window, driver.timeline)
                windows.append(Window(start=started + window * len(windows), cpu_start=cpu_seconds(exporter.proc.pid)))
                proxy.take_counts()
            time.sleep(max(0.0, next_scrape - time.monotonic()))
            next_scrape += SCRAPE_EVERY
            if exporter.proc.poll() is not None:
                windows[-1].failed.append(f"exporter exited with {exporter.proc.returncode}")
                break
            t0 = time.monotonic()
            try:
                body = exporter.metrics()
            except OSError as err:
                windows[-1].failed.append(f"{t0 - started:.0f}s scrape failed: {err}")
                continue
            took = time.monotonic() - t0
            w = windows[-1]
            w.scrape_s.append(took)
            cpu_at.append((round(t0 - started, 1), round(cpu_seconds(exporter.proc.pid), 2)))
            full = FULL_GCS.search(body)
            if full:
                w.full_gcs = float(full.group(1))
            walks = WALKS.findall(body)
            if walks:
                w.walks = sum(float(v) for v in walks)
            failed, series = checks.scrape(t0, body)
            w.series = series
            if failed:  # the failing scrape and the one before it, for reading the failure afterwards
                (tmp / f"scrape-{t0 - started:.0f}s.prom").write_text(body)
                (tmp / f"scrape-{t0 - started:.0f}s-before.prom").write_text(previous)
            previous = body
            w.failed += [f"{t0 - started:.0f}s {f}" for f in failed]
        close(windows[-1], exporter, proxy, out, started, window, driver.timeline)
    finally:
        stop.set()
        driver.join()
        if side is not None:
            side.join()
            side.close()
        exporter.stop()
        proxy.stop()
        sim.stop()
    failures = [f for w in windows for f in w.failed] + driver.errors + (side.errors if side else [])
    crashes = driver.crashes  # the simulator's own failures: not the exporter's checks, not hidden
    events = driver.counts()
    if side is not None:
        events["done"].update(side.done)
    summary = {
        "seed": seed,
        "vsan": vsan,
        "ssh": ssh,
        "minutes": minutes,
        "every": every,
        "events": events,
        "objects_judged": checks.judged,
        "scrapes_judged": checks.judged_scrapes,
        "vsan_hosts_judged": checks.vsan_members_judged,
        "ssh_scrapes_judged": checks.ssh_judged_scrapes,
        "windows": [
            {
                "minute": w.end_minute,
                "rss_mib": round(w.rss_mib, 1),
                "rss_anon_mib": round(w.rss_anon_mib, 1),
                "rss_file_mib": round(w.rss_file_mib, 1),
                "full_gcs": (w.full_gcs - before.full_gcs)
                if w.full_gcs is not None and before and before.full_gcs is not None
                else w.full_gcs,
                "cpu_s": round(w.cpu_s, 2),
                "walks": _delta(w.walks, before.walks if before else 0.0),
                "disturbances": w.disturbances,
                "load1": round(w.load1, 2),
                "series": w.series,
                "scrape_s_median": round(statistics.median(w.scrape_s), 3) if w.scrape_s else None,
                "scrape_s_max": round(max(w.scrape_s), 3) if w.scrape_s else None,
                "requests": w.requests,
                "bytes": w.bytes,
                "failed": len(w.failed),
            }
            for before, w in zip([None, *windows], windows)
        ],
        "failures": failures,
        "simulator_failures": crashes,
        "cpu_at_scrapes": cpu_at,
    }
    report(summary, out)
    return summary


def _delta(now: float | None, before: float | None) -> float | None:
    """A counter's growth over a window (None: not read in it; a restart of the exporter would
    show as a negative count, and none is made)."""
    if now is None:
        return None
    return now - (before or 0.0)


def report(summary: dict, out) -> None:
    """The summary's last lines: what changed, what was judged, the failed checks (the exporter's,
    the driver's), then the simulator's own failures apart (a crash: its down time excused the
    exporter, the crash is no less a failure of the run)."""
    if "windows" in summary:
        out(flatness(summary["windows"]))
    if summary.get("cpu_at_scrapes"):
        out(busiest(summary["cpu_at_scrapes"]))
    out(f"events: {json.dumps(summary['events'])}")
    out(
        f"objects judged present or absent: {summary['objects_judged']} at {summary['scrapes_judged']} scrapes; "
        f"failed checks: {len(summary['failures'])}"
    )
    if summary["vsan"] or summary["ssh"]:
        out(f"vSAN hosts judged: {summary['vsan_hosts_judged']}; scrapes judging the SSH host: {summary['ssh_scrapes_judged']}")
    for f in summary["failures"][:50]:
        out(f"  {f}")
    crashes = summary.get("simulator_failures") or []
    out(f"simulator failures (not the exporter's): {len(crashes)}")
    for f in crashes:
        out(f"  {f}")


def close(w: Window, exporter: Exporter, proxy: SoakProxy, out, started: float, window: float, timeline) -> None:
    """The window's figures, printed as one row of the table (minute: the window's end, when RSS
    and the load are read; CPU seconds, requests and bytes: over the window)."""
    w.end_minute = round(min(time.monotonic() - started, (w.start - started) + window) / 60, 1)
    w.load1 = os.getloadavg()[0]
    w.disturbances = timeline.begun_between(w.start, w.start + window)
    pid = exporter.proc.pid
    if exporter.proc.poll() is None:
        w.rss_mib = status_mib("VmRSS", pid)
        w.rss_anon_mib, w.rss_file_mib = status_mib("RssAnon", pid), status_mib("RssFile", pid)
        w.cpu_s = cpu_seconds(pid) - w.cpu_start
    w.requests, w.bytes = proxy.take_counts()
    if w.start == started:
        out("minute  RSS MiB  (anon)  CPU s  series  scrape s (median/max)  requests  MiB     full GCs  load  disturbed  failed")
    median = statistics.median(w.scrape_s) if w.scrape_s else float("nan")
    peak = max(w.scrape_s) if w.scrape_s else float("nan")
    out(
        f"{w.end_minute:>6.1f}  {w.rss_mib:>7.1f}  {w.rss_anon_mib:>6.1f}  {w.cpu_s:>5.1f}  {w.series:>6}  "
        f"{median:>8.3f} / {peak:<8.3f}      {w.requests:>8}  {w.bytes / 2**20:>6.1f}  {w.full_gcs if w.full_gcs is not None else '-':>8}  "
        f"{w.load1:>4.1f}  {_kinds(w.disturbances) or '-':>9}  {len(w.failed)}"
    )
    for f in w.failed[:10]:
        out(f"    {f}")


def busiest(cpu_at: list, span: float = 60.0, top: int = 5) -> str:
    """The `top` spans of `span` seconds (from one scrape to the first at least `span` later) in
    which the exporter used the most CPU, none overlapping: where a window's CPU went."""
    spans = []
    for i, (start, cpu) in enumerate(cpu_at):
        end = next((j for j in range(i + 1, len(cpu_at)) if cpu_at[j][0] - start >= span), None)
        if end is not None:
            spans.append((round(cpu_at[end][1] - cpu, 6), start, cpu_at[end][0]))
    chosen: list[tuple[float, float, float]] = []
    for used, start, end in sorted(spans, key=lambda s: (-s[0], s[1])):  # of equals, the earliest
        if len(chosen) == top:
            break
        if all(end <= s or start >= e for _, s, e in chosen):
            chosen.append((used, start, end))
    if not chosen:
        return "busiest: fewer than two scrapes a span apart"
    return "busiest: " + "; ".join(
        f"{start:.0f}-{end:.0f} s {used:.2f} s CPU" for used, start, end in sorted(chosen, key=lambda c: c[1])
    )


def _kinds(disturbances: dict[str, int]) -> str:
    """A window's disturbances, shortest: "restart, 2 stall"."""
    return ", ".join(f"{n} {kind}" if n > 1 else kind for kind, n in sorted(disturbances.items()))


def flatness(windows: list[dict]) -> str:
    """Issue 45's item 2 in one line: RSS at the end against minute 10, and each window's CPU
    against the median window's (the spread) and the first half's against the second's (a trend)."""
    if len(windows) < 2:
        return "flatness: fewer than two windows"
    at_10 = next((w for w in windows if w["minute"] >= 10), windows[0])
    end, cpu = windows[-1], [w["cpu_s"] for w in windows]
    median = statistics.median(cpu)
    half = len(cpu) // 2
    first, second = statistics.mean(cpu[:half]), statistics.mean(cpu[half:])

    def pct(value: float, base: float) -> str:
        return f"{(value / base - 1) * 100:+.0f} %" if base else "n/a"

    return (
        f"flatness: RSS minute {at_10['minute']:g} -> end: {at_10['rss_mib']} -> {end['rss_mib']} MiB ({pct(end['rss_mib'], at_10['rss_mib'])}); "
        f"CPU a window: median {median:.2f} s, {min(cpu):.2f}-{max(cpu):.2f} ({pct(min(cpu), median)} / {pct(max(cpu), median)}); "
        f"first half {first:.2f}, second half {second:.2f} s a window ({pct(second, first)})"
    )


def markdown(summary: dict) -> str:
    """The summary's windows as a Markdown table (docs/benchmarks.md)."""
    rows = [
        "| minute | RSS MiB | CPU s | series | scrape s median / max | vCenter requests | vCenter MiB | walks | disturbed | load | failed checks |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    for w in summary["windows"]:
        walks = w.get("walks")  # summaries written before walks, disturbances and load were kept
        rows.append(
            f"| {w['minute']} | {w['rss_mib']} | {w['cpu_s']} | {w['series']} | {w['scrape_s_median']} / {w['scrape_s_max']} "
            f"| {w['requests']} | {w['bytes'] / 2**20:.1f} | {'-' if walks is None else f'{walks:g}'} "
            f"| {_kinds(w.get('disturbances') or {}) or '-'} | {w.get('load1', '-')} | {w['failed']} |"
        )
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=45)
    parser.add_argument("--every", type=float, default=4.0, help="seconds between two changes of the inventory")
    parser.add_argument("--window", type=float, default=None, help="seconds per row of the table")
    parser.add_argument("--dir", type=Path, default=None, help="where the logs go (default: a new temporary directory)")
    parser.add_argument("--json", type=Path, default=None, help="write the summary here")
    parser.add_argument("--vsan", action="store_true", help="the vSAN fixture: its hosts come and go too, vSAN read every minute")
    parser.add_argument(
        "--ssh",
        action="store_true",
        help=f"an esxtop-over-SSH host beside the target (a real sshd on loopback, SMART every {SMART_INTERVAL:.0f} s), "
        "its session dropped at random",
    )
    parser.add_argument(
        "--table", type=Path, default=None, help="print the Markdown table of a summary written by --json, and stop"
    )
    args = parser.parse_args()
    if args.table:
        summary = json.loads(args.table.read_text())
        print(markdown(summary))
        print(f"\n{flatness(summary['windows'])}")
        if summary.get("cpu_at_scrapes"):
            print(busiest(summary["cpu_at_scrapes"]))
        return 0
    import tempfile

    tmp = args.dir or Path(tempfile.mkdtemp(prefix="soak-vsphere-"))
    print(f"logs in {tmp}; seed {args.seed}; {args.minutes} min; a change every {args.every} s", flush=True)
    summary = run(
        tmp, args.minutes, args.seed, args.every, args.window, out=lambda s: print(s, flush=True), vsan=args.vsan, ssh=args.ssh
    )
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1))
    return 1 if summary["failures"] or summary["simulator_failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
