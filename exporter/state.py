"""Turns a stream of Samples into exportable state: gauges from the last interval and counters
that integrate every interval's rates over its real length.

Sources push Samples and Inventories in; collectors read a consistent view under the lock.
`version` changes on every update so the exposition can be rendered once per change.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from exporter import model as m


@dataclass(slots=True)
class ObjectState:
    gauges: dict[str, float] = field(default_factory=dict)  # last interval's values
    counters: dict[str, float] = field(default_factory=dict)  # integrated since start
    last_seen: float = 0.0  # sample timestamp that last carried this object
    label_cache: tuple | None = None  # (label values, escaped label string), kept by collectors


def _latency_counter(field_name: str) -> str:
    return field_name + "_total"


def integrate(obj: ObjectState, stats: dict[str, float], interval: float | None) -> None:
    """Fold one interval of one object into its state."""
    if interval is None:
        # esxtop's first sample: rates and latencies read 0.00 and are not a measurement.
        obj.gauges = {k: v for k, v in stats.items() if k in m.CONFIG_FIELDS}
        for name in m.RATE_FIELDS:
            if name in stats:
                obj.counters.setdefault(name, 0.0)
        for name in (*m.LATENCY_FIELDS, *m.DIRECTIONAL_LATENCY_WEIGHT):
            if name in stats:
                obj.counters.setdefault(_latency_counter(name), 0.0)
        return
    obj.gauges = stats
    counters = obj.counters
    for name in m.RATE_FIELDS:
        rate = stats.get(name)
        if rate is not None:
            counters[name] = counters.get(name, 0.0) + rate * interval
    commands = stats.get(m.COMMANDS)
    if commands is not None:
        for name in m.LATENCY_FIELDS:
            latency = stats.get(name)
            if latency is not None:
                key = _latency_counter(name)
                counters[key] = counters.get(key, 0.0) + latency * commands * interval
    for name, weight in m.DIRECTIONAL_LATENCY_WEIGHT.items():
        latency, rate = stats.get(name), stats.get(weight)
        if latency is not None and rate is not None:
            key = _latency_counter(name)
            counters[key] = counters.get(key, 0.0) + latency * rate * interval


FAMILIES = ("luns", "adapters", "paths", "worlds", "cpus", "datastores")


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


class Store:
    """All hosts' state. Objects absent from the newest sample lose their gauges at once and
    their counters after `stale_after` seconds (LUNs and worlds come and go)."""

    def __init__(self, stale_after: float = 300.0, lun_filter=None):
        self.stale_after = stale_after
        self.lun_filter = lun_filter or None  # exporter.filters.LunFilter; None keeps every LUN
        self.lock = threading.Lock()
        self.hosts: dict[str, HostState] = {}
        self.inventories: dict[str, m.Inventory] = {}
        self.parse_errors: dict[tuple[str, str], int] = {}  # (stream, reason) -> lines rejected
        self.version = 0

    def ingest(self, sample: m.Sample) -> None:
        if self.lun_filter is not None:
            sample = self.lun_filter.sample(sample)
        with self.lock:
            host = self.hosts.get(sample.host)
            if host is None:
                host = self.hosts[sample.host] = HostState(sample.host, source=sample.source)
            now = sample.timestamp
            for family in FAMILIES:
                objects = host.objects[family]
                incoming = getattr(sample, family)
                for key, stats in incoming.items():
                    obj = objects.get(key)
                    if obj is None:
                        obj = objects[key] = ObjectState()
                    integrate(obj, stats, sample.interval)
                    obj.last_seen = now
                for key in [k for k, o in objects.items() if o.last_seen != now]:
                    obj = objects[key]
                    obj.gauges = {}
                    if now - obj.last_seen > self.stale_after:
                        del objects[key]
            host.path_devices = sample.path_devices
            host.world_vms = sample.world_vms
            host.values = sample.host_values
            host.samples += 1
            host.last_timestamp = now
            self.version += 1

    def set_inventory(self, inventory: m.Inventory) -> None:
        if self.lun_filter is not None:
            inventory = self.lun_filter.inventory(inventory)
        with self.lock:
            self.inventories[inventory.host] = inventory
            self.version += 1

    def drop_inventories(self, hosts) -> None:
        """Hosts that left a source's inventory lose their configuration series."""
        with self.lock:
            for host in hosts:
                self.inventories.pop(host, None)
            self.version += 1

    def count_parse_error(self, stream: str, reason: str) -> None:
        with self.lock:
            key = (stream, reason)
            self.parse_errors[key] = self.parse_errors.get(key, 0) + 1
            self.version += 1

    def drop_gauges(self, host: str) -> None:
        """A live stream of this host died: its last values are no longer current (counters stay)."""
        with self.lock:
            state = self.hosts.get(host)
            if state is not None:
                for objects in state.objects.values():
                    for obj in objects.values():
                        obj.gauges = {}
            self.version += 1

    def touch(self) -> None:
        """Mark the state changed (a source's own health metrics moved)."""
        with self.lock:
            self.version += 1
