"""The vSphere source's own health per target, and the families the model has no place for:
host-level datastore I/O and CPU MHz. Registered as an `extra` collector of the exposition
(one over every target for /metrics, one per target for /probe?target=NAME)."""
from __future__ import annotations

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from exporter.collectors.io import io_families
from exporter.vsphere.mapping import CPU_HERTZ

OBJECT_KINDS = ("host", "lun", "adapter", "path", "datastore")


def make_collect(targets):
    """A collect(store) function over these VsphereTargets."""

    def collect(store):
        up = GaugeMetricFamily("esxi_vsphere_up", "1 if the last discovery and collection of the target succeeded.", labels=["target"])
        duration = GaugeMetricFamily("esxi_vsphere_collection_duration_seconds",
                                     "Wall time of the target's last discovery (inventory walk) or collection (QueryPerf).",
                                     labels=["target", "phase"])
        objects = GaugeMetricFamily("esxi_vsphere_objects", "Objects found by the target's last discovery.", labels=["target", "kind"])
        errors = CounterMetricFamily("esxi_vsphere_errors", "Failed discoveries and QueryPerf calls.", labels=["target", "phase"])
        dropped = CounterMetricFamily("esxi_vsphere_dropped_series", "Perf series that could not be placed in time, by reason.",
                                      labels=["target", "reason"])
        samples = CounterMetricFamily("esxi_vsphere_samples", "Real-time samples ingested.", labels=["host"])
        last = GaugeMetricFamily("esxi_vsphere_last_sample_timestamp_seconds", "Server time of the newest real-time sample.", labels=["host"])
        hertz = GaugeMetricFamily("esxi_host_cpu_usage_hertz", "Host CPU in use over the last 20 s (cpu.usagemhz).", labels=["host"])
        datastore_rows = []
        for target in targets:
            with target.lock:
                up.add_metric([target.name], target.up)
                for phase, seconds in sorted(target.durations.items()):
                    duration.add_metric([target.name, phase], seconds)
                for phase, count in sorted(target.errors.items()):
                    errors.add_metric([target.name, phase], count)
                for reason, count in sorted(target.dropped.items()):
                    dropped.add_metric([target.name, reason], count)
                for host, count in sorted(target.samples.items()):
                    samples.add_metric([host], count)
                    last.add_metric([host], target.last_timestamp.get(host, 0.0))
                for host, values in sorted(target.host_values.items()):
                    if CPU_HERTZ in values:
                        hertz.add_metric([host], values[CPU_HERTZ])
                datastore_rows.extend(([host, name], state) for (host, name), state in sorted(target.datastores.items()))
            topology = target.topology
            if topology is not None:
                counts = topology.counts()
                for kind in OBJECT_KINDS:
                    objects.add_metric([target.name, kind], counts[kind])
        yield from (up, duration, objects, errors, dropped, samples, last)
        if hertz.samples:
            yield hertz
        yield from io_families("esxi_datastore", ["host", "datastore"], datastore_rows)

    return collect
