"""The vectorized number parser of the column picker agrees with float() to the last bit."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.analysis.fastcsv import WIDTH, parse_numbers

decimal_text = st.builds(
    lambda sign, whole, frac: f"{sign}{whole}{frac}",
    st.sampled_from(["", "-"]),
    st.integers(0, 10**9).map(str),
    st.one_of(st.just(""), st.just("."), st.integers(0, 99).map(lambda n: f".{n:02d}"), st.integers(0, 9).map(lambda n: f".{n}")))


def parse(cells: list[str]):
    data = "".join(cells).encode()
    ends = np.cumsum([len(c) for c in cells])
    starts = ends - [len(c) for c in cells]
    return parse_numbers(np.frombuffer(data, np.uint8), starts, ends)


@settings(max_examples=300, deadline=None)
@given(st.lists(decimal_text, min_size=1, max_size=50))
def test_esxtop_style_decimals_parse_exactly_like_float(cells):
    values, ok = parse(cells)
    # integers and 1 or 2 decimals (what esxtop and spreadsheets write) are parsed here; longer
    # cells and other shapes ("7.") are left to float() in the reader
    assert list(ok) == [len(c) <= WIDTH and not c.endswith(".") for c in cells]
    assert [float(c) for c, good in zip(cells, ok) if good] == list(values[ok])


def test_what_it_cannot_parse_is_flagged_not_guessed():
    cells = ["1e5", "--1", "1.2.3", "", "12345678901.25", "abc", "1-2", " 7", "1.234", "-", ".", "1..2"]
    _, ok = parse(cells)
    assert not ok.any()
