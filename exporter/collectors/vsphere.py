"""The vSphere source's own health per target, from the SourceHealth records it pushes into the
store: reachability, phase durations and failures, objects found, samples ingested."""

from __future__ import annotations

from exporter.collectors.textformat import counter, gauge, label_string

OBJECT_KINDS = ("host", "lun", "adapter", "path", "datastore", "vm", "vdisk")
HOST_KIND = "vsphere_host"  # one host's call health (exporter.vsphere.hostfaults.KIND; collectors import no source)


def collect(store):
    up = gauge("esxi_vsphere_up", "1 if the last discovery and collection of the target succeeded.")
    duration = gauge(
        "esxi_vsphere_collection_duration_seconds",
        "Wall time of the target's last discovery (inventory walk) or collection (QueryPerf).",
    )
    objects = gauge("esxi_vsphere_objects", "Objects found by the target's last discovery.")
    errors = counter("esxi_vsphere_errors_total", "Failed discoveries and QueryPerf calls.")
    dropped = counter(
        "esxi_vsphere_dropped_series_total",
        "Perf series that could not be placed in time, and VMs left out of a collection (changed since discovery), by reason.",
    )
    samples = counter("esxi_vsphere_samples_total", "Real-time samples ingested.")
    last = gauge("esxi_vsphere_last_sample_timestamp_seconds", "Server time of the newest real-time sample.")
    overruns = counter(
        "esxi_vsphere_collection_overruns_total",
        "Collections that took longer than their interval (samples fall behind), by phase.",
    )
    changes = counter(
        "esxi_vsphere_inventory_changes_total",
        "Inventory changes applied as vCenter reported them (between full walks), by kind.",
    )
    walks = counter("esxi_vsphere_walks_total", "Full walks of the inventory, by why: start, scheduled (safety net), error.")
    host_up = gauge(
        "esxi_vsphere_host_up",
        "1 if every per-host vSphere call of the host (option and iSCSI managers, its properties, QueryPerf) last answered.",
    )
    host_errors = counter(
        "esxi_vsphere_host_errors_total",
        "Per-host vSphere calls that failed with a fault of that host alone (the rest of the target goes on), by call.",
    )
    for (kind, name), record in sorted(store.health.items()):
        if kind == HOST_KIND:
            host_up.add(label_string(("host",), (name,)), float(record.up))
            for call, count in sorted(record.errors.items()):
                host_errors.add(label_string(("host", "call"), (name, call)), float(count))
            continue
        if kind != "vsphere":
            continue
        up.add(label_string(("target",), (name,)), float(record.up))
        for phase, seconds in sorted(record.durations.items()):
            duration.add(label_string(("target", "phase"), (name, phase)), seconds)
        for phase, count in sorted(record.errors.items()):
            errors.add(label_string(("target", "phase"), (name, phase)), float(count))
        for reason, count in sorted(record.dropped.items()):
            dropped.add(label_string(("target", "reason"), (name, reason)), float(count))
        for phase, count in sorted(record.overruns.items()):
            overruns.add(label_string(("target", "phase"), (name, phase)), float(count))
        for host, count in sorted(record.samples.items()):
            labels = label_string(("host",), (host,))
            samples.add(labels, float(count))
            last.add(labels, record.last_timestamp.get(host, 0.0))
        for kind_of_change, count in sorted(record.changes.items()):
            changes.add(label_string(("target", "kind"), (name, kind_of_change)), float(count))
        for reason, count in sorted(record.walks.items()):
            walks.add(label_string(("target", "reason"), (name, reason)), float(count))
        if record.objects:
            for object_kind in OBJECT_KINDS:
                objects.add(label_string(("target", "kind"), (name, object_kind)), float(record.objects.get(object_kind, 0)))
    return [up, duration, objects, errors, dropped, samples, last, overruns, changes, walks, host_up, host_errors]
