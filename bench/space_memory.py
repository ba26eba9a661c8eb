"""Peak memory of the vSphere source with and without following datastore space and VM snapshots
(#43): one storage simulator; for each variant, a fresh child interpreter walks the target,
follows it and collects once, and reports its own peak resident set (VmHWM). Alternated, medians.

  python3 bench/space_memory.py [--hosts 500] [--vms 16] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # runnable as a script or with -m
from space_follow import alternate  # noqa: E402
from vsphere_common import ROOT  # noqa: E402

CHILD = """
import json, sys, threading
sys.path.insert(0, {bench!r})
from vsphere_common import following, status_mib, target
import space_follow
from exporter.vsphere import updates
from simulators.storagesim.sims import StorageSim

class Sim:  # the parent's simulator, by its url and certificate
    url, cert = {url!r}, {cert!r}

if not {with_space!r}:
    updates.PropertySession.watch = space_follow._without_space
t = target(Sim, __import__("pathlib").Path({secret!r}), vms=True)
stop = threading.Event()
thread = following(t, stop)
t.collect()
print(json.dumps({{"peak_mib": status_mib("VmHWM"), "rss_mib": status_mib("VmRSS"),
                   "datastores": len(t.store.spaces), "vms": len(t.store.snapshots)}}))
stop.set()
"""


def child(sim, secret: Path, with_space: bool) -> dict:
    code = CHILD.format(
        bench=str(Path(__file__).resolve().parent), url=sim.url, cert=str(sim.cert), secret=str(secret), with_space=with_space
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, default=500)
    ap.add_argument("--vms", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    results = alternate(args.hosts, args.vms, args.rounds, child)
    print(f"{args.hosts} hosts x {args.vms} VMs, {args.rounds} rounds, medians (MiB, each child's own VmHWM)")
    a = statistics.median(r["peak_mib"] for r in results[False])
    b = statistics.median(r["peak_mib"] for r in results[True])
    print(f"peak      without {a:8.1f}  with {b:8.1f}  ratio {b / a:.3f}")
    print(f"followed  datastores {results[True][0]['datastores']}, VMs' snapshots {results[True][0]['vms']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
