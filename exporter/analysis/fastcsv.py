"""Pick a few columns out of a very wide esxtop capture with numpy, without tokenizing into cells.

esxtop data cells never hold a comma (esxtop-format.md §5), so in a block of whole lines every
comma is a cell boundary: one vectorized scan finds the commas, the k-th needed cell of a line sits
between two of them, and only those cells are gathered and parsed. Numbers are parsed as an integer
mantissa over a power of ten, which IEEE division rounds exactly like float(text). Cells this does
not recognise (an exponent, a long number) go through float() one by one.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from exporter.esxtop.lines import MAX_LINE
from exporter.esxtop.reader import _NON_FINITE, _NUMBER, HEADER_MARK

CHUNK = 16 << 20  # bytes read at a time; whole lines of it are processed at once
WORKERS = 2  # parsing threads beside the reading one (numpy releases the GIL); 2: ~20% faster on an idle 2-core machine
WIDTH = 12  # longest numeric cell parsed vectorized (esxtop writes at most 10-11 characters)
_CR, _COMMA, _QUOTE, _DOT, _MINUS = 13, 44, 34, 46, 45


@dataclass
class BadRow:
    line: int
    cells: int
    text: str  # the first characters of the line


@dataclass
class Columns:
    values: np.ndarray  # rows x needed columns, float64
    stamps: list[str]  # the first cell of each row, quotes kept
    lines: list[int]  # line number of each row
    bad_rows: list[BadRow] = field(default_factory=list)


class BadCell(ValueError):
    """kind: "number" (not a number), "range" (NaN, infinite or negative) or "header" (the line
    is a second esxtop header)."""

    def __init__(self, line: int, column: int, text: str, kind: str = "number"):
        super().__init__(f"line {line}, column {column + 1}: {text!r}")
        self.line, self.column, self.text, self.kind = line, column, text, kind


class LongLine(ValueError):
    def __init__(self, line: int):
        super().__init__(f"line {line} is longer than {MAX_LINE >> 20} MiB")
        self.line = line


_PLACES = 10.0 ** np.arange(WIDTH - 1, -1, -1)  # right-aligned place values of an integer
_SCALE = np.array([1.0, 10.0, 100.0])


def parse_numbers(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Parse buf[starts:ends] cells as decimals; returns (values, ok). ok False: not parsed here.

    Cells are gathered right-aligned, so a dot of a number with 1 or 2 decimals (what esxtop and
    spreadsheets write) sits at a fixed place. The digits read as one integer (the dot counts as a
    0 digit) is then fixed up to the mantissa: sums of whole numbers below 2**53, exact in any
    order; mantissa / 10**decimals is rounded by IEEE division exactly as float(text) rounds.
    """
    lengths = ends - starts
    pos = np.arange(WIDTH)
    if ends.min() < WIDTH:  # a window would start before the buffer: pad it (only near a file's start)
        buf, ends = np.concatenate((np.zeros(WIDTH, np.uint8), buf)), ends + WIDTH
    g = np.lib.stride_tricks.sliding_window_view(buf, WIDTH)[ends - WIDTH]  # the WIDTH bytes before each end
    inside = pos >= WIDTH - lengths[..., None]
    digit = (g >= 48) & (g <= 57) & inside
    first = np.take_along_axis(g, np.clip(WIDTH - lengths, 0, WIDTH - 1)[..., None], -1)[..., 0]
    minus = first == _MINUS
    dot1, dot2 = g[..., WIDTH - 2] == _DOT, g[..., WIDTH - 3] == _DOT
    decimals = np.where(dot2 & (lengths >= 3), 2, np.where(dot1 & (lengths >= 2), 1, 0))
    digits = np.count_nonzero(digit, axis=-1)
    others = np.minimum(lengths, WIDTH) - digits  # inside the cell: the dot and a minus, nothing else
    ok = (others == (decimals > 0).astype(np.int64) + minus) & (lengths > 0) & (lengths <= WIDTH) & (digits > 0)
    d = (g - 48) * digit  # digit values, 0 elsewhere; uint8 (a float64 copy cost 5x the product)
    whole = d @ _PLACES  # every digit left of the dot weighs 10x too much
    tail = np.where(decimals == 2, d[..., -1] + 10.0 * d[..., -2], np.where(decimals == 1, d[..., -1], 0.0))
    mantissa = np.where(decimals > 0, (whole - tail) / 10 + tail, whole)
    values = mantissa / _SCALE[decimals]
    return np.where(minus, -values, values), ok


def read(raw, width: int, needed: np.ndarray, first_line: int, progress=None) -> Columns | None:
    """Read the rest of `raw` (positioned after the header). None when the file is not shaped for
    this (no LF line ends): the caller then uses a general CSV reader. Blocks are parsed on
    worker threads (numpy releases the GIL) while the next one is read, at most two blocks ahead."""
    needed = np.asarray(needed, dtype=np.int64)
    parts, pending = [], []
    carry = b""
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        while True:
            data = raw.read(CHUNK)
            if progress is not None:
                progress.advance(len(data))
            at_end = not data
            data = carry + data if carry else data
            if not data:
                break
            cut = len(data) if at_end else data.rfind(b"\n") + 1
            if cut == 0:
                if b"\r" in data and len(data) > CHUNK:
                    return None  # bare CR line ends (a spreadsheet re-save)
                if len(data) > MAX_LINE:  # the cap keeps the carry's copies (and memory) bounded
                    parts.extend(f.result() for f in pending)
                    _raise_bad_cell(parts, first_line)
                    raise LongLine(first_line + 1 + sum(part[4] for part in parts))
                carry = data  # a line longer than a chunk: read on
                continue
            carry = data[cut:]
            pending.append(pool.submit(_block, data, cut, width, needed))
            while len(pending) > 2:
                parts.append(pending.pop(0).result())
            if at_end:
                break
        parts.extend(f.result() for f in pending)
    _raise_bad_cell(parts, first_line)
    blocks, stamps, lines, bad = [], [], [], []
    line = first_line + 1
    for part in parts:
        values, part_stamps, rel_lines, part_bad, count = part
        blocks.append(values)
        stamps.extend(part_stamps)
        lines.extend(line + n for n in rel_lines)
        bad.extend(BadRow(line + b.line, b.cells, b.text) for b in part_bad)
        line += count
    values = np.concatenate(blocks) if blocks else np.empty((0, len(needed)))
    return Columns(values, stamps, lines, bad)


def _raise_bad_cell(parts: list, first_line: int) -> None:
    """The first BadCell among the parsed blocks, numbered in the file."""
    line = first_line + 1
    for part in parts:
        if isinstance(part, BadCell):
            raise BadCell(line + part.line, part.column, part.text, part.kind)
        line += part[4]


def _line_ends(data: bytes, cut: int) -> np.ndarray:
    """Positions of the LFs in data[:cut]. bytes.find is a vectorized memchr; a wide capture has a
    few dozen lines per block, where this is ~10x faster than a numpy scan of the whole block."""
    ends = []
    at = data.find(b"\n", 0, cut)
    while at >= 0:
        ends.append(at)
        at = data.find(b"\n", at + 1, cut)
    return np.array(ends, dtype=np.int64)


def _block(data: bytes, cut: int, width, needed):
    """Parse the whole lines in data[:cut]; line numbers in the result count from 0."""
    region = memoryview(data)[:cut]
    buf = np.frombuffer(region, dtype=np.uint8)
    newlines = _line_ends(data, cut)
    if not len(newlines) or newlines[-1] != len(buf) - 1:
        newlines = np.append(newlines, len(buf))  # the last line of the file has no newline
    starts = np.concatenate(([0], newlines[:-1] + 1))
    commas = np.flatnonzero(buf == _COMMA)
    base = np.searchsorted(commas, starts)
    counts = np.diff(np.append(base, len(commas)))
    numbers = np.arange(len(starts))
    blank = (newlines - starts <= 1) & (counts == 0)
    good = (counts == width - 1) & ~blank
    bad = [
        BadRow(
            int(numbers[i]),
            int(counts[i]) + 1,
            bytes(region[starts[i] : min(newlines[i], starts[i] + 65536)]).decode("utf-8", "replace"),
        )
        for i in np.flatnonzero(~good & ~blank)
    ]
    if not good.any() or not len(commas):
        return np.empty((0, len(needed))), [], [], bad, len(starts)
    b, line_end = base[good], newlines[good]
    at = b[:, None] + needed[None, :]
    cell_start = np.where(needed == 0, starts[good][:, None], commas[np.maximum(at - 1, 0)] + 1)
    cell_end = np.where(needed == width - 1, line_end[:, None], commas[np.minimum(at, len(commas) - 1)])
    cell_end = cell_end - (buf[np.maximum(cell_end - 1, 0)] == _CR)
    quoted = buf[np.minimum(cell_start, len(buf) - 1)] == _QUOTE
    cell_start = cell_start + quoted
    cell_end = cell_end - (quoted & (buf[np.maximum(cell_end - 1, 0)] == _QUOTE))
    cell_end = np.maximum(cell_end, cell_start)
    values, ok = parse_numbers(buf, cell_start, cell_end)
    for r, c in zip(*np.nonzero(~ok)):
        text = bytes(region[cell_start[r, c] : cell_end[r, c]]).decode("utf-8", "replace")
        if _NON_FINITE.fullmatch(text):
            return BadCell(int(numbers[good][r]), int(needed[c]), text[:40], "range")
        if not _NUMBER.fullmatch(text):  # float() would also take nan, inf and 1_000
            line = int(numbers[good][r])
            row = bytes(region[starts[good][r] : min(line_end[r], starts[good][r] + 65536)])
            kind = "header" if HEADER_MARK.encode() in row else "number"
            return BadCell(line, int(needed[c]), text[:40], kind)  # numbered in read()
        values[r, c] = float(text)
    wrong = ~(values >= 0) | (values == np.inf)  # NaN, negative, or an exponent that overflowed
    if wrong.any():
        r, c = np.argwhere(wrong)[0]
        text = bytes(region[cell_start[r, c] : cell_end[r, c]]).decode("utf-8", "replace")
        return BadCell(int(numbers[good][r]), int(needed[c]), text[:40], "range")
    stamps = [bytes(region[s:e]).decode("utf-8", "replace") for s, e in zip(starts[good], commas[b])]
    return values, stamps, [int(n) for n in numbers[good]], bad, len(starts)
