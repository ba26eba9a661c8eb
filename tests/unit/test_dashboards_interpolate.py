"""Grafana's variable and interval-macro substitution, as the live dashboard test relies on it.
Expected values are the ones Grafana 11 produces (see dashboards/interpolate.py for the sources)."""

from __future__ import annotations

import pytest

from dashboards import interpolate as gi


@pytest.mark.parametrize(
    "seconds, nice",
    [(0.009, 0.001), (3.6, 5), (7.4, 5), (7.6, 10), (13, 15), (40, 30), (89, 60), (100, 120), (3000, 3600), (86000, 86400)],
)
def test_interval_is_rounded_to_grafana_steps(seconds, nice):
    assert gi.round_interval(seconds) == nice


def test_one_hour_at_default_scrape_interval():
    # 1 h over 1000 points = 3.6 s -> 5 s, raised to the 15 s scrape interval; rate interval 4 x 15 s.
    t = gi.timing(0, 3600, 1000)
    assert (t.interval, t.rate_interval) == (15, 60)
    assert (
        gi.macros("rate(x[$__rate_interval]) [$__interval] [$__range] $__range_s $__interval_ms", t)
        == "rate(x[1m0s]) [15s] [3600s] 3600 15000"
    )


def test_long_range_rate_interval_is_interval_plus_scrape():
    t = gi.timing(0, 7 * 86400, 1000)  # 604.8 s -> 10 m
    assert t.interval == 600 and t.rate_interval == 615
    assert gi.macros("$__rate_interval", t) == "10m15s"


def test_range_query_is_aligned_to_the_step():
    t = gi.timing(1000.5, 1060.7, 1000, scrape_interval=1)
    assert (t.start, t.end, t.interval) == (1000, 1060, 1)


@pytest.mark.parametrize("text, seconds", [("15s", 15), ("1m30s", 90), ("1d", 86400), ("500ms", 0.5), ("2h", 7200)])
def test_parse_duration(text, seconds):
    assert gi.parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["", "15", "1x", "s15"])
def test_parse_duration_rejects(bad):
    with pytest.raises(ValueError):
        gi.parse_duration(bad)


def test_multi_value_becomes_an_escaped_regex_alternation():
    sel = gi.Selection(("esx01.lab", "esx(2)"), multi_or_all=True)
    assert gi.variables('x{host=~"$host"}', {"host": sel}) == r'x{host=~"(esx01\\.lab|esx\\(2\\))"}'


def test_all_with_custom_all_value_is_inserted_as_is():
    sel = gi.Selection(("a", "b"), multi_or_all=True, all_value=".*")
    assert gi.variables('x{host=~"${host}"}', {"host": sel}) == 'x{host=~".*"}'


def test_single_value_variable_is_not_regex_escaped():
    assert gi.variables("$n / x", {"n": gi.Selection(("256",))}) == "256 / x"
    assert gi.variables("[[n]]", {"n": gi.Selection(("a.b",))}) == "a.b"


def test_longer_names_are_not_eaten_by_shorter_ones():
    sels = {"lun": gi.Selection(("L",)), "lun_group": gi.Selection(("G",))}
    assert gi.variables("$lun $lun_group $lunx", sels) == "L G $lunx"


# --- what counts as "returns data" in the live check ------------------------------------------
from dashboards.evaluate import has_data  # noqa: E402


@pytest.mark.parametrize(
    "answer, ok",
    [
        ({"status": "error", "errorType": "bad_data", "error": "parse error"}, False),
        ({"status": "success", "data": {"resultType": "vector", "result": []}}, False),
        (
            {
                "status": "success",
                "data": {"resultType": "matrix", "result": [{"metric": {}, "values": [[1, "NaN"], [2, "+Inf"]]}]},
            },
            False,
        ),
        (
            {"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {}, "values": [[1, "NaN"], [2, "0"]]}]}},
            True,
        ),
        ({"status": "success", "data": {"resultType": "vector", "result": [{"metric": {}, "value": [1, "0.004"]}]}}, True),
    ],
)
def test_a_query_passes_only_with_a_finite_value(answer, ok):
    assert has_data(answer)[0] is ok
