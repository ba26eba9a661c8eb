"""ESXi's storage events (exporter.events): counted per host, event id, device and datastore, the
newest one's time beside, and the followers' own health.

A host reported by both vCenter's event stream and its own vobd.log is shown from one of them
(vCenter's first), never summed: both see the same events. Events under the empty host (a host the
inventory does not have) are summed over origins: they are different events.
"""

from __future__ import annotations

from exporter.collectors.textformat import counter, gauge, label_string

LABELS = ("host", "event", "device", "datastore")
SOURCE_ORDER = {"vsphere": 0, "vobd": 1}


def collect(store):
    total = counter(
        "esxi_storage_events_total",
        "ESXi storage events (esx.problem/esx.clear storage, scsi, vmfs, psastor; vprob) since the exporter started, by event id.",
    )
    last = gauge("esxi_storage_event_last_timestamp_seconds", "Time ESXi raised the newest of these events.")
    dropped = counter(
        "esxi_storage_events_dropped_total",
        "Storage events counted under an empty label (unknown_event, unknown_host, unknown_device, unknown_datastore) "
        "or not counted (duplicate, unreadable), by reason.",
    )
    errors = counter("esxi_storage_events_errors_total", "Faults following the event stream, by fault.")
    up = gauge("esxi_storage_events_up", "1 while the origin's storage events are followed.")
    ids = gauge("esxi_storage_events_followed_ids", "Event ids followed: the known ones and the server catalog's.")
    records = getattr(store, "storage_events", None) or {}
    owner: dict[str, tuple] = {}  # host -> the origin shown for it
    merged: dict[tuple, list] = {}
    for key, record in sorted(records.items(), key=lambda item: (SOURCE_ORDER.get(item[0][0], 9), item[0][1])):
        for labels, (count, stamp) in record.counts.items():
            host = labels[0]
            if host and owner.setdefault(host, key) != key:
                continue
            entry = merged.setdefault(labels, [0, 0.0])
            entry[0] += count
            entry[1] = max(entry[1], stamp)
        names = ("source", "target")
        values = (record.source, record.origin)
        up.add(label_string(names, values), float(record.up))
        ids.add(label_string(names, values), float(record.followed_ids))
        for reason, count in sorted(record.dropped.items()):
            dropped.add(label_string((*names, "reason"), (*values, reason)), float(count))
        for fault, count in sorted(record.errors.items()):
            errors.add(label_string((*names, "fault"), (*values, fault)), float(count))
    for labels, (count, stamp) in sorted(merged.items()):
        text = label_string(LABELS, labels)
        total.add(text, float(count))
        last.add(text, stamp)
    return [total, last, dropped, errors, up, ids]
