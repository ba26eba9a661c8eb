"""Panel helpers over grafana-foundation-sdk builders: one call per panel, with its unit, a
description that says what a bad value means, and its queries (refIds A, B, ... in order)."""

from __future__ import annotations

from dataclasses import dataclass

from grafana_foundation_sdk.builders import common as cb
from grafana_foundation_sdk.builders import dashboard as db
from grafana_foundation_sdk.builders import prometheus as prom
from grafana_foundation_sdk.builders import stat, table, text, timeseries
from grafana_foundation_sdk.models import common as cm
from grafana_foundation_sdk.models import dashboard as dm
from grafana_foundation_sdk.models import prometheus as pm

from exporter.configuration import thresholds

# Every panel queries the dashboard's datasource variable; provisioning and import resolve it.
DS = dm.DataSourceRef(type_val="prometheus", uid="${datasource}")

# Every line and colour step comes from exporter/configuration/thresholds.yaml, as the alerts' thresholds do.
LIMITS = thresholds.read()
LATENCY_WARN, LATENCY_BAD = LIMITS.latency_warning_seconds, LIMITS.latency_critical_seconds
LATENCY_LINE = ((None, "transparent"), (LATENCY_BAD, "red"))
KERNEL_LATENCY_STEPS = ((None, "green"), (LIMITS.kernel_latency_bad_seconds, "red"))
# Link use is one direction's bytes over the link's payload capacity (the alerts' recording rule):
# red where EsxiAdapterLinkSaturated fires.
LINK_LINE = ((None, "transparent"), (LIMITS.link_saturation_ratio, "red"))
LINK_STEPS = ((None, "green"), (LIMITS.link_saturation_ratio, "red"))
MS = f"{LATENCY_BAD * 1000:g} ms"  # the latency line as panel descriptions say it
LINK_PCT = f"{LIMITS.link_saturation_ratio * 100:g}%"


@dataclass(frozen=True)
class Q:
    """One Prometheus query of a panel."""

    expr: str
    legend: str = ""
    instant: bool = False  # instant query at the end of the range (tables, stats)


def _target(q: Q, ref: str, table_format: bool) -> prom.Dataquery:
    t = prom.Dataquery().expr(q.expr).ref_id(ref).datasource(DS)
    if q.legend:
        t = t.legend_format(q.legend)
    if q.instant:
        t = t.instant()
    else:
        t = t.range()
    if table_format:
        t = t.format(pm.PromQueryFormat.TABLE)
    return t


def _with_queries(panel, queries: list[Q], table_format: bool = False):
    for i, q in enumerate(queries):
        panel = panel.with_target(_target(q, chr(ord("A") + i), table_format))
    return panel


def steps(*pairs: tuple[float | None, str]) -> db.ThresholdsConfig:
    """Threshold steps: (None, base colour), (value, colour from there up), ..."""
    return db.ThresholdsConfig().mode(dm.ThresholdsMode.ABSOLUTE).steps([dm.Threshold(value=v, color=c) for v, c in pairs])


LATENCY_STEPS = ((None, "green"), (LATENCY_WARN, "yellow"), (LATENCY_BAD, "red"))


def timeseries_panel(
    title: str,
    description: str,
    unit: str,
    queries: list[Q],
    *,
    w: int = 12,
    h: int = 8,
    minimum: float | None = 0,
    maximum: float | None = None,
    line_at: tuple[tuple[float | None, str], ...] = (),
    stack: bool = False,
    dashed: tuple[str, ...] = (),
    time_shift: str = "",
) -> timeseries.Panel:
    """A time series. line_at draws threshold lines (e.g. the 50 ms line); dashed names series
    (by legend regex) drawn as dashed limits, such as DQLEN against ACTV."""
    p = (
        timeseries.Panel()
        .title(title)
        .description(description)
        .datasource(DS)
        .unit(unit)
        .span(w)
        .height(h)
        .line_width(1)
        .fill_opacity(10 if not stack else 60)
        .span_nulls(False)
        .legend(
            cb.VizLegendOptions()
            .display_mode(cm.LegendDisplayMode.TABLE)
            .placement(cm.LegendPlacement.BOTTOM)
            .show_legend(True)
            .calcs(["mean", "max", "lastNotNull"])
        )
        .tooltip(cb.VizTooltipOptions().mode(cm.TooltipDisplayMode.MULTI).sort(cm.SortOrder.DESCENDING))
    )
    if minimum is not None:
        p = p.min(minimum)
    if maximum is not None:
        p = p.max(maximum)
    if line_at:
        p = p.thresholds(steps(*line_at)).thresholds_style(
            cb.GraphThresholdsStyleConfig().mode(cm.GraphThresholdsStyleMode.DASHED)
        )
    if stack:
        p = p.stacking(cb.StackingConfig().mode(cm.StackingMode.NORMAL))
    for regex in dashed:
        p = p.override_by_regexp(
            regex,
            [
                dm.DynamicConfigValue(id_val="custom.lineStyle", value={"fill": "dash", "dash": [10, 10]}),
                dm.DynamicConfigValue(id_val="custom.fillOpacity", value=0),
                dm.DynamicConfigValue(id_val="custom.lineWidth", value=2),
            ],
        )
    if time_shift:
        p = p.time_shift(time_shift)
    return _with_queries(p, queries)


def stat_panel(
    title: str,
    description: str,
    unit: str,
    query: Q,
    *,
    w: int = 4,
    h: int = 4,
    thresholds: tuple[tuple[float | None, str], ...] = ((None, "green"),),
    calc: str = "lastNotNull",
    time_shift: str = "",
) -> stat.Panel:
    p = (
        stat.Panel()
        .title(title)
        .description(description)
        .datasource(DS)
        .unit(unit)
        .span(w)
        .height(h)
        .thresholds(steps(*thresholds))
        .color_mode(cm.BigValueColorMode.BACKGROUND)
        .graph_mode(cm.BigValueGraphMode.AREA if not query.instant else cm.BigValueGraphMode.NONE)
        .reduce_options(cb.ReduceDataOptions().calcs([calc]).values(False))
    )
    if time_shift:
        p = p.time_shift(time_shift)
    return _with_queries(p, [query])


@dataclass(frozen=True)
class Column:
    """One value column of a table: an instant query and how to show it."""

    name: str
    expr: str
    unit: str = "short"
    thresholds: tuple[tuple[float | None, str], ...] = ()


def _organize(columns: list[Column], keep: tuple[str, ...]) -> dm.DataTransformerConfig:
    rename = {f"Value #{chr(ord('A') + i)}": c.name for i, c in enumerate(columns)}
    order = {name: i for i, name in enumerate(list(keep) + [c.name for c in columns])}
    return dm.DataTransformerConfig(
        id_val="organize", options={"excludeByName": {"Time": True}, "renameByName": rename, "indexByName": order}
    )


def table_panel(
    title: str,
    description: str,
    keys: tuple[str, ...],
    columns: list[Column],
    *,
    w: int = 24,
    h: int = 8,
    sort_by: str = "",
    links: dict[str, tuple[str, str]] | None = None,
) -> table.Panel:
    """A table joining instant queries on their labels: one row per label set in keys, one column
    per query. Columns not in keys are hidden. links: column -> (title, url) data link."""
    p = (
        table.Panel()
        .title(title)
        .description(description)
        .datasource(DS)
        .span(w)
        .height(h)
        .with_transformation(dm.DataTransformerConfig(id_val="merge", options={}))
        .with_transformation(_organize(columns, keys))
        .with_transformation(
            dm.DataTransformerConfig(
                id_val="filterFieldsByName", options={"include": {"names": list(keys) + [c.name for c in columns]}}
            )
        )
    )
    for c in columns:
        props = [dm.DynamicConfigValue(id_val="unit", value=c.unit)]
        if c.thresholds:
            props += [
                dm.DynamicConfigValue(
                    id_val="thresholds",
                    value={"mode": "absolute", "steps": [{"value": v, "color": col} for v, col in c.thresholds]},
                ),
                dm.DynamicConfigValue(id_val="custom.cellOptions", value={"type": "color-background"}),
            ]
        p = p.override_by_name(c.name, props)
    for column, (link_title, url) in (links or {}).items():
        p = p.override_by_name(column, [dm.DynamicConfigValue(id_val="links", value=[{"title": link_title, "url": url}])])
    if sort_by:
        p = p.sort_by([cb.TableSortByFieldState().display_name(sort_by).desc(True)])
    return _with_queries(p, [Q(c.expr, instant=True) for c in columns], table_format=True)


def text_panel(title: str, markdown: str, *, w: int = 24, h: int = 6) -> text.Panel:
    return text.Panel().title(title).mode("markdown").content(markdown).span(w).height(h)


class _PrometheusAnnotation(dm.AnnotationQuery):
    """A Prometheus annotation with its query beside the common fields (expr, step, titleFormat),
    the form Grafana's Prometheus plugin reads (it moves expr and step into its query target on
    load). Not `target`: the schema's AnnotationTarget is the Grafana datasource's (limit, tags)."""

    def __init__(self, name: str, colour: str, expr: str, title: str) -> None:
        super().__init__(name=name, datasource=DS, enable=True, hide=False, icon_color=colour, expr=expr)
        self.title = title

    def to_json(self) -> dict[str, object]:
        return {**super().to_json(), "step": "$__interval", "titleFormat": self.title, "useValueForTime": False}


class _Built:
    def __init__(self, obj) -> None:
        self.obj = obj

    def build(self):
        return self.obj


def prometheus_annotation(name: str, colour: str, expr: str, title: str) -> _Built:
    """Marks on every time series where expr returns a sample (e.g. a DQLEN change)."""
    return _Built(_PrometheusAnnotation(name, colour, expr, title))


def storage_events_annotation(*matchers: str) -> _Built:
    """ESXi's storage events (esxi_storage_events_total) as marks: where a count rose, or a series
    first appeared (the first event of its labels, counted from the exporter's start)."""
    events = f"esxi_storage_events_total{{{','.join(matchers)}}}"
    return prometheus_annotation(
        "ESXi storage events",
        "dark-red",
        f"(increase({events}[$__interval]) > 0) or ({events} unless {events} offset $__interval)",
        "{{event}} on {{host}} {{device}} {{datastore}}",
    )


def row(title: str) -> db.Row:
    return db.Row(title)
