"""Time and memory of reading hostile snapshot answers (#43): a snapshot chain N deep and a VM
whose layoutEx lists M files, parsed as the follower receives them (ElementTree, then
exporter.vsphere.space), with the memory the walk itself allocates (tracemalloc, beyond the parsed
answer) and its time, at sizes ten times apart so growth shows as linear or not.

  python3 bench/space_parse.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import tracemalloc
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from exporter.vsphere import space  # noqa: E402

NS = 'xmlns="urn:vim25"'


def chain(depth: int) -> ET.Element:
    node = ""
    for i in range(depth, 0, -1):
        node = f"<childSnapshotList><name>s{i}</name><createTime>2026-11-01T00:00:00Z</createTime>{node}</childSnapshotList>"
    return ET.fromstring(
        f"<val {NS}><rootSnapshotList><name>s0</name><createTime>2026-10-01T00:00:00Z</createTime>{node}</rootSnapshotList></val>"
    )


def layout(files: int) -> ET.Element:
    body = "<file><key>1</key><name>[ds] vm/vm.vmdk</name><type>diskDescriptor</type><size>500</size></file>"
    body += "".join(
        f"<file><key>{k}</key><name>[ds] vm/vm-{k:06d}-sesparse.vmdk</name><type>diskExtent</type><size>1000</size></file>"
        for k in range(2, files + 1)
    )
    units = "".join(f"<chain><fileKey>{k}</fileKey></chain>" for k in range(1, files + 1))
    return ET.fromstring(f"<val {NS}>{body}<disk><key>2000</key>{units}</disk></val>")


def measure(fn, arg, repeat: int) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(arg)
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    fn(arg)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return statistics.median(times), peak / 2**20


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    print(f"{'answer':34s} {'median s':>10s} {'peak MiB':>9s}")
    for depth in (100, 1_000, 10_000):
        t, mib = measure(space.snapshot_tree, chain(depth), args.repeat)
        print(f"{f'snapshot chain {depth:,} deep':34s} {t:10.4f} {mib:9.2f}")
    for files in (10_000, 100_000, 1_000_000):
        t, mib = measure(lambda e: space.snapshot_files(e, "VM vm", []), layout(files), args.repeat)
        print(f"{f'layoutEx with {files:,} files':34s} {t:10.4f} {mib:9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
