"""Before/after: the same panels for an earlier range (the current one shifted back by $shift)
and the current range, side by side, with annotations where DQLEN, DSNRO or path states changed."""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as db
from grafana_foundation_sdk.models import dashboard as dm

from .. import variables as v
from ..panels import LATENCY_LINE, LATENCY_STEPS, MS, Q, prometheus_annotation, row, stat_panel, text_panel, timeseries_panel
from ..promql import HOST, LUN, RANGE, gauge, mean_latency, rate, sel
from ..render import new_dashboard

UID = "esxi-before-after"
FILE = "before-after.json"
SHIFT = "$shift"
WHO = "{{host}} {{device}}"


def _manual_marks() -> db.AnnotationQuery:
    """Grafana's own annotations: ctrl+click a graph to mark "DQLEN 32 -> 64" by hand."""
    return (
        db.AnnotationQuery()
        .name("Tuning notes")
        .built_in(1)
        .enable(True)
        .hide(False)
        .datasource(dm.DataSourceRef(type_val="grafana", uid="-- Grafana --"))
        .icon_color("rgba(0, 211, 255, 1)")
        .type("dashboard")
        .target(db.AnnotationTarget().type("dashboard").limit(100).match_any(False).tags([]))
    )


def _pair(title: str, description: str, unit: str, queries: list[Q], **kw) -> list:
    """The same panel twice: left for the earlier range, right for the current one."""
    return [
        timeseries_panel(f"{title}: before ($shift earlier)", description, unit, queries, time_shift=SHIFT, **kw),
        timeseries_panel(f"{title}: after (current range)", description, unit, queries, **kw),
    ]


def _change(expr_for) -> str:
    """Relative change of a whole-range figure from the earlier range to the current one."""
    return f"({expr_for('')}) / ({expr_for(SHIFT)}) - 1"


def _mean_gavg(offset: str) -> str:
    """Command-weighted mean guest latency over the whole range (shifted back by offset)."""
    return (
        f"sum({rate('esxi_lun_guest_latency_seconds_total', HOST, LUN, window=RANGE, offset=offset)}) / "
        f"sum({rate('esxi_lun_commands_total', HOST, LUN, window=RANGE, offset=offset)})"
    )


def _iops(offset: str) -> str:
    return f"sum({rate('esxi_lun_commands_total', HOST, LUN, window=RANGE, offset=offset)})"


def build():
    d = new_dashboard(
        UID,
        "ESXi before/after tuning",
        "Did the change help? The same panels for the range before a change and the current "
        "range, side by side. Pick the current range after the change and set shift to how "
        "long ago the earlier range was.",
        [
            v.datasource(),
            v.host(),
            v.lun(),
            v.custom(
                "shift",
                "Before = current range shifted back by",
                ["1h", "6h", "12h", "1d", "2d", "7d"],
                "1d",
                "How far back the 'before' panels look; type any duration",
            ),
        ],
    )
    d = d.annotation(_manual_marks())
    d = d.annotation(
        prometheus_annotation(
            "Queue depth changed",
            "orange",
            f"changes({sel('esxi_lun_queue_depth', HOST, LUN)}[$__interval]) > 0",
            "DQLEN of {{device}} changed on {{host}}",
        )
    )
    d = d.annotation(
        prometheus_annotation(
            "DSNRO changed",
            "purple",
            f"changes({sel('esxi_lun_dsnro', HOST, LUN)}[$__interval]) > 0",
            "DSNRO of {{device}} changed on {{host}}",
        )
    )
    d = d.annotation(
        prometheus_annotation(
            "Path state changed",
            "red",
            f"changes({sel('esxi_path_state', HOST, LUN)}[$__interval]) > 0",
            "path {{path}} {{state}} changed on {{host}}",
        )
    )
    d = d.with_panel(
        text_panel(
            "The verdict on the command line",
            "Whether each change is larger than the noise (Welch's test on block means, Holm-corrected), "
            "the paper's rules and the settings that differ, for these two ranges:\n\n"
            "```\nesxi-storage-exporter compare --prometheus PROMETHEUS_URL \\\n"
            "    --after '${__from:date:iso}..${__to:date:iso}' --shift '${shift}' --html report.html\n```\n\n"
            "Exit status 1 if anything got worse: a change request can be gated on it.",
            h=5,
        )
    )
    d = d.with_row(row("Summary over the whole range"))
    for title, description, expr, unit in (
        ("Guest latency, before", "Command-weighted mean GAVG over the earlier range.", _mean_gavg(SHIFT), "s"),
        ("Guest latency, after", "Command-weighted mean GAVG over the current range.", _mean_gavg(""), "s"),
        (
            "Guest latency change",
            "Relative change of mean GAVG; negative is better. A change within a few percent is noise.",
            _change(_mean_gavg),
            "percentunit",
        ),
        (
            "IOPS change",
            "Relative change of mean IOPS; positive is better if the demand did not change.",
            _change(_iops),
            "percentunit",
        ),
    ):
        thresholds = LATENCY_STEPS if unit == "s" else ((None, "text"),)
        d = d.with_panel(stat_panel(title, description, unit, Q(expr, instant=True), w=6, thresholds=thresholds))
    d = d.with_row(row("Latency"))
    for p in _pair(
        "Guest latency (GAVG)",
        f"Mean guest latency with the {MS} line; after tuning it should sit lower at the same IOPS.",
        "s",
        [Q(mean_latency("lun", "guest", HOST, LUN), WHO)],
        line_at=LATENCY_LINE,
    ):
        d = d.with_panel(p)
    for p in _pair(
        "Kernel latency (KAVG)",
        "Time in the VMkernel. A queue-depth increase that worked brings KAVG near zero; if DAVG "
        "rose by as much, the array, not the queue, is the limit.",
        "s",
        [Q(mean_latency("lun", "kernel", HOST, LUN), f"KAVG {WHO}"), Q(mean_latency("lun", "device", HOST, LUN), f"DAVG {WHO}")],
    ):
        d = d.with_panel(p)
    d = d.with_row(row("Queue"))
    for p in _pair(
        "ACTV and QUED against DQLEN",
        "Queued commands (QUED) should drop to zero after raising the queue depth (dashed).",
        "short",
        [
            Q(gauge("esxi_lun_active_commands", HOST, LUN), f"ACTV {WHO}"),
            Q(gauge("esxi_lun_queued_commands", HOST, LUN), f"QUED {WHO}"),
            Q(gauge("esxi_lun_queue_depth", HOST, LUN, fn="max"), f"DQLEN {WHO}"),
        ],
        dashed=("^DQLEN .*",),
    ):
        d = d.with_panel(p)
    d = d.with_row(row("Throughput"))
    for p in _pair(
        "IOPS",
        "Commands per second; should hold or rise while latency falls.",
        "iops",
        [Q(rate("esxi_lun_commands_total", HOST, LUN), WHO)],
    ):
        d = d.with_panel(p)
    for p in _pair(
        "Reservation conflicts",
        "Conflicts per second; moving VMFS metadata work away should bring them to zero.",
        "reqps",
        [Q(rate("esxi_lun_reservation_conflicts_total", HOST, LUN), WHO)],
    ):
        d = d.with_panel(p)
    return d
