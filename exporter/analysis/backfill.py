"""Turn a capture into Prometheus history: the live exporter's series, stamped with each sample's time.

Every sample goes through the same Store and collectors as `serve`, so names, labels and counter
values are exactly what a scrape after that sample would have shown; a `run` label tells the
before and after captures apart. The output is OpenMetrics text in time order (no TYPE lines:
a block keeps no metadata, and the exporter's counter and gauge families of one latency share a
name, which OpenMetrics metadata cannot express), for `promtool tsdb create-blocks-from openmetrics`.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from exporter.collectors import COLLECTORS
from exporter.esxtop.reader import EsxtopError, EsxtopReader
from exporter.state import Store
from exporter.textformat import escape_label


def _stamp(line: str, run_label: str, timestamp: str) -> str:
    """'name{a="b"} 1.0\n' -> 'name{a="b",run="x"} 1.0 <timestamp>\n' (label values may hold spaces:
    the value is after the last one)."""
    series, value = line.rstrip("\n").rsplit(" ", 1)
    if series.endswith("{}"):
        series = f"{series[:-2]}{{{run_label}}}"
    elif series.endswith("}"):
        series = f"{series[:-1]},{run_label}}}"
    else:
        series = f"{series}{{{run_label}}}"
    return f"{series} {value} {timestamp}\n"


def render_sample(store: Store, run: str, timestamp: float) -> list[str]:
    """The collectors' series after this sample, as the live exporter renders them, stamped."""
    run_label, stamp = f'run="{escape_label(run)}"', f"{timestamp:.3f}"
    with store.lock:
        return [
            _stamp(line, run_label, stamp)
            for collect, enabled in COLLECTORS.values()
            if enabled
            for family in collect(store)
            for line in family.lines
        ]


def write_openmetrics(capture_path: str, run: str, out, progress=None, notes: list | None = None) -> int:
    """Write the OpenMetrics history of a capture to `out`; return the number of samples read.

    A bad line is fatal (EsxtopError) unless it is the last one, which an interrupted esxtop
    leaves cut short: that one is reported in `notes` and the samples before it are kept.
    """
    store, reader = Store(), EsxtopReader(capture_path)
    count, pending = 0, None
    with open(capture_path, encoding="utf-8", errors="replace", newline=None) as stream:
        for line in stream:
            if progress is not None:
                progress.advance(len(line))
            if pending is not None and line.strip():
                raise pending
            try:
                sample = reader.feed(line)
            except EsxtopError as err:
                if reader.layout is None:
                    raise
                pending = err
                continue
            if sample is not None:
                store.ingest(sample)
                out.writelines(render_sample(store, run, sample.timestamp))
                count += 1
    if reader.layout is None:
        raise EsxtopError("no_header", f"{capture_path}:1: no esxtop header")
    if pending is not None and notes is not None:
        notes.append(f"{pending} (the last line, ignored; using the {count} samples before it)")
    out.write("# EOF\n")
    return count


def create_blocks(openmetrics_file: Path, tsdb: Path) -> str:
    promtool = shutil.which("promtool")
    if promtool is None:
        raise RuntimeError("promtool not found on PATH (Debian package prometheus)")
    tsdb.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", str(openmetrics_file), str(tsdb)], capture_output=True, text=True
    )
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines() or ["(no output)"]
        raise RuntimeError(f"promtool failed: {lines[-1]}")
    return done.stdout


def backfill(capture_path: str, tsdb: Path, run: str, keep: Path | None = None, progress=None, notes: list | None = None) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        target = keep or Path(tmp) / "capture.om"
        with open(target, "w", encoding="utf-8") as out:
            count = write_openmetrics(capture_path, run, out, progress, notes)
        create_blocks(target, tsdb)
    return count
