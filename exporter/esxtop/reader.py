"""Streaming reader for esxtop batch output (`esxtop -b`): one line in, at most one Sample out.

The header is parsed once (with the csv module: it is quoted and may exceed 1 MB); data rows take
a fast path: esxtop data cells are numbers and never contain commas, so only the runs of cells the
exporter exports are cut out of a row (found by comma counts, see cell_start) and split with
str.split, and only those columns are converted (see esxtop-format.md). An `-a` row is a few
hundred KB of which a few percent is read.
"""

from __future__ import annotations

import calendar
import csv
import logging
import math
import operator
import re
import sys
import time
from operator import truediv

from exporter.esxtop import columns as c
from exporter.esxtop.lines import MAX_LINE, LongLine, bounded_lines
from exporter.store import model as m

log = logging.getLogger(__name__)
HEADER_MARK = "(PDH-CSV"
csv.field_size_limit(sys.maxsize)
# What a number cell may hold. float() also takes '1_000', 'nan', 'inf' and non-ASCII digits;
# esxtop writes none of them, so a cell with any is not a number (or, nan/inf, out of range).
_NUMBER = re.compile(r"\s*-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*", re.ASCII)
_NON_FINITE = re.compile(r"\s*[-+]?(?:nan|inf|infinity)\s*", re.IGNORECASE)
OUT_OF_RANGE = "out_of_range"  # parse_errors_total reason of a cell that is NaN, infinite or negative
# parse_errors_total reason of two columns naming one value that read differently: the first is
# kept, and each such column is counted and reported once per header (file or esxtop run).
COLUMN_CONFLICT = "column_conflict"


def _unquoted(cell: str) -> str:
    text = cell.strip()  # the last cell may carry the line end
    return text[1:-1] if text[:1] == '"' else text


_UTF16_HINT = " (the {} looks UTF-16 encoded; convert it: iconv -f UTF-16 -t UTF-8)"


def utf16_hint(head: bytes) -> str:
    """' (...)' when the first bytes of a file look UTF-16 (a Windows re-save), else ''."""
    if head[:2] in (b"\xff\xfe", b"\xfe\xff") or head[:64].count(0) > len(head[:64]) // 4:
        return _UTF16_HINT.format("file")
    return ""


class EsxtopError(ValueError):
    """A line the reader rejects. `reason` is a short token used as a metric label."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


def parse_column(cell: str) -> tuple[str, str, str | None, str] | None:
    r"""'\\host\Object(instance)\Counter' -> (host, object, instance, counter); None if not that shape.

    The instance runs from the first '(' to the last ')' of the middle part: instance names
    contain parentheses, spaces, '#' and ':' (quirk 5).
    """
    if not cell.startswith("\\\\"):
        return None
    host, sep, rest = cell[2:].partition("\\")
    middle, sep2, counter = rest.rpartition("\\")
    if not sep or not sep2 or not middle:
        return None
    open_at = middle.find("(")
    if open_at > 0 and middle.endswith(")"):
        return host, middle[:open_at], middle[open_at + 1 : -1], counter
    return host, middle, None, counter


class Layout:
    """What one header means: which cells to convert and where each value goes."""

    def __init__(self, cells: list[str], raw_line: str, per_world: bool = True):
        self.width = len(cells)
        # Rows are split on every comma; if a header cell holds a quoted comma the naive count
        # differs from the csv count and rows must go through csv too (never seen, but cheap).
        self.commas = raw_line.count(",")
        self.naive = self.commas + 1 == self.width
        self.names = cells
        parsed = [parse_column(cell) for cell in cells]
        self.host = next((p[0] for p in parsed if p), "")
        has_path_object = any(p and p[1] == "Physical Disk Path" for p in parsed)
        keys: dict[tuple, int] = {}
        self.objects: list[tuple[str, object]] = []  # object slot -> (family, key)
        targets = []
        taken: dict[tuple[int, str], int] = {}  # (object slot, field) -> the column that holds it
        # Columns naming a value an earlier column holds: (this column, the first one). `-a` writes
        # the adapter's Adapter Q Depth once more in every per-path `Physical Disk(<adapter>:<path>)`
        # (esxtop-format.md §3.2): expected, and harmless while the values agree.
        self.repeats: list[tuple[int, int]] = []
        vcpus = []
        self.path_devices: dict[str, str] = {}
        last_device = None
        for index, p in enumerate(parsed):
            if not p:
                continue
            _, obj, instance, counter = p
            if obj == "Vcpu" and instance is not None:
                vcpus.append(instance)
                continue
            if obj == "Physical Disk SCSI Device":
                last_device = instance
            elif obj == "Physical Disk Path" and last_device is not None:
                # A device's paths follow it in the header (esxtop-format.md §2, column order).
                self.path_devices.setdefault(instance, last_device)
            hit = c.classify(obj, instance, counter, has_path_object)
            if not hit or (hit[0] == c.WORLD and not per_world):
                continue
            family, key, field, divisor = hit
            slot = keys.setdefault((family, key), len(keys))
            if slot == len(self.objects):
                self.objects.append((family, key))
            first = taken.get((slot, field))
            if first is not None:  # a second column for one value: the first one is kept
                self.repeats.append((index, first))
                continue
            taken[(slot, field)] = index
            targets.append((index, slot, field, divisor))
        # Hot-path tables: columns ordered by object, so one pass of C-level calls (itemgetter,
        # join, split, float, truediv) converts them all and each object's values are a slice.
        targets.sort(key=lambda t: (t[1], t[0]))
        self.targets = targets
        self.max_index = max([t[0] for t in targets] + [r[0] for r in self.repeats], default=0)
        self.pick, self.pick_repeats_at, self.pick_firsts_at = _pickers([t[0] for t in targets], self.repeats)
        # Runs of needed cells (naive rows): a row is cut into these runs and only they are split.
        # Cells up to _GAP apart share a run: splitting a few extra is cheaper than finding them.
        needed = sorted({t[0] for t in targets} | {index for pair in self.repeats for index in pair})
        runs: list[list[int]] = []
        for index in needed:
            if runs and index - runs[-1][1] <= _GAP:
                runs[-1][1] = index
            else:
                runs.append([index, index])
        self.runs = [(first, last) for first, last in runs]
        at, position = 0, {}  # cell index -> its place in the cells of the runs, one after the other
        for first, last in self.runs:
            for index in range(first, last + 1):
                position[index] = at + index - first
            at += last - first + 1
        moved = [(position[i], position[f]) for i, f in self.repeats]
        self.pick_in_runs, self.pick_repeats_in_runs, self.pick_firsts_in_runs = _pickers(
            [position[t[0]] for t in targets], moved
        )
        self.divisors = [t[3] for t in targets]
        self.spans = []
        start = 0
        for slot, (family, key) in enumerate(self.objects):
            fields = []
            while start + len(fields) < len(targets) and targets[start + len(fields)][1] == slot:
                fields.append(targets[start + len(fields)][2])
            self.spans.append((family, key, tuple(fields), start, start + len(fields)))
            start += len(fields)
        self.world_vms = c.world_vms(sorted(set(vcpus))) if per_world else {}


_GAP = 64


def _getter(indices: list[int]):
    """cells -> the tuple of cells at these indices (itemgetter returns a bare cell for one index)."""
    if len(indices) == 1:
        index = indices[0]
        return lambda cells: (cells[index],)
    return operator.itemgetter(*(indices or [0]))


def _pickers(targets: list[int], repeats: list[tuple[int, int]]):
    """Getters of the converted cells, of the repeated columns' cells and of the cells they repeat."""
    return _getter(targets), _getter([r[0] for r in repeats]), _getter([r[1] for r in repeats])


def cell_start(line: str, at: int, index: int, target: int, guess: int) -> int:
    """Offset of the first character of cell `target` of a row whose cell `index` starts at `at`
    (index <= target), given a guess of that offset. A wide row is a few hundred KB and only a few
    runs of it are read: comma counts (C loops) over guessed stretches land near the cell, and a
    few finds walk the rest. -1 if the row ends before the cell."""
    ahead = target - index
    if ahead > 16:
        if not at < guess <= len(line):
            guess = min(at + 8 * ahead, len(line))
        found = line.count(",", at, guess)  # cell index + found holds the guess
        width = max(1, (guess - at) // (found or 1))  # bytes a cell, about
        for _ in range(32):
            if found > ahead:  # past it: step back by the overshoot's worth
                back = max(at, guess - (found - ahead) * width - width)
                found -= line.count(",", back, guess)
                guess = back
                continue
            if found:  # short of it (or on it): start again from the last cell before the guess
                at = line.rfind(",", at, guess) + 1
                index += found
                ahead = target - index
            if ahead <= 16:
                break
            guess = min(at + ahead * width, len(line))
            found = line.count(",", at, guess)
    while index < target:
        at = line.find(",", at) + 1
        if not at:
            return -1
        index += 1
    return at


_TS_FULL = re.compile(r"^(\d{1,2})/(\d{1,2})/(\d{4}) (\d{1,2}):(\d{2})(?::(\d{2}))?$")
_TS_TIME = re.compile(r"^(\d{1,2}):(\d{2}):(\d{2})$")


class EsxtopReader:
    """Turns esxtop batch lines into Samples. Keeps state between lines (header, last timestamp).

    feed() raises EsxtopError for a bad line; the reader stays usable, so a live stream can count
    the error and go on. A new header line (a restarted esxtop) replaces the layout.
    """

    def __init__(self, name: str = "<stream>", per_world: bool = True):
        self.name = name
        self.per_world = per_world
        self.layout: Layout | None = None
        self.lineno = 0
        self._prev_ts: float | None = None
        self._last_interval: float | None = None
        self._date: tuple[int, int, int] | None = None
        self.rejected: list[tuple[str, str]] = []  # the last line's cells left out: (reason, message)
        self._conflicts: set[int] = set()  # repeated columns already reported under this header
        self._run_offsets: list[int] = []  # where each run of needed cells started and ended in the last row

    def feed(self, line: str) -> m.Sample | None:
        """One line in: a Sample, or None (blank, header). Cells that are NaN, infinite or negative
        are left out of the Sample and listed in `rejected` (reason, message) until the next feed."""
        self.lineno += 1
        self.rejected: list[tuple[str, str]] = []
        if line.__class__ is LongLine:
            raise self._error("line_too_long", f"line of {line} bytes is longer than the {MAX_LINE >> 20} MiB limit")
        # No strip of the whole line: on a 1 MB row each copy costs more than the parse. A
        # trailing newline only reaches the last cell, which float() and the timestamp ignore.
        if len(line) < 8 and not line.strip():
            return None
        mark = line.find(HEADER_MARK, 0, 65536)
        if mark >= 0:
            self._set_header(line, mark)
            return None
        if self.layout is None:
            hint = _UTF16_HINT.format("input") if "\x00" in line[:64] else ""
            raise self._error(
                "no_header", f'no esxtop header before this line (a capture starts with "(PDH-CSV 4.0) (UTC)(0)",...){hint}'
            )
        return self._sample(line)

    # -- header -------------------------------------------------------------------------------
    def _set_header(self, line: str, mark: int) -> None:
        # Junk glued before the first cell (a terminal warning on stderr): keep from the quote.
        start = mark - 1 if mark > 0 and line[mark - 1] == '"' else mark
        line = line[start:].rstrip("\r\n")
        try:
            cells = next(csv.reader([line]))
        except csv.Error as err:  # e.g. a stray carriage return inside the line
            raise self._error("bad_header", f"header is not valid CSV: {err}") from None
        self.layout = Layout(cells, line, self.per_world)
        self._prev_ts = None  # a new esxtop run: its first sample is not a measurement again
        self._conflicts = set()
        self._run_offsets = []

    # -- rows ---------------------------------------------------------------------------------
    def _sample(self, line: str) -> m.Sample:
        layout = self.layout
        if layout.naive:
            comma = line.find(",")
            cells = self._runs(line, layout, comma + 1) if layout.runs and comma >= 0 else None
            pick, pick_repeats, pick_firsts = layout.pick_in_runs, layout.pick_repeats_in_runs, layout.pick_firsts_in_runs
            if cells is None:  # a row of another width (or nothing to read): the count says which
                if line.count(",") != layout.commas:
                    raise self._error("cell_count", f"{line.count(',') + 1} cells, the header has {layout.width}")
                cells = line.split(",", layout.max_index + 1)
                pick, pick_repeats, pick_firsts = layout.pick, layout.pick_repeats_at, layout.pick_firsts_at
            stamp = line if comma < 0 else line[:comma]

            def all_cells():  # the cells by their column index, for the checks that name one
                return line.split(",", layout.max_index + 1)

        else:
            try:
                cells = next(csv.reader([line]))
            except csv.Error as err:
                raise self._error("bad_csv", f"row is not valid CSV: {err}") from None
            if len(cells) != layout.width:
                raise self._error("cell_count", f"{len(cells)} cells, the header has {layout.width}")
            stamp = cells[0]
            pick, pick_repeats, pick_firsts = layout.pick, layout.pick_repeats_at, layout.pick_firsts_at

            def all_cells():
                return cells

        timestamp = self._timestamp(stamp.strip().strip('"'))
        needed = ",".join(pick(cells)) if layout.targets else ""
        if '"' in needed:
            needed = needed.replace('"', "")
        # Cheap substring tests keep the strict check off the hot path: only a row holding '_',
        # an 'n' (nan, inf) or a non-ASCII character can fool float().
        if "_" in needed or "n" in needed or "N" in needed or not needed.isascii():
            values = self._strict_values(all_cells(), layout)
        else:
            try:
                values = list(map(truediv, map(float, needed.split(",")), layout.divisors)) if needed else []
            except ValueError:
                raise self._bad_value(all_cells(), layout) from None
            if "-" in needed or "e" in needed or "E" in needed:  # a negative, or an exponent that overflowed
                values = self._in_range(values, all_cells, layout)
        if layout.repeats and pick_repeats(cells) != pick_firsts(cells):
            self._check_repeats(all_cells(), layout)
        sample = m.Sample(host=layout.host, timestamp=timestamp, interval=self._interval(timestamp))
        families = {
            c.LUN: sample.luns,
            c.ADAPTER: sample.adapters,
            c.PATH: sample.paths,
            c.WORLD: sample.worlds,
            c.CPU: sample.cpus,
            c.DATASTORE: sample.datastores,
            c.VDISK: sample.vdisks,
            c.VM: sample.vms,
        }
        if self.rejected:
            for family, key, fields, start, end in layout.spans:
                families[family][key] = {f: v for f, v in zip(fields, values[start:end]) if v is not None}
        else:
            for family, key, fields, start, end in layout.spans:
                families[family][key] = dict(zip(fields, values[start:end]))
        sample.path_devices = layout.path_devices
        sample.world_vms = layout.world_vms
        return sample

    def _runs(self, line: str, layout: Layout, at: int) -> list[str] | None:
        """The cells of the layout's runs, one run after the other, cutting only those runs out of
        the row (cell 1 starts at `at`); None if the row's comma count is not the header's."""
        # Guesses: the last row's distance from where each search starts to what it found. Cells
        # before a run shift every offset after them; within a stretch widths change little.
        hints = self._run_offsets
        if len(hints) != 2 * len(layout.runs):
            hints[:] = [0] * (2 * len(layout.runs))
        cells: list[str] = []
        index = 1
        last_cell = layout.width - 1
        for n, (first, last) in enumerate(layout.runs):
            start = cell_start(line, at, index, first, at + hints[2 * n])
            if start < 0:
                return None
            if last == last_cell:
                end = len(line)
            else:
                end = cell_start(line, start, first, last + 1, start + hints[2 * n + 1]) - 1
                if end < 0:
                    return None
            hints[2 * n], hints[2 * n + 1] = start - at, end + 1 - start
            cells += line[start:end].split(",")
            at, index = end + 1, last + 1
        # The cell count check, without a second pass: the last run's first cell starts after
        # `first` commas; count the ones from there.
        if first + line.count(",", start) != layout.commas:
            return None
        return cells

    def _bad_value(self, cells, layout) -> EsxtopError:
        for index, _, _, _ in layout.targets:
            cell = cells[index]
            text = _unquoted(cell)
            if not _NUMBER.fullmatch(text) and not _NON_FINITE.fullmatch(text):
                return self._error("bad_value", f"column {index + 1} ({layout.names[index]}) is not a number: {cell[:40]!r}")
        return self._error("bad_value", "a value is not a number")

    def _strict_values(self, cells, layout) -> list:
        """The slow path: each needed cell checked against _NUMBER; NaN and infinity are rejected
        cells (None), anything else that is not a number rejects the line."""
        values = []
        for index, _, _, divisor in layout.targets:
            cell = cells[index]
            text = _unquoted(cell)
            if _NUMBER.fullmatch(text):
                values.append(float(text) / divisor)
            elif _NON_FINITE.fullmatch(text):
                values.append(math.nan)
            else:
                raise self._bad_value(cells, layout)
        return self._in_range(values, lambda: cells, layout)

    def _check_repeats(self, cells, layout) -> None:
        """Columns naming a value an earlier column holds whose cell reads differently: the first
        column's value is the one used; each such column is listed in `rejected` once per header."""
        for index, first in layout.repeats:
            if index in self._conflicts:
                continue
            mine, theirs = _unquoted(cells[index]), _unquoted(cells[first])
            if mine == theirs or (_NUMBER.fullmatch(mine) and _NUMBER.fullmatch(theirs) and float(mine) == float(theirs)):
                continue  # "31" and "31.00": one value
            self._conflicts.add(index)
            self.rejected.append(
                (
                    COLUMN_CONFLICT,
                    f"{self.name}:{self.lineno}: column {index + 1} ({layout.names[index][:200]}) reads {mine[:40]!r} "
                    f"where column {first + 1} ({layout.names[first][:200]}), which names the same value, reads "
                    f"{theirs[:40]!r}; the first is used",
                )
            )

    def _in_range(self, values: list, all_cells, layout) -> list:
        """Values with every NaN, infinite or negative one replaced by None and listed in `rejected`:
        a rate, latency or queue length is never negative, and one such cell would corrupt a counter.
        all_cells() gives the row's cells by column index (split only if one is out of range)."""
        cells = None
        for position, value in enumerate(values):
            if not (0.0 <= value < math.inf):
                cells = cells or all_cells()
                index = layout.targets[position][0]
                self.rejected.append(
                    (
                        OUT_OF_RANGE,
                        f"{self.name}:{self.lineno}: column {index + 1} ({layout.names[index]}) "
                        f"is out of range (NaN, infinite or negative): {cells[index].strip()[:40]!r}",
                    )
                )
                values[position] = None
        return values

    def clock(self, stamp: str, lineno: int | None = None) -> tuple[float, float | None]:
        """The reader's clock for one row's timestamp cell, as feed() applies it: the row's time
        (a repeated stamp stepped forward) and the interval since the previous row (None for the
        first). For readers of whole captures that parse the other cells themselves (analysis)."""
        if lineno is not None:
            self.lineno = lineno
        ts = self._timestamp(stamp.strip().strip('"'))
        interval = self._interval(ts)
        return self._prev_ts, interval

    def _timestamp(self, text: str) -> float:
        found = _TS_FULL.match(text)
        time_only = found is None
        if found:
            mon, day, year, hour, minute, sec = found.groups()
            self._date = (int(year), int(mon), int(day))
        else:
            found = _TS_TIME.match(text)
            if not found:
                raise self._error("bad_timestamp", f"timestamp {text[:40]!r} is not MM/DD/YYYY HH:MM:SS")
            hour, minute, sec = found.groups()
            if self._date is None:  # a spreadsheet kept only the time: the date is unknown
                self._date = (1970, 1, 1)
        try:
            ts = float(calendar.timegm((*self._date, int(hour), int(minute), int(sec or 0))))
        except (ValueError, OverflowError):
            raise self._error("bad_timestamp", f"timestamp {text[:40]!r} is not a valid date") from None
        if time_only and self._prev_ts is not None and ts < self._prev_ts - 43200:
            ts += 86400  # time-only stamps roll over midnight: carry the date forward
            self._date = tuple(time.gmtime(ts)[:3])
        return ts

    def _interval(self, ts: float) -> float | None:
        prev, self._prev_ts = self._prev_ts, ts
        if prev is None:
            return None
        interval = ts - prev
        if interval <= 0:
            # Spreadsheet re-saves keep minutes only, so rows share a stamp: step the clock by
            # the last real interval (or esxtop's default 5 s) to keep counters moving forward.
            interval = self._last_interval or 5.0
            self._prev_ts = ts = prev + interval
        self._last_interval = interval
        return interval

    def _error(self, reason: str, text: str) -> EsxtopError:
        return EsxtopError(reason, f"{self.name}:{self.lineno}: {text}")


def read_file(path: str, per_world: bool = True, on_error=None):
    """Yield every Sample of a saved capture; raise EsxtopError on the first bad line (a line
    over MAX_LINE and a NaN, infinite or negative cell included). Two columns naming one value
    that disagree do not stop it: the first is used, and the other is logged as a warning and
    handed to on_error(file, reason), once per column, as a live stream counts it."""
    reader = EsxtopReader(str(path), per_world=per_world)
    with open(path, "rb", buffering=1 << 20) as raw:  # wide rows: fewer, larger reads (a third of the time)
        hint = utf16_hint(raw.read(64))
        raw.seek(0)
        seen = False
        for line in bounded_lines(raw):
            seen = seen or bool(line.strip())
            try:
                sample = reader.feed(line)
            except EsxtopError as err:
                if hint:  # the file's hint, once: in place of the line's own, if it gave one
                    raise EsxtopError(err.reason, str(err).replace(_UTF16_HINT.format("input"), "") + hint) from None
                raise
            for reason, message in reader.rejected:
                if reason != COLUMN_CONFLICT:
                    raise EsxtopError(reason, message)
            for reason, message in reader.rejected:
                log.warning("%s", message)
                if on_error is not None:
                    on_error(reader.name, reason)
            if sample is not None:
                yield sample
    if not seen:
        raise EsxtopError("empty", f"{path}: empty file, no esxtop header")
    if reader.layout is None:
        raise EsxtopError("no_header", f"{path}:1: no esxtop header{hint}")
