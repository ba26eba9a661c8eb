"""A cluster's VsanPerfQueryPerf calls, as the vSAN Management API reference allows them, and
their answers read into perfcsv's entity rows.

The reference's rules (VsanPerformanceManager.VsanPerfQueryPerf, querySpecs): startTime and
endTime are set in every spec; a wildcard spec (`type:*`) or a multi-entity spec
(`type:uuid1,uuid2,...`, from vSAN 8.0U2, at most 400 uuids) is the only spec of its call;
without either, a call holds at most 100 specs.

One entity type a call, so a fault loses that type only. Each type is asked in one of three forms:
- `wildcard`: one call, the fewest bytes both ways, and it names entities the last discovery did
  not see (a VM created since); the default;
- `multi`: the discovery's uuids in multi-entity specs, 400 a call, where the server's vSAN API
  is 8.0U2 or later;
- `plain`: one spec per uuid, 100 specs a call.
A type whose wildcard the server refuses (InvalidArgument: some types do) is asked by uuid:
multi-entity where the server takes it, else plain specs; one refused multi-entity spec falls back
to plain specs too.
"""

from __future__ import annotations

import datetime as dt

from pyVmomi import vim

from exporter.vsan import metrics as vm
from exporter.vsan.perfcsv import EntityRow, parse_entity

WILDCARD, MULTI, PLAIN = "wildcard", "multi", "plain"
FORMS = (WILDCARD, MULTI, PLAIN)
MAX_SPECS = 100  # specs in a call without a wildcard or multi-entity spec
MAX_UUIDS = 400  # uuids in one multi-entity spec


def entity_types(esa: bool) -> tuple[str, ...]:
    """The entity types asked for: ESA clusters have no disk groups and no cache or capacity tier,
    OSA clusters no storage pool disks."""
    skip = vm.DISK_GROUP_TYPES if esa else vm.ESA_TYPES
    return tuple(kind for kind in vm.METRICS if kind not in skip)


def labels_for(kind: str, supported: dict[str, set[str]] | None) -> list[str] | None:
    """The labels of an entity type to ask for: ours when the server lists them all (or did not say
    which it has); None, no label list (every label the type has; ours are read), when it lists
    only some. The supported-types answer understates what a type returns (vsan-esa-disk-layer
    lists 6 labels and returns 38), and naming an unlisted label risks the refusal of an older vSAN
    ("no such column"), so an unlisted label is never asked for by name."""
    ours = [metric.label for metric in vm.METRICS[kind]]
    if supported is None or kind not in supported or set(ours) <= supported[kind]:
        return ours
    return None


def next_form(form: str, multi_entity: bool) -> str | None:
    """The form to ask a type in after the server refused `form` with InvalidArgument; None when
    none is left (a refused plain spec is an error)."""
    if form == WILDCARD:
        return MULTI if multi_entity else PLAIN
    if form == MULTI:
        return PLAIN
    return None


def calls(kind: str, form: str, uuids: list[str], labels: list[str] | None, start: float, end: float) -> list[list]:
    """The calls (each its list of VsanPerfQuerySpec) that ask for one entity type in one form;
    none for a form by uuid when the discovery knows no entity of the type."""

    def spec(ref: str):
        return vim.cluster.VsanPerfQuerySpec(
            entityRefId=f"{kind}:{ref}",
            startTime=dt.datetime.fromtimestamp(start, dt.timezone.utc),
            endTime=dt.datetime.fromtimestamp(end, dt.timezone.utc),
            labels=labels,
        )

    if form == WILDCARD:
        return [[spec("*")]]
    if form == MULTI:
        return [[spec(",".join(chunk))] for chunk in _chunks(uuids, MAX_UUIDS)]
    if form == PLAIN:
        return [[spec(uuid) for uuid in chunk] for chunk in _chunks(uuids, MAX_SPECS)]
    raise ValueError(f"not a query form: {form!r} (one of {', '.join(FORMS)})")


def refusal(specs) -> str | None:
    """Why the API reference refuses a call of these specs, or None when it allows it."""
    if not specs:
        return "no query spec"
    alone = None
    for spec in specs:
        if spec.startTime is None or spec.endTime is None:
            return f"{spec.entityRefId}: startTime and endTime must both be set"
        _, _, ref = spec.entityRefId.partition(":")
        if ref == "*":
            alone = "a wildcard spec"
        elif "," in ref:
            if len(ref.split(",")) > MAX_UUIDS:
                return f"{len(ref.split(','))} uuids in one multi-entity spec (at most {MAX_UUIDS})"
            alone = "a multi-entity spec"
    if alone and len(specs) > 1:
        return f"{alone} with {len(specs) - 1} other spec(s) in one call"
    if len(specs) > MAX_SPECS:
        return f"{len(specs)} specs in one call (at most {MAX_SPECS})"
    return None


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


def _chunks(items: list[str], size: int) -> list[list[str]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


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
