"""One exporter at vCenter's maximum, before and after, side by side in one run: scrape time,
collection time, peak memory and series (#45 item 7).

  python3 bench/vcenter_max.py --base DIR [--hosts 2500] [--luns 8] [--vms 16] [--after 120] [--scrape 15]

One storage simulator (2,500 hosts x 8 LUNs and 16 VMs a host: 40,000 VMs, as vCenter's
maximum; it takes ~8 min and ~4 GB to start). Then `python -m exporter serve` of each code in
turn (--base DIR: the code before, e.g. `git archive main | tar -x -C DIR`; then this
checkout), a fresh process each, every setting its default but the target's. Each is scraped
with gzip as Prometheus scrapes it, every --scrape seconds (timeout 120 s, so a slow scrape is
measured, not lost), until its walk is over and every host's esxcli settings are in /metrics
(serve_memory.py's test), then for --after seconds more. Reported per code:
- scrape: wall time of each gzip scrape from the request to the last byte, over the --after
  window (median and maximum);
- collection: esxi_vsphere_collection_duration_seconds{phase="collection"} of each collection
  seen in that window (median and maximum);
- peak memory: the kernel's VmHWM of the serve process at the end, and the highest VmRSS (read
  every 0.2 s, written beside each log as .rss.tsv) up to the walk's and esxcli's end and after it:
  which phase holds the peak;
- CPU: the process's CPU seconds per second over the --after window (collections, renders and
  scrapes; one core is 1.0), and the simulator's beside it (its answers share the same cores);
- series: the sample lines of the last body, and a digest of their names and labels (order
  free), so "series unchanged" is checked, not assumed.
The load average is printed with each run: the machine may be shared.

--replay: `serve` talks to the simulator through bench/replay_proxy.py (a process of its own),
which, once every host's esxcli is in, answers the collections' QueryPerf calls from memory (the
simulator's own answers, their sample times moved on): vCenter's answer time taken out of the
collection, as where vCenter runs on hardware of its own. The window measured starts 45 s after the
switch; the proxy's CPU is reported beside the simulator's.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
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

SAMPLES = re.compile(rb"^esxi_vsphere_samples_total\{[^}]*\} (\S+)$", re.M)
COLLECTION = re.compile(rb'^esxi_vsphere_collection_duration_seconds\{[^}]*phase="collection"[^}]*\} (\S+)$', re.M)


def timed_scrape(url: str) -> tuple[float, bytes]:
    """(seconds from the request to the last byte of the gzip answer, the body inflated)."""
    request = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})
    start = time.perf_counter()
    with urllib.request.urlopen(request, timeout=120) as response:
        data = response.read()
        spent = time.perf_counter() - start
        gzipped = response.headers.get("Content-Encoding") == "gzip"
    return spent, gzip.decompress(data) if gzipped else data


def series_digest(body: bytes) -> str:
    """An order-free digest of the series' names and labels (their values left out): the sum of
    each one's hash, so two bodies with the same set of series have the same digest. The
    process's own families (process_*, python_*: client_python's) are left out: they describe the
    exporter's process, not vCenter, and a release may add to them."""
    total = 0
    for line in body.split(b"\n"):
        if line and not line.startswith((b"#", b"process_", b"python_")):
            key = line.rpartition(b" ")[0]
            total = (total + int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "little")) % (1 << 64)
    return f"{total:016x}"


def start_proxy(sim: StorageSim, folder: Path) -> tuple[subprocess.Popen, str, Path]:
    """bench/replay_proxy.py in front of the simulator: (its process, its URL, its certificate)."""
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "replay_proxy.py"), sim.url, str(folder)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    port = int(proc.stdout.readline())
    return proc, f"https://127.0.0.1:{port}/sdk", folder / "proxy.crt"


def tell(proxy: subprocess.Popen, line: str) -> str:
    proxy.stdin.write(line + "\n")
    proxy.stdin.flush()
    return proxy.stdout.readline().strip()


def run(
    code: Path, sim: StorageSim, secret: Path, hosts: int, after: float, every: float, log: Path, replay: bool = False
) -> dict:
    port = free_port()
    proxy = None
    url_sdk, ca = sim.url, sim.cert
    if replay:
        proxy, url_sdk, ca = start_proxy(sim, log.parent / f"{log.stem}-proxy")
    url = f"http://127.0.0.1:{port}/metrics"
    env = dict(os.environ, PYTHONPATH=str(code))
    args = [sys.executable, "-m", "exporter", "serve", f"--web.listen-address=127.0.0.1:{port}"]
    args += ["--vsphere", url_sdk, "--vsphere.user", USER, "--vsphere.password-file", str(secret)]
    args += ["--vsphere.ca-file", str(ca)]
    with open(log, "wb") as out:
        proc = subprocess.Popen(args, cwd=code, env=env, stdout=out, stderr=subprocess.STDOUT)
    start = time.monotonic()
    ready, body, scrapes, collections = None, b"", [], []
    cpu_at_ready = sim_cpu_at_ready = proxy_cpu_at_ready = None
    replayed, switched, samples_at_ready = None, 0.0, 0.0
    timeline = RssTimeline(proc.pid, start)  # does the walk or the steady state peak?
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"serve exited {proc.returncode}: see {log}")
            now = time.monotonic()
            try:
                spent, body = timed_scrape(url)
            except OSError:
                spent, body = None, b""
            if ready is not None and spent is not None:
                scrapes.append(spent)
                collections += [float(v) for v in COLLECTION.findall(body)]
            # every host's esxcli is in /metrics (it runs after the walk; a walk that timed out on a loaded
            # machine counts as walks_total{reason="error"}, so serve_memory.py's reason="start" test may never hold)
            if ready is None and body.count(b"\nesxi_esxcli_up{") >= hosts:
                if proxy is not None and replayed is None:  # from now on QueryPerf is answered from memory
                    replayed = tell(proxy, "replay")
                    switched = time.monotonic()
                if proxy is None or time.monotonic() - switched >= 45:  # a collection or two on the replayed answers first
                    ready, cpu_at_ready = time.monotonic(), cpu_seconds(proc.pid)
                    sim_cpu_at_ready = cpu_seconds(sim.proc.pid)
                    proxy_cpu_at_ready = cpu_seconds(proxy.pid) if proxy is not None else 0.0
                    samples_at_ready = sum(float(v) for v in SAMPLES.findall(body))
            if ready is not None and time.monotonic() - ready >= after:
                break
            if time.monotonic() - start > 1800:
                raise RuntimeError(f"not ready in 30 minutes: see {log}")
            time.sleep(max(0.0, every - (time.monotonic() - now)))
        peak, cpu, sim_cpu = status_mib("VmHWM", proc.pid), cpu_seconds(proc.pid), cpu_seconds(sim.proc.pid)
        proxy_cpu = cpu_seconds(proxy.pid) if proxy is not None else 0.0
        counts = tell(proxy, "counts") if proxy is not None else ""
        measured = time.monotonic() - ready
    finally:
        timeline.stop()
        proc.terminate()
        proc.wait(60)
        if proxy is not None:
            proxy.stdin.close()
            proxy.wait(60)
    if PASSWORD in log.read_text(errors="replace"):
        raise RuntimeError(f"the password is in {log}")
    distinct = sorted(set(collections))  # each collection's duration, seen by one scrape or more
    log.with_suffix(".prom.gz").write_bytes(gzip.compress(body))  # the last body, for a diff of two codes' series
    timeline.write(log.with_suffix(".rss.tsv"))
    walk = [rss for t, rss in timeline.points if t <= ready - start]
    steady = [rss for t, rss in timeline.points if t > ready - start]
    return {
        "ready_s": round(ready - start, 1),
        # the peak's phase: VmRSS sampled every 0.2 s up to every host's esxcli, and after
        "rss_peak_walk_mib": round(max(walk, default=0)),
        "rss_peak_after_mib": round(max(steady, default=0)),
        # the process's CPU per second once walked: collections, renders and scrapes (one core is 1.0)
        "cpu_share_after": round((cpu - cpu_at_ready) / measured, 2),
        # the simulator's, on the same cores: what answering the collections (and the scrapes' nothing) costs vCenter here
        "sim_cpu_share_after": round((sim_cpu - sim_cpu_at_ready) / measured, 2),
        # --replay: the proxy's, answering QueryPerf from memory (and passing the rest on)
        "proxy_cpu_share_after": round((proxy_cpu - proxy_cpu_at_ready) / measured, 2) if proxy is not None else None,
        "proxy": f"{replayed}; {counts}" if proxy is not None else None,
        # host samples ingested in the window: every host's, each collection (a replayed answer is a new sample)
        "samples_after": round(sum(float(v) for v in SAMPLES.findall(body)) - samples_at_ready),
        "scrapes_s": [round(s, 3) for s in scrapes],
        "collections_s": [round(c, 3) for c in distinct],
        "peak_mib": round(peak),
        "cpu_s": round(cpu, 1),
        "series": series_count(body),
        "digest": series_digest(body),
        "load": os.getloadavg()[0],
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], epilog=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", type=Path, action="append", default=[], help="a copy of the code before; repeatable")
    parser.add_argument("--hosts", type=int, default=2500)
    parser.add_argument("--luns", type=int, default=8)
    parser.add_argument("--vms", type=int, default=16)
    parser.add_argument("--after", type=float, default=120.0, help="seconds measured once walked and esxcli read")
    parser.add_argument("--scrape", type=float, default=15.0, help="seconds between two scrapes")
    parser.add_argument("--replay", action="store_true", help="QueryPerf answered from memory once walked (see above)")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-vcenter-max-"))
    start = time.monotonic()
    sim = StorageSim(tmp, "-hosts", str(args.hosts), "-luns", str(args.luns), "-vms", str(args.vms), fixture=None)
    built = time.monotonic() - start
    print(f"# simulator up in {built:.0f} s (load {os.getloadavg()[0]:.1f})", flush=True)
    secret = tmp / "password"
    secret.write_text(PASSWORD + "\n")
    secret.chmod(0o600)
    codes = [(base.name, base.resolve()) for base in args.base] + [("this", ROOT)]
    results = {}
    try:
        for name, code in codes:
            results[name] = run(code, sim, secret, args.hosts, args.after, args.scrape, tmp / f"{name}.log", args.replay)
            print(f"# {name}: {results[name]}", flush=True)
    finally:
        sim.stop()
    print(
        f"\n# {args.hosts} hosts x {args.luns} LUNs, {args.vms} VMs a host; {args.after:g} s measured after the walk and esxcli"
    )
    print(
        "| code | load (1 min) | gzip scrape s: median / max | collection s: median / max | peak MiB "
        "| RSS peak MiB: walk / after | CPU share after: exporter / simulator | series | series digest |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for name, r in results.items():
        s, c = r["scrapes_s"], r["collections_s"] or [float("nan")]
        print(
            f"| {name} | {r['load']:.1f} | {statistics.median(s):.2f} / {max(s):.2f} | {statistics.median(c):.2f} / {max(c):.2f} "
            f"| {r['peak_mib']:,} | {r.get('rss_peak_walk_mib', '-')} / {r.get('rss_peak_after_mib', '-')} "
            f"| {r.get('cpu_share_after', '-')} / {r.get('sim_cpu_share_after', '-')} | {r['series']:,} | {r['digest']} |"
        )
    digests = {r["digest"] for r in results.values()}
    print("series identical across codes" if len(digests) == 1 else "SERIES DIFFER across codes")
    return 0 if len(digests) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
