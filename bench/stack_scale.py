"""The scale-out stack under load: remote-write throughput of the Prometheus shards and the
global store's ingest rate, one unsplit exporter + Prometheus against N of each, side by side.

  python3 bench/stack_scale.py [--hosts 200] [--shards 2] [--seconds 60] [--scrape 5]

One storage simulator (vCenter with --hosts hosts x 8 LUNs x 2 paths) feeds either one exporter
scraped by one Prometheus, or N exporters (--vsphere.shard k/N) scraped by N Prometheus shards
(hashmod); every Prometheus remote-writes into one VictoriaMetrics. After a warm-up, the script
reads over --seconds: samples sent per second (prometheus_remote_storage_samples_total, summed
over the shards), rows VictoriaMetrics inserted per second (vm_rows_inserted_total), the head
series, and the exporters' scrape durations. Everything runs on 127.0.0.1 and is stopped by PID.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simulators.storagesim.sims import PASSWORD, USER, StorageSim  # noqa: E402
from tests.support.servers import Exporter, Prometheus, VictoriaMetrics  # noqa: E402
from tests.support.shards import hashmod  # noqa: E402


def counter(url: str, name: str) -> float:
    """Sum of a counter over every series in a /metrics page."""
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    return sum(float(m.group(1)) for m in re.finditer(rf"^{name}(?:{{[^}}]*}})? (\S+)$", text, re.M))


def shard_config(k: int, n: int, targets: list[str], vm: str, scrape: float) -> str:
    return f"""global: {{scrape_interval: {scrape:g}s, scrape_timeout: {scrape:g}s, external_labels: {{prometheus_shard: "{k}"}}}}
scrape_configs:
  - job_name: esxi-storage
    static_configs: [{{targets: {targets}}}]
    relabel_configs:
      - {{source_labels: [__address__], modulus: {n}, target_label: __tmp_hash, action: hashmod}}
      - {{source_labels: [__tmp_hash], regex: "{k}", action: keep}}
remote_write: [{{url: "{vm}/api/v1/write"}}]
"""


def run(tmp: Path, sim: StorageSim, secret: Path, n: int, seconds: float, scrape: float) -> dict:
    started = []
    try:
        vm = VictoriaMetrics(tmp / f"vm-{n}")
        started.append(vm)
        exporters = []
        for k in range(n):
            for _ in range(30):  # ports whose hashmod puts exporter k on shard k
                args = [
                    "--vsphere",
                    sim.url,
                    "--vsphere.user",
                    USER,
                    "--vsphere.password-file",
                    str(secret),
                    "--vsphere.ca-file",
                    str(sim.cert),
                    "--vsphere.interval",
                    "20s",
                ]
                if n > 1:
                    args.append(f"--vsphere.shard={k}/{n}")
                e = Exporter(*args, log_path=tmp / f"exporter-{n}-{k}.log")
                if hashmod(f"127.0.0.1:{e.port}", n) == k:
                    exporters.append(e)
                    started.append(e)
                    break
                e.stop()
        targets = [f"127.0.0.1:{e.port}" for e in exporters]
        shards = []
        for k in range(n):
            shards.append(Prometheus(tmp / f"prom-{n}-{k}", [], config_text=shard_config(k, n, targets, vm.url, scrape)))
            started.append(shards[-1])
        # Warm-up: every exporter has collected, every shard has scraped and written for a while.
        for prom in shards:
            prom.wait_for("up == 1", timeout=300)
            prom.wait_for("scrape_samples_scraped > 1000", timeout=300)
        time.sleep(3 * scrape + 10)
        sent0 = sum(counter(p.url + "/metrics", "prometheus_remote_storage_samples_total") for p in shards)
        rows0 = counter(vm.url + "/metrics", "vm_rows_inserted_total")
        t0 = time.monotonic()
        time.sleep(seconds)
        elapsed = time.monotonic() - t0
        sent = sum(counter(p.url + "/metrics", "prometheus_remote_storage_samples_total") for p in shards) - sent0
        rows = counter(vm.url + "/metrics", "vm_rows_inserted_total") - rows0
        series = [counter(p.url + "/metrics", "prometheus_tsdb_head_series") for p in shards]
        durations = [float(p.query("scrape_duration_seconds")[0]["value"][1]) for p in shards]
        return {
            "sent_per_s": sent / elapsed,
            "ingested_per_s": rows / elapsed,
            "head_series": series,
            "scrape_s": durations,
        }
    finally:
        for server in reversed(started):
            server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], epilog=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--scrape", type=float, default=5.0, help="scrape interval, seconds")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-stack-"))
    sim = StorageSim(tmp / "sim", "-hosts", str(args.hosts), "-luns", "8", fixture=None)
    secret = tmp / "password"
    secret.write_text(PASSWORD + "\n")
    try:
        results = {n: run(tmp, sim, secret, n, args.seconds, args.scrape) for n in (1, args.shards)}
    finally:
        sim.stop()
    one = results[1]
    print(f"# {args.hosts} hosts x 8 LUNs, scrape every {args.scrape:g} s, measured over {args.seconds:g} s")
    print(
        "| shards | remote write, samples/s (all shards) | global store ingest, rows/s | head series per shard | scrape s per shard |"
    )
    print("|---:|---:|---:|---|---|")
    for n, r in results.items():
        print(
            f"| {n} | {r['sent_per_s']:,.0f} ({r['sent_per_s'] / one['sent_per_s']:.2f}x) "
            f"| {r['ingested_per_s']:,.0f} ({r['ingested_per_s'] / one['ingested_per_s']:.2f}x) "
            f"| {', '.join(f'{s:,.0f}' for s in r['head_series'])} | {', '.join(f'{s:.2f}' for s in r['scrape_s'])} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
