"""The vSphere source's own health per target. Registered as an `extra` collector of the exposition
(one over every target for /metrics, one per target for /probe?target=NAME)."""

from __future__ import annotations

from exporter.textformat import counter, gauge, label_string

OBJECT_KINDS = ("host", "lun", "adapter", "path", "datastore")


def make_collect(targets):
    """A collect(store) function over these VsphereTargets."""

    def collect(store):
        up = gauge("esxi_vsphere_up", "1 if the last discovery and collection of the target succeeded.")
        duration = gauge(
            "esxi_vsphere_collection_duration_seconds",
            "Wall time of the target's last discovery (inventory walk) or collection (QueryPerf).",
        )
        objects = gauge("esxi_vsphere_objects", "Objects found by the target's last discovery.")
        errors = counter("esxi_vsphere_errors_total", "Failed discoveries and QueryPerf calls.")
        dropped = counter("esxi_vsphere_dropped_series_total", "Perf series that could not be placed in time, by reason.")
        samples = counter("esxi_vsphere_samples_total", "Real-time samples ingested.")
        last = gauge("esxi_vsphere_last_sample_timestamp_seconds", "Server time of the newest real-time sample.")
        for target in targets:
            name = target.name
            with target.lock:
                up.add(label_string(("target",), (name,)), float(target.up))
                for phase, seconds in sorted(target.durations.items()):
                    duration.add(label_string(("target", "phase"), (name, phase)), seconds)
                for phase, count in sorted(target.errors.items()):
                    errors.add(label_string(("target", "phase"), (name, phase)), float(count))
                for reason, count in sorted(target.dropped.items()):
                    dropped.add(label_string(("target", "reason"), (name, reason)), float(count))
                for host, count in sorted(target.samples.items()):
                    labels = label_string(("host",), (host,))
                    samples.add(labels, float(count))
                    last.add(labels, target.last_timestamp.get(host, 0.0))
            topology = target.topology
            if topology is not None:
                counts = topology.counts()
                for kind in OBJECT_KINDS:
                    objects.add(label_string(("target", "kind"), (name, kind)), float(counts[kind]))
        yield from (up, duration, objects, errors, dropped, samples, last)

    return collect
