"""The machine-readable report: every compared metric of every subject, the paper's rules and the
settings that changed, for a change request's gate or a script (`compare --json FILE`)."""

from __future__ import annotations

import json
import math

from exporter.analysis.compare import Comparison, Row


def _number(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else value


def _side(capture) -> dict:
    return {
        "source": capture.path,
        "host": capture.host,
        "start": float(capture.timestamps[0]),
        "end": float(capture.timestamps[-1]),
        "samples": len(capture.timestamps),
    }


def _metric(comparison: Comparison, row: Row) -> dict:
    metric = row.metric
    if row.config is not None:
        before, after = row.config
    else:
        before = row.before.mean * metric.scale if row.before else None
        after = row.after.mean * metric.scale if row.after else None
    return {
        "host": comparison.after.host,
        "family": row.family,
        "subject": row.name,
        "metric": metric.key,
        "label": metric.label,
        "unit": metric.unit,
        "before": _number(before),
        "after": _number(after),
        "change": _number(row.change),
        "relative_change": _number(row.relative),
        "p_holm": _number(row.p_adjusted),
        "significant": row.significant,
        "verdict": row.verdict or "unchanged",  # worse | better | changed | unchanged
    }


def render(comparisons: list[Comparison]) -> str:
    document = {
        "comparisons": [{"before": _side(c.before), "after": _side(c.after)} for c in comparisons],
        "settings_changed": [line for c in comparisons for line in c.tuning],
        "metrics": [_metric(c, row) for c in comparisons for row in c.rows],
        "findings": [
            {
                "host": c.after.host,
                "rule": f.rule,
                "subject": f.name,
                "state": f.state,
                "before": f.detail_before,
                "after": f.detail_after,
                "verdict": f.verdict or "unchanged",
            }
            for c in comparisons
            for f in c.findings
        ],
        "worse": sum(len(c.worse) for c in comparisons),
    }
    return json.dumps(document, indent=1) + "\n"
