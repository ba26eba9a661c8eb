"""vSAN's health summary, space report and resync summary, read into the cluster's model record.

Object health states come as vSAN writes them (`reducedavailabilitywithnorebuild`,
`remoteAccessible`); they are exported in snake_case (`reduced_availability_with_no_rebuild`).
"""

from __future__ import annotations

import re

from exporter.store import model as m

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


def apply_summary(cluster: m.VsanCluster, summary) -> None:
    """VsanClusterHealthSummary (read from vSAN's cache) -> overall health and objects per state."""
    cluster.health = (summary.overallHealth or "").strip().lower()
    stamp = getattr(summary, "timestamp", None)
    cluster.health_timestamp = stamp.timestamp() if stamp is not None else None
    objects: dict[str, int] = {}
    details = summary.objectHealth.objectHealthDetail if summary.objectHealth is not None else None
    for detail in details or ():
        state = state_name(detail.health or "unknown")
        objects[state] = objects.get(state, 0) + int(detail.numObjects or 0)
    cluster.objects = objects


def apply_space(cluster: m.VsanCluster, usage) -> None:
    """VsanSpaceUsage -> raw capacity and free bytes of the vSAN datastore."""
    cluster.capacity_bytes = float(usage.totalCapacityB) if usage.totalCapacityB is not None else None
    cluster.free_bytes = float(usage.freeCapacityB) if usage.freeCapacityB is not None else None


def apply_resync(cluster: m.VsanCluster, result) -> None:
    """VsanSyncingObjectQueryResult -> bytes and objects left to resynchronise, and vSAN's ETA (seconds)."""
    cluster.resync_bytes = float(result.totalBytesToSync or 0)
    cluster.resync_objects = float(result.totalObjectsToSync or 0)
    eta = result.totalRecoveryETA
    cluster.resync_eta_seconds = float(eta) if eta is not None and eta >= 0 else None
