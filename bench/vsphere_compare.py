"""64 hosts side by side: this exporter's vSphere collection vs the `vmware-exporter` package
from PyPI (0.18.4, in its own venv with twisted==24.7.0 and requests), against the same storage
simulator, in one run, rounds alternating.

  python3 bench/vsphere_compare.py [--hosts 64] [--luns 8] [--vms 16] [--rounds 5]

--vms N: N powered-on VMs per host (one or two disks each), which both exporters collect (the
fair comparison: vmware-exporter collects VMs by default); --vms 0 for hosts alone.

Ours is timed in-process, a fresh login each round like theirs, phase by phase: discovery
(inventory walk, every 5 min), collection (QueryPerf of every host, every 20 s), and rendering
the text exposition (the core's Exposition, once per change, not per scrape). And as it starts
in `serve`: the target's own threads from a cold start (login, counter catalogue, discovery) to
the first complete /metrics (every host's samples in the store, rendered); esxcli's per-device
settings, which the peer does not read at all, go on arriving after that in the discovery thread. Theirs is one HTTP scrape of its /metrics, which
logs in, walks the inventory and queries perf every time; its CPU is read from /proc.
vmware-exporter can only reach port 443 (it passes no port to pyVmomi), so the simulator
listens on 127.0.0.N:443 for both.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # runnable as a script or with -m
from vsphere_common import (  # noqa: E402
    PASSWORD,
    USER,
    StorageSim,
    Timer,
    cold_start,
    following,
    median,
    password_file,
    render,
    series_count,
    target,
)

VENV = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "esxi-storage-exporter" / "venv-vmware-exporter"
PINS = ["vmware-exporter==0.18.4", "twisted==24.7.0", "requests"]


def ensure_venv() -> Path:
    binary = VENV / "bin" / "vmware_exporter"
    if not binary.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(VENV / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", *PINS], check=True)
    return binary


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=64)
    parser.add_argument("--luns", type=int, default=8)
    parser.add_argument("--vms", type=int, default=16, help="powered-on VMs per host (0: none)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    theirs_bin = ensure_venv()
    tmp = Path(tempfile.mkdtemp(prefix="bench-vsphere-"))
    address = f"127.0.{random.randint(1, 250)}.{random.randint(2, 250)}"
    sim = StorageSim(
        tmp, "-l", f"{address}:443", "-hosts", str(args.hosts), "-luns", str(args.luns), "-vms", str(args.vms), fixture=None
    )
    port = free_port()
    env = dict(os.environ, VSPHERE_HOST=address, VSPHERE_USER=USER, VSPHERE_PASSWORD=PASSWORD, VSPHERE_IGNORE_SSL="True")
    log = open(tmp / "vmware_exporter.log", "wb")
    theirs = subprocess.Popen(
        [str(theirs_bin), "-a", "127.0.0.1", "-p", str(port)], env=env, stdout=log, stderr=subprocess.STDOUT
    )
    secret = password_file(tmp)
    phases = (
        "ours discovery",
        "ours collection",
        "ours collection, following (as serve)",
        "ours render",
        "ours cold start to a complete /metrics",
        "ours cold start to the end of the walk (paths, mounts, VMs)",
        "theirs scrape",
    )
    rows = {name: [] for name in phases}
    bodies = {}
    try:
        time.sleep(2)  # twisted binding its port
        for _ in range(args.rounds):
            t = target(sim, secret, ca_file=None, insecure=True)  # the certificate names 127.0.0.1 only; theirs ignores TLS too
            for name, step in (("ours discovery", t.discover), ("ours collection", t.collect)):
                with Timer() as timer:
                    assert step(), t.error
                rows[name].append((timer.wall, timer.cpu))
            with Timer() as timer:
                bodies["ours"] = render(t)
            rows["ours render"].append((timer.wall, timer.cpu))
            t.client.close()
            # As serve collects: the inventory followed, so no VM state check before QueryPerf.
            t, stop = target(sim, secret, ca_file=None, insecure=True), threading.Event()
            loop = following(t, stop)
            with Timer() as timer:
                assert t.collect(), t.error
            rows["ours collection, following (as serve)"].append((timer.wall, timer.cpu))
            stop.set()
            loop.join(60)
            bodies["ours cold"], wall, cpu, walk_wall, walk_cpu = cold_start(
                target(sim, secret, ca_file=None, insecure=True), args.hosts
            )
            rows["ours cold start to a complete /metrics"].append((wall, cpu))
            rows["ours cold start to the end of the walk (paths, mounts, VMs)"].append((walk_wall, walk_cpu))
            before = cpu_seconds(theirs.pid)
            start = time.perf_counter()
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=600) as response:
                bodies["theirs"] = response.read()
            rows["theirs scrape"].append((time.perf_counter() - start, cpu_seconds(theirs.pid) - before))
    finally:
        theirs.terminate()
        theirs.wait(10)
        log.close()
        sim.stop()
    ours_series, theirs_series = series_count(bodies["ours"]), series_count(bodies["theirs"])
    per_object = sum(
        1 for line in bodies["ours"].splitlines() if line.startswith((b"esxi_lun_", b"esxi_adapter_", b"esxi_path_"))
    )
    theirs_per_object = sum(
        1 for line in bodies["theirs"].splitlines() if not line.startswith(b"#") and (b"naa." in line or b"vmhba" in line)
    )
    print(
        f"# vSphere collection, {args.hosts} hosts x {args.luns} LUNs (2 HBAs, 2 paths per LUN), "
        f"{args.vms} VMs per host, {args.rounds} rounds, medians"
    )
    print("| | wall s | CPU s |")
    print("|---|---:|---:|")
    med = {name: (median([w for w, _ in values]), median([c for _, c in values])) for name, values in rows.items()}
    for name in phases:
        print(f"| {name} | {med[name][0]:.3f} | {med[name][1]:.3f} |")
    ours = {
        "every 20 s (collection, following, as serve)": ("ours collection, following (as serve)",),
        "every 20 s (collection, with the VM state check)": ("ours collection",),
        "cold start in serve (start to the first complete /metrics)": ("ours cold start to a complete /metrics",),
        "cold start in serve, to the end of its walk": ("ours cold start to the end of the walk (paths, mounts, VMs)",),
        "cold (login, discovery, collection)": ("ours discovery", "ours collection"),
        "cold + rendering the text": ("ours discovery", "ours collection", "ours render"),
    }
    for label, parts in ours.items():
        wall, cpu = sum(med[p][0] for p in parts), sum(med[p][1] for p in parts)
        print(
            f"theirs scrape / ours {label}: wall {med['theirs scrape'][0] / wall:.1f}x, CPU {med['theirs scrape'][1] / cpu:.1f}x"
        )
    print(
        f"series: ours {ours_series} ({per_object} per LUN/adapter/path), theirs {theirs_series} "
        f"({theirs_per_object} naming a LUN or HBA)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
