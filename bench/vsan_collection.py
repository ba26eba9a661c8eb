"""vSAN's cost beside the LUN collection's, per exporter: discovery, one vSAN round (one
VsanPerfQueryPerf per cluster, health, space, resync) and one 20 s LUN collection, wall and CPU,
and the series each adds, per host.

  python3 bench/vsan_collection.py [--hosts 64] [--vms 16] [--clusters 8] [--exporters 1] [--rounds 3]
  python3 bench/vsan_collection.py --hosts 2500 --vms 16 --clusters 100 --exporters 4

One storage simulator holds the generated inventory (8 LUNs x 2 HBAs per host, --vms VMs per host,
the hosts split into --clusters vSAN OSA clusters of 2 disk groups of 1 cache + 3 capacity disks
per host). Each exporter of the split (--vsphere.shard K/N) runs in a fresh process, one after
another (a 2-core machine running them at once would measure the machine). Per exporter: the
medians of --rounds rounds of each, measured in one process side by side, and the peak RSS.
Printed: the slowest exporter's figures.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # runnable as a script or with -m
from vsphere_common import ROOT, StorageSim, Timer, median, password_file, series_count, target  # noqa: E402

from exporter.serving.exposition import Exposition  # noqa: E402
from exporter.vsan.source import VsanSource  # noqa: E402
from exporter.vsphere.selection import HostSelection  # noqa: E402


def worker(url: str, cert: str, secret: str, k: int, n: int, rounds: int) -> dict:
    class Sim:  # what vsphere_common.target needs of a simulator
        pass

    sim = Sim()
    sim.url, sim.cert = url, cert
    t = target(sim, Path(secret), selection=HostSelection(shard=(k, n)), esxcli=False)
    assert t.discover(), t.error
    vsan = VsanSource(t, t.store)
    with Timer() as vsan_discovery:
        assert vsan.discover()
    lun, lun_cpu, rounds_vsan, rounds_vsan_cpu = [], [], [], []
    for _ in range(rounds):
        t.last_timestamp.clear()  # every host answers with its newest sample, as every 20 s
        with Timer() as timer:
            assert t.collect(), t.error
        lun.append(timer.wall)
        lun_cpu.append(timer.cpu)
        vsan.taken.clear()  # every cluster's newest sample is new again, as every 5 minutes
        with Timer() as timer:
            vsan.collect()
        rounds_vsan.append(timer.wall)
        rounds_vsan_cpu.append(timer.cpu)
    assert all(health.up for (kind, _), health in t.store.health.items() if kind == "vsan")
    lun_body = Exposition(t.store, enabled=["lun", "adapter", "path", "datastore", "vm", "inventory"]).body()
    with Timer() as rendering:
        vsan_body = Exposition(t.store, enabled=["vsan"]).body()
    vsan.service.close()
    t.client.close()
    return {
        "hosts": len(t.topology.hosts),
        "clusters": len(vsan.clusters),
        "vsan_hosts": sum(len(c.hosts) for c in vsan.clusters),
        "vms": sum(len(c.vms) for c in vsan.clusters),
        "lun_discovery_s": t.durations["discovery"],
        "vsan_discovery_s": vsan_discovery.wall,
        "lun_collection_s": median(lun),
        "lun_collection_cpu_s": median(lun_cpu),
        "vsan_collection_s": median(rounds_vsan),
        "vsan_collection_cpu_s": median(rounds_vsan_cpu),
        "vsan_render_s": rendering.wall,
        "lun_series": series_count(lun_body),
        "vsan_series": series_count(vsan_body),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], epilog=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hosts", type=int, default=64)
    parser.add_argument("--vms", type=int, default=16, help="VMs per host")
    parser.add_argument("--clusters", type=int, default=8, help="vSAN clusters the hosts are split into")
    parser.add_argument("--exporters", type=int, default=1, help="exporters sharing the vCenter (--vsphere.shard K/N)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--worker", nargs=5, metavar=("URL", "CERT", "SECRET", "K", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        url, cert, secret, k, n = args.worker
        print(json.dumps(worker(url, cert, secret, int(k), int(n), args.rounds)))
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="bench-vsan-"))
    with Timer() as boot:
        sim = StorageSim(
            tmp, "-hosts", str(args.hosts), "-vms", str(args.vms), "-vsan-clusters", str(args.clusters), fixture=None
        )
    secret = password_file(tmp)
    try:
        results = []
        for k in range(args.exporters):
            argv = [sys.executable, __file__, "--rounds", str(args.rounds), "--worker", sim.url, str(sim.cert), str(secret)]
            done = subprocess.run([*argv, str(k), str(args.exporters)], cwd=ROOT, capture_output=True, text=True)
            if done.returncode:
                print(done.stderr, file=sys.stderr)
                return 1
            results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    finally:
        sim.stop()
    assert sum(r["clusters"] for r in results) == args.clusters, "every vSAN cluster read by exactly one exporter"
    print(
        f"# {args.hosts} hosts in {args.clusters} vSAN clusters, {args.vms} VMs per host, {args.exporters} exporter(s) "
        f"(simulator built in {boot.wall:.0f} s); each exporter measured alone, medians of {args.rounds} rounds"
    )
    print("| exporter | hosts | vSAN clusters (hosts, VMs) | LUN collection s (CPU) per 20 s | vSAN round s (CPU) per 5 min "
          "| vSAN discovery s | vSAN render s | LUN series | vSAN series | vSAN series per vSAN host | peak RSS MiB |")  # fmt: skip
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k, r in enumerate(results):
        print(
            f"| {k}/{args.exporters} | {r['hosts']} | {r['clusters']} ({r['vsan_hosts']}, {r['vms']}) "
            f"| {r['lun_collection_s']:.2f} ({r['lun_collection_cpu_s']:.2f}) | {r['vsan_collection_s']:.2f} ({r['vsan_collection_cpu_s']:.2f}) "
            f"| {r['vsan_discovery_s']:.2f} | {r['vsan_render_s']:.3f} | {r['lun_series']:,} | {r['vsan_series']:,} "
            f"| {r['vsan_series'] / max(r['vsan_hosts'], 1):.0f} | {r['peak_rss_mib']:.0f} |"
        )
    worst = max(results, key=lambda r: r["vsan_collection_s"])
    print(
        f"\nvSAN per interval against the LUN collection (slowest exporter): one vSAN round costs "
        f"{worst['vsan_collection_cpu_s'] / worst['lun_collection_cpu_s']:.2f}x the CPU of one 20 s LUN collection, "
        f"every 5 minutes, i.e. {worst['vsan_collection_cpu_s'] / (15 * worst['lun_collection_cpu_s']) * 100:.1f}% on top of the "
        f"LUN collection's CPU over the same 5 minutes (15 collections)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
