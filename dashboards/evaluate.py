"""Run every panel query of the generated dashboards against a real Prometheus, with template
variables and interval macros substituted as Grafana does, and report which return data.

    python -m dashboards.evaluate --prometheus http://127.0.0.1:9090 [--range 1h] [--set shift=1d]

A query passes when Prometheus parses it and returns at least one series with a finite value.
Prints one line per failure and a closing `N passed, N failed`; exits 1 if any failed.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from . import interpolate as gi
from .render import all_panels

PROVISIONED = Path(__file__).resolve().parent / "provisioned"
PANEL_PIXELS_PER_COLUMN = 75  # a 24-column dashboard on a 1,800-pixel-wide screen
_LABEL_VALUES = re.compile(r"^\s*label_values\(\s*(?:(.*),\s*)?([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*$")


class Prometheus:
    def __init__(self, url: str, timeout: float = 10.0) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout

    def get(self, path: str, params: list[tuple[str, str]]) -> dict:
        """The API's JSON answer; an HTTP error's JSON body (Prometheus explains parse errors there)."""
        req = urllib.request.Request(f"{self.url}{path}?{urllib.parse.urlencode(params)}")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return json.load(resp)
        except urllib.error.HTTPError as err:
            try:
                return json.load(err)
            except ValueError:
                return {"status": "error", "error": f"HTTP {err.code}"}


@dataclass
class Result:
    dashboard: str
    panel: str  # title
    ref: str
    expr: str  # as sent to Prometheus
    ok: bool
    detail: str
    series: list[tuple[dict, list[tuple[float, float]]]] = field(default_factory=list)  # labels, finite points

    @property
    def last(self) -> list[tuple[dict, float]]:
        """Each series' labels and last finite value."""
        return [(metric, points[-1][1]) for metric, points in self.series]


def _finite(values: list) -> bool:
    return any(math.isfinite(float(v[1])) for v in values)


def finite_series(answer: dict) -> list[tuple[dict, list[tuple[float, float]]]]:
    if answer.get("status") != "success" or answer["data"]["resultType"] not in ("vector", "matrix"):
        return []
    out = []
    for s in answer["data"]["result"]:
        points = [(float(t), float(v)) for t, v in (s.get("values") or [s.get("value")])]
        finite = [(t, v) for t, v in points if math.isfinite(v)]
        if finite:
            out.append((s["metric"], finite))
    return out


def has_data(answer: dict) -> tuple[bool, str]:
    if answer.get("status") != "success":
        return False, f"{answer.get('errorType', 'error')}: {answer.get('error', '?')}"
    data = answer["data"]
    if data["resultType"] == "scalar":
        return math.isfinite(float(data["result"][1])), "scalar"
    series = data["result"]
    if data["resultType"] == "matrix":
        good = [s for s in series if _finite(s["values"])]
    else:
        good = [s for s in series if _finite([s["value"]])]
    if not good:
        return False, f"no data ({len(series)} series, none with a finite value)"
    return True, f"{len(good)} series"


def resolve_variables(
    model: dict, prom: Prometheus, start: float, end: float, overrides: dict[str, str]
) -> tuple[dict[str, gi.Selection], list[str]]:
    """Each variable's value as Grafana would hold it on load: query variables run their
    label_values() query (with the variables before them substituted); 'All' becomes the custom all
    value or the list of every value. Returns the selections and the problems found."""
    selections: dict[str, gi.Selection] = {}
    problems = []
    for var in model.get("templating", {}).get("list", []):
        name, kind = var["name"], var["type"]
        current = var.get("current", {}).get("value")
        if name in overrides:
            selections[name] = gi.Selection((overrides[name],))
        elif kind == "query":
            query = var["query"] if isinstance(var["query"], str) else var["query"]["query"]
            m = _LABEL_VALUES.match(gi.variables(query, selections))
            if not m:
                problems.append(f"variable {name}: cannot run {query!r}")
                continue
            params = [("start", str(start)), ("end", str(end))] + ([("match[]", m.group(1))] if m.group(1) else [])
            answer = prom.get(f"/api/v1/label/{m.group(2)}/values", params)
            values = tuple(sorted(answer.get("data") or []))
            if answer.get("status") != "success" or not values:
                problems.append(f"variable {name}: {query!r} returned no values ({answer.get('error', 'empty')})")
                continue
            multi = bool(var.get("multi") or var.get("includeAll"))
            if current in ("$__all", ["$__all"]):
                selections[name] = gi.Selection(values, multi, var.get("allValue") or None)
            else:
                selections[name] = gi.Selection((current if isinstance(current, str) else values[0],), multi)
        elif kind in ("textbox", "custom", "constant"):
            selections[name] = gi.Selection((str(current if current is not None else var.get("query", "")),))
    return selections, problems


def run_panel_queries(
    model: dict, prom: Prometheus, selections: dict[str, gi.Selection], start: float, end: float, scrape_interval: float
) -> list[Result]:
    results = []
    for panel in all_panels(model):
        shift = panel.get("timeShift")
        offset = gi.parse_duration(gi.variables(shift, selections)) if shift else 0.0
        points = panel.get("maxDataPoints") or panel["gridPos"]["w"] * PANEL_PIXELS_PER_COLUMN
        t = gi.timing(start - offset, end - offset, int(points), scrape_interval)
        for target in panel.get("targets", []):
            expr = gi.macros(gi.variables(target["expr"], selections), t)
            if target.get("instant"):
                answer = prom.get("/api/v1/query", [("query", expr), ("time", str(end - offset))])
            else:
                answer = prom.get(
                    "/api/v1/query_range",
                    [("query", expr), ("start", str(t.start)), ("end", str(t.end)), ("step", str(t.interval))],
                )
            ok, detail = has_data(answer)
            results.append(Result(model["title"], panel["title"], target["refId"], expr, ok, detail, finite_series(answer)))
    return results


def run_annotations(
    model: dict, prom: Prometheus, selections: dict[str, gi.Selection], start: float, end: float, scrape_interval: float
) -> list[Result]:
    """Prometheus annotation queries: they must parse; data only where something changed."""
    out = []
    t = gi.timing(start, end, 1800, scrape_interval)
    for ann in model.get("annotations", {}).get("list", []):
        if "expr" not in ann:
            continue
        expr = gi.macros(gi.variables(ann["expr"], selections), t)
        answer = prom.get(
            "/api/v1/query_range", [("query", expr), ("start", str(t.start)), ("end", str(t.end)), ("step", str(t.interval))]
        )
        parsed = answer.get("status") == "success"
        marks, detail = has_data(answer)
        out.append(
            Result(
                model["title"], f"annotation {ann['name']}", "Anno", expr, parsed, detail if marks or not parsed else "no marks"
            )
        )
    return out


def evaluate(
    paths: list[Path], prom: Prometheus, start: float, end: float, scrape_interval: float, overrides: dict[str, str] | None = None
) -> tuple[list[Result], list[Result], list[str]]:
    """(panel query results, annotation results, variable problems) over the given dashboard files."""
    panels, annotations, problems = [], [], []
    for path in paths:
        model = json.loads(path.read_text(encoding="utf-8"))
        selections, var_problems = resolve_variables(model, prom, start, end, overrides or {})
        problems += [f"{model['title']}: {p}" for p in var_problems]
        panels += run_panel_queries(model, prom, selections, start, end, scrape_interval)
        annotations += run_annotations(model, prom, selections, start, end, scrape_interval)
    return panels, annotations, problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m dashboards.evaluate", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--prometheus", required=True, help="Prometheus base URL")
    ap.add_argument("--range", default="1h", help="dashboard time range ending now (default 1h)")
    ap.add_argument("--scrape-interval", default="15s", help="the datasource's scrape interval (default 15s)")
    ap.add_argument("--set", action="append", default=[], metavar="VAR=VALUE", help="override a variable")
    ap.add_argument("files", nargs="*", type=Path, help="dashboard JSON (default: dashboards/provisioned/*.json)")
    args = ap.parse_args(argv)
    overrides = dict(s.split("=", 1) for s in args.set)
    end = time.time()
    panels, annotations, problems = evaluate(
        args.files or sorted(PROVISIONED.glob("*.json")),
        Prometheus(args.prometheus),
        end - gi.parse_duration(args.range),
        end,
        gi.parse_duration(args.scrape_interval),
        overrides,
    )
    report(panels, annotations, problems, sys.stdout)
    return 0 if all(r.ok for r in panels) and not problems else 1


def report(panels: list[Result], annotations: list[Result], problems: list[str], out) -> None:
    for p in problems:
        print(f"VARIABLE {p}", file=out)
    for r in panels + annotations:
        if not r.ok:
            print(f"FAIL {r.dashboard} / {r.panel} [{r.ref}]: {r.detail}\n     {r.expr}", file=out)
    print(
        f"annotations: {sum(r.ok for r in annotations)} parsed, "
        f"{sum(r.detail != 'no marks' for r in annotations if r.ok)} with marks",
        file=out,
    )
    print(f"{sum(r.ok for r in panels)} passed, {sum(not r.ok for r in panels)} failed", file=out)


if __name__ == "__main__":
    sys.exit(main())
