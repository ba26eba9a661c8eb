"""vSAN's health summary, space report and resync summary, read into the cluster's model record.

Object health states come as vSAN writes them (`reducedavailabilitywithnorebuild`,
`remoteAccessible`); they are exported in snake_case (`reduced_availability_with_no_rebuild`).
Every number is checked as it is read (exporter.vsan.refused): a negative count or size, or one
too large for a float, is refused and counted, on that value only; a state over 128 characters is
refused, never a label.
"""

from __future__ import annotations

import re

from exporter.store import model as m
from exporter.vsan import refused

# The words vSAN's object health states are made of, longest first (a greedy split).
_WORDS = sorted(
    (
        "reduced availability with no rebuild delay timer active paused policy pending failed non related "
        "reconfig incompliance data move remote accessible inaccessible healthy unknown"
    ).split(),
    key=len,
    reverse=True,
)


def state_name(health: str) -> str:
    """'reducedavailabilitywithnorebuild' -> 'reduced_availability_with_no_rebuild'; a state of
    unknown words keeps its letters, lower-cased (never dropped)."""
    text = re.sub(r"(?<=[a-z])(?=[A-Z])", "_", health.strip()).lower()
    out = []
    for part in re.split(r"[^a-z0-9]+", text):
        while part:
            word = next((w for w in _WORDS if part.startswith(w)), None)
            if word is None:
                out.append(part)
                break
            out.append(word)
            part = part[len(word) :]
    return "_".join(out)


def apply_summary(
    cluster: m.VsanCluster, summary, dropped: dict[str, int] | None = None, max_label: int = refused.MAX_LABEL
) -> None:
    """VsanClusterHealthSummary (read from vSAN's cache) -> overall health and objects per state;
    a state over max_label characters is refused."""
    dropped = {} if dropped is None else dropped
    overall = (summary.overallHealth or "").strip().lower()
    if refused.label(overall, max_label) is None:
        refused.refuse(dropped, refused.LABEL_TOO_LONG, "health summary", "overallHealth", overall)
        overall = ""  # not read: no state exported
    cluster.health = overall
    stamp = getattr(summary, "timestamp", None)
    cluster.health_timestamp = stamp.timestamp() if stamp is not None else None
    objects: dict[str, int] = {}
    unread: set[str] = set()
    details = summary.objectHealth.objectHealthDetail if summary.objectHealth is not None else None
    for detail in details or ():
        raw = detail.health or "unknown"
        if refused.label(raw, max_label) is None:
            refused.refuse(dropped, refused.LABEL_TOO_LONG, "objectHealthDetail", "health", raw)
            continue
        state = state_name(raw)
        if refused.label(state, max_label) is None:  # "aBaB...": its snake_case is longer than what was sent
            refused.refuse(dropped, refused.LABEL_TOO_LONG, "objectHealthDetail", "health", raw)
            continue
        count = refused.amount(detail.numObjects or 0)
        if isinstance(count, str):
            refused.refuse(dropped, count, f"objectHealthDetail {state}", "numObjects", detail.numObjects)
            unread.add(state)
            continue
        total = objects.get(state, 0) + int(count)
        if isinstance(refused.number(total), str):  # two large counts of one state
            refused.refuse(dropped, refused.TOO_LARGE, f"objectHealthDetail {state}", "numObjects", total)
            unread.add(state)
            continue
        objects[state] = total
    # A state whose count was refused is not shown, not even as the 0 the always-shown states get
    # (an inaccessible count refused must not read as no inaccessible object).
    cluster.objects = {state: n for state, n in objects.items() if state not in unread}
    cluster.objects_refused = unread


def apply_space(cluster: m.VsanCluster, usage, dropped: dict[str, int] | None = None) -> None:
    """VsanSpaceUsage -> raw capacity and free bytes of the vSAN datastore."""
    cluster.capacity_bytes = _amount(usage, "totalCapacityB", "space usage", dropped)
    cluster.free_bytes = _amount(usage, "freeCapacityB", "space usage", dropped)


def apply_resync(cluster: m.VsanCluster, result, dropped: dict[str, int] | None = None) -> None:
    """VsanSyncingObjectQueryResult -> bytes and objects left to resynchronise, and vSAN's ETA
    (seconds; a negative ETA is vSAN's "unknown": no value, not counted)."""
    cluster.resync_bytes = _amount(result, "totalBytesToSync", "resync summary", dropped, 0.0)
    cluster.resync_objects = _amount(result, "totalObjectsToSync", "resync summary", dropped, 0.0)
    eta = result.totalRecoveryETA
    unknown = eta is None or isinstance(refused.number(eta), float) and eta < 0
    cluster.resync_eta_seconds = None if unknown else _amount(result, "totalRecoveryETA", "resync summary", dropped)


def _amount(answer, name: str, where: str, dropped: dict[str, int] | None, absent: float | None = None) -> float | None:
    """A size or count of an answer: a float not under 0, `absent` when it is not set, or None
    (refused and counted)."""
    raw = getattr(answer, name, None)
    if raw is None:
        return absent
    value = refused.amount(raw)
    if isinstance(value, str):
        refused.refuse({} if dropped is None else dropped, value, where, name, raw)
        return None
    return value
