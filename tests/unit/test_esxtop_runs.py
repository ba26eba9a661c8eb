"""The reader's row fast path: only the runs of needed cells are cut out of a row, found by comma
counts over guessed stretches. Whatever the guesses and however cell widths change from row to
row, it must read exactly the cells a split of the whole row gives."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.esxtop import EsxtopError, EsxtopReader
from exporter.esxtop import columns as c
from exporter.esxtop.reader import cell_start
from simulators.esxtop_csv import DEVICE_COUNTERS, header, row

cell_text = st.text(alphabet='0123456789. "-', max_size=12)


@given(
    cells=st.lists(cell_text, min_size=1, max_size=400),
    data=st.data(),
)
@settings(max_examples=300, deadline=None)
def test_cell_start_finds_the_cell_a_split_finds(cells, data):
    line = ",".join(cells)
    offsets = [0]
    for cell in cells[:-1]:
        offsets.append(offsets[-1] + len(cell) + 1)
    index = data.draw(st.integers(0, len(cells) - 1))
    target = data.draw(st.integers(index, len(cells) - 1))
    guess = data.draw(st.integers(-5, len(line) + 5))
    assert cell_start(line, offsets[index], index, target, guess) == offsets[target]


def _wide_capture(rows: int, seed: int):
    """Runs of disk columns between long stretches of skipped columns; each row's cells are
    a different width (0, 0.00, 12345.67, space-padded), so every guess from the row before is off."""
    rng = random.Random(seed)
    cols = []
    for block in range(4):
        cols += [("Vcpu", f"{block}:vm{block}:{900 + i}:vcpu-{i}:vm{block}", "% Used") for i in range(rng.randint(50, 900))]
        for d in range(rng.randint(1, 3)):
            dev = f"naa.60{block:02d}{d:02d}"
            cols += [("Physical Disk SCSI Device", dev, counter) for counter in DEVICE_COUNTERS]
            cols += [("Physical Disk Per-Device-Per-World", f"{dev}-{4000 + w}", "Active Commands") for w in range(3)]
    cols += [("Network Port", f"vSwitch0:{5000 + i}:vmnic0", "Packets Received/sec") for i in range(300)]
    lines = [header("esx-wide", cols)]
    styles = [lambda v: f"{v:.2f}", lambda v: str(int(v)), lambda v: f"{v * 1000:.2f}", lambda v: f"   {v:.1f}"]
    for n in range(rows):
        style = styles[n % len(styles)]
        lines.append(row(1_700_000_000 + 5 * n, [style(rng.uniform(0, 99)) for _ in cols]))
    return lines


def test_every_row_reads_what_a_split_of_the_whole_row_reads():
    lines = _wide_capture(rows=24, seed=3)
    reader = EsxtopReader("wide")
    reader.feed(lines[0])
    layout = reader.layout
    assert len(layout.runs) >= 4  # several runs, far apart: the guesses matter
    for line in lines[1:]:
        sample = reader.feed(line)
        cells = line.split(",")
        families = {c.LUN: sample.luns, c.WORLD: sample.worlds}
        expected = {
            (layout.objects[slot], field): float(cells[index].strip().strip('"')) / divisor
            for index, slot, field, divisor in layout.targets
        }
        got = {
            ((family, key), field): families[family][key][field]
            for family, key in layout.objects
            for field in families[family][key]
        }
        assert got == expected


def test_a_row_one_cell_short_or_long_anywhere_is_the_one_line_cell_count_error():
    lines = _wide_capture(rows=3, seed=5)
    reader = EsxtopReader("wide")
    reader.feed(lines[0])
    reader.feed(lines[1])
    width = reader.layout.width
    good = lines[2]
    commas = [i for i, ch in enumerate(good) if ch == ","]
    (first, last), end = reader.layout.runs[0], reader.layout.runs[-1][1]
    # A comma dropped or doubled before the first run, inside a run and after the last one.
    for cell in (first // 2, first + 1, last, end + 2, len(commas) - 1):
        at = commas[cell]
        for bad, cells in ((good[:at] + good[at + 1 :], width - 1), (good[:at] + "," + good[at:], width + 1)):
            with pytest.raises(EsxtopError) as err:
                reader.feed(bad)
            assert str(err.value).endswith(f"{cells} cells, the header has {width}")
            assert "\n" not in str(err.value)
        assert reader.feed(good) is not None  # the reader reads on
