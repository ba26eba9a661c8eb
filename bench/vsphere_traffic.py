"""What the exporter costs vCenter per hour, before and after following its changes: SOAP requests
and bytes on the wire (TLS included), side by side in one run.

  python3 bench/vsphere_traffic.py --base DIR [--hosts 2500] [--luns 8] [--vms 16] [--splits 4]
                                   [--window 60] [--every 5]

DIR: a checkout of the code before (`git worktree add DIR main`, or `git archive`), run as it is.
One storage simulator; each exporter of the split (--vsphere.shard K/N) runs in its own process
through a relay that counts the bytes each way, one after another, first the old code, then this:

- before: a discovery every 5 minutes (the walk and every host's esxcli) and, before each 20 s
  collection, the check of the VMs' host and power state: per hour 12 discoveries + 180 checks;
- after: one walk an hour (the safety net), every host's esxcli every hour
  (--vsphere.esxcli-interval; and at once for a host whose storage changed), and the update stream, measured over --window seconds while this
  script changes the inventory through the API every --every seconds (a VM powered off, the same
  powered on, a VM moved to another host of its cluster, a path disabled, the same enabled, in
  turn, anywhere in the vCenter), scaled to an hour.

Collection itself (QueryPerf every 20 s) is the same before and after; one is measured for scale.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
HOUR = 3600.0


def worker(args) -> dict:
    """One exporter's share, in this process, with the code of args.root."""
    sys.path.insert(0, args.root)
    sys.path.insert(1, str(HERE))
    from wire import Relay, Requests

    from exporter.vsphere import TargetConfig, VsphereTarget
    from exporter.vsphere.selection import HostSelection

    Requests.install()
    host, port = args.url.split("//")[1].split("/")[0].rsplit(":", 1)
    relay = Relay(host, int(port))
    url = f"https://127.0.0.1:{relay.port}/sdk"
    config = TargetConfig(
        name="bench", url=url, user=args.user, password_file=args.secret, ca_file=args.cert, timeout=args.timeout,
        selection=HostSelection(shard=(args.k, args.n)),
    )  # fmt: skip
    t = VsphereTarget(config)
    out = {}

    def measured(name, step):
        before_sent, before_received, _ = relay.counts()
        before_requests, start = Requests.count, time.perf_counter()
        step()
        sent, received, _ = relay.counts()
        out[name] = {
            "sent": sent - before_sent,
            "received": received - before_received,
            "requests": Requests.count - before_requests,
            "seconds": time.perf_counter() - start,
        }

    if args.mode == "before":
        measured("discovery", lambda: _check(t.discover(), t))  # the walk, then every host's esxcli
        measured("state_check", lambda: t._running_vms(t.topology))
        t.last_timestamp.clear()
        measured("collection", lambda: _check(t.collect(), t))
    else:
        stop = threading.Event()
        t.running = True
        t.collected.set()  # no collection loop here: the walk's later stages wait for none

        def walk():
            threading.Thread(target=t._discovery_loop, args=(stop,), daemon=True).start()
            while not t.walks or not t._following():
                time.sleep(0.01)

        measured("walk", walk)
        measured("esxcli", lambda: t._read_esxcli(t.topology.hosts))
        print("ready", flush=True)

        def window():
            sys.stdin.readline()  # the parent changes the inventory meanwhile
            time.sleep(args.drain)  # the last changes' answers come in (a wait ends within max-wait)

        measured("window", window)
        out["changes"] = sum(t.changes.values())
        t.last_timestamp.clear()
        measured("collection", lambda: _check(t.collect(), t))
        stop.set()
    out["hosts"], out["vms"] = t.topology.counts()["host"], t.topology.counts()["vm"]
    return out


def _check(ok: bool, t) -> None:
    if not ok:
        raise RuntimeError(t.error)


class Churn:
    """Changes through the API, in turn: power a VM off, on again, move one, disable a path, enable it."""

    def __init__(self, sim):
        from pyVim.connect import SmartConnect
        from pyVmomi import vim

        self.vim = vim
        si = SmartConnect(host="127.0.0.1", port=sim.port, user=sim.user, pwd=sim.password,
                          sslContext=ssl.create_default_context(cafile=str(sim.cert)))  # fmt: skip
        self.content = si.RetrieveContent()
        view = self.content.viewManager.CreateContainerView(self.content.rootFolder, [vim.VirtualMachine], True)
        self.vms = list(view.view)
        view = self.content.viewManager.CreateContainerView(self.content.rootFolder, [vim.HostSystem], True)
        self.hosts = list(view.view)
        self.random = random.Random(30)
        self.step, self.done = 0, 0
        self.off = self.path = None

    def once(self) -> None:
        kind = self.step % 5
        self.step += 1
        if kind == 0:
            self.off = self.random.choice(self.vms)
            self._wait(self.off.PowerOffVM_Task())
        elif kind == 1:
            self._wait(self.off.PowerOnVM_Task())
        elif kind == 2:
            vm = self.random.choice(self.vms)
            group = _group(vm.runtime.host.name)  # the generated inventory shares datastores by 8 hosts
            hosts = [h for h in vm.runtime.host.parent.host if h != vm.runtime.host and _group(h.name) == group]
            self._wait(vm.RelocateVM_Task(spec=self.vim.vm.RelocateSpec(host=self.random.choice(hosts))))
        elif kind == 3:
            host = self.random.choice(self.hosts)
            name = host.config.storageDevice.multipathInfo.lun[0].path[0].name
            self.path = (host.configManager.storageSystem, name)
            self.path[0].DisableMultipathPath(pathName=name)
        else:
            self.path[0].EnableMultipathPath(pathName=self.path[1])
        self.done += 1

    @staticmethod
    def _wait(task):
        while task.info.state not in ("success", "error"):
            time.sleep(0.05)


def _group(host: str) -> int:
    return int(host[3:7]) // 8  # esx0123.bench.local


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], epilog=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", required=True, help="a checkout of the code before")
    parser.add_argument("--hosts", type=int, default=2500)
    parser.add_argument("--luns", type=int, default=8)
    parser.add_argument("--vms", type=int, default=16)
    parser.add_argument("--splits", type=int, default=4)
    parser.add_argument("--window", type=float, default=60.0, help="seconds of the update stream measured")
    parser.add_argument("--every", type=float, default=5.0, help="seconds between two changes")
    parser.add_argument("--timeout", type=float, default=120.0, help="the call timeout (max-wait is 2/3 of it)")
    parser.add_argument("--drain", type=float, default=30.0, help="seconds after the last change, its answer measured too")
    parser.add_argument(
        "--worker", nargs=8, metavar=("MODE", "ROOT", "URL", "CERT", "SECRET", "USER", "K", "N"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.worker:
        mode, root, url, cert, secret, user, k, n = args.worker
        ns = argparse.Namespace(
            mode=mode, root=root, url=url, cert=cert, secret=secret, user=user, k=int(k), n=int(n),
            timeout=args.timeout, drain=args.drain,
        )  # fmt: skip
        print(json.dumps(worker(ns)), flush=True)
        return 0

    sys.path.insert(0, str(ROOT))
    from simulators.storagesim.sims import PASSWORD, USER, StorageSim

    tmp = Path(tempfile.mkdtemp(prefix="bench-vsphere-traffic-"))
    secret = tmp / "password"
    secret.write_text(PASSWORD + "\n")
    os.chmod(secret, 0o600)
    boot = time.perf_counter()
    sim = StorageSim(tmp, "-hosts", str(args.hosts), "-luns", str(args.luns), "-vms", str(args.vms), fixture=None)
    sim.user, sim.password = USER, PASSWORD
    boot = time.perf_counter() - boot
    results = {"before": [], "after": []}
    try:
        churn = Churn(sim)
        for k in range(args.splits):
            for mode, root in (("before", os.path.abspath(args.base)), ("after", str(ROOT))):
                cmd = [sys.executable, __file__, "--base", args.base, "--timeout", str(args.timeout), "--drain", str(args.drain)]
                cmd += ["--worker", mode, root, sim.url, str(sim.cert)]
                proc = subprocess.Popen([*cmd, str(secret), USER, str(k), str(args.splits)], cwd=root, text=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE)  # fmt: skip
                if mode == "after":
                    assert proc.stdout.readline().strip() == "ready"
                    changes_before, end = churn.done, time.monotonic() + args.window
                    while time.monotonic() < end:
                        started = time.monotonic()
                        churn.once()
                        time.sleep(max(0.0, args.every - (time.monotonic() - started)))
                    time.sleep(2.0)  # the last change's update reaches the exporter
                    proc.stdin.write("done\n")
                    proc.stdin.flush()
                out, _ = proc.communicate(timeout=3600)
                if proc.returncode:
                    raise RuntimeError(f"{mode} worker {k}/{args.splits} failed")
                result = json.loads(out.strip().splitlines()[-1])
                if mode == "after":
                    result["made"] = churn.done - changes_before
                results[mode].append(result)
    finally:
        sim.stop()
    report(args, results, boot)
    return 0


def _bytes(part: dict) -> int:
    return part["sent"] + part["received"]


def report(args, results, boot) -> None:
    per = 3600.0 / 20.0  # collections an hour
    print(f"# {args.hosts} hosts x {args.luns} LUNs, {args.vms} VMs a host, over {args.splits} exporters "
          f"(simulator built in {boot:.0f} s); bytes on the wire both ways, TLS included")  # fmt: skip
    print(
        "| exporter | hosts | VMs | before: discovery (walk + esxcli) | before: VM state check | after: walk | after: esxcli "
        "| after: stream, changes made/applied in the window | collection (both) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    totals = {"before": [0, 0], "after": [0, 0], "collection": [0, 0]}
    rate = HOUR / args.every  # changes an hour
    for k, (b, a) in enumerate(zip(results["before"], results["after"])):

        def cell(part):
            return f"{_bytes(part) / 1e6:,.1f} MB, {part['requests']:,} req, {part['seconds']:.1f} s"

        print(f"| {k}/{args.splits} | {a['hosts']} | {a['vms']} | {cell(b['discovery'])} | {cell(b['state_check'])} | {cell(a['walk'])} "
              f"| {cell(a['esxcli'])} | {_bytes(a['window']) / 1e6:,.2f} MB, {a['window']['requests']} req, "
              f"{a['made']} made / {a['changes']} applied | {cell(b['collection'])} |")  # fmt: skip
        before = 12 * _bytes(b["discovery"]) + per * _bytes(b["state_check"])
        before_req = 12 * b["discovery"]["requests"] + per * b["state_check"]["requests"]
        # The stream per change made (the window's idle waits included), at --every's rate for an
        # hour: the window's own length would count the drain's quiet seconds as an hour's pace.
        changes = rate / max(1, a["made"])
        after = _bytes(a["walk"]) + _bytes(a["esxcli"]) + _bytes(a["window"]) * changes
        after_req = a["walk"]["requests"] + a["esxcli"]["requests"] + a["window"]["requests"] * changes
        totals["before"][0] += before
        totals["before"][1] += before_req
        totals["after"][0] += after
        totals["after"][1] += after_req
        totals["collection"][0] += per * _bytes(a["collection"])
        totals["collection"][1] += per * a["collection"]["requests"]
    made = sum(a["made"] for a in results["after"])
    stream = sum(_bytes(a["window"]) for a in results["after"])
    applied = sum(a["changes"] for a in results["after"])
    print(f"\nthe update stream: {stream / 1e3:,.0f} kB for {made} changes made ({applied} applied by these exporters), "
          f"{stream / max(1, made) / 1e3:,.1f} kB a change")  # fmt: skip
    if applied < made:
        print(f"NOT A MEASUREMENT: {made - applied} of {made} changes were not applied within the window and --drain")
    print()
    print(f"Per hour, all {args.splits} exporters, inventory only (changes at {rate:,.0f} an hour):")
    print("| | bytes per hour | requests per hour |")
    print("|---|---:|---:|")
    for name, label in (("before", "before: discovery every 5 min, VM state before each collection"),
                        ("after", "after: walk and esxcli every hour, the update stream")):  # fmt: skip
        print(f"| {label} | {totals[name][0] / 1e6:,.0f} MB | {totals[name][1]:,.0f} |")
    print(
        f"| before / after | {totals['before'][0] / totals['after'][0]:.1f}x | {totals['before'][1] / totals['after'][1]:.1f}x |"
    )
    print(
        f"| collection, for scale (QueryPerf every 20 s, unchanged) | {totals['collection'][0] / 1e6:,.0f} MB | {totals['collection'][1]:,.0f} |"
    )


if __name__ == "__main__":
    sys.exit(main())
