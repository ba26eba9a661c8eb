"""Template variables and interval macros, substituted the way Grafana 11's Prometheus datasource
does it, so panel queries can be run against a real Prometheus without a Grafana server.

Sources (Grafana 11): pkg/promlib/models/query.go (interpolateVariables, calculateRateInterval),
pkg/promlib/intervalv2 and pkg/components/gtime (interval rounding and formatting), and
packages/grafana-prometheus/src/datasource.ts (interpolateQueryExpr: how variable values are
escaped and joined into a regex).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

# roundInterval: the interval is rounded up to the next of these "nice" steps (ms upper bound -> step s).
_ROUND = (
    (10, 0.001),
    (15, 0.01),
    (35, 0.02),
    (75, 0.05),
    (150, 0.1),
    (350, 0.2),
    (750, 0.5),
    (1500, 1),
    (3500, 2),
    (7500, 5),
    (12500, 10),
    (17500, 15),
    (25000, 20),
    (45000, 30),
    (90000, 60),
    (210000, 120),
    (450000, 300),
    (750000, 600),
    (1050000, 900),
    (1500000, 1200),
    (2700000, 1800),
    (5400000, 3600),
    (9000000, 7200),
    (16200000, 10800),
    (24300000, 21600),
    (64800000, 43200),
    (129600000, 86400),
    (259200000, 172800),
    (604800000, 604800),
)
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
DEFAULT_SCRAPE_INTERVAL = 15.0  # what Grafana assumes when the datasource sets no scrape interval


def parse_duration(text: str) -> float:
    """'1m30s', '15s', '1d' -> seconds (Grafana's and Prometheus' duration syntax)."""
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w|y)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"not a duration: {text!r}")
    return sum(float(n) * _UNITS[u] for n, u in parts)


def round_interval(seconds: float) -> float:
    ms = seconds * 1000
    for bound, step in _ROUND:
        if ms <= bound:
            return step
    return 604800 * 4


def format_interval(seconds: float) -> str:
    """gtime.FormatInterval: the largest whole unit ('15s', '2m', '1h', '1d')."""
    for unit, size in (("y", 31536000), ("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{max(1, int(seconds * 1000))}ms"


def go_duration(seconds: float) -> str:
    """Go's time.Duration.String() for whole seconds: '20s', '1m0s', '1h0m0s' (what $__rate_interval becomes)."""
    s = int(round(seconds))
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    if h:
        return f"{h}h{m}m{sec}s"
    if m:
        return f"{m}m{sec}s"
    return f"{sec}s"


@dataclass(frozen=True)
class Timing:
    """What Grafana computes for one panel query."""

    start: float
    end: float
    interval: float  # $__interval, and the step of a range query
    rate_interval: float

    @property
    def range(self) -> float:
        return self.end - self.start


def timing(
    start: float,
    end: float,
    max_data_points: int,
    scrape_interval: float = DEFAULT_SCRAPE_INTERVAL,
    min_interval: float | None = None,
) -> Timing:
    """Interval and rate interval as Grafana's backend computes them, and the range aligned to the step.

    interval = round(range / maxDataPoints), at least the panel's min interval (default: the
    datasource's scrape interval); rate interval = max(interval + scrape, 4 x scrape).
    """
    floor = min_interval if min_interval is not None else scrape_interval
    interval = max(round_interval((end - start) / max_data_points), floor)
    interval = max(interval, (end - start) / 11000)  # Prometheus' 11,000-points limit
    rate_interval = max(interval + scrape_interval, 4 * scrape_interval)
    # Grafana aligns a range query's start and end to the step (alignTimeRange).
    return Timing(math.floor(start / interval) * interval, math.floor(end / interval) * interval, interval, rate_interval)


def macros(expr: str, t: Timing) -> str:
    """Replace $__interval, $__rate_interval, $__range and their _ms/_s forms (longest names first)."""
    range_s = int(round(t.range))
    values = {
        "__rate_interval_ms": str(int(t.rate_interval * 1000)),
        "__rate_interval": go_duration(t.rate_interval),
        "__interval_ms": str(int(t.interval * 1000)),
        "__interval": format_interval(t.interval),
        "__range_ms": str(int(t.range * 1000)),
        "__range_s": str(range_s),
        "__range": f"{range_s}s",
    }
    for name, value in values.items():
        expr = expr.replace("${%s}" % name, value).replace("$" + name, value)
    return expr


# --- template variables ----------------------------------------------------------------------
_REGEX_SPECIAL = re.compile(r"([$^*{}\[\]'+?.()|])")


def regex_escape(value: str) -> str:
    """prometheusSpecialRegexEscape: a backslash becomes four, a regex metacharacter gets two in front
    (one for the PromQL string literal, one for the regex)."""
    return _REGEX_SPECIAL.sub(lambda m: "\\\\" + m.group(1), value.replace("\\", "\\" * 4))


@dataclass(frozen=True)
class Selection:
    """A variable's current value as Grafana holds it."""

    values: tuple[str, ...]
    multi_or_all: bool = False  # variable allows multi-value or All: values become a regex
    all_value: str | None = None  # set when 'All' is selected and the variable has a custom all value


def format_value(sel: Selection) -> str:
    if sel.all_value is not None:
        return sel.all_value  # a custom all value is inserted as it is
    if not sel.multi_or_all:
        return sel.values[0].replace("\\", "\\\\").replace("'", "\\\\'")
    escaped = [regex_escape(v) for v in sel.values]
    return escaped[0] if len(escaped) == 1 else "(" + "|".join(escaped) + ")"


def variables(expr: str, selections: dict[str, Selection]) -> str:
    """Replace $name, ${name} and [[name]] (longest names first, so $lun does not eat $lun_x)."""
    for name in sorted(selections, key=len, reverse=True):
        value = format_value(selections[name])
        expr = expr.replace("${%s}" % name, value).replace("[[%s]]" % name, value)
        expr = re.sub(r"\$" + re.escape(name) + r"(?![A-Za-z0-9_])", lambda _m, value=value: value, expr)
    return expr
