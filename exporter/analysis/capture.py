"""Load a saved esxtop capture into pandas, reading only the columns the exporter uses.

A capture can be 50,000 columns x 720 rows (hundreds of MB); a DataFrame of every column costs
6-7x the file in memory. The header is parsed once by the core reader's `Layout` (which knows the
needed columns). The rows then go through `fastcsv`, which finds cell boundaries with one numpy
scan and parses only the needed cells; the malformed `PCPU Power State` cells of `-a` captures
(`    73.1"8.93"`) hold no comma, so they never shift a boundary and are never parsed. Files it
declines (bare CR line ends, a header with a quoted comma) go through pyarrow's CSV reader with
`include_columns` and a block larger than the header.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import tempfile
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pcsv

from exporter.analysis import fastcsv
from exporter.analysis.progress import Progress
from exporter.esxtop.reader import HEADER_MARK, MAX_LINE, EsxtopError, EsxtopReader, read_file, utf16_hint

MIN_BLOCK = 16 << 20  # pyarrow needs a block larger than the longest row
_CHUNK = 1 << 20


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

    def skip(self, seconds: float) -> Capture:
        """The capture without its first `seconds` (a warm-up, VMs still starting): the samples
        left are all measurements."""
        if not seconds:
            return self
        keep = self.timestamps >= self.timestamps[0] + seconds
        if keep.sum() < 2:
            raise CaptureError(f"{self.path}: fewer than 2 samples left after skipping {seconds:g} s")
        return Capture(
            self.path,
            self.host,
            self.timestamps[keep],
            self.intervals[keep],
            self.frame[keep].reset_index(drop=True),
            self.world_vms,
            self.path_devices,
            self.notes + [f"{self.path}: first {seconds:g} s skipped"] if seconds else self.notes,
        )

    def objects(self, family: str) -> list:
        cols = self.frame.columns
        return list(dict.fromkeys(cols[cols.get_level_values(0) == family].get_level_values(1)))

    def series(self, family: str, obj, name: str) -> pd.Series | None:
        key = (family, obj, name)
        return self.frame[key] if key in self.frame.columns else None


def _read_header(raw, path: str) -> tuple[EsxtopReader, bytes]:
    """Parse the header line and leave `raw` at the first data line (LF, CRLF or bare CR ends)."""
    start = raw.tell()
    first = raw.readline(MAX_LINE + 1)
    while first and not first.strip():
        start = raw.tell()
        first = raw.readline(MAX_LINE + 1)
    if not first:
        raise CaptureError(f"{path}: empty file, not an esxtop capture")
    if len(first) > MAX_LINE and not first.endswith(b"\n"):
        raise CaptureError(f"{path}:1: first line longer than {MAX_LINE >> 20} MiB, not an esxtop capture")
    cr = first.find(b"\r")
    if 0 <= cr < len(first) - 2 or (cr == len(first) - 1):  # a bare CR ends the header: a spreadsheet re-save
        first = first[: cr + 1]
        raw.seek(start + cr + 1)
    text = first.decode("utf-8", errors="replace")
    if text.find(HEADER_MARK, 0, 65536) < 0:
        raise CaptureError(
            f'{path}:1: not an esxtop capture (no "{HEADER_MARK} 4.0) (UTC)(0)" header on the first line){utf16_hint(first[:64])}'
        )
    reader = EsxtopReader(path)
    try:
        reader.feed(text)
    except EsxtopError as err:
        raise CaptureError(str(err)) from None
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
    try:
        with raw:
            reader, header = _read_header(raw, path)
            progress.advance(len(header))
            layout = reader.layout
            # The repeated columns too (`-a`'s per-path Adapter Q Depth): checked against the first.
            needed = np.array(sorted({t[0] for t in layout.targets} | {index for index, _ in layout.repeats}))
            columns = None
            if layout.naive and not header.endswith(b"\r"):  # LF line ends, no quoted comma in the header
                body = raw.tell()
                try:
                    columns = fastcsv.read(raw, layout.width, needed, first_line=1, progress=progress)
                except fastcsv.BadCell as err:
                    raise CaptureError(_bad_cell_message(path, err, layout)) from None
                except fastcsv.LongLine as err:
                    raise CaptureError(f"{path}:{err.line}: line longer than {fastcsv.MAX_LINE >> 20} MiB") from None
                if columns is None:
                    raw.seek(body)
            if columns is None:
                columns = _read_with_pyarrow(path, raw, layout, needed, len(header), progress)
    finally:
        progress.close()
    rows = len(columns.stamps)
    notes = _check_bad_rows(path, columns, layout.width)
    if rows == 0:
        raise CaptureError(f"{path}: esxtop header but no complete sample")
    timestamps, intervals = _clock(reader, columns.stamps, columns.lines)
    if rows == 1:
        notes.append(f"{path}: one sample: esxtop's first is not a measurement, so only settings (queue depths) are read")
    position = {index: j for j, index in enumerate(needed)}
    notes += _conflicts(path, columns, layout, position)
    # one float block: pandas builds a frame from a 2-D array far faster than from thousands of columns
    matrix = columns.values[:, [position[t[0]] for t in layout.targets]]
    divisors = np.array([t[3] for t in layout.targets])
    if (divisors != 1.0).any():
        matrix /= divisors
    keys = [(*layout.objects[slot], name) for _, slot, name, _ in layout.targets]
    frame = pd.DataFrame(matrix, columns=pd.MultiIndex.from_tuples(keys, names=["family", "object", "field"]), copy=False)
    return Capture(
        path=path,
        host=layout.host,
        timestamps=timestamps,
        intervals=intervals,
        frame=frame,
        world_vms=dict(layout.world_vms),
        path_devices=dict(layout.path_devices),
        notes=notes,
    )


def _conflicts(path: str, columns: fastcsv.Columns, layout, position: dict[int, int]) -> list[str]:
    """One note per column that names a value an earlier column holds and reads differently in
    some row (the core reader's rule: the first column is used)."""
    notes = []
    for index, first in layout.repeats:
        mine, theirs = columns.values[:, position[index]], columns.values[:, position[first]]
        differ = np.flatnonzero(mine != theirs)
        if differ.size:
            at = differ[0]
            notes.append(
                f"{path}:{columns.lines[at]}: column {index + 1} ({layout.names[index][:200]}) reads {mine[at]:g} where column "
                f"{first + 1} ({layout.names[first][:200]}), which names the same value, reads {theirs[at]:g} "
                f"(in {differ.size} of {len(mine)} samples); the first is used"
            )
    return notes


def _bad_cell_message(path: str, err, layout) -> str:
    if err.kind == "header":
        return f"{path}:{err.line}: a second esxtop header (esxtop was restarted); split the file at that line"
    what = "is not a number" if err.kind == "number" else "is out of range (NaN, infinite or negative)"
    return f"{path}:{err.line}: column {err.column + 1} ({layout.names[err.column]}) {what}: {err.text!r}"


def _read_with_pyarrow(path: str, raw, layout, needed, header_length: int, progress) -> fastcsv.Columns:
    """The general CSV path, for files the column picker declines (bare CR line ends, quoted commas)."""
    names = [f"c{i}" for i in range(layout.width)]
    wanted = {f"c{i}": pa.float64() for i in needed if i != 0}
    wanted["c0"] = pa.string()
    invalid: list = []

    def skip(row):
        invalid.append(row)
        return "skip"

    with _native_body(path, raw, progress) as body:
        try:
            stream = pcsv.open_csv(
                body,
                read_options=pcsv.ReadOptions(
                    column_names=names, block_size=max(MIN_BLOCK, 4 * header_length), use_threads=False
                ),
                parse_options=pcsv.ParseOptions(invalid_row_handler=skip, newlines_in_values=False),
                convert_options=pcsv.ConvertOptions(include_columns=list(wanted), column_types=wanted, strings_can_be_null=False),
            )
            table = pa.Table.from_batches(list(stream))
        except pa.ArrowException:
            raise _locate_error(path) from None
    values = (
        np.column_stack(
            [
                table.column(f"c{i}").to_numpy(zero_copy_only=False).astype(float) if i != 0 else np.zeros(table.num_rows)
                for i in needed
            ]
        )
        if table.num_rows
        else np.empty((0, len(needed)))
    )
    if not (np.isfinite(values) & (values >= 0)).all():  # pyarrow takes nan, inf and negatives
        raise _locate_error(path)
    bad = [fastcsv.BadRow((row.number or 0) + 1, row.actual_columns, row.text) for row in invalid]
    good_lines, bad_lines = [], {b.line for b in bad}
    line = 2
    while len(good_lines) < table.num_rows:  # pyarrow numbers the rows it rejects, not the ones it keeps
        if line not in bad_lines:
            good_lines.append(line)
        line += 1
    return fastcsv.Columns(values, table.column("c0").to_pylist(), good_lines, bad)


@contextlib.contextmanager
def _native_body(path: str, raw, progress):
    """The rows after the header as an Arrow-native file, positioned at their start.

    pyarrow reads a Python file object from its own IO threads; a process that exits while one of
    those threads still holds Python state may abort in Arrow's thread-pool teardown ("terminate
    called without an active exception", apache/arrow#34314, #50482). So Arrow is given a memory
    map: of the capture itself when its body is valid UTF-8 (checked here, on this thread, which
    also draws the progress bar), else of a temporary copy whose bytes that are not UTF-8 are
    replaced by '?' one for one (pyarrow decodes a row it rejects strictly before calling the
    invalid-row handler, and prints a traceback on bytes that are not UTF-8)."""
    start = raw.tell()
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    valid = True
    while chunk := raw.read(_CHUNK):
        progress.advance(len(chunk))
        try:
            decoder.decode(chunk)
        except UnicodeDecodeError:
            valid = False
            break
    if valid:
        try:
            decoder.decode(b"", True)
        except UnicodeDecodeError:
            valid = False
    if valid:
        with pa.memory_map(path) as body:
            body.seek(start)
            yield body
        return
    raw.seek(start)
    with tempfile.NamedTemporaryFile(prefix="esxtop-utf8-") as copy:
        replacer = codecs.getincrementaldecoder("utf-8")("surrogateescape")
        while chunk := raw.read(_CHUNK):
            copy.write(replacer.decode(chunk).encode("utf-8", "replace"))  # an escaped byte -> '?'
        copy.write(replacer.decode(b"", True).encode("utf-8", "replace"))
        copy.flush()
        with pa.memory_map(copy.name) as body:
            yield body


def _check_bad_rows(path: str, columns: fastcsv.Columns, width: int) -> list[str]:
    notes = []
    last_good = columns.lines[-1] if columns.lines else 0
    for row in columns.bad_rows:
        if HEADER_MARK in row.text[:65536]:
            raise CaptureError(f"{path}:{row.line}: a second esxtop header (esxtop was restarted); split the file at that line")
        if row is columns.bad_rows[-1] and row.cells < width and row.line > last_good:
            notes.append(
                f"{path}:{row.line}: truncated last line ({row.cells} of {width} cells), ignored; "
                f"using the {len(columns.stamps)} samples before it"
            )
        else:
            raise CaptureError(f"{path}:{row.line}: {row.cells} cells, the header has {width}")
    return notes


def _clock(reader: EsxtopReader, stamps: list[str], lines: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Timestamps and intervals, by the core reader's own rules (time-only stamps, repeats)."""
    timestamps = np.empty(len(stamps))
    intervals = np.empty(len(stamps))
    for i, text in enumerate(stamps):
        try:
            timestamps[i], interval = reader.clock(text, lines[i])
        except EsxtopError as err:
            raise CaptureError(str(err)) from None
        intervals[i] = np.nan if interval is None else interval
    return timestamps, intervals


def _locate_error(path: str) -> CaptureError:
    """pyarrow says a cell did not convert but not on which line: let the core reader find it."""
    from exporter.esxtop.lines import bounded_lines

    with open(path, "rb") as raw:  # the core reader takes a second header as a restart
        for number, line in enumerate(bounded_lines(raw), 1):
            if number > 1 and line.find(HEADER_MARK, 0, 65536) >= 0:
                return CaptureError(
                    f"{path}:{number}: a second esxtop header (esxtop was restarted); split the file at that line"
                )
    try:
        for _ in read_file(path):
            pass
    except EsxtopError as err:
        return CaptureError(str(err))
    return CaptureError(f"{path}: a needed column holds a value that is not a number")
