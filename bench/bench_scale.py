"""Sizing figures for README "Running at scale", measured here:

1. Series per host: `dump` of the real capture in tests/fixtures/esxtop/ and of a simulated
   large host (40 LUNs x 4 paths, 4 HBAs, 60 VMs, 32 CPUs, esxtop -a fields), with every
   collector, without per-world series, without per-world and per-path series, and with a LUN
   include filter keeping 10 of the 40 LUNs.
2. One exporter and one real Prometheus (Debian `prometheus`) for N such hosts: the exporter
   serves the built-in simulator with N hosts at esxtop's 5 s interval, Prometheus scrapes it
   every 5 s for a minute; we read the exporter's CPU and RSS, the render time of one scrape, and
   Prometheus' head series, RSS and ingestion CPU.

    python3 bench/bench_scale.py                 # hosts 10 and 40 (~3 min)
    python3 bench/bench_scale.py --hosts 10      # one size (~1.5 min)

The exporter's CPU here includes the simulator writing the esxtop text for every host, which a
real deployment does not pay: an upper bound. Everything runs on 127.0.0.1 and is stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.servers import CAPTURES, exporter_env, free_port, stop, wait_http  # noqa: E402

REAL_CAPTURE = CAPTURES / "esxi65-default-3samples.csv"
LUNS, PATHS_PER_LUN, HBAS, VMS, CPUS = 40, 4, 4, 60, 32
CLK_TCK = os.sysconf("SC_CLK_TCK")


def scenario(hosts: int) -> dict:
    """N identical large hosts sharing 40 LUNs, steady load."""
    luns = [
        dict(
            device=f"naa.60060160{i:024x}",
            display_name=f"LUN {i}",
            vendor="DGC",
            model="VRAID",
            datastore=f"ds{i:02d}",
            service_time="4ms",
            absorbs=64,
        )
        for i in range(LUNS)
    ]
    adapters = [
        dict(name=f"vmhba{a}", type="fc", model="QLE2692", driver="qlnativefc", link_speed="1600MB/s") for a in range(HBAS)
    ]
    host_list = []
    for h in range(hosts):
        host_luns = [
            dict(
                device=lun["device"],
                queue_depth=64,
                paths={f"vmhba{p % HBAS}:C0:T{p // HBAS}:L{i}": "active" if p < 2 else "standby" for p in range(PATHS_PER_LUN)},
            )
            for i, lun in enumerate(luns)
        ]
        vms = [
            dict(name=f"vm{h:03d}-{v:03d}", lun=luns[v % LUNS]["device"], oio=2, block_size="8KiB", read_ratio=0.7)
            for v in range(VMS)
        ]
        host_list.append(dict(name=f"esx{h:03d}.example", cpus=CPUS, cpu_mhz=2600, adapters=adapters, luns=host_luns, vms=vms))
    return dict(
        description=f"{hosts} large hosts", luns=luns, hosts=host_list, phases=[dict(name="steady", duration="10m")], repeat=True
    )


def write_scenario(tmp: Path, hosts: int) -> Path:
    import yaml

    path = tmp / f"hosts-{hosts}.yaml"
    path.write_text(yaml.safe_dump(scenario(hosts), sort_keys=False))
    return path


def exporter(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "exporter", *args],
        capture_output=True,
        text=True,
        env=exporter_env(),
        cwd=ROOT,
        check=True,
        **kwargs,
    )


def families(exposition: str) -> dict[str, int]:
    """Series per object family (esxi_lun_*, esxi_path_*, ...), the exporter's self-metrics apart."""
    counts: dict[str, int] = {}
    for line in exposition.splitlines():
        if line and not line.startswith("#"):
            name = line.split("{", 1)[0].split(" ", 1)[0]
            family = re.sub(r"^esxi_([a-z]+)_.*", r"\1", name)
            if family in ("lun", "path", "adapter", "cpu", "datastore", "host"):
                counts[family] = counts.get(family, 0) + 1
            else:
                counts["self"] = counts.get("self", 0) + 1
    return counts


def cardinality(tmp: Path) -> None:
    print("series per host (esxi-storage-exporter dump)")
    print(f"  {'capture':<44} {'cut':<38} {'total':>6}  by family")
    rows = []
    if REAL_CAPTURE.exists():
        rows.append(("real: esxi65-default-3samples.csv", REAL_CAPTURE, [("every collector", [])]))
    big = tmp / "large-host.csv"
    exporter("simulate", str(write_scenario(tmp, 1)), "--duration", "30s", "--out", str(big))
    keep10 = "^naa\\.60060160" + "0" * 23 + "[0-9]$"  # LUNs 0-9 of 40
    rows.append(
        (
            f"simulated: {LUNS} LUNs x {PATHS_PER_LUN} paths, {HBAS} HBAs, {VMS} VMs, {CPUS} CPUs",
            big,
            [
                ("every collector", []),
                ("--no-collector.world", ["--no-collector.world"]),
                ("--no-collector.world --no-collector.path", ["--no-collector.world", "--no-collector.path"]),
                ("--lun.include (10 of 40 LUNs)", [f"--lun.include={keep10}"]),
            ],
        )
    )
    for label, capture, cuts in rows:
        for cut, flags in cuts:
            counts = families(exporter("dump", "--esxtop-file", str(capture), *flags).stdout)
            detail = ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))
            print(f"  {label:<44} {cut:<38} {sum(counts.values()):>6}  {detail}")
            label = ""


def proc_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def query(url: str, expr: str) -> float:
    with urllib.request.urlopen(f"{url}/api/v1/query?" + urllib.parse.urlencode({"query": expr}), timeout=30) as r:
        result = json.load(r)["data"]["result"]
    return float(result[0]["value"][1]) if result else float("nan")


def one_exporter_one_prometheus(tmp: Path, hosts: int, seconds: float = 60.0) -> None:
    binary = shutil.which("prometheus")
    if not binary:
        print("  prometheus not installed (.ci/install): skipped")
        return
    work = tmp / f"run-{hosts}"
    work.mkdir()
    port = free_port()
    exp = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "exporter",
            "serve",
            "--simulate",
            str(write_scenario(tmp, hosts)),
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        env=exporter_env(),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    prom = None
    try:
        wait_http(f"http://127.0.0.1:{port}/-/healthy", proc=exp)
        prom_port = free_port()
        (work / "prometheus.yml").write_text(
            "global: {scrape_interval: 5s, scrape_timeout: 5s}\n"
            f"scrape_configs: [{{job_name: esxi, static_configs: [{{targets: ['127.0.0.1:{port}']}}]}}]\n"
        )
        prom = subprocess.Popen(
            [
                binary,
                f"--config.file={work / 'prometheus.yml'}",
                f"--storage.tsdb.path={work / 'data'}",
                f"--web.listen-address=127.0.0.1:{prom_port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=work,
        )
        prom_url = f"http://127.0.0.1:{prom_port}"
        wait_http(prom_url + "/-/ready", timeout=60, proc=prom)
        time.sleep(12)  # the simulator's first samples are in; let Prometheus take a couple of scrapes
        exp_cpu0, prom_cpu0, t0 = proc_cpu_seconds(exp.pid), proc_cpu_seconds(prom.pid), time.monotonic()
        time.sleep(seconds)
        elapsed = time.monotonic() - t0
        exp_cpu = (proc_cpu_seconds(exp.pid) - exp_cpu0) / elapsed
        prom_cpu = (proc_cpu_seconds(prom.pid) - prom_cpu0) / elapsed
        series = query(prom_url, 'scrape_samples_scraped{job="esxi"}')
        with urllib.request.urlopen(prom_url + "/api/v1/status/tsdb", timeout=30) as r:
            head = json.load(r)["data"]["headStats"]["numSeries"]
        scrape = query(prom_url, 'avg_over_time(scrape_duration_seconds{job="esxi"}[1m])')
        print(
            f"  {hosts:>5} {series:>9.0f} {series / hosts:>9.0f} {exp_cpu * 100:>8.1f}% {proc_rss_mb(exp.pid):>8.0f}"
            f" {scrape * 1000:>9.0f} {head:>9.0f} {prom_cpu * 100:>8.1f}% {proc_rss_mb(prom.pid):>8.0f}"
        )
    finally:
        if prom is not None:
            stop(prom)
        stop(exp)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, action="append", help="simulated hosts per exporter (repeatable)")
    parser.add_argument("--seconds", type=float, default=60.0, help="measured window per size")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        cardinality(tmp)
        print(f"\nload average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (timings stretch with it)")
        print(
            f"one exporter (simulating N large hosts, 5 s interval) scraped every 5 s by one Prometheus, {args.seconds:.0f} s window"
        )
        print(
            f"  {'hosts':>5} {'series':>9} {'per host':>9} {'exp CPU':>9} {'exp MB':>8} {'scrape ms':>9}"
            f" {'head':>9} {'prom CPU':>9} {'prom MB':>8}"
        )
        for hosts in args.hosts or [10, 40]:
            one_exporter_one_prometheus(tmp, hosts, args.seconds)


if __name__ == "__main__":
    main()
