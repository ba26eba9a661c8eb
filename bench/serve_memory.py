"""One `serve` process's peak memory against one vCenter, as a user runs it: before and after,
side by side in one run.

  python3 bench/serve_memory.py [--base DIR ...] [--hosts 2500] [--luns 8] [--vms 0] [--repeat 3]
                                [--after 60] [--scrape 15] [--serve-arg ARG ...]

One storage simulator. `python -m exporter serve` of each code (each --base DIR, code before,
named by its directory; then this checkout) in turn, a fresh process each time, every setting its
default but the target's (and each --serve-arg). The process is scraped with gzip as Prometheus scrapes it, every
--scrape seconds, from its start until its inventory walk is over and every host's esxcli
settings are in /metrics, then for --after seconds more (collections every 20 s, more scrapes).
Its peak resident set is the kernel's (VmHWM in /proc/PID/status), read at the end with its CPU
time; its VmRSS every 0.2 s goes beside its log (NAME-RUN.rss.tsv) and the peak's moment is printed,
so the phase that holds it can be found in the log (--serve-arg=--log.level=debug). The CPU time
is the same work in the same time for every code; the series are counted from the last body. Medians of --repeat runs, the codes alternating.
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(HERE))  # runnable as a script or with -m

from vsphere_common import RssTimeline, cpu_seconds, series_count, status_mib  # noqa: E402

from simulators.storagesim.sims import PASSWORD, USER, StorageSim  # noqa: E402
from tests.support.servers import free_port  # noqa: E402


def scrape(url: str) -> bytes:
    request = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})
    with urllib.request.urlopen(request, timeout=120) as response:
        data = response.read()
        return gzip.decompress(data) if response.headers.get("Content-Encoding") == "gzip" else data


def serve(code: Path, sim: StorageSim, secret: Path, log: Path, extra: tuple[str, ...] = ()) -> tuple[subprocess.Popen, str]:
    """`python -m exporter serve` of the code in checkout code against the simulator, every setting
    its default but the target's and those in extra: (the process, its /metrics url)."""
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(code))
    args = [sys.executable, "-m", "exporter", "serve", f"--web.listen-address=127.0.0.1:{port}"]
    args += ["--vsphere", sim.url, "--vsphere.user", USER, "--vsphere.password-file", str(secret)]
    args += ["--vsphere.ca-file", str(sim.cert), *extra]
    with open(log, "wb") as out:
        proc = subprocess.Popen(args, cwd=code, env=env, stdout=out, stderr=subprocess.STDOUT)
    return proc, f"http://127.0.0.1:{port}/metrics"


WALKED = re.compile(rb'\nesxi_vsphere_walks_total\{[^}]*reason="(?:start|error)"\} [1-9]')


def walked(body: bytes, hosts: int) -> bool:
    """A walk is over and every host's esxcli settings are read (esxcli runs after it). The walk at
    start counts as reason="start"; one made again after a walk that failed (a timeout on a loaded
    machine) as reason="error", and the start's is then never counted."""
    return body.count(b"\nesxi_esxcli_up{") >= hosts and WALKED.search(body) is not None


def run(
    code: Path, sim: StorageSim, secret: Path, hosts: int, after: float, every: float, log: Path, extra: tuple[str, ...] = ()
) -> dict:
    proc, url = serve(code, sim, secret, log, extra)
    start = time.monotonic()
    ready = None
    body = b""
    timeline = RssTimeline(proc.pid, start)  # which phase holds the peak
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"serve exited {proc.returncode}: see {log}")
            try:
                body = scrape(url)
            except OSError:
                body = b""
            now = time.monotonic()
            if ready is None and walked(body, hosts):
                ready = now
            if ready is not None and now - ready >= after:
                break
            if now - start > 1800:
                raise RuntimeError(f"not ready in 30 minutes: see {log}")
            time.sleep(max(0.0, every - (time.monotonic() - now)))
        peak, rss, cpu = status_mib("VmHWM", proc.pid), status_mib("VmRSS", proc.pid), cpu_seconds(proc.pid)
    finally:
        timeline.stop()
        proc.terminate()
        proc.wait(60)
    timeline.write(log.with_suffix(".rss.tsv"))
    peak_at = max(timeline.points, key=lambda point: point[1])[0] if timeline.points else float("nan")
    if PASSWORD in log.read_text(errors="replace"):
        raise RuntimeError(f"the password is in {log}")
    load = round(os.getloadavg()[0], 1)  # the machine is shared: the 1-minute load as the run ends
    return {
        "ready_s": ready - start,
        "peak_at_s": round(peak_at, 1),
        "peak_mib": peak,
        "rss_mib": rss,
        "cpu_s": cpu,
        "series": series_count(body),
        "load": load,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], epilog=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--base", type=Path, action="append", default=[], help="a checkout of code before (git worktree add DIR REV); repeatable"
    )
    parser.add_argument("--hosts", type=int, default=2500)
    parser.add_argument("--luns", type=int, default=8)
    parser.add_argument("--vms", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--after", type=float, default=60.0, help="seconds run on once walked and esxcli read")
    parser.add_argument("--scrape", type=float, default=15.0, help="seconds between two scrapes")
    parser.add_argument(
        "--serve-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="a serve argument for every code (--serve-arg=--vsphere.timeout=120)",
    )
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-serve-memory-"))
    start = time.monotonic()
    sim = StorageSim(tmp, "-hosts", str(args.hosts), "-luns", str(args.luns), "-vms", str(args.vms), fixture=None)
    built = time.monotonic() - start
    secret = tmp / "password"
    secret.write_text(PASSWORD + "\n")
    secret.chmod(0o600)
    codes = [(base.name, base.resolve()) for base in args.base] + [("this", ROOT)]
    results: dict[str, list[dict]] = {name: [] for name, _ in codes}
    try:
        for i in range(args.repeat):
            for name, code in codes:
                result = run(
                    code, sim, secret, args.hosts, args.after, args.scrape, tmp / f"{name}-{i}.log", tuple(args.serve_arg)
                )
                results[name].append(result)
                print(f"# {name} run {i + 1}: {result}", flush=True)
    finally:
        sim.stop()
    print(f"# {args.hosts} hosts x {args.luns} LUNs, {args.vms} VMs a host (simulator built in {built:.0f} s)")
    print("| code | walked and esxcli read s | series | peak RSS MiB (runs) | median | RSS at the end MiB | CPU s in all |")
    print("|---|---:|---:|---|---:|---:|---:|")
    for name, runs in results.items():
        peaks = [r["peak_mib"] for r in runs]
        print(
            f"| {name} | {statistics.median(r['ready_s'] for r in runs):.1f} | {runs[-1]['series']:,} "
            f"| {', '.join(f'{p:.0f}' for p in peaks)} | **{statistics.median(peaks):.0f}** "
            f"| {statistics.median(r['rss_mib'] for r in runs):.0f} | {statistics.median(r['cpu_s'] for r in runs):.1f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
