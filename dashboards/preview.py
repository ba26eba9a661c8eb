"""A data preview of each dashboard: every panel's query results from a real Prometheus, drawn
on the dashboard's own grid as plain HTML and SVG, and screenshotted with headless Chromium.
It is not a Grafana render: it shows what data each panel would get, laid out as Grafana would.

    python -m dashboards.preview --prometheus URL --range 3m [--set shift=3m] --out DIR
"""

from __future__ import annotations

import argparse
import html
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from . import interpolate as gi
from .evaluate import PROVISIONED, Prometheus, Result, evaluate
from .render import all_panels

COLUMN, ROW = 66, 30  # pixels per grid column and grid row: a 1,584-pixel-wide dashboard
COLOURS = ("#7eb26d", "#eab839", "#6ed0e0", "#ef843c", "#e24d42", "#1f78c1", "#ba43a9", "#705da0")
MAX_SERIES = 8


def fmt(value: float, unit: str) -> str:
    if unit == "s":
        return f"{value * 1000:.3g} ms" if abs(value) < 1 else f"{value:.3g} s"
    if unit == "percentunit":
        return f"{value * 100:.3g}%"
    if unit == "Bps":
        return f"{value / 1e6:.3g} MB/s"
    suffix = {"iops": " io/s", "reqps": "/s"}.get(unit, "")
    return f"{value:.4g}{suffix}"


def legend(template: str, metric: dict) -> str:
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: metric.get(m.group(1), ""), template) or json.dumps(metric)


def threshold_lines(panel: dict) -> list[tuple[float, str]]:
    custom = panel.get("fieldConfig", {}).get("defaults", {}).get("custom", {})
    if custom.get("thresholdsStyle", {}).get("mode", "off") == "off":
        return []
    steps = panel["fieldConfig"]["defaults"].get("thresholds", {}).get("steps", [])
    return [(s["value"], s["color"]) for s in steps if s.get("value") is not None]


def chart(panel: dict, results: list[Result], w: int, h: int) -> str:
    unit = panel["fieldConfig"]["defaults"].get("unit", "")
    lines = []
    for target, result in zip(panel["targets"], results):
        for metric, points in result.series:
            lines.append((legend(target.get("legendFormat", ""), metric), points))
    lines = lines[:MAX_SERIES]
    if not lines:
        return "<div class=empty>no data</div>"
    thresholds = threshold_lines(panel)
    ts = [t for _, pts in lines for t, _ in pts]
    vs = [v for _, pts in lines for _, v in pts] + [v for v, _ in thresholds]
    t0, t1 = min(ts), max(ts) or 1
    lo, hi = min(0.0, min(vs)), max(vs)
    hi = hi if hi > lo else lo + 1
    x = lambda t: 40 + (t - t0) / max(t1 - t0, 1e-9) * (w - 50)  # noqa: E731
    y = lambda v: 5 + (hi - v) / (hi - lo) * (h - 15)  # noqa: E731
    svg = [
        f'<svg width="{w}" height="{h}">',
        f'<text x="2" y="12" class=axis>{html.escape(fmt(hi, unit))}</text>',
        f'<text x="2" y="{h - 4}" class=axis>{html.escape(fmt(lo, unit))}</text>',
    ]
    for value, colour in thresholds:
        svg.append(
            f'<line x1="40" x2="{w - 10}" y1="{y(value):.1f}" y2="{y(value):.1f}" stroke="{colour}" stroke-dasharray="6 4"/>'
        )
    for i, (_, pts) in enumerate(lines):
        path = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in pts)
        svg.append(f'<polyline fill="none" stroke="{COLOURS[i % len(COLOURS)]}" stroke-width="1.5" points="{path}"/>')
    svg.append("</svg>")
    keys = "".join(
        f'<span style="color:{COLOURS[i % len(COLOURS)]}">&#9644; {html.escape(name)} '
        f"<b>{html.escape(fmt(pts[-1][1], unit))}</b></span>"
        for i, (name, pts) in enumerate(lines)
    )
    return "".join(svg) + f"<div class=legend>{keys}</div>"


def stat(panel: dict, results: list[Result]) -> str:
    unit = panel["fieldConfig"]["defaults"].get("unit", "")
    last = [v for r in results for _, v in r.last]
    if not last:
        return "<div class=empty>no data</div>"
    value = last[0]
    colour = "#73bf69"
    for step in panel["fieldConfig"]["defaults"].get("thresholds", {}).get("steps", []):
        if step.get("value") is None or value >= step["value"]:
            colour = {"green": "#73bf69", "yellow": "#fade2a", "red": "#f2495c"}.get(step["color"], "#8e8e8e")
    return f'<div class=stat style="background:{colour}">{html.escape(fmt(value, unit))}</div>'


def table(panel: dict, results: list[Result]) -> str:
    organize = next(t["options"] for t in panel["transformations"] if t["id"] == "organize")
    names = [n for n, _ in sorted(organize["indexByName"].items(), key=lambda kv: kv[1])]
    columns = [organize["renameByName"][f"Value #{t['refId']}"] for t in panel["targets"]]
    keys = [n for n in names if n not in columns]
    units = {
        o["matcher"]["options"]: next((p["value"] for p in o["properties"] if p["id"] == "unit"), "")
        for o in panel["fieldConfig"].get("overrides", [])
        if o["matcher"]["id"] == "byName"
    }
    rows: dict[tuple, dict] = {}
    for column, result in zip(columns, results):
        for metric, value in result.last:
            rows.setdefault(tuple(metric.get(k, "") for k in keys), {})[column] = value
    if not rows:
        return "<div class=empty>no data</div>"
    head = "".join(f"<th>{html.escape(n)}</th>" for n in keys + columns)
    body = "".join(
        "<tr>"
        + "".join(f"<td>{html.escape(v)}</td>" for v in key)
        + "".join(f"<td>{html.escape(fmt(vals[c], units.get(c, ''))) if c in vals else ''}</td>" for c in columns)
        + "</tr>"
        for key, vals in sorted(rows.items())
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def render(model: dict, results: list[Result], caption: str, variables: dict[str, str] | None = None) -> str:
    """The page of one dashboard; variables fill in panel titles and time shifts as Grafana shows them."""
    shown = {k: gi.Selection((v,)) for k, v in (variables or {}).items()}
    by_panel: dict[str, list[Result]] = {}  # titles are unique within a dashboard (a tested rule)
    for r in results:
        by_panel.setdefault(r.panel, []).append(r)
    boxes, bottom = [], 0
    for panel in all_panels(model):
        g = panel["gridPos"]
        left, top, w, h = g["x"] * COLUMN, g["y"] * ROW, g["w"] * COLUMN - 6, g["h"] * ROW - 6
        bottom = max(bottom, top + h)
        title = html.escape(gi.variables(panel["title"], shown))
        if panel["type"] == "row":
            boxes.append(f'<div class=row style="left:{left}px;top:{top}px;width:{w}px">{title}</div>')
            continue
        mine = by_panel.get(panel["title"], [])
        body = {
            "timeseries": lambda: chart(panel, mine, w - 10, h - 80),
            "stat": lambda: stat(panel, mine),
            "table": lambda: table(panel, mine),
            "text": lambda: f"<pre>{html.escape(panel['options'].get('content', ''))}</pre>",
        }[panel["type"]]()
        shift = panel.get("timeShift") and f" <i>(time shift {html.escape(gi.variables(panel['timeShift'], shown))})</i>"
        shift = shift or ""
        boxes.append(
            f'<div class=panel style="left:{left}px;top:{top}px;width:{w}px;height:{h}px">'
            f"<div class=title>{title}{shift}</div>{body}</div>"
        )
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(model["title"])}</title>
<style>body{{background:#111217;color:#ccccdc;font:12px sans-serif;margin:10px}}
h1{{font-size:16px;margin:0 0 2px}} .caption{{color:#ff9830;margin-bottom:8px}}
.grid{{position:relative;height:{bottom + 10}px}} .panel,.row{{position:absolute;box-sizing:border-box}}
.panel{{background:#181b1f;border:1px solid #2c3235;padding:4px;overflow:hidden}}
.row{{font-weight:bold;font-size:14px;padding-top:6px}} .title{{font-weight:bold;margin-bottom:3px}}
.stat{{font-size:26px;color:#111;text-align:center;padding:10px 0;border-radius:2px}}
.legend span{{margin-right:10px;white-space:nowrap;display:inline-block}} .axis{{fill:#8e8e8e;font-size:10px}}
.empty{{color:#8e8e8e;padding:20px;text-align:center}} table{{border-collapse:collapse;width:100%}}
td,th{{border-bottom:1px solid #2c3235;padding:2px 4px;text-align:left;white-space:nowrap}}
pre{{white-space:pre-wrap;margin:0}}</style></head><body>
<h1>{html.escape(model["title"])}</h1><div class=caption>{html.escape(caption)}</div>
<div class=grid>{"".join(boxes)}</div></body></html>"""


def screenshot(page: Path, png: Path, height: int) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        raise SystemExit("preview: chromium is not installed (apt-get install chromium)")
    subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--screenshot={png}",
            f"--window-size=1610,{height}",
            page.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m dashboards.preview", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--prometheus", required=True)
    ap.add_argument("--range", default="1h")
    ap.add_argument("--scrape-interval", default="15s")
    ap.add_argument("--set", action="append", default=[], metavar="VAR=VALUE")
    ap.add_argument("--caption", default="Data preview (not a Grafana render)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--no-screenshot", action="store_true")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    end = time.time()
    overrides = dict(s.split("=", 1) for s in args.set)
    for path in sorted(PROVISIONED.glob("*.json")):
        model = json.loads(path.read_text(encoding="utf-8"))
        panels, _, _ = evaluate(
            [path],
            Prometheus(args.prometheus),
            end - gi.parse_duration(args.range),
            end,
            gi.parse_duration(args.scrape_interval),
            overrides,
        )
        page = args.out / f"{path.stem}.html"
        page.write_text(render(model, panels, args.caption, overrides), encoding="utf-8")
        if not args.no_screenshot:
            height = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in all_panels(model)) * ROW + 90
            screenshot(page, args.out / f"{path.stem}.png", height)
        print(f"{page}: {sum(r.ok for r in panels)} of {len(panels)} queries with data")
    return 0


if __name__ == "__main__":
    sys.exit(main())
