"""The one VsanPerfQueryPerf of a cluster: its query specs (every entity type of the cluster, its
labels named) and its answer read into perfcsv's entity rows."""

from __future__ import annotations

import datetime as dt

from pyVmomi import vim

from exporter.vsan import metrics as vm
from exporter.vsan.perfcsv import EntityRow, parse_entity


def entity_types(esa: bool) -> tuple[str, ...]:
    """The entity types asked for: ESA clusters have no disk groups and no cache or capacity tier."""
    return tuple(kind for kind in vm.METRICS if not (esa and kind in vm.DISK_GROUP_TYPES))


def labels_for(kind: str, supported: dict[str, set[str]] | None) -> list[str]:
    """The labels of an entity type to ask for: ours that this vSAN version has (all of ours when
    the server did not say which it has)."""
    ours = [metric.label for metric in vm.METRICS[kind]]
    if supported is None or kind not in supported:
        return ours
    return [label for label in ours if label in supported[kind]]


def query_specs(kinds, supported: dict[str, set[str]] | None, start: float, end: float) -> list:
    specs = []
    for kind in kinds:
        labels = labels_for(kind, supported)
        if not labels:
            continue
        specs.append(
            vim.cluster.VsanPerfQuerySpec(
                entityRefId=f"{kind}:*",
                startTime=dt.datetime.fromtimestamp(start, dt.timezone.utc),
                endTime=dt.datetime.fromtimestamp(end, dt.timezone.utc),
                labels=labels,
            )
        )
    return specs


def rows(root, dropped: dict[str, int]) -> list[EntityRow]:
    """VsanPerfEntityMetricCSV answers (parsed XML) as entity rows; bad cells counted in dropped."""
    out = []
    for entity in root.iterfind(".//{*}returnval"):
        values = []
        for series in entity.iterfind("{*}value"):
            metric = series.find("{*}metricId")
            label = _text(metric, "label")
            interval = _text(metric, "metricsCollectInterval")
            values.append((label, _text(series, "values"), float(interval) if _is_number(interval) else None))
        row = parse_entity(_text(entity, "entityRefId"), _text(entity, "sampleInfo"), values, dropped)
        if row is not None:
            out.append(row)
    return out


def _text(element, name: str) -> str:
    if element is None:
        return ""
    found = element.find("{*}" + name)
    return "" if found is None or found.text is None else found.text.strip()


def _is_number(text: str) -> bool:
    try:
        return float(text) > 0
    except ValueError:
        return False
