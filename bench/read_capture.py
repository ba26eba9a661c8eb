"""Read a generated 50,000-column x 720-row esxtop capture with our loader and with pandas.read_csv,
side by side in one run: wall time (median of N, alternating) and peak memory (each read in a fresh
process, VmHWM) against the file size.

    python3 bench/read_capture.py                       # generate /tmp/bench-50k.csv, 3 rounds
    python3 bench/read_capture.py --columns 20000 --rows 200 --repeat 1   # a quick look

With --dump SOURCE it times `dump` instead (the streaming reader and the store, what serve runs on
every sample) against pandas.read_csv, on a real capture widened to --columns x --rows: its columns
repeated under new instance names (so every name stays unique and each copy keeps the real layout
and disk share), its rows cycled after the first with 5 s timestamps. The real `-a` capture this
was measured with is RS-big (docs: esxtop-format.md), kept as a fixture:

    python3 bench/read_capture.py --dump tests/fixtures/esxtop/esxi65-all-counters-4samples.csv --columns 50000 --rows 360 --repeat 5
"""

from __future__ import annotations

import argparse
import calendar
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
# --base: the dump runs read the other checkout's exporter package (this file is the same).
sys.path.insert(0, os.environ.get("BENCH_EXPORTER_ROOT", str(ROOT)))
sys.path.insert(1, str(ROOT))  # this checkout's simulators, whichever exporter is measured

from exporter.esxtop.reader import parse_column  # noqa: E402
from simulators.esxtop_csv import DEVICE_COUNTERS  # noqa: E402


def generate(path: Path, columns: int, rows: int, seed: int = 0) -> None:
    """A capture shaped like a big host's `-a` run: 30 LUNs x 4 paths, 600 worlds doing I/O, 48
    PCPUs with the malformed PCPU Power State cells, and Vcpu columns filling the rest."""
    host = "esx-big.example.org"
    cells = ["(PDH-CSV 4.0) (UTC)(0)"]
    dev_counters = [DEVICE_COUNTERS[0], "World Q Depth", *DEVICE_COUNTERS[1:]]
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


_CELL = re.compile(r'"(\\\\[^"]*)"')
_VMHBA = re.compile(r"vmhba(\d+)")
_DEVICE = re.compile(r"^(naa|t10|eui)\.")
_GROUP = re.compile(r"^(\d+):")


def _renamed(name: str, copy: int) -> str:
    """One header cell's name in the copy-th repeat of a capture: the same object and counter,
    a new instance (adapters renumbered, devices, VMs and groups renamed)."""
    parsed = parse_column(name)
    if copy == 0 or parsed is None:
        return name
    host, obj, instance, counter = parsed
    if instance is None:
        return f"\\\\{host}\\{obj}\\{counter} ({copy})"
    if "vmhba" in instance:  # adapters, paths, mpx devices and their per-world and partition objects
        instance = _VMHBA.sub(lambda m: f"vmhba{int(m.group(1)) + 100 * copy}", instance)
    elif _DEVICE.match(instance):  # naa./t10. devices and the <device>-<n> objects after them
        instance = f"{instance[:4]}w{copy}{instance[4:]}"
    elif obj == "Virtual Disk":
        instance = f"r{copy}-{instance}"
    elif _GROUP.match(instance):  # Group Cpu / Vcpu / Group Memory: a new group id
        instance = _GROUP.sub(lambda m: f"{int(m.group(1)) + 10_000_000 * copy}:", instance)
    else:
        instance = f"{instance} r{copy}"
    return f"\\\\{host}\\{obj}({instance})\\{counter}"


def widen(source: Path, path: Path, columns: int, rows: int) -> int:
    """Write `source` widened to at least `columns` columns and `rows` rows; returns the columns.
    Works on the raw text, so esxtop's malformed cells (quirk 2) stay as they were."""
    lines = source.read_text().splitlines()
    head, data = lines[0], [line for line in lines[1:] if line.strip()]
    trailing = head.endswith(",")
    cells = head.rstrip(",").split(",")  # esxtop header cells hold no comma (esxtop-format.md)
    copies = -(-(columns - 1) // (len(cells) - 1))
    widened = [cells[0]]
    for copy in range(copies):
        widened += [_CELL.sub(lambda m, k=copy: '"' + _renamed(m.group(1), k) + '"', cell) for cell in cells[1:]]
    tail = "," if trailing else ""
    first = calendar.timegm(time.strptime(data[0].split(",", 1)[0].strip('"'), "%m/%d/%Y %H:%M:%S"))
    with open(path, "w") as out:
        out.write(",".join(widened) + tail + "\n")
        for n in range(rows):
            # The first row (esxtop's all-zero one) once, then the real rows after it in turn.
            line = data[0] if n == 0 or len(data) == 1 else data[1 + (n - 1) % (len(data) - 1)]
            stamp = time.strftime('"%m/%d/%Y %H:%M:%S"', time.gmtime(first + 5 * n))
            rest = line.rstrip(",").split(",", 1)[1]
            out.write(stamp + ("," + rest) * copies + tail + "\n")
    return len(widened)


def dump(path: str) -> tuple[int, int]:
    """`esxi-storage-exporter dump --esxtop-file path`, its exposition to /dev/null: (rows, series)."""
    from exporter.app import App
    from exporter.commands.serve import resolve
    from exporter.configuration.flags import add_option_flags, exporter_options

    parser = argparse.ArgumentParser()
    add_option_flags(parser, exporter_options())
    app = App(resolve(parser.parse_args(["--esxtop-file", path])))
    rows = 0

    def counted(sample):
        nonlocal rows
        rows += 1
        ingest(sample)

    ingest, app.store.ingest = app.store.ingest, counted
    app.load_files()
    body = app.exposition().body()
    with open(os.devnull, "wb") as out:
        out.write(body)
    return rows, body.count(b"\n")


def measure(kind: str, path: str) -> None:
    if kind.startswith("dump"):
        import exporter.app  # noqa: F401  (the imports are not the read)
    else:
        import pandas as pd

        from exporter.analysis.capture import load

    start, cpu = time.perf_counter(), time.process_time()  # imports are done: time the read only
    if kind == "dump":
        shape = dump(path)
    elif kind == "dump-baseline":  # the interpreter with the exporter imported, reading nothing
        shape = (0, 0)
    elif kind == "ours":
        capture = load(path, show_progress=False)
        shape = capture.frame.shape
    elif kind == "pandas":
        frame = pd.read_csv(path)
        shape = frame.shape
    elif kind == "baseline":  # the interpreter with pandas and pyarrow imported, reading nothing
        shape = (0, 0)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    # VmHWM, this process's own peak: ru_maxrss carries over the forking parent's (it survives exec)
    peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM")) * 1024
    print(f"{seconds} {peak} {shape[0]} {shape[1]} {cpu}")


def run_one(kind: str, path: Path, checkout: Path | None = None) -> tuple[float, int, str, float]:
    """(wall seconds, peak RSS bytes, shape, CPU seconds) of one read in a fresh process."""
    env = dict(os.environ, BENCH_EXPORTER_ROOT=str(checkout)) if checkout else None
    done = subprocess.run(
        [sys.executable, __file__, "--measure", kind, str(path)], capture_output=True, text=True, check=True, env=env
    )
    seconds, peak, rows, cols, cpu = done.stdout.split()
    return float(seconds), int(peak), f"{rows}x{cols}", float(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", type=Path, default=Path("/tmp/bench-50k.csv"))
    parser.add_argument("--columns", type=int, default=50_000)
    parser.add_argument("--rows", type=int, default=720)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dump", type=Path, metavar="SOURCE", help="time dump on this real capture, widened")
    parser.add_argument("--base", type=Path, help="with --dump: also time dump of this checkout (its exporter/), alternating")
    parser.add_argument("--measure", nargs=2, metavar=("KIND", "FILE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        return measure(*args.measure)
    if args.dump:
        return main_dump(args)
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


def main_dump(args) -> None:
    path = args.file if args.file != Path("/tmp/bench-50k.csv") else Path(f"/tmp/bench-dump-{args.columns}x{args.rows}.csv")
    if not path.exists():
        t = time.perf_counter()
        width = widen(args.dump, path, args.columns, args.rows)
        print(f"widened {args.dump} to {path}: {width:,} columns x {args.rows} rows in {time.perf_counter() - t:.0f} s")
    size = path.stat().st_size
    print(f"file: {path}, {size / 2**20:.0f} MiB")
    base = run_one("dump-baseline", path)
    checkouts = {"dump": None, "pandas": None}
    if args.base:
        checkouts = {"base": args.base.resolve(), **checkouts}
    results = {name: [] for name in checkouts}
    for _ in range(args.repeat):
        for name, checkout in checkouts.items():  # alternate, so all see the same machine load
            results[name].append(run_one("pandas" if name == "pandas" else "dump", path, checkout))
    print(f"baseline (python + the exporter imported): peak {base[1] / 2**20:.0f} MiB")
    for kind, runs in results.items():
        secs = statistics.median(r[0] for r in runs)
        peak = max(r[1] for r in runs)
        print(
            f"{kind:7} median {secs:6.2f} s  peak {peak / 2**20:6.0f} MiB = {peak / size:4.2f}x file  "
            f"{'frame' if kind == 'pandas' else 'rows x series'} {runs[0][2]}  (runs: {', '.join(f'{r[0]:.2f}' for r in runs)})"
        )
    rows = int(results["dump"][0][2].split("x")[0])
    # CPU seconds too: on a shared machine the wall times carry the other jobs' load, which slows
    # pandas (its 700 MiB of allocations) more than it slows dump.
    pandas = [statistics.median(r[i] for r in results["pandas"]) for i in (0, 3)]
    for kind in ("base", "dump") if args.base else ("dump",):
        wall, cpu = (statistics.median(r[i] for r in results[kind]) for i in (0, 3))
        print(
            f"{kind}: {1000 * wall / rows:.2f} ms per row (the header's parse included), pandas.read_csv / {kind} = "
            f"{pandas[0] / wall:.2f}x; CPU {cpu:.2f} s against pandas' {pandas[1]:.2f} s = {pandas[1] / cpu:.2f}x"
        )


if __name__ == "__main__":
    main()
