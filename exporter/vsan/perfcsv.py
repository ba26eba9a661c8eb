"""The vSAN performance service's answer (VsanPerfEntityMetricCSV) read into one VsanSample.

Each entity of the answer is `entityRefId` ("host-domclient:<node uuid>"), `sampleInfo` (its
sample times, "2026-11-25 15:20:00,2026-11-25 15:25:00", UTC) and one CSV string of values per
metric label, aligned with those times. A blank cell is no value, never zero. Every value that
cannot be placed is counted by reason, none is dropped silently.

Only the newest *complete* sample time is taken: the newest time that every entity which
answered for the window carries (the service writes each host's statistics in its own time, so
the newest time can be there for some entities and not yet for others), and never one at or
before the time already taken, so a sample is never emitted twice.

Every value is checked where it is converted (exporter.vsan.refused): a cell that is no number,
negative or too large for a float, a ratio over 1, an interval outside 1 s to a day, an entity id
over 128 characters are refused, counted by reason and noted with their entity and field; the rest
of the answer is read.

No vSphere import here: the simulator writes this same form for the same reader.
"""

from __future__ import annotations

import calendar
import math
import time
from dataclasses import dataclass, field

from exporter.store import model as m
from exporter.vsan import metrics as vm
from exporter.vsan import refused

TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
DEFAULT_INTERVAL = 300.0  # the performance service's sample spacing


@dataclass(slots=True)
class EntityRow:
    kind: str  # entity type: host-domclient, disk-group, ...
    uuid: str
    times: list[float | None]  # unix seconds; None for a time that could not be read
    series: dict[str, list[float | None]] = field(default_factory=dict)  # label -> values, aligned with times
    intervals: dict[str, float] = field(default_factory=dict)  # label -> metricsCollectInterval


def parse_time(text: str) -> float | None:
    try:
        return float(calendar.timegm(time.strptime(text.strip(), TIME_FORMAT)))
    except ValueError:
        return None


def format_time(stamp: float) -> str:
    return time.strftime(TIME_FORMAT, time.gmtime(stamp))


def _cell(text: str) -> float | None | str:
    """A CSV cell: a float, None for a blank one, or the reason it is refused."""
    text = text.strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        return refused.amount(text)  # the reason
    return value if 0 <= value < math.inf else refused.amount(text)  # NaN fails both


def parse_entity(
    ref_id: str, sample_info: str, values, dropped: dict[str, int], max_label: int = refused.MAX_LABEL
) -> EntityRow | None:
    """One entity of the answer; values: (label, CSV text, collect interval as sent or None) per
    metric. Returns None for an entity id that is not `type:uuid` or is over max_label characters (counted)."""
    kind, sep, uuid = ref_id.partition(":")
    if not sep or not kind or not uuid:
        _count(dropped, "bad_entity", 1)
        return None
    if refused.label(ref_id, max_label) is None:
        refused.refuse(dropped, refused.LABEL_TOO_LONG, f"an entity of type {kind[:40]}", "entityRefId", ref_id)
        return None
    times = [parse_time(t) for t in sample_info.split(",")] if sample_info.strip() else []
    _count(dropped, "bad_timestamp", sum(t is None for t in times))
    row = EntityRow(kind=kind, uuid=uuid, times=times)
    known = vm.BY_LABEL.get(kind, {})
    for label, text, interval in values:
        if label not in known:
            continue  # sent unasked: not ours
        cells = text.split(",") if text else []
        if len(cells) != len(times):
            _count(dropped, "length_mismatch", 1)
            continue
        if interval is not None and (not isinstance(interval, str) or interval.strip()):
            seconds = refused.interval(interval)
            if isinstance(seconds, str):
                # A count over 1e-320 s would be +Inf per second: the series' counts are refused
                # (one refusal a series), values that need no interval are read.
                refused.refuse(dropped, seconds, ref_id, f"{label}.metricsCollectInterval", interval)
                if known[label].per_interval:
                    continue
            else:
                row.intervals[label] = seconds
        parsed: list[float | None] = []
        for cell in cells:
            value = _cell(cell)
            if isinstance(value, str):
                refused.refuse(dropped, value, ref_id, label, cell)
                value = None
            parsed.append(value)
        row.series[label] = parsed
    return row


def newest_complete(rows: list[EntityRow], after: float, now: float) -> float | None:
    """The newest sample time after `after` (and not after `now`) that every entity which answered
    for the window (a time at or after `after`: the query starts there) carries; None if there is
    none yet. An entity with no time in the window (a VM gone since) blocks no one."""
    common: set[float] | None = None
    for row in rows:
        seen = [t for t in row.times if t is not None and after <= t <= now]
        if not seen:
            continue
        times = {t for t in seen if t > after}
        common = times if common is None else common & times
    return max(common) if common else None


@dataclass(slots=True)
class Names:
    """What the service's uuids stand for (from the cluster's configuration)."""

    hosts: dict[str, str] = field(default_factory=dict)  # node uuid -> host name
    disk_groups: dict[str, tuple[str, str]] = field(default_factory=dict)  # cache disk uuid -> (host, device)
    disks: dict[str, tuple[str, str]] = field(default_factory=dict)  # disk uuid -> (host, device)
    vms: dict[str, str] = field(default_factory=dict)  # instance uuid -> VM name


def sample_at(rows: list[EntityRow], stamp: float, names: Names, dropped: dict[str, int]) -> m.VsanSample:
    """Every entity's values at one sample time, converted into model fields."""
    sample = m.VsanSample(timestamp=stamp, interval=DEFAULT_INTERVAL)
    intervals = [i for row in rows for i in row.intervals.values()]
    if intervals:
        sample.interval = max(intervals)
    for row in rows:
        try:
            index = row.times.index(stamp)
        except ValueError:
            continue
        target = _target(sample, row, names)
        if target is None:
            _count(dropped, "unknown_entity", 1)
            continue
        known = vm.BY_LABEL[row.kind]
        for label, values in row.series.items():
            value = values[index]
            if value is None:
                continue
            metric = known[label]
            value = metric.convert(value, row.intervals.get(label, sample.interval))
            reason = (
                refused.TOO_LARGE if not math.isfinite(value) else refused.OUT_OF_RANGE if metric.ratio and value > 1 else None
            )
            if reason:
                refused.refuse(dropped, reason, f"{row.kind}:{row.uuid}", label, values[index])
                continue
            target[metric.field] = value
    return sample


def named(kind: str, uuid: str, names: Names) -> bool:
    """The cluster's discovery names this entity: its values have a place in a sample."""
    return _target(m.VsanSample(timestamp=0.0, interval=DEFAULT_INTERVAL), EntityRow(kind, uuid, []), names) is not None


def describe(ref_id: str, names: Names) -> str:
    """An entity for a log line: what the discovery calls it, and its id."""
    kind, _, uuid = ref_id.partition(":")
    sample = m.VsanSample(timestamp=0.0, interval=DEFAULT_INTERVAL)
    if _target(sample, EntityRow(kind, uuid, []), names) is None:
        return f"{ref_id} (not named by the discovery)"
    where = (
        [f"host {h}" for h in (*sample.hosts, *sample.host_networks, *sample.host_backends, *sample.host_owners)]
        + [f"host {h} {nic}" for h, nic in (*sample.nics, *sample.tcpip, *sample.vmknics)]
        + [f"disk group {h} {d}" for h, d in sample.disk_groups]
        + [f"disk {h} {d}" for h, d in sample.disks]
        + [f"VM {v}" for v in sample.vms]
    )
    return f"{where[0] if where else 'the cluster'} ({kind})"


# Entity types named by a host's node uuid, alone or followed by a NIC or netstack.
_PER_HOST = (vm.HOST_NETWORK, vm.HOST_BACKEND, vm.HOST_OWNER, vm.NIC, vm.TCPIP, vm.VMKNIC)


def _target(sample: m.VsanSample, row: EntityRow, names: Names) -> dict | None:
    """The stats dict an entity's values go into; None for a uuid the configuration does not name."""
    kind, uuid = row.kind, row.uuid
    if kind == vm.CLUSTER:
        return sample.cluster
    if kind == vm.HOST:
        host = names.hosts.get(uuid)
        return None if host is None else sample.hosts.setdefault(host, {})
    if kind == vm.DISK_GROUP:
        key = names.disk_groups.get(uuid)
        return None if key is None else sample.disk_groups.setdefault(key, {})
    if kind in (vm.CACHE_DISK, vm.CAPACITY_DISK, *vm.ESA_TYPES):
        key = names.disks.get(uuid)
        return None if key is None else sample.disks.setdefault(key, {})
    if kind in (vm.CLUSTER_BACKEND, vm.CLUSTER_OWNER):
        return sample.cluster_backend if kind == vm.CLUSTER_BACKEND else sample.cluster_owner
    if kind in _PER_HOST:
        # "<node uuid>", "<node uuid>|vmnicN", "<node uuid>|<netstack>", "<node uuid>|<netstack>|vmkN"
        node, *rest = uuid.split("|")
        host = names.hosts.get(node)
        if host is None or len(rest) != {vm.NIC: 1, vm.TCPIP: 1, vm.VMKNIC: 2}.get(kind, 0):
            return None
        per_host = {
            vm.HOST_NETWORK: sample.host_networks,
            vm.HOST_BACKEND: sample.host_backends,
            vm.HOST_OWNER: sample.host_owners,
        }
        if kind in per_host:
            return per_host[kind].setdefault(host, {})
        per_nic = {vm.NIC: sample.nics, vm.TCPIP: sample.tcpip, vm.VMKNIC: sample.vmknics}
        return per_nic[kind].setdefault((host, rest[-1]), {})
    if kind == vm.VM:
        name = names.vms.get(uuid)
        return None if name is None else sample.vms.setdefault(name, {})
    return None


def _count(dropped: dict[str, int], reason: str, count: int) -> None:
    if count:
        dropped[reason] = dropped.get(reason, 0) + count
