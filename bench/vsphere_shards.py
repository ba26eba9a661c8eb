"""A big vCenter split across N exporters by --vsphere.shard K/N, against one unsplit exporter.

  python3 bench/vsphere_shards.py [--hosts 2500] [--luns 8] [--vms 0] [--splits 1,2,4] [--rounds 3] [--repeat 1]
                                  [--device-config-cost]

One storage simulator holds the whole inventory (8 LUNs x 2 HBAs x 2 paths per host by default,
and --vms powered-on VMs per host with one or two virtual disks each: --hosts 2500 --vms 16 is
vCenter's maximum of 40,000 VMs).
Each exporter of each split runs in a fresh process, one after another (a 2-core machine running
them at once would measure the machine, not the exporter), and reports: its cold start as `serve`
runs it (from start to the first complete /metrics, every host's LUN samples rendered, wall and
CPU; then to the end of its walk: paths, mounts, VMs), collection per 20 s interval while it
follows the inventory (median of --rounds, every host answering), render time, every host's
esxcli, series and peak RSS. --repeat R runs each split R times against the same simulator and
takes each exporter's median of each figure.
Printed per split: the slowest exporter's figures and their ratio to the unsplit one. With
--device-config-cost, one more unsplit exporter runs with --no-vsphere.esxcli and
--no-collector.device-config, in the same run: what the per-device configuration costs.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # runnable as a script or with -m
from vsphere_common import (  # noqa: E402
    ROOT,
    StorageSim,
    Timer,
    following,
    median,
    password_file,
    render,
    series_count,
    target,
)

from exporter.vsphere.selection import HostSelection  # noqa: E402


def worker(url: str, cert: str, secret: str, k: int, n: int, rounds: int, device_config: bool = True) -> dict:
    """One exporter's share, measured in this process: its cold start as `serve` runs it, then
    its collections while it follows the inventory (as serve collects)."""

    class Sim:  # what vsphere_common.target needs of a simulator
        pass

    sim = Sim()
    sim.url, sim.cert = url, cert

    def new_target():
        return target(sim, Path(secret), selection=HostSelection(shard=(k, n)), esxcli=device_config)

    # Cold start: from start to every host's first sample in the store, rendered (the first
    # complete /metrics); then to the end of the walk (paths, mounts, VMs).
    t, stop = new_target(), threading.Event()
    with Timer() as cold:
        threads = t.start(stop)
        while t.topology is None or sum(1 for h in t.store.hosts.values() if h.samples) < len(t.topology.hosts):
            time.sleep(0.005)
        render(t, skip=() if device_config else ("device_config",))
    with Timer() as rest:
        while not t.walks:
            time.sleep(0.005)
    stop.set()
    for thread in threads:
        thread.join(120)
    del threads, t  # a thread keeps its target (and its store) alive: the next one is measured alone
    gc.collect()
    t = new_target()
    stop = threading.Event()
    following(t, stop)
    collections = []
    for _ in range(rounds):
        t.last_timestamp.clear()  # every host answers with its newest sample, as every 20 s
        with Timer() as timer:
            assert t.collect(), t.error
        collections.append(timer.wall)
    if device_config:
        with Timer() as esxcli_read:  # as after the walk and every hour, in serve's esxcli thread
            t._read_esxcli(t.topology.hosts)
    with Timer() as rendering:  # every series, esxcli's settings included, as in serve
        body = render(t, skip=() if device_config else ("device_config",))
    stop.set()
    counts = t.topology.counts()
    return {
        "hosts": counts["host"],
        "vms": counts["vm"],
        "vdisks": counts["vdisk"],
        "cold_start_s": cold.wall,
        "cold_start_cpu_s": cold.cpu,
        "walk_s": cold.wall + rest.wall,  # the whole walk: LUNs, paths and mounts, VMs
        "esxcli_s": esxcli_read.wall if device_config else 0.0,
        "collection_s": median(collections),
        "render_s": rendering.wall,
        "series": series_count(body),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], epilog=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hosts", type=int, default=2500)
    parser.add_argument("--luns", type=int, default=8)
    parser.add_argument("--vms", type=int, default=0, help="powered-on VMs per host (one or two disks each)")
    parser.add_argument("--splits", default="1,2,4", help="numbers of exporters, comma-separated (1 first: the baseline)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=1, help="runs of each split; each exporter's median is shown")
    parser.add_argument(
        "--device-config-cost",
        action="store_true",
        help="also run one unsplit exporter with --no-vsphere.esxcli --no-collector.device-config",
    )
    parser.add_argument("--without-device-config", action="store_true", help=argparse.SUPPRESS)  # a worker's switch
    parser.add_argument("--worker", nargs=5, metavar=("URL", "CERT", "SECRET", "K", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        url, cert, secret, k, n = args.worker
        print(json.dumps(worker(url, cert, secret, int(k), int(n), args.rounds, not args.without_device_config)))
        return 0
    splits = [int(s) for s in args.splits.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="bench-vsphere-shards-"))
    with Timer() as boot:
        sim = StorageSim(tmp, "-hosts", str(args.hosts), "-luns", str(args.luns), "-vms", str(args.vms), fixture=None)
    secret = password_file(tmp)
    results: dict[int, list[dict]] = {}

    def run(k: int, n: int, *extra: str) -> dict:
        argv = [sys.executable, __file__, "--rounds", str(args.rounds), *extra, "--worker", sim.url, str(sim.cert)]
        out = subprocess.run([*argv, str(secret), str(k), str(n)], cwd=ROOT, capture_output=True, text=True, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    try:
        for n in splits:
            runs = [[run(k, n) for k in range(n)] for _ in range(args.repeat)]
            results[n] = [{key: median([r[k][key] for r in runs]) for key in runs[0][k]} for k in range(n)]
        bare = run(0, 1, "--without-device-config") if args.device_config_cost else None
    finally:
        sim.stop()
    vms = f", {args.vms} VMs per host" if args.vms else ""
    print(f"# {args.hosts} hosts x {args.luns} LUNs{vms} (simulator built in {boot.wall:.0f} s); each exporter measured alone")
    print(
        "| exporters | hosts per exporter | VMs (disks) per exporter | first complete /metrics s | CPU s | whole walk s "
        "| esxcli s | collection s per 20 s | render s | series | peak RSS MiB |"
    )
    print("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    base = max(results[splits[0]], key=lambda r: r["collection_s"])

    def cell(r: dict, key: str, fmt: str) -> str:
        if not r[key] or not base[key]:  # esxcli off: no esxcli phase
            return "-"
        return f"{r[key]:{fmt}} ({r[key] / base[key]:.2f}x)"

    def row(label: str, hosts: str, vms: str, r: dict) -> str:
        keys = (("cold_start_s", ".2f"), ("cold_start_cpu_s", ".2f"), ("walk_s", ".2f"), ("esxcli_s", ".2f"))
        keys += (("collection_s", ".2f"), ("render_s", ".2f"))
        keys += (("series", ","), ("peak_rss_mib", ".0f"))
        return f"| {label} | {hosts} | {vms} | " + " | ".join(cell(r, key, fmt) for key, fmt in keys) + " |"

    def share(rows: list[dict]) -> tuple[str, str]:
        return "/".join(str(r["hosts"]) for r in rows), "/".join(f"{r['vms']} ({r['vdisks']})" for r in rows)

    for n in splits:
        rows = results[n]
        worst = {key: max(r[key] for r in rows) for key in rows[0]}
        print(row(str(n), *share(rows), worst))
    if bare:
        print(row("1, no esxcli/device_config", *share([bare]), bare))
    assert sum(r["hosts"] for r in results[splits[-1]]) == args.hosts, "the shards must cover every host exactly once"
    return 0


if __name__ == "__main__":
    sys.exit(main())
