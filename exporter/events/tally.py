"""One origin's storage events counted into bounded label sets, and what could not be labelled.

The labels are bounded whatever the server sends: `event` is one of the followed ids (else "" and
dropped{reason="unknown_event"}), `host`, `device` and `datastore` are the inventory's (else ""
and dropped{reason="unknown_host"|"unknown_device"|"unknown_datastore"}). An event whose key was
counted already is counted once only (dropped{reason="duplicate"}: the server repeated it, or it
was read again after the collector was made again). The series an origin can have are therefore
at most ids x the inventory's hosts, devices and datastores.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from exporter.store import model as m

# The keys remembered to refuse a repeat: more than a collector's page (1,000) many times over,
# and a bound on memory whatever the server sends.
REMEMBERED_KEYS = 100_000
DROP_REASONS = ("unknown_event", "unknown_host", "unknown_device", "unknown_datastore", "duplicate", "unreadable")


class Tally:
    def __init__(self, origin: str, source: str, max_label: int = 128):
        self.origin, self.source, self.max_label = origin, source, max_label
        self.lock = threading.Lock()
        self.counts: dict[tuple[str, str, str, str], list] = {}  # (host, event, device, datastore) -> [n, last time]
        self.dropped: dict[str, int] = {}
        self.keys: OrderedDict = OrderedDict()  # event keys counted, oldest first

    def seen(self, key) -> bool:
        """True (and counted as a duplicate) if this event key was counted already; else remembered."""
        with self.lock:
            if key in self.keys:
                self.dropped["duplicate"] = self.dropped.get("duplicate", 0) + 1
                return True
            self.keys[key] = None
            if len(self.keys) > REMEMBERED_KEYS:
                self.keys.popitem(last=False)
            return False

    def count(self, host: str, event: str, named, timestamp: float, followed, hosts) -> None:
        """One event: host and event id as the source read them, named: extract.Named."""
        reasons = []
        if event not in followed or len(event) > self.max_label:
            event, reasons = "", ["unknown_event"]
        if host not in hosts or len(host) > self.max_label:
            host = ""
            reasons.append("unknown_host")
        if named.unknown_device:
            reasons.append("unknown_device")
        if named.unknown_datastore:
            reasons.append("unknown_datastore")
        key = (host, event, named.device[: self.max_label], named.datastore[: self.max_label])
        with self.lock:
            entry = self.counts.get(key)
            if entry is None:
                entry = self.counts[key] = [0, 0.0]
            entry[0] += 1
            entry[1] = max(entry[1], timestamp)
            for reason in reasons:
                self.dropped[reason] = self.dropped.get(reason, 0) + 1

    def drop(self, reason: str, n: int = 1) -> None:
        with self.lock:
            self.dropped[reason] = self.dropped.get(reason, 0) + n

    def record(self, up: bool, errors: dict[str, int], ids: int) -> m.StorageEvents:
        with self.lock:
            return m.StorageEvents(
                origin=self.origin,
                source=self.source,
                up=int(up),
                counts={k: (v[0], v[1]) for k, v in self.counts.items()},
                dropped=dict(self.dropped),
                errors=dict(errors),
                followed_ids=ids,
            )
