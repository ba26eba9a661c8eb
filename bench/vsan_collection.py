"""vSAN's cost beside the LUN collection's, per exporter, and what each form of the performance
query costs: discovery, one vSAN round (VsanPerfQueryPerf, health, space, resync per cluster) and
one 20 s LUN collection, wall and CPU; the series each adds, per host; and per query form the
VsanPerfQueryPerf calls, the requests and the bytes on the wire (TLS included) of one vSAN round.

  python3 bench/vsan_collection.py [--hosts 64] [--vms 16] [--clusters 8] [--exporters 1] [--rounds 3]
                                   [--forms wildcard,multi,plain] [--base DIR]
  python3 bench/vsan_collection.py --hosts 2500 --vms 16 --clusters 100 --exporters 4

The forms (exporter/vsan/perf.py), each type of each cluster asked in its own calls:
- wildcard: one `type:*` spec alone per call, one call per entity type per cluster (the default);
- multi: the discovery's uuids in one multi-entity spec (`type:uuid1,uuid2,...`), 400 a call;
- plain: one spec per uuid, 100 specs a call.
A form may end in "+ours" (every type asked for the exporter's labels by name, listed or not) or
"+all" (every type asked without a label list: all it has, the exporter's read): what each costs
where the supported-types answer understates (issue 39). Without either, the exporter's own rule
(exporter/vsan/perf.py labels_for: by name where every label of ours is listed, else no list).
--base DIR: also the code before (a checkout: `git worktree add DIR COMMIT`, or `git archive`), on
its own simulator (the one of DIR, which accepts the old call: six wildcard specs in one call per
cluster, which the API reference and this checkout's simulator refuse), measured the same way.

One storage simulator holds the generated inventory (8 LUNs x 2 HBAs per host, --vms VMs per host,
the hosts split into --clusters vSAN OSA clusters of 2 disk groups of 1 cache + 3 capacity disks
per host). Each exporter of the split (--vsphere.shard K/N) runs in a fresh process, one after
another (a 2-core machine running them at once would measure the machine). Per exporter: the
medians of --rounds rounds of each, measured in one process side by side, and the peak RSS; then,
through a relay that counts the bytes each way, one more vSAN round per form (timed rounds never
go through the relay: its threads' CPU would count as the exporter's), after an uncounted one
that opens the connections (TLS handshakes are not the form's). Printed: every exporter's
figures, and the slowest exporter's vSAN cost against its LUN collection.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
FORMS = ("wildcard", "multi", "plain")


def worker(root: str, url: str, cert: str, secret: str, k: int, n: int, rounds: int, forms: list[str]) -> dict:
    """One exporter's share with the code of `root` (this checkout or --base)."""
    sys.path.insert(0, root)
    sys.path.insert(1, str(HERE))
    from wire import Relay, Requests

    from exporter.serving.exposition import Exposition
    from exporter.vsan.source import VsanSource
    from exporter.vsphere import TargetConfig, VsphereTarget
    from exporter.vsphere.selection import HostSelection
    from simulators.storagesim.sims import USER

    def median(values):
        return sorted(values)[len(values) // 2]

    def clock():
        return time.perf_counter(), time.process_time()

    def make(at: str):
        config = TargetConfig(
            name="bench", url=at, user=USER, password_file=secret, ca_file=cert, timeout=120.0,
            selection=HostSelection(shard=(k, n)), esxcli=False,
        )  # fmt: skip
        return VsphereTarget(config)

    t = make(url)
    assert t.discover(), t.error
    vsan = VsanSource(t, t.store)
    wall = time.perf_counter()
    assert vsan.discover()
    vsan_discovery = time.perf_counter() - wall
    out: dict = {"forms": {}}
    lun, lun_cpu = [], []
    for form in forms:
        if form != "old":
            vsan.first_form, vsan.supported = _form(form, vsan.supported)  # every type asked in this form
            vsan.forms.clear()
        walls, cpus = [], []
        for _ in range(rounds):
            if form == forms[0]:
                t.last_timestamp.clear()  # every host answers with its newest sample, as every 20 s
                wall, cpu = clock()
                assert t.collect(), t.error
                lun.append(time.perf_counter() - wall)
                lun_cpu.append(time.process_time() - cpu)
            vsan.taken.clear()  # every cluster's newest sample is new again, as every 5 minutes
            wall, cpu = clock()
            vsan.collect()
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
        down = [name for (kind, name), h in t.store.health.items() if kind == "vsan" and not h.up]
        assert not down, f"{form}: vSAN calls failed for {down}: {[t.store.health[('vsan', c)].errors for c in down]}"
        out["forms"][form] = {"round_s": median(walls), "round_cpu_s": median(cpus)}
    lun_body = Exposition(t.store, enabled=["lun", "adapter", "path", "datastore", "vm", "inventory"]).body()
    wall = time.perf_counter()
    vsan_body = Exposition(t.store, enabled=["vsan"]).body()
    render = time.perf_counter() - wall
    out.update(
        hosts=len(t.topology.hosts),
        clusters=len(vsan.clusters),
        vsan_hosts=sum(len(c.hosts) for c in vsan.clusters),
        vms=sum(len(c.vms) for c in vsan.clusters),
        vsan_discovery_s=vsan_discovery,
        lun_collection_s=median(lun),
        lun_collection_cpu_s=median(lun_cpu),
        vsan_render_s=render,
        lun_series=_series(lun_body),
        vsan_series=_series(vsan_body),
        vsan_values=sum(len(s) for c in t.store.vsan.values() if c.sample for s in _stats(c.sample)),
    )
    vsan.service.close()
    t.client.close()

    # The wire: one more round per form through a relay, counted.
    host, port = url.split("//")[1].split("/")[0].rsplit(":", 1)
    relay = Relay(host, int(port))
    counted = make(f"https://127.0.0.1:{relay.port}/sdk")
    assert counted.discover(), counted.error
    source = VsanSource(counted, counted.store)
    assert source.discover()
    calls = [0]
    query_perf = source.service.query_perf

    def counting(*args, **kwargs):
        calls[0] += 1
        return query_perf(*args, **kwargs)

    source.service.query_perf = counting
    source.collect()  # uncounted: opens the connections a round uses (one per cluster asked at once)
    Requests.install()
    for form in forms:
        if form != "old":
            source.first_form, source.supported = _form(form, source.supported)
            source.forms.clear()
        source.taken.clear()
        sent, received, _ = relay.counts()
        requests, calls[0] = Requests.count, 0
        source.collect()
        after = relay.counts()
        values = sum(len(s) for c in counted.store.vsan.values() if c.sample for s in _stats(c.sample))
        assert values == out["vsan_values"], f"{form}: {values} vSAN values, {out['vsan_values']} in the timed rounds"
        out["forms"][form].update(
            perf_calls=calls[0], requests=Requests.count - requests, sent=after[0] - sent, received=after[1] - received
        )
    source.service.close()
    counted.client.close()
    relay.close()
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def _form(form: str, supported):
    """(query form, the supported labels the source goes by) for "wildcard", "wildcard+ours", ..."""
    from exporter.vsan import metrics as vm

    base, _, policy = form.partition("+")
    if policy == "ours":
        return base, None  # as if the server had not said: ours by name
    if policy == "all":
        return base, {kind: set() for kind in vm.METRICS}  # lists none of ours: no label list
    return base, supported


def _stats(sample) -> list[dict]:
    """Every stats dict of a vSAN sample (the values one round placed)."""
    extra = [
        *getattr(sample, "host_networks", {}).values(), *getattr(sample, "nics", {}).values(),
        *getattr(sample, "vmknics", {}).values(), *getattr(sample, "host_backends", {}).values(),
        getattr(sample, "cluster_backend", {}), getattr(sample, "cluster_owner", {}),
        *getattr(sample, "tcpip", {}).values(), *getattr(sample, "host_owners", {}).values(),
    ]  # fmt: skip
    return [
        sample.cluster,
        *sample.hosts.values(),
        *sample.disk_groups.values(),
        *sample.disks.values(),
        *sample.vms.values(),
        *extra,
    ]


def _series(body: bytes) -> int:
    lines = body.count(b"\n") + (0 if body.endswith(b"\n") else 1)
    return lines - body.count(b"\n#") - body.startswith(b"#") - body.count(b"\n\n")


def run_exporters(root: Path, sim, secret: Path, args, forms: list[str]) -> list[dict]:
    results = []
    for k in range(args.exporters):
        argv = [sys.executable, str(HERE / "vsan_collection.py"), "--rounds", str(args.rounds), "--forms", ",".join(forms)]
        argv += ["--worker", str(root), sim.url, str(sim.cert), str(secret), str(k), str(args.exporters)]
        done = subprocess.run(argv, cwd=root, capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"exporter {k}/{args.exporters} ({root}) failed:\n{done.stderr[-3000:]}")
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return results


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], epilog=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hosts", type=int, default=64)
    parser.add_argument("--vms", type=int, default=16, help="VMs per host")
    parser.add_argument("--clusters", type=int, default=8, help="vSAN clusters the hosts are split into")
    parser.add_argument("--exporters", type=int, default=1, help="exporters sharing the vCenter (--vsphere.shard K/N)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--forms", default=",".join(FORMS), help="query forms to measure, the first also beside the LUN collection"
    )
    parser.add_argument("--base", type=Path, help="a checkout of the code before, measured on its own simulator")
    parser.add_argument("--worker", nargs=6, metavar=("ROOT", "URL", "CERT", "SECRET", "K", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    forms = args.forms.split(",")
    if args.worker:
        root, url, cert, secret, k, n = args.worker
        print(json.dumps(worker(root, url, cert, secret, int(k), int(n), args.rounds, forms)))
        return 0
    unknown = [f for f in forms if f.partition("+")[0] not in FORMS or f.partition("+")[2] not in ("", "ours", "all")]
    if unknown:
        parser.error(f"--forms: {', '.join(unknown)} not one of {', '.join(FORMS)}")
    sys.path.insert(0, str(ROOT))
    from simulators.storagesim import sims

    tmp = Path(tempfile.mkdtemp(prefix="bench-vsan-"))
    secret = tmp / "password"
    secret.write_text(sims.PASSWORD + "\n")
    secret.chmod(0o600)
    sim_args = ("-hosts", str(args.hosts), "-vms", str(args.vms), "-vsan-clusters", str(args.clusters))
    runs = [("this", ROOT, None, forms)]
    if args.base:
        built = subprocess.run([sys.executable, "simulators/storagesim/sims.py"], cwd=args.base, capture_output=True, text=True)
        if built.returncode:
            raise SystemExit(f"the base's simulator did not build:\n{built.stderr[-3000:]}")
        runs.append(("base", args.base.resolve(), Path(built.stdout.strip().splitlines()[-1]), ["old"]))
    results: dict[str, list[dict]] = {}
    boot: dict[str, float] = {}
    for name, root, binary, run_forms in runs:
        if binary is not None:
            sims.storagesim_binary = lambda binary=binary: binary  # the base's own simulator
        started = time.perf_counter()
        sim = sims.StorageSim(tmp / name, *sim_args, fixture=None)
        boot[name] = time.perf_counter() - started
        try:
            results[name] = run_exporters(root, sim, secret, args, run_forms)
        finally:
            sim.stop()
    this = results["this"]
    assert sum(r["clusters"] for r in this) == args.clusters, "every vSAN cluster read by exactly one exporter"
    print(
        f"# {args.hosts} hosts in {args.clusters} vSAN clusters, {args.vms} VMs per host, {args.exporters} exporter(s) "
        f"(simulator built in {boot['this']:.0f} s); each exporter measured alone, medians of {args.rounds} rounds; "
        f"vSAN round in the {forms[0]} form"
    )
    print("| exporter | hosts | vSAN clusters (hosts, VMs) | LUN collection s (CPU) per 20 s | vSAN round s (CPU) per 5 min "
          "| vSAN discovery s | vSAN render s | LUN series | vSAN series | vSAN series per vSAN host | peak RSS MiB |")  # fmt: skip
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k, r in enumerate(this):
        f = r["forms"][forms[0]]
        print(
            f"| {k}/{args.exporters} | {r['hosts']} | {r['clusters']} ({r['vsan_hosts']}, {r['vms']}) "
            f"| {r['lun_collection_s']:.2f} ({r['lun_collection_cpu_s']:.2f}) | {f['round_s']:.2f} ({f['round_cpu_s']:.2f}) "
            f"| {r['vsan_discovery_s']:.2f} | {r['vsan_render_s']:.3f} | {r['lun_series']:,} | {r['vsan_series']:,} "
            f"| {r['vsan_series'] / max(r['vsan_hosts'], 1):.0f} | {r['peak_rss_mib']:.0f} |"
        )
    worst = max(this, key=lambda r: r["forms"][forms[0]]["round_s"])
    cpu = worst["forms"][forms[0]]["round_cpu_s"]
    print(
        f"\nvSAN per interval against the LUN collection (slowest exporter): one vSAN round costs "
        f"{cpu / worst['lun_collection_cpu_s']:.2f}x the CPU of one 20 s LUN collection, every 5 minutes, i.e. "
        f"{cpu / (15 * worst['lun_collection_cpu_s']) * 100:.1f}% on top of the LUN collection's CPU over the same "
        f"5 minutes (15 collections)."
    )
    print("\n# One vSAN round per query form, every exporter summed (calls, requests and bytes counted on one round;")
    print("# wall and CPU: the slowest exporter's medians)")
    print("| code | form | VsanPerfQueryPerf calls | vSAN requests | sent kB | received kB | vSAN round s (CPU) | values |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for name, _root, _binary, run_forms in runs:
        for form in run_forms:
            rows = [r["forms"][form] for r in results[name]]
            slow = max(rows, key=lambda f: f["round_s"])
            print(
                f"| {name} | {form} | {sum(f['perf_calls'] for f in rows):,} | {sum(f['requests'] for f in rows):,} "
                f"| {sum(f['sent'] for f in rows) / 1e3:,.1f} | {sum(f['received'] for f in rows) / 1e3:,.1f} "
                f"| {slow['round_s']:.2f} ({slow['round_cpu_s']:.2f}) | {sum(r['vsan_values'] for r in results[name]):,} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
