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

An answer is read as it arrives (read_answer): each entity is taken when its element ends and let
go, and one the cluster's discovery does not name is counted and dropped there, so memory follows
what is kept, not what is sent. The cap (answer_cap, sized to what the call asked for, and never
over --vsphere.max-answer-size) is on what is kept: the entities asked for, and the one entity in
progress. An answer past it keeps the entities read before, is not read further, and the entities
asked for and not read are counted (answer_too_large): something not asked for, sent beside what
was, never costs what was asked for. The round's deadline bounds how long an answer is read.
"""

from __future__ import annotations

import datetime as dt
import xml.etree.ElementTree as ET

from pyVmomi import vim

from exporter.vsan import metrics as vm
from exporter.vsan import refused
from exporter.vsan.perfcsv import EntityRow, Names, named, parse_entity
from exporter.vsphere import xmlguard

WILDCARD, MULTI, PLAIN = "wildcard", "multi", "plain"
FORMS = (WILDCARD, MULTI, PLAIN)
MAX_SPECS = 100  # specs in a call without a wildcard or multi-entity spec
MAX_UUIDS = 400  # uuids in one multi-entity spec
# An answer's cap: (entities expected x 2 + ENTITY_SLACK) x (ENTITY_BYTES + labels x LABEL_BYTES).
# An entity is ~0.5 kB of XML and a series ~0.3 kB with the window's 3 samples (15 minutes at the
# service's 5); the bounds allow 16 samples a series (a window of one-minute samples) and twice the
# entities discovered plus 64 (VMs created since the discovery, which a wildcard also reports).
ENTITY_BYTES, LABEL_BYTES, ENTITY_SLACK = 2048, 1024, 64


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


# Labels an entity may carry when asked without a label list: a live vSAN 9 host-domclient returns
# 78, an ESA disk layer 38 (issue #39); twice the most seen. host-domowner returns 288: twice that.
UNLISTED_LABELS = 160
_UNLISTED_BY_TYPE = {vm.HOST_OWNER: 576}


def unlisted_labels(kind: str) -> int:
    """The labels an entity of this type may carry when asked without a label list."""
    return _UNLISTED_BY_TYPE.get(kind, UNLISTED_LABELS)


def answer_cap(entities: int, labels: int) -> int:
    """The most bytes an answer for `entities` entities of `labels` labels each may take."""
    return (2 * entities + ENTITY_SLACK) * (ENTITY_BYTES + labels * LABEL_BYTES)


def read_answer(
    pieces,
    names: Names | None,
    dropped: dict[str, int],
    max_label: int = refused.MAX_LABEL,
    cap: int | None = None,
    asked: tuple[str, list[str]] | None = None,
) -> list[EntityRow]:
    """VsanPerfQueryPerf's answer (the pieces of xmlguard.iter_answer, as they arrive) as entity
    rows: each VsanPerfEntityMetricCSV is read when its element ends, then cleared; one whose uuid
    `names` does not name is counted (unknown_entity) and dropped unread. Bad cells are counted, an
    entity id over max_label characters refused.

    cap: the most bytes the entities kept may take, and the entity in progress (never over
    --vsphere.max-answer-size). Past it the rows read are returned and the rest of the answer is
    not read (the caller's connection is closed); asked, (type, uuids): the entities asked for,
    those of them not read then counted as answer_too_large (one at least), noted for one log line."""
    cap = min(xmlguard.answer_limit(), cap if cap is not None else xmlguard.answer_limit())
    parser = ET.XMLPullParser(events=("end",))
    out: list[EntityRow] = []
    kept = [0]  # bytes of the entities kept (their text: labels, values, times)
    pending = 0  # bytes fed since the last piece in which an entity ended: the one in progress
    for piece in pieces:
        parser.feed(piece)
        ended = _take(parser, names, dropped, out, max_label, kept)
        pending = 0 if ended else pending + len(piece)
        if kept[0] > cap or pending > cap:
            _cut(out, dropped, cap, asked)
            return out
    parser.close()
    _take(parser, names, dropped, out, max_label, kept)
    return out


def _cut(rows: list[EntityRow], dropped: dict[str, int], cap: int, asked: tuple[str, list[str]] | None) -> None:
    kind, uuids = asked if asked is not None else ("", [])
    read = {row.uuid for row in rows}
    lost = sum(1 for uuid in uuids if uuid not in read)
    refused.refuse(dropped, refused.ANSWER_TOO_LARGE, f"{kind or 'a'} answer", "size", f"over {cap} bytes", max(1, lost))


def _take(parser, names: Names | None, dropped: dict[str, int], out: list[EntityRow], max_label: int, kept: list[int]) -> int:
    """Reads the entities that ended; returns how many (kept or not); adds the kept ones' bytes to kept[0]."""
    ended = 0
    for _event, element in parser.read_events():
        tag = element.tag
        if not tag.endswith("returnval") or tag.rsplit("}", 1)[-1] != "returnval":
            continue
        ns = tag[: tag.index("}") + 1] if tag.startswith("{") else ""  # children share it: C-level finds, no "{*}"
        ref = _text(element, ns + "entityRefId")
        kind, _, uuid = ref.partition(":")
        ended += 1
        if names is not None and uuid and len(ref) <= max_label and not named(kind, uuid, names):
            refused.count(dropped, "unknown_entity")
        else:
            times, values = _text(element, ns + "sampleInfo"), _values(element, ns)
            kept[0] += len(ref) + len(times) + sum(len(a) + len(b) + len(c or "") for a, b, c in values)
            row = parse_entity(ref, times, values, dropped, max_label)
            if row is not None:
                out.append(row)
        element.clear()  # what stays of it in the tree is an empty element
    return ended


def _values(entity, ns: str) -> list[tuple[str, str, str | None]]:
    out = []
    for series in entity.iterfind(ns + "value"):
        metric = series.find(ns + "metricId")
        interval = _text(metric, ns + "metricsCollectInterval")
        out.append((_text(metric, ns + "label"), _text(series, ns + "values"), interval or None))
    return out


def _chunks(items: list[str], size: int) -> list[list[str]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def _text(element, tag: str) -> str:
    if element is None:
        return ""
    found = element.find(tag)
    return "" if found is None or found.text is None else found.text.strip()
