"""Read a generated 50,000-column x 720-row esxtop capture with our loader and with pandas.read_csv,
side by side in one run: wall time (median of N, alternating) and peak memory (each read in a fresh
process, ru_maxrss) against the file size.

    python3 bench/read_capture.py                       # generate /tmp/bench-50k.csv, 3 rounds
    python3 bench/read_capture.py --columns 20000 --rows 200 --repeat 1   # a quick look
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def generate(path: Path, columns: int, rows: int, seed: int = 0) -> None:
    """A capture shaped like a big host's `-a` run: 30 LUNs x 4 paths, 600 worlds doing I/O, 48
    PCPUs with the malformed PCPU Power State cells, and Vcpu columns filling the rest."""
    host = "esx-big.example.org"
    cells = ["(PDH-CSV 4.0) (UTC)(0)"]
    dev_counters = [
        "Device Q Depth",
        "World Q Depth",
        "Active Commands",
        "Queued Commands",
        "% Used",
        "Load",
        "Commands/sec",
        "Reads/sec",
        "Writes/sec",
        "MBytes Read/sec",
        "MBytes Written/sec",
        "Average Driver MilliSec/Command",
        "Average Kernel MilliSec/Command",
        "Average Guest MilliSec/Command",
        "Average Queue MilliSec/Command",
    ]
    io = dev_counters[6:]
    for cpu in list(range(48)) + ["_Total"]:
        cells += [f"\\\\{host}\\Physical Cpu({cpu})\\{c}" for c in ("% Processor Time", "% Util Time", "% Core Util Time")]
    for a in range(4):
        cells += [f"\\\\{host}\\Physical Disk Adapter(vmhba{a})\\{c}" for c in io]
    for lun in range(30):
        dev = f"naa.6000000000000000000000000000{lun:04d}"
        cells += [f"\\\\{host}\\Physical Disk SCSI Device({dev})\\{c}" for c in dev_counters]
        for a in range(4):
            cells += [f"\\\\{host}\\Physical Disk Path(vmhba{a}:C0:T{lun}:L0)\\{c}" for c in io]
        for w in range(20):
            cells += [f"\\\\{host}\\Physical Disk Per-Device-Per-World({dev}-{444767 + w * 135})\\{c}" for c in dev_counters]
    power = [
        f"\\\\{host}\\PCPU Power State(PCPU {p})\\{c}" for p in range(48) for c in ("%C-State C0", "%C-State C1", "%T-State T7")
    ]
    filler = columns - 1 - len(cells) - len(power)
    cells += [
        f"\\\\{host}\\Vcpu({1000 + i // 10}:vm{i // 10}:{500000 + i}:vcpu-{i % 10}:vm{i // 10})\\% Used" for i in range(filler)
    ]
    rng = np.random.default_rng(seed)
    pool = np.array([f'"{v:.2f}"' for v in rng.gamma(2.0, 8.0, 4096)])
    with open(path, "w") as out:
        # the header and every row glue an unquoted token onto a PCPU Power State cell (`-a` quirk)
        out.write(
            ",".join(f'"{c}"' for c in cells)
            + ","
            + ",".join(f'"{c}"' for c in power[:2])
            + f',   -"{power[2]}",'
            + ",".join(f'"{c}"' for c in power[3:])
            + "\n"
        )
        width = len(cells) - 1 + len(power)
        for r in range(rows):
            stamp = time.strftime('"%m/%d/%Y %H:%M:%S"', time.gmtime(1_700_000_000 + 5 * r))
            values = pool[rng.integers(0, len(pool), width)]
            values[len(cells) + 1] = '    73.1"8.93"'  # the malformed cell, in place of one cell
            out.write(stamp + "," + ",".join(values) + "\n")


def measure(kind: str, path: str) -> None:
    import pandas as pd

    from exporter.analysis.capture import load

    start = time.perf_counter()  # imports are done: time the read only
    if kind == "ours":
        capture = load(path, show_progress=False)
        shape = capture.frame.shape
    elif kind == "pandas":
        frame = pd.read_csv(path)
        shape = frame.shape
    elif kind == "baseline":  # the interpreter with pandas and pyarrow imported, reading nothing
        shape = (0, 0)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"{seconds} {peak} {shape[0]} {shape[1]}")


def run_one(kind: str, path: Path) -> tuple[float, int, str]:
    done = subprocess.run([sys.executable, __file__, "--measure", kind, str(path)], capture_output=True, text=True, check=True)
    seconds, peak, rows, cols = done.stdout.split()
    return float(seconds), int(peak), f"{rows}x{cols}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", type=Path, default=Path("/tmp/bench-50k.csv"))
    parser.add_argument("--columns", type=int, default=50_000)
    parser.add_argument("--rows", type=int, default=720)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--measure", nargs=2, metavar=("KIND", "FILE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        return measure(*args.measure)
    if not args.file.exists():
        t = time.perf_counter()
        generate(args.file, args.columns, args.rows)
        print(f"generated {args.file} in {time.perf_counter() - t:.0f} s")
    size = args.file.stat().st_size
    print(f"file: {args.file}, {size / 2**20:.0f} MiB")
    base = run_one("baseline", args.file)
    results = {"ours": [], "pandas": []}
    for _ in range(args.repeat):
        for kind in results:  # alternate, so both see the same machine load
            results[kind].append(run_one(kind, args.file))
    print(f"baseline (python + pandas + pyarrow imported): peak {base[1] / 2**20:.0f} MiB")
    for kind, runs in results.items():
        secs = statistics.median(r[0] for r in runs)
        peak = max(r[1] for r in runs)
        print(
            f"{kind:7} median {secs:6.2f} s  peak {peak / 2**20:6.0f} MiB = {peak / size:4.2f}x file  "
            f"frame {runs[0][2]}  (runs: {', '.join(f'{r[0]:.2f}' for r in runs)})"
        )
    ratio = statistics.median(r[0] for r in results["pandas"]) / statistics.median(r[0] for r in results["ours"])
    print(f"speed ratio pandas.read_csv / ours: {ratio:.1f}x")


if __name__ == "__main__":
    main()
