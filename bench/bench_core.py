"""Core benchmark: esxtop per-sample cost and scrape cost, side by side in one run.

    python3 bench/bench_core.py            # full run (~1 min)
    python3 bench/bench_core.py --quick    # fewer repetitions

Per-sample cost: our reader's feed() on one data row of a 5,000- and a 50,000-column capture,
against a plain split-and-convert-everything loop, the csv module converting everything, and
pandas.read_csv on the row. Scrape cost: rendering the exposition for 5,000 and 50,000 series
(once per new sample) and serving the cached body over HTTP. Memory: peak RSS of a fresh process
holding 50,000 series. Medians of repeated runs; ratios are against our reader in the same run.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from exporter.esxtop import EsxtopReader  # noqa: E402
from exporter.serving.exposition import Exposition  # noqa: E402
from exporter.serving.http import MetricsServer  # noqa: E402
from exporter.store.store import Store  # noqa: E402
from simulators.esxtop_csv import DEVICE_COUNTERS, header, row  # noqa: E402
from simulators.esxtop_csv import IO_COUNTERS as IO  # noqa: E402


def wide_columns(total: int):
    """A capture shaped like a real -a one: a disk block (devices, paths, per-world) among many
    CPU/memory/network columns that the exporter skips."""
    scale = total / 50_000
    cols = []
    for a in range(max(1, int(8 * scale))):
        cols += [("Physical Disk Adapter", f"vmhba{a}", c) for c in IO]
    for d in range(max(1, int(64 * scale))):
        dev = f"naa.6000{d:028x}"
        cols += [("Physical Disk SCSI Device", dev, c) for c in DEVICE_COUNTERS]
        for p in range(2):
            cols += [("Physical Disk Path", f"vmhba{p}:C0:T{d}:L0", c) for c in IO]
        for w in range(8):
            cols += [("Physical Disk Per-Device-Per-World", f"{dev}-{100000 + w}", c) for c in DEVICE_COUNTERS]
    i = 0
    while len(cols) < total - 1:
        cols.append(("Vcpu", f"{i // 12}:vm{i // 120}:{200000 + i // 12}:vmx-vcpu-{i % 12}", "% Used"))
        i += 1
    return cols


def capture(total: int):
    cols = wide_columns(total)
    head = header("esx-bench", cols)
    rows = [row(1_700_000_000 + 5 * i, [float(j % 97) for j in range(len(cols))]) for i in range(3)]
    return head, rows, len(cols) + 1


def median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def bench_reader(total: int, repeat: int) -> dict:
    head, rows, width = capture(total)
    reader = EsxtopReader("bench")
    reader.feed(head)
    reader.feed(rows[0])
    line = rows[1]

    def ours():
        reader.feed(line)

    def split_all():
        cells = line.rstrip(",\n").split(",")
        return [float(c.strip('"')) for c in cells[1:]]

    def csv_all():
        cells = next(csv.reader([line]))
        return [float(c) for c in cells[1:-1]]

    import pandas as pd

    def pandas_row():
        return pd.read_csv(io.StringIO(head + "\n" + line + "\n"))

    result = {"columns": width, "converted": len(reader.layout.targets)}
    result["ours_ms"] = median_ms(ours, repeat)
    result["split_all_ms"] = median_ms(split_all, repeat)
    result["csv_all_ms"] = median_ms(csv_all, repeat)
    result["pandas_read_csv_ms"] = median_ms(pandas_row, max(3, repeat // 10))
    return result


def store_with_series(target: int) -> tuple[Store, int]:
    """A store whose exposition has about `target` series (default esxtop field set)."""
    cols_per_lun = [("Physical Disk SCSI Device", None, c) for c in DEVICE_COUNTERS]
    series_per_lun = 19  # 5 queue gauges + 5 rate counters + 4 latency counters + 4 latency gauges + 1
    luns = max(1, target // series_per_lun)
    cols = [(o, f"naa.6000{d:028x}", c) for d in range(luns) for o, _, c in cols_per_lun]
    reader = EsxtopReader("bench")
    reader.feed(header("esx-bench", cols))
    store = Store()
    for i in range(2):
        store.ingest(reader.feed(row(1_700_000_000 + 5 * i, [float(j % 31 + 1) for j in range(len(cols))])))
    body = Exposition(store).body().decode()
    series = sum(1 for line in body.splitlines() if line and not line.startswith("#"))
    return store, series


def bench_scrape(target: int, repeat: int) -> dict:
    store, series = store_with_series(target)
    exposition = Exposition(store)

    def render():
        store.touch()  # a new sample: the body must be rendered again
        exposition.body()

    server = MetricsServer(exposition, "127.0.0.1:0")
    server.serve_in_thread()
    url = f"http://127.0.0.1:{server.address[1]}/metrics"

    def scrape_cached():
        with urllib.request.urlopen(url) as response:
            response.read()

    result = {"series": series, "render_ms": median_ms(render, repeat), "cached_scrape_ms": median_ms(scrape_cached, repeat)}
    server.shutdown()
    return result


def rss_child(target: int) -> float:
    """Peak RSS (VmHWM, MB) of a fresh process holding `target` series after one render.
    getrusage's ru_maxrss would carry over the forking parent's peak (it survives exec)."""
    code = (
        "import sys; sys.path.insert(0, %r);"
        "from bench.bench_core import store_with_series; from exporter.serving.exposition import Exposition;"
        "s, n = store_with_series(%d); Exposition(s).body();"
        "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')))" % (str(ROOT), target)
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip()) / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    repeat = 20 if args.quick else 100
    report = {
        "reader": [bench_reader(n, repeat) for n in (5_000, 50_000)],
        "scrape": [bench_scrape(n, max(5, repeat // 5)) for n in (5_000, 50_000)],
        "peak_rss_mb_50k_series": rss_child(50_000),
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print("per-sample cost (median ms per row)")
    print(f"{'columns':>8} {'converted':>9} {'ours':>7} {'split+float all':>16} {'csv+float all':>14} {'pandas.read_csv':>16}")
    for r in report["reader"]:
        print(
            f"{r['columns']:>8} {r['converted']:>9} {r['ours_ms']:>7.2f} "
            f"{r['split_all_ms']:>9.2f} ({r['split_all_ms'] / r['ours_ms']:.1f}x) "
            f"{r['csv_all_ms']:>7.2f} ({r['csv_all_ms'] / r['ours_ms']:.1f}x) "
            f"{r['pandas_read_csv_ms']:>8.1f} ({r['pandas_read_csv_ms'] / r['ours_ms']:.0f}x)"
        )
    print("\nscrape cost (median ms)")
    print(f"{'series':>8} {'render once per sample':>23} {'cached scrape over HTTP':>24}")
    for r in report["scrape"]:
        print(f"{r['series']:>8} {r['render_ms']:>23.1f} {r['cached_scrape_ms']:>24.2f}")
    print(f"\npeak RSS of a process holding ~50,000 series: {report['peak_rss_mb_50k_series']:.0f} MB")


if __name__ == "__main__":
    main()
