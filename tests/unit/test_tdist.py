"""Student's t distribution function against closed forms and printed tables."""

import math

import pytest

from exporter.analysis.tdist import t_cdf


@pytest.mark.parametrize("t", [-30.0, -2.5, -0.3, 0.0, 0.7, 4.0, 100.0])
def test_closed_forms(t):
    assert t_cdf(t, 1) == pytest.approx(0.5 + math.atan(t) / math.pi, abs=1e-12)  # Cauchy
    assert t_cdf(t, 2) == pytest.approx(0.5 + t / (2 * math.sqrt(2 + t * t)), abs=1e-12)


@pytest.mark.parametrize(
    "df, t, p", [(5, 2.571, 0.975), (10, 2.228, 0.975), (30, 1.697, 0.95), (20, 2.845, 0.995), (120, 1.980, 0.975)]
)
def test_table_quantiles(df, t, p):
    assert t_cdf(t, df) == pytest.approx(p, abs=5e-4)  # tables print three decimals of t


def test_large_df_tends_to_the_normal_and_tails_stay_accurate():
    normal = 0.5 * (1 + math.erf(1.5 / math.sqrt(2)))
    assert t_cdf(1.5, 1e6) == pytest.approx(normal, abs=1e-6)
    assert 0 < t_cdf(-40.0, 7.5) < 1e-8
    assert t_cdf(float("inf"), 3) == 1.0 and t_cdf(float("-inf"), 3) == 0.0
