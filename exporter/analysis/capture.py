"""Load a saved esxtop capture into pandas, reading only the columns the exporter uses.

A capture can be 50,000 columns x 720 rows (hundreds of MB); a DataFrame of every column costs
6-7x the file in memory. The header is parsed once by the core reader's `Layout` (which knows the
needed columns); the rows are then streamed through pyarrow's CSV reader with `include_columns`,
so only those columns are ever converted. pyarrow tokenizes the malformed `PCPU Power State` cells
of `-a` captures (`    73.1"8.93"`) like any other cell, and they are never converted.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pcsv

from exporter.esxtop.reader import HEADER_MARK, EsxtopError, EsxtopReader, read_file
from exporter.analysis.progress import CountingFile, Progress

MIN_BLOCK = 16 << 20  # pyarrow needs a block larger than the longest row


class CaptureError(ValueError):
    """A capture that cannot be analysed; the message is one line naming the file (and line)."""


@dataclass
class Capture:
    path: str
    host: str
    timestamps: np.ndarray  # unix seconds, one per sample
    intervals: np.ndarray  # seconds since the previous sample; NaN for the first (not a measurement)
    frame: pd.DataFrame  # one row per sample; columns (family, object, field), base units
    world_vms: dict[str, str] = field(default_factory=dict)
    path_devices: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # things the user must know (a truncated last line)

    @property
    def measured(self) -> np.ndarray:
        """Row mask of the samples that are measurements (all but esxtop's first)."""
        return ~np.isnan(self.intervals)

    def objects(self, family: str) -> list:
        cols = self.frame.columns
        return list(dict.fromkeys(cols[cols.get_level_values(0) == family].get_level_values(1)))

    def series(self, family: str, obj, name: str) -> pd.Series | None:
        key = (family, obj, name)
        return self.frame[key] if key in self.frame.columns else None


def _read_header(raw, path: str) -> tuple[EsxtopReader, bytes]:
    first = raw.readline()
    while first and not first.strip():
        first = raw.readline()
    if not first:
        raise CaptureError(f"{path}: empty file, not an esxtop capture")
    text = first.decode("utf-8", errors="replace")
    if text.find(HEADER_MARK, 0, 65536) < 0:
        raise CaptureError(f'{path}:1: not an esxtop capture (no "{HEADER_MARK} 4.0) (UTC)(0)" header on the first line)')
    reader = EsxtopReader(path)
    reader.feed(text)
    if not reader.layout.targets:
        raise CaptureError(f"{path}:1: esxtop header without any disk or CPU column the analysis uses")
    return reader, first


def load(path: str | os.PathLike, show_progress: bool | None = None) -> Capture:
    """Read `path`; raise CaptureError with a one-line message on input that cannot be used."""
    path = str(path)
    try:
        size = os.path.getsize(path)
        raw = open(path, "rb")
    except OSError as err:
        raise CaptureError(f"{path}: {err.strerror}") from None
    progress = Progress(os.path.basename(path), size, enabled=show_progress)
    with raw:
        reader, header = _read_header(raw, path)
        progress.advance(len(header))
        layout = reader.layout
        names = [f"c{i}" for i in range(layout.width)]
        wanted = {f"c{t[0]}": pa.float64() for t in layout.targets}
        wanted["c0"] = pa.string()
        bad_rows: list = []

        def invalid(row):
            bad_rows.append(row)
            return "skip"

        try:
            stream = pcsv.open_csv(
                CountingFile(raw, progress),
                read_options=pcsv.ReadOptions(column_names=names, block_size=max(MIN_BLOCK, 4 * len(header)), use_threads=False),
                parse_options=pcsv.ParseOptions(invalid_row_handler=invalid, newlines_in_values=False),
                convert_options=pcsv.ConvertOptions(include_columns=list(wanted), column_types=wanted, strings_can_be_null=False))
            batches = [batch for batch in stream]
        except (pa.ArrowInvalid, pa.ArrowException):
            progress.close()
            raise _locate_error(path) from None
        finally:
            progress.close()
    table = pa.Table.from_batches(batches) if batches else None
    rows = table.num_rows if table is not None else 0
    notes = _check_bad_rows(path, bad_rows, rows, layout.width)
    if rows == 0:
        raise CaptureError(f"{path}: esxtop header but no complete sample")
    stamps = table.column("c0").to_pylist()
    timestamps, intervals = _clock(reader, stamps, bad_rows)
    # one float block: pandas builds a frame from a 2-D array far faster than from thousands of columns
    matrix = np.empty((rows, len(layout.targets)))
    keys = []
    for j, (index, slot, name, divisor) in enumerate(layout.targets):
        matrix[:, j] = table.column(f"c{index}").to_numpy(zero_copy_only=False)
        if divisor != 1.0:
            matrix[:, j] /= divisor
        keys.append((*layout.objects[slot], name))
    del table, batches
    frame = pd.DataFrame(matrix, columns=pd.MultiIndex.from_tuples(keys, names=["family", "object", "field"]), copy=False)
    return Capture(path=path, host=layout.host, timestamps=timestamps, intervals=intervals, frame=frame,
                   world_vms=dict(layout.world_vms), path_devices=dict(layout.path_devices), notes=notes)


def _check_bad_rows(path: str, bad_rows, rows: int, width: int) -> list[str]:
    notes = []
    for row in bad_rows:
        line = (row.number or 0) + 1  # pyarrow counts from the first data line; the header is line 1
        if HEADER_MARK in row.text[:65536]:
            raise CaptureError(f"{path}:{line}: a second esxtop header (esxtop was restarted); split the file at that line")
        if row is bad_rows[-1] and row.actual_columns < row.expected_columns and line >= rows + len(bad_rows) + 1:
            notes.append(f"{path}:{line}: truncated last line ({row.actual_columns} of {width} cells), ignored; "
                         f"using the {rows} samples before it")
        else:
            raise CaptureError(f"{path}:{line}: {row.actual_columns} cells, the header has {width}")
    return notes


def _clock(reader: EsxtopReader, stamps: list[str], bad_rows) -> tuple[np.ndarray, np.ndarray]:
    """Timestamps and intervals, by the core reader's own rules (time-only stamps, repeats)."""
    timestamps = np.empty(len(stamps))
    intervals = np.empty(len(stamps))
    for i, text in enumerate(stamps):
        reader.lineno = i + 2
        try:
            timestamps[i] = reader._timestamp(text.strip().strip('"'))
        except EsxtopError as err:
            raise CaptureError(str(err)) from None
        interval = reader._interval(timestamps[i])
        timestamps[i] = reader._prev_ts  # the reader may step a repeated stamp forward
        intervals[i] = np.nan if interval is None else interval
    return timestamps, intervals


def _locate_error(path: str) -> CaptureError:
    """pyarrow says a cell did not convert but not on which line: let the core reader find it."""
    try:
        for _ in read_file(path):
            pass
    except EsxtopError as err:
        return CaptureError(str(err))
    return CaptureError(f"{path}: a needed column holds a value that is not a number")
