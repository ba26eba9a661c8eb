"""Match the objects of two captures by name and compare every metric, with a significance test."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from exporter.analysis import findings as f
from exporter.analysis import stats as st
from exporter.analysis import tuning
from exporter.analysis.capture import Capture, CaptureError
from exporter.analysis.significance import ALPHA, holm, welch_blocks
from exporter.store import inventory_snapshot


@dataclass
class Row:
    family: str
    name: str  # the object as the user knows it (a world shows as "device / vm")
    metric: st.Metric
    before: st.Summary | None
    after: st.Summary | None
    change: float | None = None  # after - before, display units
    relative: float | None = None
    p: float | None = None  # raw two-sided p-value; None when not tested
    p_adjusted: float | None = None  # Holm
    significant: bool = False  # larger than the noise, and large enough to matter
    verdict: str = ""  # "worse", "better", "changed" or ""
    config: tuple[float, float] | None = None  # (before, after) of a setting


@dataclass
class Comparison:
    before: Capture
    after: Capture
    rows: list[Row]
    only: dict[str, dict[str, list[str]]]  # "before"/"after" -> family -> names
    findings: list
    series: dict = field(default_factory=dict)  # (family, name, metric key) -> (before Series, after Series)
    tuning: list[str] = field(default_factory=list)  # settings that differ in the inventory snapshots
    board: str = ""  # the before/after dashboard showing the same two ranges (history mode, --grafana)

    @property
    def worse(self) -> list:
        return [r for r in self.rows if r.verdict == "worse"] + [x for x in self.findings if x.verdict == "worse"]


def object_names(capture: Capture, family: str) -> dict[str, object]:
    """Display name -> object key. Worlds are matched by VM name where the capture knows it (world
    ids change when a VM restarts), else by world id; virtual disks by VM name and controller slot."""
    names = {}
    for obj in capture.objects(family):
        if family == "worlds":
            device, world = obj
            vm = capture.world_vms.get(world)
            names[f"{device} / {vm}" if vm else f"{device} / world {world}"] = obj
        elif family == "vdisks":
            names[":".join(obj)] = obj  # vm:scsi0:0, as esxtop names it
        elif family == "vsan_esa_disks":
            names[" ".join(obj)] = obj  # "eui.0025... performance": the disk and its tier
        elif family == "cpus":
            if obj == "_Total":
                names["all CPUs"] = obj
        else:
            names[str(obj)] = obj
    return names


def compare(
    before: Capture,
    after: Capture,
    allow_other_host: bool = False,
    link_speeds: dict[str, float] | None = None,
    dsnro: float | None = None,
    limits=None,
    snapshots: tuple | None = None,
) -> Comparison:
    """limits: exporter.configuration.thresholds.Thresholds; None reads the default thresholds file.
    snapshots: (before, after) settings per host; None reads the inventory snapshots beside the captures."""
    if before.host != after.host and not allow_other_host:
        raise CaptureError(
            f"{after.path}: host {after.host!r} is not the host of {before.path} ({before.host!r}); "
            "pass --allow-other-host to compare them anyway"
        )
    rows, only, series = [], {"before": {}, "after": {}}, {}
    for family, metrics in st.FAMILY_METRICS.items():
        nb, na = object_names(before, family), object_names(after, family)
        only["before"][family] = [n for n in nb if n not in na]
        only["after"][family] = [n for n in na if n not in nb]
        for name in [n for n in nb if n in na]:
            for metric in metrics:
                sb, sa = st.series(before, family, nb[name], metric), st.series(after, family, na[name], metric)
                if sb is None or sa is None:
                    continue
                row = _row(family, name, metric, sb, sa)
                if row is not None:
                    rows.append(row)
                    series[(family, name, metric.key)] = (sb, sa)
    for row, p in zip(rows, holm([r.p for r in rows])):
        row.p_adjusted = p
        _judge(row)
    found = f.evaluate(before, after, link_speeds or {}, dsnro, limits)
    if snapshots is None:
        snapshots = inventory_snapshot.read(before.path), inventory_snapshot.read(after.path)
    tuned = tuning.changes(*snapshots)
    return Comparison(before, after, rows, only, found, series, tuned)


def correct_together(comparisons: list[Comparison]) -> None:
    """Holm over every row of several comparisons (one per host, from the history): the report's
    family of tests is all of them, not each host's alone."""
    rows = [row for comparison in comparisons for row in comparison.rows]
    for row, p in zip(rows, holm([r.p for r in rows])):
        row.p_adjusted = p
        if row.config is None:
            row.significant, row.verdict = False, ""
        _judge(row)


def _row(family, name, metric, sb, sa) -> Row | None:
    if metric.kind == "config":
        vb, va = st.config_value(sb), st.config_value(sa)
        row = Row(family, name, metric, None, None, config=(vb, va))
        if vb != va:
            row.change, row.verdict = va - vb, "changed"
        return row
    before, after = st.summarize(sb), st.summarize(sa)
    if before is None or after is None or math.isnan(before.mean) or math.isnan(after.mean):
        return None  # no commands on one side: a latency is undefined there
    row = Row(family, name, metric, before, after)
    row.change = (after.mean - before.mean) * metric.scale
    row.relative = (after.mean - before.mean) / before.mean if before.mean else None
    row.p = welch_blocks(sb.values, sa.values, sb.weights, sa.weights)
    return row


def _judge(row: Row) -> None:
    if row.config is not None or row.p_adjusted is None:
        return
    metric = row.metric
    big_enough = abs(row.change) >= metric.floor and (row.relative is None or abs(row.relative) >= metric.relative)
    row.significant = row.p_adjusted < ALPHA and big_enough
    if not row.significant:
        return
    if metric.better is None:
        row.verdict = "changed"
    else:
        up_is_better = metric.better == "higher"
        row.verdict = "better" if (row.change > 0) == up_is_better else "worse"
