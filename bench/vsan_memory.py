"""Peak memory of reading one VsanPerfQueryPerf answer that names many entities the cluster's
discovery does not (issue 37: 100,000 of them took the exporter from 44 MiB to 1,148 MiB).

Each reading runs in a child process of its own, and its peak RSS (VmHWM) is reported:
- `normal`: an answer of the cluster's own entities only;
- `streamed`: the answer with --unknown more entities, read as the exporter reads it now
  (exporter.vsan.perf.read_answer over xmlguard.iter_answer: each entity read when it ends, an
  unknown one counted and dropped there);
- `whole-tree`: the same answer read as the code before did: the body read whole, parsed into
  one ElementTree, then each entity read and the unknown ones dropped.
The cap sized to the cluster (exporter.vsan.perf.answer_cap) would refuse this answer long before
its end; the readings here run without it (under the process-wide --vsphere.max-answer-size
raised to fit) to measure the reader itself.

    python3 -m bench.vsan_memory                       # 100,000 unknown entities
    python3 -m bench.vsan_memory --unknown 20000 --modes normal,streamed
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KIND = "virtual-machine"
LABELS = ("iopsRead", "iopsWrite", "throughputRead", "throughputWrite", "latencyRead", "latencyWrite")
TIMES = ("2026-11-25 15:20:00", "2026-11-25 15:25:00", "2026-11-25 15:30:00")
_OPEN = (
    '<?xml version="1.0" encoding="UTF-8"?><soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" '
    'xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><soapenv:Body>'
    '<VsanPerfQueryPerfResponse xmlns="urn:vsan">'
)
_CLOSE = "</VsanPerfQueryPerfResponse></soapenv:Body></soapenv:Envelope>"


def known_uuids(count: int) -> list[str]:
    return [f"5000c29a-0000-4000-8000-{n:012d}" for n in range(count)]


def entity(uuid: str, seed: int) -> str:
    """One VsanPerfEntityMetricCSV as the service writes it: every metric id in full."""
    series = "".join(
        f"<value><metricId><label>{label}</label><group>vsan-vm</group><rollupType>average</rollupType>"
        f"<statsType>rate</statsType><name>{label}</name><description>{label} of the VM</description>"
        f"<metricsCollectInterval>300</metricsCollectInterval></metricId>"
        f"<values>{','.join(str(seed % 997 + i * 7 + j) for j in range(len(TIMES)))}</values></value>"
        for i, label in enumerate(LABELS)
    )
    return (
        f'<returnval xsi:type="VsanPerfEntityMetricCSV"><entityRefId>{KIND}:{uuid}</entityRefId>'
        f"<sampleInfo>{','.join(TIMES)}</sampleInfo>{series}</returnval>"
    )


def write_answer(path: Path, known: int, unknown: int) -> int:
    """An answer of `known` entities the discovery names and `unknown` it does not, the unknown
    ones between the known ones; written piece by piece. Returns its size in bytes."""
    uuids = known_uuids(known)
    head, _, tail = entity("UUID", 0).partition("UUID")  # the unknown ones alike but for their uuid
    with open(path, "w", encoding="ascii") as out:
        out.write(_OPEN)
        step = max(1, unknown // max(1, known))
        written = 0
        for n in range(unknown):
            if uuids and n % step == 0 and written < known:
                out.write(entity(uuids[written], written))
                written += 1
            out.write(f"{head}7e57{n % 65536:04x}-dead-4bad-8000-{n:012d}{tail}")
        for i in range(written, known):
            out.write(entity(uuids[i], i))
        out.write(_CLOSE)
    return path.stat().st_size


_CHILD = r"""
import json, sys
import xml.etree.ElementTree as ET
from exporter.vsan import perf, perfcsv
from exporter.vsphere import xmlguard

path, mode, known = sys.argv[1], sys.argv[2], int(sys.argv[3])
xmlguard.limit_answers(1 << 40)  # the reader itself is measured, not the cap
names = perfcsv.Names(vms={u: f"vm{i:05d}" for i, u in enumerate(json.loads(sys.argv[4]))})
dropped = {}
with open(path, "rb") as stream:
    if mode == "whole-tree":  # the code before: the body whole, one tree, then filtered
        root = xmlguard.parse(xmlguard.read_answer(stream))
        rows = []
        for element in root.iterfind(".//{*}returnval"):
            values = [(s.find("{*}metricId").findtext("{*}label"), s.findtext("{*}values"), None) for s in element.iterfind("{*}value")]
            row = perfcsv.parse_entity(element.findtext("{*}entityRefId"), element.findtext("{*}sampleInfo"), values, dropped)
            if row is not None and perfcsv.named(row.kind, row.uuid, names):
                rows.append(row)
            elif row is not None:
                dropped["unknown_entity"] = dropped.get("unknown_entity", 0) + 1
    else:
        rows = perf.read_answer(xmlguard.iter_answer(stream), names, dropped)
sample = perfcsv.sample_at(rows, perfcsv.parse_time(sys.argv[5]), names, dropped)
# VmHWM, the child's own peak: ru_maxrss carries over the peak of a parent that forked it (a
# pytest worker that read a 300 MiB capture before), since it survives exec
peak = next(int(line.split()[1]) for line in open('/proc/self/status') if line.startswith('VmHWM')) * 1024
print(json.dumps({"peak": peak, "rows": len(rows), "vms": len(sample.vms), "dropped": dropped,
                  "first": sample.vms.get("vm00000")}))
"""


def measure(path: Path, mode: str, known: int) -> dict:
    """Read the answer at `path` in a child process; its peak RSS (bytes) and what it read."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-c", _CHILD, str(path), mode, str(known), json.dumps(known_uuids(known)), TIMES[-1]]
    done = subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT, timeout=900, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{mode} reader failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--unknown", type=int, default=100_000, help="entities the discovery does not name (100000)")
    parser.add_argument("--known", type=int, default=40, help="entities the discovery names (40)")
    parser.add_argument("--modes", default="normal,streamed,whole-tree", help="readings to run (normal,streamed,whole-tree)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        normal, hostile = Path(tmp) / "normal.xml", Path(tmp) / "hostile.xml"
        sizes = {"normal": write_answer(normal, args.known, 0), "hostile": write_answer(hostile, args.known, args.unknown)}
        print(
            f"answer: {args.known} known entities, {sizes['normal'] / 1024:.0f} kB; with {args.unknown:,} unknown, {sizes['hostile'] / 2**20:.0f} MiB"
        )
        for mode in args.modes.split(","):
            got = measure(normal if mode == "normal" else hostile, mode, args.known)
            print(
                f"{mode:>10}: peak RSS {got['peak'] / 2**20:6.0f} MiB, {got['vms']} VMs placed, "
                f"{got['dropped'].get('unknown_entity', 0):,} unknown entities dropped"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
