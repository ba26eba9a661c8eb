"""The HTML report: one self-contained file (inline CSS and SVG, no script, no network)."""

from __future__ import annotations

from html import escape

from exporter.analysis import stats as st
from exporter.analysis import svg
from exporter.analysis.compare import Comparison
from exporter.analysis.report_text import HEAD, METHOD, _cells, describe

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1340px}
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:2px 6px;text-align:right}
td:first-child,th:first-child{text-align:left}.worse{background:#fbd5d0}.better{background:#d4f0dd}
.changed{background:#fff3c4}.t{font-size:13px;font-weight:600}.a{font-size:10px;fill:#555}.g{stroke:#eee}
.findings td,.findings th{text-align:left}.charts{display:flex;flex-wrap:wrap;gap:8px}.note{color:#555}
"""


def _rows_table(rows) -> str:
    out = ["<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in HEAD) + "</tr>"]
    for row in rows:
        out.append(f'<tr class="{row.verdict}">' + "".join(f"<td>{escape(c)}</td>" for c in _cells(row)) + "</tr>")
    return "".join(out) + "</table>"


def _minutes(series_pair, captures):
    out = {}
    for name, s, capture in zip(("before", "after"), series_pair, captures):
        out[name] = ((s.times - capture.timestamps[0]) / 60.0, s.values)
    return out


def _charts(comparison: Comparison, family: str, name: str) -> str:
    captures = (comparison.before, comparison.after)
    parts = []
    plots = [
        (st.GAVG, "guest latency GAVG", "ms"),
        (st.QUED, "queued commands QUED", "commands"),
        (st.ACTV, "active commands ACTV", "commands"),
        (st.MBPS, "throughput", "MiB/s"),
    ]
    for metric, title, unit in plots:
        pair = comparison.series.get((family, name, metric.key))
        if pair is None:
            continue
        scaled = {k: (x, y * metric.scale) for k, (x, y) in _minutes(pair, captures).items()}
        parts.append(svg.lines(title, unit, scaled))  # the section heading names the object
    pair = comparison.series.get((family, name, st.GAVG.key))
    if pair is not None:
        parts.append(
            svg.histogram(
                "GAVG distribution (command-weighted)",
                "ms",
                {k: (s.values * 1e3, s.weights) for k, s in zip(("before", "after"), pair)},
            )
        )
    return '<div class="charts">' + "".join(parts) + "</div>" if parts else ""


def render(comparison: Comparison) -> str:
    out = [
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        "<title>esxtop before/after comparison</title>",
        f"<style>{CSS}</style></head><body>",
        "<h1>esxtop before/after comparison</h1>",
        f"<p>before: {escape(describe(comparison.before))}<br>after: {escape(describe(comparison.after))}</p>",
    ]
    if comparison.tuning:
        items = "".join(f"<li>{escape(line)}</li>" for line in comparison.tuning)
        out.append(f"<h2>What was tuned</h2><ul>{items}</ul>")
    if comparison.board:
        out.append(f'<p><a href="{escape(comparison.board)}">The same two ranges on the before/after dashboard</a></p>')
    for capture in (comparison.before, comparison.after):
        out.extend(f'<p class="note">note: {escape(n)}</p>' for n in capture.notes)
    out.append(f'<p class="note">{escape(METHOD)}</p><h2>Findings (the paper\'s rules)</h2>')
    if comparison.findings:
        out.append('<table class="findings"><tr><th>state</th><th>rule</th><th>object</th><th>before</th><th>after</th></tr>')
        for x in comparison.findings:
            out.append(
                f'<tr class="{x.verdict}"><td>{x.state}</td><td>{escape(x.rule)}</td><td>{escape(x.name)}</td>'
                f"<td>{escape(x.detail_before)}</td><td>{escape(x.detail_after)}</td></tr>"
            )
        out.append("</table>")
    else:
        out.append("<p>No rule is broken in either capture.</p>")
    worse = comparison.worse
    out.append(f"<p><b>{len(worse)} worse</b>, {sum(r.verdict == 'better' for r in comparison.rows)} metrics better.</p>")
    grouped: dict[tuple, list] = {}
    for row in comparison.rows:
        grouped.setdefault((row.family, row.name), []).append(row)
    for (family, name), rows in grouped.items():
        out.append(f"<h2>{st.FAMILY_LABEL[family]} {escape(name)}</h2>")
        if family in ("luns", "adapters"):
            out.append(_charts(comparison, family, name))
        out.append(_rows_table(rows))
    for side in ("before", "after"):
        for family, names in comparison.only[side].items():
            if names:
                out.append(f"<p>Only in {side}: {st.FAMILY_LABEL[family]}s {escape(', '.join(names))}</p>")
    out.append("</body></html>\n")
    return "\n".join(out)
