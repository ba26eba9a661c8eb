"""vCenter's storage events, followed with one EventHistoryCollector per target.

Calls (vSphere API reference: EventManager, EventHistoryCollector, EventFilterSpec):
  - `ServiceInstance.CurrentTime` once at start: the server's clock, where counting begins (no
    replay of older history);
  - `EventManager.description.eventInfo`: the server's catalog, merged with the known ids
    (exporter.events.catalog) whenever a collector is made;
  - `EventManager.CreateCollectorForEvents` with an EventFilterSpec of those `eventTypeId`s and
    `time.beginTime` (an EventEx carries its id in `eventTypeId`, which the filter matches);
  - `EventHistoryCollector.ReadNextEvents(maxCount=1000)` every interval, until a page comes back
    short: the collector's scrollable view starts at its oldest event and moves on as it is read,
    and events posted after it was made are appended to it.
A collector lives in its session: after a re-login, or when vCenter restarted or dropped it,
ReadNextEvents answers ManagedObjectNotFound, and the collector is made again from the newest
event time seen (beginTime is inclusive); the events read twice that way are refused by key
(exporter.events.tally), so nothing between is lost and nothing is counted twice.

ReadNextEvents' answer is read with ElementTree through soap.invoke (capped by xmlguard, like every
answer), not deserialized by pyVmomi: a page of unknown event types, or of 100,000 events, is
read the same way.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
import xml.etree.ElementTree as ET

from pyVmomi import vim, vmodl

from exporter.events import catalog, extract, page
from exporter.events.page import Event
from exporter.events.tally import Tally
from exporter.store.faultlog import FaultLog
from exporter.vsphere import soap
from exporter.vsphere.client import VsphereError

log = logging.getLogger(__name__)

PAGE = 1000  # a collector's largest page (EventFilterSpec.maxCount, SetCollectorPageSize: 1 to 1000)
_READ_NEXT = vim.event.EventHistoryCollector._GetMethodInfo("ReadNext")  # the Python name of ReadNextEvents


def catalog_of(content) -> list[str]:
    """The event ids of the server's catalog (EventManager.description.eventInfo), read with
    ElementTree: pyVmomi types an eventInfo key as a vmodl.TypeName and refuses an EventEx id
    (esx.problem...), which is what most storage entries are."""
    pc = vmodl.query.PropertyCollector
    spec = pc.FilterSpec(
        objectSet=[pc.ObjectSpec(obj=content.eventManager, skip=False)],
        propSet=[pc.PropertySpec(type=vim.event.EventManager, pathSet=["description.eventInfo"])],
    )
    ids = []
    for _, props in soap.retrieve(content.propertyCollector, spec):
        for detail in soap.children(props.get("description.eventInfo"), "EventDescriptionEventDetail"):
            ids.append(soap.text(detail, "key"))
    return ids


def inventory_of(topology) -> extract.Inventory:
    """The names events may carry, from the target's topology (exporter.vsphere.discovery)."""
    found = extract.Inventory()
    for host in topology.hosts if topology is not None else ():
        found.devices[host.name] = set(host.inventory.luns)
        found.datastores[host.name] = set(host.datastore_names.values()) | set(host.inventory.datastores)
        found.uuids[host.name] = dict(host.datastore_names)
    return found


class EventFollower:
    """One vSphere target's storage events, read every `interval` seconds over its session."""

    def __init__(self, target, store, interval: float = 10.0, max_label: int = 128):
        self.target, self.store, self.interval = target, store, interval
        self.name = target.name
        self.client = target.client
        self.tally = Tally(self.name, "vsphere", max_label)
        self.faults = FaultLog(log)
        self.begin: float | None = None  # server time counting started at, then the newest event's time
        self.collector: str | None = None  # its moid
        self.followed: frozenset[str] = frozenset()
        self.collectors_made = 0
        self._inventory_of = (None, extract.Inventory())  # (topology, its names)

    # --- the calls -------------------------------------------------------------------------
    def _server_time(self) -> float:
        def now(content):
            return vim.ServiceInstance("ServiceInstance", content.eventManager._stub).CurrentTime().timestamp()

        return self.client.call(now)

    def _make_collector(self) -> None:
        def make(content):
            manager = content.eventManager
            server_ids = catalog_of(content)
            followed, left_out = catalog.followed(server_ids)
            spec = vim.event.EventFilterSpec(
                eventTypeId=sorted(followed),
                time=vim.event.EventFilterSpec.ByTime(beginTime=_utc(self.begin)),
            )
            return manager.CreateCollectorForEvents(spec)._moId, followed, left_out

        moid, followed, left_out = self.client.call(make)
        if left_out:
            self.faults.failed(
                "catalog",
                f"vsphere target {self.name}: the server's event catalog lists {left_out} storage event id(s) past "
                f'the {catalog.MAX_SERVER_IDS} followed (counted, logged once); their events count under event=""',
            )
        self.collector, self.followed = moid, followed
        self.collectors_made += 1

    def _read_page(self, take) -> tuple[int, int]:
        """One ReadNextEvents call: (events read, events unreadable), each event handed to take."""
        moid = self.collector

        def read(content):
            mo = vim.event.EventHistoryCollector(moid, content.eventManager._stub)
            return soap.invoke_reading(mo, _READ_NEXT, [PAGE], lambda pieces: page.read_events(pieces, take))

        return self.client.call(read)

    # --- one round ---------------------------------------------------------------------------
    def round(self) -> bool:
        """Read every event the collector has; True if the stream answered."""
        try:
            if self.begin is None:
                self.begin = self._server_time()
            if self.target.topology is None:
                return True  # no inventory to name the events by yet: they wait in vCenter from `begin` on
            if self.collector is None:
                self._make_collector()
                self.faults.answered("collector", f"vsphere target {self.name}: event collector made again")
            count = self._counter()
            while True:
                read, bad = self._read_page(count)
                if bad:
                    self.tally.drop("unreadable", bad)
                    self.faults.failed(
                        "event", f"vsphere target {self.name}: {bad} event(s) without a key or time (counted, logged once)"
                    )
                if read + bad < PAGE:
                    break
        except VsphereError as err:
            gone = err.fault == "ManagedObjectNotFound"
            if gone and self.collector is not None:
                self.collector = None  # vCenter forgot it (a new session, a restart): made again next round
                self.faults.failed(
                    "collector",
                    f"vsphere target {self.name}: the event collector is gone ({err}); made again from the last event seen",
                )
            else:
                self.faults.failed("read", f"vsphere target {self.name}: reading storage events failed: {err}")
            self._publish(False)
            return False
        except ET.ParseError as err:
            self.faults.failed("page", f"vsphere target {self.name}: an event page was refused: {err}")
            self._publish(False)
            return False
        self.faults.answered("read", f"vsphere target {self.name}: storage events read again")
        self._publish(True)
        return True

    def _counter(self):
        """What counts one event: by key once, named after the target's current inventory."""
        topology = self.target.topology
        if self._inventory_of[0] is not topology:
            self._inventory_of = (topology, inventory_of(topology))
        inventory = self._inventory_of[1]
        hosts = inventory.hosts()

        def count(event: Event) -> None:
            if self.tally.seen(event.key):
                return
            named = extract.names(event.host, inventory, event.texts, event.ds)
            self.tally.count(event.host, event.id, named, event.time, self.followed, hosts)
            if self.begin is None or event.time > self.begin:
                self.begin = event.time

        return count

    def _publish(self, up: bool) -> None:
        errors = {str(k): v for k, v in self.faults.snapshot().items()}
        self.store.set_storage_events(self.tally.record(up, errors, len(self.followed)))

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            start = time.monotonic()
            try:
                self.round()
            except Exception:  # noqa: BLE001 - the follower must outlive anything one round does
                log.exception("vsphere target %s: storage events round failed", self.name)
            stop.wait(max(0.5, self.interval - (time.monotonic() - start)))


def _utc(stamp: float | None):
    # a millisecond early: the server's times have nanoseconds, a float and the request's
    # microseconds round them, and an event at the very time must come again (refused by key)
    return None if stamp is None else dt.datetime.fromtimestamp(stamp - 0.001, dt.timezone.utc)
