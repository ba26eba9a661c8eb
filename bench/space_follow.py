"""What following datastore space and VM snapshots costs the vSphere source (#43): the same target
walked and followed with and without the Datastore filter (summary, info.timestamp) and the
chosen VMs' snapshot filter (snapshot, layoutEx, runtime.consolidationNeeded), side by side on
one storage simulator.

  python3 bench/space_follow.py [--hosts 64] [--vms 16] [--rounds 5] [--changes 2]

Per variant, --rounds times: a walk (CPU of this process), then collections every second with
nothing changing (CPU per collection), then collections while --changes datastores' figures change
every second through the simulator (POST /storagesim/space, reported to the property collector as
vCenter reports a refresh). Medians, side by side, and their ratio.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # runnable as a script or with -m
from vsphere_common import StorageSim, Timer, following, median, password_file, target  # noqa: E402

from exporter.vsphere import updates  # noqa: E402
from exporter.vsphere.mirror import DATASTORES, SNAPSHOTS  # noqa: E402

_WATCH = updates.PropertySession.watch


def _without_space(self, view, role, properties):
    """The filters as before #43: no Datastore filter, no snapshot filter."""
    if role not in (DATASTORES, SNAPSHOTS):
        _WATCH(self, view, role, properties)


def change(sim: StorageSim, name: str, free: int) -> None:
    data = urllib.parse.urlencode({"datastore": name, "free": str(free)}).encode()
    base = sim.url.rsplit("/sdk", 1)[0]
    import ssl

    context = ssl.create_default_context(cafile=str(sim.cert))
    with urllib.request.urlopen(urllib.request.Request(base + "/storagesim/space", data=data), context=context, timeout=30):
        pass


def one_round(sim, secret, with_space: bool, changes: int, collections: int = 5) -> dict[str, float]:
    updates.PropertySession.watch = _WATCH if with_space else _without_space
    try:
        t = target(sim, secret, vms=True)
        stop = threading.Event()
        with Timer() as walk:
            thread = following(t, stop)
        idle, busy = [], []
        for _ in range(collections):
            with Timer() as one:
                t.collect()
            idle.append(one.cpu)
            time.sleep(1)
        names = sorted({s.name for s in (t.follower.mirror.spaces.values() if t.follower else [])})[:changes]
        if not names:  # without the filter there is nothing to name: the same datastores change anyway
            names = [f"ds-shared-{i:02d}" for i in range(changes)]
        for i in range(collections):
            for name in names:
                try:
                    change(sim, name, 10**11 - i * 10**9)
                except OSError:
                    pass
            time.sleep(1.2)  # the follower applies the change (it waits a second after each answer)
            with Timer() as one:
                t.collect()
            busy.append(one.cpu)
        with Timer() as whole:  # a minute-like window: collection every second, changes every second
            for i in range(collections):
                for name in names:
                    try:
                        change(sim, name, 9 * 10**10 - i * 10**9)
                    except OSError:
                        pass
                t.collect()
                time.sleep(1)
        spaces = len(t.store.spaces)
        snapshots = len(t.store.snapshots)
        stop.set()
        if t.follower:
            t.follower.close()
        thread.join(30)
        return {
            "walk_cpu": walk.cpu,
            "collection_cpu_idle": median(idle),
            "collection_cpu_changing": median(busy),
            "window_cpu": whole.cpu,
            "datastores": spaces,
            "vms_followed": snapshots,
        }
    finally:
        updates.PropertySession.watch = _WATCH


def alternate(hosts: int, vms: int, rounds: int, run) -> dict[bool, list]:
    """One simulator of hosts x vms; run(sim, secret, with_space) rounds times each way, alternated
    so that drift hits both alike: {False: [...], True: [...]}."""
    with tempfile.TemporaryDirectory() as tmp:
        sim = StorageSim(Path(tmp) / "sim", "-hosts", str(hosts), "-vms", str(vms), fixture=None)
        try:
            secret = password_file(Path(tmp))
            results: dict[bool, list] = {False: [], True: []}
            for _ in range(rounds):
                for with_space in (False, True):
                    results[with_space].append(run(sim, secret, with_space))
            return results
        finally:
            sim.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, default=64)
    ap.add_argument("--vms", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--changes", type=int, default=2)
    args = ap.parse_args()
    results = alternate(args.hosts, args.vms, args.rounds, lambda sim, secret, on: one_round(sim, secret, on, args.changes))
    print(f"{args.hosts} hosts x {args.vms} VMs, {args.rounds} rounds, medians (CPU seconds of this process)")
    print(f"{'':32s} {'without':>10s} {'with':>10s} {'ratio':>7s}")
    for key in ("walk_cpu", "collection_cpu_idle", "collection_cpu_changing", "window_cpu"):
        a, b = median([r[key] for r in results[False]]), median([r[key] for r in results[True]])
        print(f"{key:32s} {a:10.4f} {b:10.4f} {b / a:7.3f}")
    for key in ("datastores", "vms_followed"):
        print(f"{key:32s} {median([r[key] for r in results[False]]):10.0f} {median([r[key] for r in results[True]]):10.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
