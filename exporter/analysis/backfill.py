"""Turn a capture into Prometheus history: the live exporter's series, stamped with each sample's time.

Every sample goes through the same Store and collectors as `serve`, so names, labels and counter
values are exactly what a scrape after that sample would have shown; a `run` label tells the
before and after captures apart. The output is OpenMetrics text for `promtool tsdb
create-blocks-from openmetrics`: OpenMetrics wants each family's samples together and, within it,
each series' samples together in time order, so the rendered lines are spilled to one temporary
file per family while the capture is read, then written out family by family, series by series.
Only one family's lines are in memory at a time.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from exporter.collectors import COLLECTORS
from exporter.collectors.textformat import Family, escape_label
from exporter.esxtop.lines import LongLine, bounded_lines
from exporter.esxtop.reader import COLUMN_CONFLICT, EsxtopError, EsxtopReader
from exporter.store.store import Store


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


def render_sample(store: Store, run: str, timestamp: float) -> list[tuple[Family, list[str]]]:
    """The collectors' families after this sample, as the live exporter renders them, stamped."""
    run_label, stamp = f'run="{escape_label(run)}"', f"{timestamp:.3f}"
    with store.lock:
        return [
            (family, [_stamp(line, run_label, stamp) for line in family.lines])
            for collect, enabled in COLLECTORS.values()
            if enabled
            for family in collect(store)
            if family.lines
        ]


class _FamilySpill:
    """One temporary file per family, filled in time order while the capture is read."""

    def __init__(self, directory: str):
        self.directory = directory
        self.files: dict[str, tuple[Family, object]] = {}

    def write(self, family: Family, lines: list[str]) -> None:
        entry = self.files.get(family.name)
        if entry is None:
            path = Path(self.directory) / f"{len(self.files)}.om"
            entry = self.files[family.name] = (family, open(path, "w+", encoding="utf-8"))
        entry[1].writelines(lines)

    def drain(self, out) -> None:
        """Each family under its TYPE line, each series' samples together, still in time order."""
        for family, handle in self.files.values():
            handle.seek(0)
            lines = handle.readlines()
            handle.close()
            lines.sort(key=_series_key)  # stable: a series keeps its time order
            name = family.name.removesuffix("_total") if family.kind == "counter" else family.name
            out.write(f"# TYPE {name} {family.kind}\n")
            out.writelines(lines)


def _series_key(line: str) -> str:
    return line.rsplit(" ", 2)[0]  # 'name{labels} value timestamp': label values may hold spaces


def write_openmetrics(capture_path: str, run: str, out, progress=None, notes: list | None = None) -> int:
    """Write the OpenMetrics history of a capture to `out`; return the number of samples read.

    A bad line is fatal (EsxtopError) unless it is the last one, which an interrupted esxtop
    leaves cut short: that one is reported in `notes` and the samples before it are kept.
    """
    store, reader = Store(), EsxtopReader(capture_path)
    count, pending = 0, None
    with tempfile.TemporaryDirectory() as spill_dir:
        spill = _FamilySpill(spill_dir)
        count, pending = _read(capture_path, run, store, reader, spill, progress, notes)
        if reader.layout is None:
            raise EsxtopError("no_header", f"{capture_path}:1: no esxtop header")
        spill.drain(out)
    if pending is not None and notes is not None:
        notes.append(f"{pending} (the last line, ignored; using the {count} samples before it)")
    out.write("# EOF\n")
    return count


def _read(capture_path: str, run: str, store: Store, reader: EsxtopReader, spill: _FamilySpill, progress, notes=None):
    count, pending = 0, None
    with open(capture_path, "rb") as raw:
        for line in bounded_lines(raw):  # the one line cap: a 2 GB line is never held
            if progress is not None:
                progress.advance(len(line) if line.__class__ is not LongLine else int(line))
            if pending is not None and line.strip():
                raise pending
            try:
                sample = reader.feed(line)
                for reason, message in reader.rejected:
                    if reason != COLUMN_CONFLICT:  # a NaN, infinite or negative cell: never dropped silently
                        raise EsxtopError(reason, message)
            except EsxtopError as err:
                if reader.layout is None:
                    raise
                pending = err
                continue
            for reason, message in reader.rejected:  # two columns of one value disagree: the first is used
                store.count_parse_error(reader.name, reason)
                if notes is not None:
                    notes.append(message)
            if sample is not None:
                store.ingest(sample)
                for family, lines in render_sample(store, run, sample.timestamp):
                    spill.write(family, lines)
                count += 1
    return count, pending


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
