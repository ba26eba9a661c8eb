"""Synthetic esxtop captures with a known difference, for the analysis tests (compare, capacity,
backfill) until simulator captures are available: a closed queue of VMs on one LUN behind one or
two adapters, with autocorrelated noise (AR(1), like real queues) from a seed."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from simulators.esxtop_csv import DEVICE_COUNTERS, device_columns, header, row
from simulators.esxtop_csv import IO_COUNTERS as PATH_COUNTERS

DEVICE = "naa.600601601e3021001a2b3c4d5e6f0001"
HOST = "esx01.lab.local"


@dataclass
class Setup:
    dqlen: int = 32
    vms: int = 4
    oio: int = 16  # outstanding commands each VM keeps
    links: int = 1
    link_mib: float = 200.0  # MiB/s one link carries
    block_kib: float = 4.0
    service_ms: float = 5.0  # per command while the array keeps up
    conflicts: float = 0.0  # reservation conflicts per second


def _ar1(rng, phi=0.8, sigma=0.05):
    value = 0.0
    while True:
        value = phi * value + rng.gauss(0, sigma)
        yield value


def write(
    path: Path,
    setup: Setup,
    seed: int,
    samples: int = 720,
    interval: float = 5.0,
    start: float = 1_700_000_000.0,
    truncate_last: bool = False,
) -> Path:
    rng = random.Random(seed)
    noise = _ar1(rng)
    adapters = [f"vmhba{i + 1}" for i in range(setup.links)]
    paths = [f"{a}:C0:T0:L1" for a in adapters]
    worlds = [str(444767 + 135 * i) for i in range(setup.vms)]
    cols = [("Physical Cpu", "_Total", "% Util Time")]
    for i, w in enumerate(worlds):
        cols.append(("Vcpu", f"{1302698 + i}:vm{i + 1}:{w}:vmx", "% Used"))
    for a in adapters:
        cols += [("Physical Disk Adapter", a, c) for c in PATH_COUNTERS]
    extra = ["Reserves/sec", "Conflicts/sec"]
    cols += device_columns(DEVICE, DEVICE_COUNTERS + extra)
    for p in paths:
        cols += [("Physical Disk Path", p, c) for c in PATH_COUNTERS]
    for w in worlds:
        cols += [("Physical Disk Per-Device-Per-World", f"{DEVICE}-{w}", c) for c in ("Active Commands", "Queued Commands")]
    lines = [header(HOST, cols)]
    demand = setup.vms * setup.oio
    link_cap = setup.links * setup.link_mib * (1 + 0.0)
    for n in range(samples):
        ts = start + n * interval
        if n == 0:  # esxtop's first sample: rates and latencies all zero, DQLEN already set
            values = [0.0] * len(cols)
            values[cols.index(("Physical Disk SCSI Device", DEVICE, "Device Q Depth"))] = setup.dqlen
            lines.append(row(ts, values))
            continue
        e = next(noise)
        actv = min(demand, setup.dqlen)
        qued = max(0, demand - setup.dqlen)
        davg = setup.service_ms * (1 + e)
        iops = actv / (davg / 1000)
        mib = iops * setup.block_kib / 1024
        if mib > link_cap:  # the link is the bottleneck: commands wait in the fabric, DAVG grows
            mib = link_cap * (1 - abs(e) / 10)
            iops = mib * 1024 / setup.block_kib
            davg = actv / iops * 1000
        kavg = qued / iops * 1000 if qued else 0.01
        gavg = davg + kavg
        conflicts = max(0.0, setup.conflicts * (1 + e))
        lun = {
            "Device Q Depth": setup.dqlen,
            "Active Commands": actv,
            "Queued Commands": qued,
            "% Used": 100 * actv / setup.dqlen,
            "Load": (actv + qued) / setup.dqlen,
            "Commands/sec": iops,
            "Reads/sec": iops,
            "Writes/sec": 0.0,
            "MBytes Read/sec": mib,
            "MBytes Written/sec": 0.0,
            "Average Driver MilliSec/Command": davg,
            "Average Kernel MilliSec/Command": kavg,
            "Average Guest MilliSec/Command": gavg,
            "Average Queue MilliSec/Command": max(kavg - 0.01, 0),
            "Reserves/sec": conflicts * 2,
            "Conflicts/sec": conflicts,
        }
        share = {
            "Commands/sec": iops / setup.links,
            "Reads/sec": iops / setup.links,
            "Writes/sec": 0.0,
            "MBytes Read/sec": mib / setup.links,
            "MBytes Written/sec": 0.0,
            "Average Driver MilliSec/Command": davg,
            "Average Kernel MilliSec/Command": kavg,
            "Average Guest MilliSec/Command": gavg,
            "Average Queue MilliSec/Command": max(kavg - 0.01, 0),
        }
        values = []
        for obj, _inst, counter in cols:
            if obj == "Physical Cpu":
                values.append(20 + 5 * e)
            elif obj == "Vcpu":
                values.append(10.0)
            elif obj == "Physical Disk SCSI Device":
                values.append(lun[counter])
            elif obj in ("Physical Disk Adapter", "Physical Disk Path"):
                values.append(share[counter])
            else:
                values.append(actv / setup.vms if counter == "Active Commands" else qued / setup.vms)
        lines.append(row(ts, [round(v, 2) if not isinstance(v, int) else v for v in values]))
    text = "\n".join(lines) + "\n"
    if truncate_last:
        text = text[: len(text) - len(lines[-1]) // 2 - 1]
    path.write_text(text)
    return path
