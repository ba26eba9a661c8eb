"""Turns a stream of Samples into exportable state: gauges from the last interval and counters
that integrate every interval's rates over its real length.

Sources push Samples, Inventories and their SourceHealth in (one Store per process); collectors
read a consistent view under the lock. Each host, inventory and health record remembers the source
(`origin`: a vSphere target's name, "" for the others), so `/probe?target=NAME` renders
`store.view(NAME)`, the same store seen through that target. `version` changes on every update so
the exposition can be rendered once per change.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace

from exporter.store import model as m
from exporter.store.rounds import Rounds


@dataclass(slots=True)
class ObjectState:
    gauges: dict[str, float] = field(default_factory=dict)  # last interval's values
    counters: dict[str, float] = field(default_factory=dict)  # integrated since start
    totals: dict[str, float] = field(default_factory=dict)  # the last running total read of each TOTAL_FIELDS count
    last_seen: float = 0.0  # sample timestamp that last carried this object
    label_cache: tuple | None = None  # (label values, escaped label string), kept by collectors


_INF = float("inf")


def _latency_counter(field_name: str) -> str:
    return field_name + "_total"


def _plan(fields: tuple) -> tuple:
    """What integrate folds for a stats dict with these fields: (rates, latencies weighted by
    commands, directional latencies with their weight), each with its counter's name."""
    rates = tuple(name for name in m.RATE_FIELDS if name in fields)
    latencies = tuple((name, _latency_counter(name)) for name in m.LATENCY_FIELDS if name in fields)
    directional = tuple(
        (name, weight, _latency_counter(name)) for name, weight in m.DIRECTIONAL_LATENCY_WEIGHT.items() if name in fields
    )
    totals = tuple(name for name in m.TOTAL_FIELDS if name in fields)
    return rates, latencies, directional, totals


# Plans by field tuple: a source writes each object kind's fields in one order every interval, so
# there are few, and each object's fold loops over its own fields instead of every known one.
_PLANS: dict[tuple, tuple] = {}


def integrate(obj: ObjectState, stats: dict[str, float], interval: float | None) -> int:
    """Fold one interval of one object into its state; returns how many increments were refused.

    The last guard of the counters' monotony: an increment that is NaN, infinite or negative
    (a source let a bad value through), or that would take the sum past the largest float (finite
    but huge cells, 1e301 MB/s), is refused, so no value can leave a counter NaN, +Inf or going
    down for the rest of the process's life."""
    fields = tuple(stats)
    plan = _PLANS.get(fields)
    if plan is None:
        if len(_PLANS) > 4096:  # a source with ever-new field sets: start over rather than grow
            _PLANS.clear()
        plan = _PLANS[fields] = _plan(fields)
    rates, latencies, directional, totals = plan
    counters = obj.counters
    if interval is None:
        # esxtop's first sample: rates and latencies read 0.00 and are not a measurement; its
        # running totals read 0 too, so they are skipped, not taken for a restart of the count.
        obj.gauges = {k: v for k, v in stats.items() if k in m.CONFIG_FIELDS}
        for name in rates:
            counters.setdefault(name, 0.0)
        for _, key in latencies:
            counters.setdefault(key, 0.0)
        for _, _, key in directional:
            counters.setdefault(key, 0.0)
        return 0
    obj.gauges = stats
    refused = 0
    for name in rates:
        rate = stats[name]
        if rate is not None:
            step = rate * interval
            total = counters.get(name, 0.0) + step
            if 0.0 <= step and total < _INF:  # False for NaN too
                counters[name] = total
            else:
                refused += 1
    if latencies:
        commands = stats.get(m.COMMANDS)
        if commands is not None:
            for name, key in latencies:
                latency = stats[name]
                if latency is not None:
                    step = latency * commands * interval
                    total = counters.get(key, 0.0) + step
                    if 0.0 <= step and total < _INF:
                        counters[key] = total
                    else:
                        refused += 1
    for name, weight, key in directional:
        latency, rate = stats[name], stats.get(weight)
        if latency is not None and rate is not None:
            step = latency * rate * interval
            total = counters.get(key, 0.0) + step
            if 0.0 <= step and total < _INF:
                counters[key] = total
            else:
                refused += 1
    if totals:
        refused += _fold_totals(obj, stats, totals)
    return refused


def _fold_totals(obj: ObjectState, stats: dict[str, float], names: tuple) -> int:
    """Running totals (m.TOTAL_FIELDS) into counters: the first reading is the count so far; then
    each reading adds its rise over the last one, and a reading below the last (the host rebooted,
    the device was registered again) counts from zero. The last reading is kept across streams, so
    a new esxtop run adds what happened while none ran."""
    refused = 0
    last, counters = obj.totals, obj.counters
    for name in names:
        value = stats[name]
        if value is None:
            continue
        before = last.get(name)
        step = value if before is None or value < before else value - before
        total = counters.get(name, 0.0) + step
        if 0.0 <= step and total < _INF:
            counters[name] = total
            last[name] = value
        else:
            refused += 1
    return refused


# vdisks: (vm, disk) -> stats; vms: a VM's totals over its disks (a family of its own, never summed with vdisks).
FAMILIES = ("luns", "adapters", "paths", "worlds", "cpus", "datastores", "vdisks", "vms")


@dataclass(slots=True)
class HostState:
    host: str
    objects: dict[str, dict] = field(default_factory=lambda: {f: {} for f in FAMILIES})
    path_devices: dict[str, str] = field(default_factory=dict)
    world_vms: dict[str, str] = field(default_factory=dict)
    values: dict[str, float] = field(default_factory=dict)  # host-level values of the newest sample
    samples: int = 0
    last_timestamp: float = 0.0
    source: str = "esxtop"
    origin: str = ""  # the vSphere target that reports this host, "" for esxtop sources
    suspended: bool = False  # vCenter lists it but cannot read it: hidden, its counters kept (suspend_hosts)
    # Objects a source said are gone (drop_objects with keep_for): family -> key -> (state, kept until:
    # a sample time); hidden, taken up again if the object comes back before then.
    retired: dict[str, dict] = field(default_factory=dict)
    retired_until: float = _INF  # the soonest "kept until" among them


class Store:
    """All hosts' state. Objects absent from the newest sample lose their gauges at once and
    their counters after `stale_after` seconds (LUNs and worlds come and go). Objects a source
    knows are gone lose their series at once, their counters kept hidden for a while if it asks
    (drop_objects' keep_for), to go on from their totals if they come back.

    State is kept per (origin, host): two vSphere targets that both report a host (its vCenter and
    the host itself) never add into one counter. `hosts` and `inventories` show each host once,
    from the first source that reported it, so /metrics holds no duplicate series; a target's
    view shows its own."""

    def __init__(self, stale_after: float = 300.0, lun_filter=None):
        self.stale_after = stale_after
        self.lun_filter = lun_filter or None  # exporter.configuration.filters.LunFilter; None keeps every LUN
        self.lock = threading.Lock()
        self.host_states: dict[tuple[str, str], HostState] = {}  # (origin, host) -> state
        self.host_inventories: dict[tuple[str, str], m.Inventory] = {}  # (origin, host) -> inventory
        self.parse_errors: dict[tuple[str, str], int] = {}  # (stream, reason) -> lines rejected
        # (kind, name, origin) -> newest record: two targets may both run esxcli on one host
        self.source_health: dict[tuple[str, str, str], m.SourceHealth] = {}
        self.host_disk_health: dict[tuple[str, str], m.DiskHealthReport] = {}  # (origin, host) -> local disks
        self.vsan_clusters: dict[tuple[str, str], m.VsanCluster] = {}  # (origin, cluster) -> newest read
        self.storage_events: dict[tuple[str, str], m.StorageEvents] = {}  # (source, origin) -> counted so far
        # (origin, source name) -> url -> space: a vSphere target's datastores, or one host's esxcli answer
        self.datastore_spaces: dict[tuple[str, str], dict[str, m.DatastoreSpace]] = {}
        self.vm_snapshots: dict[str, dict[str, m.VmSnapshots]] = {}  # origin -> VM name -> its snapshots
        self.version = 0
        self.rounds = Rounds()  # sources' rounds of writes: a render ahead keeps out of their way

    def ingest(self, sample: m.Sample, origin: str = "") -> None:
        if self.lun_filter is not None:
            sample = self.lun_filter.sample(sample)
        with self.lock:
            host = self.host_states.get((origin, sample.host))
            if host is None:
                host = self.host_states[(origin, sample.host)] = HostState(sample.host, source=sample.source, origin=origin)
            host.suspended = False  # read again: its counters go on from where they were
            now = sample.timestamp
            refused = 0
            for family in FAMILIES:
                objects = host.objects[family]
                incoming = getattr(sample, family)
                for key, stats in incoming.items():
                    obj = objects.get(key)
                    if obj is None:
                        obj = objects[key] = _taken_up(host, family, key)
                    refused += integrate(obj, stats, sample.interval)
                    obj.last_seen = now
                for key in [k for k, o in objects.items() if o.last_seen != now]:
                    obj = objects[key]
                    obj.gauges = {}
                    if now - obj.last_seen > self.stale_after:
                        del objects[key]
            if now > host.retired_until:
                _expire_retired(host, now)
            host.path_devices = sample.path_devices
            host.world_vms = sample.world_vms
            host.values = sample.host_values
            if refused:  # counted where the sources' rejected lines are
                key = (f"{sample.source}:{sample.host}", "out_of_range")
                self.parse_errors[key] = self.parse_errors.get(key, 0) + refused
            host.samples += 1
            host.last_timestamp = now
            self.version += 1

    def set_inventory(self, inventory: m.Inventory, origin: str = "") -> None:
        if self.lun_filter is not None:
            inventory = self.lun_filter.inventory(inventory)
        with self.lock:
            self.host_inventories[(origin, inventory.host)] = inventory
            self.version += 1

    @property
    def hosts(self) -> dict[str, HostState]:
        """Each host once: the state of the first source that reported it (suspended hosts hidden)."""
        return _first_per_host({key: h for key, h in self.host_states.items() if not h.suspended})

    @property
    def inventories(self) -> dict[str, m.Inventory]:
        return _first_per_host(self.host_inventories)

    def set_health(self, record: m.SourceHealth) -> None:
        """A source's health, replaced whole (the source hands over a record it no longer changes)."""
        with self.lock:
            self.source_health[(record.kind, record.name, record.origin)] = record
            self.version += 1

    @property
    def health(self) -> dict[tuple[str, str], m.SourceHealth]:
        """(kind, name) -> record; of one host's esxcli health from several targets, the first."""
        out: dict = {}
        for (kind, name, _), record in self.source_health.items():
            out.setdefault((kind, name), record)
        return out

    def view(self, origin: str) -> StoreView:
        return StoreView(self, origin)

    def set_vsan(self, cluster: m.VsanCluster, origin: str = "") -> None:
        """A vSAN cluster as its collector last read it, replaced whole (never changed after)."""
        with self.lock:
            self.vsan_clusters[(origin, cluster.name)] = cluster
            self.version += 1

    def drop_vsan(self, clusters, origin: str = "") -> None:
        """vSAN clusters that left a target (vSAN turned off, cluster removed) lose their series."""
        with self.lock:
            for name in clusters:
                self.vsan_clusters.pop((origin, name), None)
                self.source_health.pop(("vsan", name, origin), None)
            self.version += 1

    @property
    def vsan(self) -> dict[str, m.VsanCluster]:
        return _first_per_host(self.vsan_clusters)

    # --- datastore space and VM snapshots --------------------------------------------------
    def set_space(self, name: str, spaces: dict[str, m.DatastoreSpace], origin: str = "") -> None:
        """The datastores one source sees (a vSphere target, name = origin; a host's esxcli, name =
        the host), by url, replaced whole; an empty dict drops them."""
        with self.lock:
            if spaces:
                self.datastore_spaces[(origin, name)] = spaces
            else:
                self.datastore_spaces.pop((origin, name), None)
            self.version += 1

    def set_snapshots(self, snapshots: dict[str, m.VmSnapshots], origin: str = "") -> None:
        """A vSphere target's followed VMs' snapshots, by VM name, replaced whole."""
        with self.lock:
            self.vm_snapshots[origin] = snapshots
            self.version += 1

    @property
    def spaces(self) -> dict[str, m.DatastoreSpace]:
        return _one_per_datastore(self.datastore_spaces)

    @property
    def snapshots(self) -> dict[str, m.VmSnapshots]:
        out: dict = {}
        for by_vm in self.vm_snapshots.values():
            for vm, snap in by_vm.items():
                out.setdefault(vm, snap)
        return out

    def drop_inventories(self, hosts, origin: str = "") -> None:
        """Hosts that left a source's inventory lose their configuration series."""
        with self.lock:
            for host in hosts:
                self.host_inventories.pop((origin, host), None)
                self.host_disk_health.pop((origin, host), None)
            self.version += 1

    def forget_hosts(self, hosts, origin: str = "") -> None:
        """Hosts that left a source (its inventory): every series keyed by them goes, their
        objects' gauges and counters, their configuration, and the counts of values the store
        refused from them (unless another source still reports the host). Their SMART rounds
        forget their own state (exporter.smart.rounds, told by the source)."""
        with self.lock:
            for host in hosts:
                state = self.host_states.pop((origin, host), None)
                self.host_inventories.pop((origin, host), None)
                self.host_disk_health.pop((origin, host), None)
                if state is not None and not any(name == host for _, name in self.host_states):
                    stream = f"{state.source}:{host}"
                    for key in [key for key in self.parse_errors if key[0] == stream]:
                        del self.parse_errors[key]
            self.version += 1

    def suspend_hosts(self, hosts, origin: str = "") -> None:
        """Hosts a source still lists but cannot read (vCenter shows them disconnected or not
        responding): their series go as with forget_hosts, but their objects' counters are kept,
        hidden, so that when the host is read again they go on from where they were rather than
        from 0 (which Prometheus would take for a counter reset). The source forgets them for good
        (forget_hosts) when they leave its inventory or stay unreadable too long."""
        with self.lock:
            for host in hosts:
                state = self.host_states.get((origin, host))
                if state is not None:
                    state.suspended = True
                    state.values = {}
                    for objects in state.objects.values():
                        for obj in objects.values():
                            obj.gauges = {}
                self.host_inventories.pop((origin, host), None)
                self.host_disk_health.pop((origin, host), None)
            self.version += 1

    def drop_health(self, kind: str, name: str, origin: str = "") -> None:
        """A health record whose subject is gone (esxcli's of a host that left)."""
        with self.lock:
            self.source_health.pop((kind, name, origin), None)
            self.version += 1

    def count_parse_error(self, stream: str, reason: str) -> None:
        with self.lock:
            key = (stream, reason)
            self.parse_errors[key] = self.parse_errors.get(key, 0) + 1
            self.version += 1

    def drop_gauges(self, host: str, origin: str = "") -> None:
        """A live stream of this host died: its last values are no longer current (counters stay)."""
        with self.lock:
            state = self.host_states.get((origin, host))
            if state is not None:
                for objects in state.objects.values():
                    for obj in objects.values():
                        obj.gauges = {}
            self.version += 1

    def touch(self) -> None:
        """Mark the state changed (a source's own health metrics moved)."""
        with self.lock:
            self.version += 1

    # --- ESXi's storage events (exporter.events) ----------------------------------------------
    def set_storage_events(self, record: m.StorageEvents) -> None:
        """An origin's storage event counts, replaced whole (never changed after). A round that
        counted nothing new hands over an equal record: the version stays, so the exposition
        rendered for it is served again rather than rendered anew every events round."""
        with self.lock:
            key = (record.source, record.origin)
            if self.storage_events.get(key) == record:
                return
            self.storage_events[key] = record
            self.version += 1

    # --- local disks' health (exporter.smart) ---------------------------------------------
    def set_disk_health(self, report: m.DiskHealthReport, origin: str = "") -> None:
        """A host's local disks after a SMART round, replaced whole; LUNs the filter leaves out
        leave their disks out too. Dropped with the host (forget_hosts, drop_inventories)."""
        if self.lun_filter is not None:
            report = replace(report, disks={d: h for d, h in report.disks.items() if self.lun_filter.keeps(d)})
        with self.lock:
            self.host_disk_health[(origin, report.host)] = report
            self.version += 1

    def drop_disk_health(self, hosts, origin: str = "") -> None:
        """Hosts whose SMART rounds forgot them (they left): their disks go now."""
        with self.lock:
            for host in hosts:
                self.host_disk_health.pop((origin, host), None)
            self.version += 1

    @property
    def disk_health(self) -> dict[str, m.DiskHealthReport]:
        return _first_per_host(self.host_disk_health)

    # --- what a source knows is gone (the vSphere source follows vCenter's changes) ----------
    def drop_objects(self, host: str, gone: dict[str, set], origin: str = "", keep_for: float = 0.0) -> None:
        """Objects a source knows are gone from a host (a VM destroyed, powered off or moved away,
        a LUN or path removed): their series go now, not after stale_after. gone: family -> keys.

        keep_for > 0: their counters are kept, hidden, for that many seconds (of sample time) after
        their last sample, so that one that comes back (a VM powered on again, moved back) goes on
        from its total instead of from 0, which Prometheus would take for a counter reset when no
        scrape fell between; after that it is forgotten and would start again from 0."""
        with self.lock:
            state = self.host_states.get((origin, host))
            if state is not None:
                for family, keys in gone.items():
                    objects = state.objects.get(family)
                    for key in keys if objects else ():
                        obj = objects.pop(key, None)
                        if obj is not None and keep_for > 0:
                            _retire(state, family, key, obj, obj.last_seen + keep_for)
            self.version += 1


class StoreView:
    """The store as one source sees it (/probe?target=NAME): its hosts, inventories and health.
    Same lock and version as the store, so a probe renders from the same consistent snapshot."""

    def __init__(self, store: Store, origin: str):
        self.store, self.origin = store, origin
        self.lock = store.lock
        self.rounds = store.rounds
        self.parse_errors: dict[tuple[str, str], int] = {}  # esxtop streams have no target

    @property
    def version(self) -> int:
        return self.store.version

    @property
    def hosts(self) -> dict[str, HostState]:
        return {name: h for (origin, name), h in self.store.host_states.items() if origin == self.origin and not h.suspended}

    @property
    def inventories(self) -> dict[str, m.Inventory]:
        return {name: inv for (origin, name), inv in self.store.host_inventories.items() if origin == self.origin}

    @property
    def health(self) -> dict[tuple[str, str], m.SourceHealth]:
        return {(kind, name): r for (kind, name, _), r in self.store.source_health.items() if self.origin in (r.name, r.origin)}

    @property
    def disk_health(self) -> dict[str, m.DiskHealthReport]:
        return {name: r for (origin, name), r in self.store.host_disk_health.items() if origin == self.origin}

    @property
    def vsan(self) -> dict[str, m.VsanCluster]:
        return {name: c for (origin, name), c in self.store.vsan_clusters.items() if origin == self.origin}

    @property
    def storage_events(self) -> dict[tuple[str, str], m.StorageEvents]:
        return {key: r for key, r in self.store.storage_events.items() if key[1] == self.origin}

    @property
    def spaces(self) -> dict[str, m.DatastoreSpace]:
        return _one_per_datastore({k: v for k, v in self.store.datastore_spaces.items() if k[0] == self.origin})

    @property
    def snapshots(self) -> dict[str, m.VmSnapshots]:
        return dict(self.store.vm_snapshots.get(self.origin, {}))


def _retire(host: HostState, family: str, key, obj: ObjectState, until: float) -> None:
    obj.gauges = {}
    host.retired.setdefault(family, {})[key] = (obj, until)
    host.retired_until = min(host.retired_until, until)


def _taken_up(host: HostState, family: str, key) -> ObjectState:
    """A new object of a host's sample: one retired (dropped, kept) under this key goes on with its
    counters; any other starts at 0."""
    if host.retired:
        kept = host.retired.get(family)
        found = kept.pop(key, None) if kept else None
        if found is not None:
            if not kept:
                del host.retired[family]
            return found[0]
    return ObjectState()


def _expire_retired(host: HostState, now: float) -> None:
    """Forget the retired objects kept long enough (memory stays bounded however many VMs come and go)."""
    soonest = _INF
    for family in list(host.retired):
        kept = host.retired[family]
        for key in [key for key, (_, until) in kept.items() if until < now]:
            del kept[key]
        if kept:
            soonest = min(soonest, min(until for _, until in kept.values()))
        else:
            del host.retired[family]
    host.retired_until = soonest


def _first_per_host(by_origin: dict) -> dict:
    """(origin, host) -> x as host -> x, the first-inserted origin winning (dicts keep insertion order)."""
    out: dict = {}
    for (_, name), value in by_origin.items():
        out.setdefault(name, value)
    return out


def _one_per_datastore(by_source: dict) -> dict[str, m.DatastoreSpace]:
    """url -> space, one per datastore however many sources see it: vCenter's view wins over any
    host's esxcli answer (it is one figure, refreshed by vCenter, with uncommitted space beside it);
    of several hosts' answers, the first."""
    out: dict[str, m.DatastoreSpace] = {}
    for spaces in by_source.values():
        for url, space in spaces.items():
            held = out.get(url)
            if held is None or (held.source != "vsphere" and space.source == "vsphere"):
                out[url] = space
    return out
