"""The vectorized number parser of the column picker agrees with float() to the last bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.analysis.fastcsv import WIDTH, parse_numbers

decimal_text = st.builds(
    lambda sign, whole, frac: f"{sign}{whole}{frac}",
    st.sampled_from(["", "-"]),
    st.integers(0, 10**9).map(str),
    st.one_of(st.just(""), st.just("."), st.integers(0, 99).map(lambda n: f".{n:02d}"), st.integers(0, 9).map(lambda n: f".{n}")),
)


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


def test_welch_p_is_scipys_welch_test():
    from scipy import stats as sst

    from exporter.analysis.significance import welch_p

    rng = np.random.default_rng(7)
    for _ in range(50):
        a, b = rng.normal(0, 1, rng.integers(4, 30)), rng.normal(0.5, 2, rng.integers(4, 30))
        assert welch_p(a, b) == pytest.approx(sst.ttest_ind(a, b, equal_var=False).pvalue, rel=1e-9)


def test_block_means_keep_noise_from_looking_significant():
    """Autocorrelated noise (AR(1), phi 0.9) with the same mean on both sides: Welch on the raw
    samples calls far more pairs different than the 5% it promises; on block means it keeps near it."""
    from exporter.analysis.significance import welch_blocks, welch_p

    rng = np.random.default_rng(3)

    def ar1(n):
        x = np.empty(n)
        x[0] = rng.normal()
        for i in range(1, n):
            x[i] = 0.9 * x[i - 1] + rng.normal()
        return x

    pairs = [(ar1(720), ar1(720)) for _ in range(200)]
    raw = np.mean([welch_p(a, b) < 0.05 for a, b in pairs])
    blocks = np.mean([welch_blocks(a, b) < 0.05 for a, b in pairs])
    assert raw > 0.3 and blocks < 0.12, (raw, blocks)
