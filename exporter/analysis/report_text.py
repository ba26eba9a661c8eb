"""The terminal report of a comparison."""

from __future__ import annotations

import time

from exporter.analysis import stats as st
from exporter.analysis.compare import Comparison, Row
from exporter.analysis.significance import ALPHA

METHOD = (
    f"Change tested with Welch's t-test on block means (blocks at least twice the series' "
    f"autocorrelation time, so 5-second samples of one burst count once), Holm-corrected over the "
    f"report at alpha {ALPHA}; a significant change must also pass the metric's practical floor."
)


def describe(capture) -> str:
    start = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(capture.timestamps[0]))
    return f"{capture.path} (host {capture.host}, {len(capture.timestamps)} samples from {start} UTC)"


def _num(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}"


def _cells(row: Row) -> list[str]:
    metric = row.metric
    label = f"{metric.label} ({metric.unit})" if metric.unit else metric.label
    if row.config is not None:
        b, a = row.config
        return [label, _num(b, 0), "", "", "", _num(a, 0), "", "", "", "" if b == a else f"{a - b:+.0f}", "setting", row.verdict]
    s = metric.scale
    b, a = row.before, row.after
    rel = "" if row.relative is None else f" ({row.relative:+.0%})"
    p = "too short" if row.p_adjusted is None else f"p={row.p_adjusted:.3g}"
    return [
        label,
        _num(b.mean * s),
        _num(b.p50 * s),
        _num(b.p95 * s),
        _num(b.p99 * s),
        _num(a.mean * s),
        _num(a.p50 * s),
        _num(a.p95 * s),
        _num(a.p99 * s),
        f"{row.change:+.2f}{rel}",
        p,
        row.verdict or ("noise" if row.p_adjusted is not None else ""),
    ]


HEAD = ["metric", "before", "p50", "p95", "p99", "after", "p50", "p95", "p99", "change", "test", "verdict"]


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        "  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip() for r in rows
    ]


def render(comparison: Comparison) -> str:
    out = [f"before: {describe(comparison.before)}", f"after:  {describe(comparison.after)}"]
    for capture in (comparison.before, comparison.after):
        out.extend(f"note: {n}" for n in capture.notes)
    if comparison.tuning:
        out += ["", "What was tuned (settings that differ between before and after):"]
        out += [f"  {line}" for line in comparison.tuning]
    out += ["", METHOD, "", "Findings (the paper's rules):"]
    if not comparison.findings:
        out.append("  none: no rule is broken in either capture")
    for x in comparison.findings:
        out.append(f"  {x.state.upper():9} {x.text}")
    grouped: dict[tuple, list[Row]] = {}
    for row in comparison.rows:
        grouped.setdefault((row.family, row.name), []).append(row)
    for (family, name), rows in grouped.items():
        out += ["", f"{st.FAMILY_LABEL[family]} {name}"]
        out += _table([HEAD] + [_cells(r) for r in rows])
    for side in ("before", "after"):
        for family, names in comparison.only[side].items():
            if names:
                out.append(f"\nOnly in {side}: {st.FAMILY_LABEL[family]}s " + ", ".join(names))
    worse = comparison.worse
    better = [r for r in comparison.rows if r.verdict == "better"] + [x for x in comparison.findings if x.verdict == "better"]
    out += [
        "",
        f"Result: {len(worse)} worse, {len(better)} better." + (" Worse: " + "; ".join(_what(w) for w in worse) if worse else ""),
    ]
    return "\n".join(out) + "\n"


def _what(item) -> str:
    if isinstance(item, Row):
        return f"{item.metric.label} of {st.FAMILY_LABEL[item.family]} {item.name}"
    return item.text
