"""Per-path rates and latencies, and which device each path leads to."""
from prometheus_client.core import GaugeMetricFamily

from exporter.collectors.io import io_families
from exporter.model import path_adapter

LABELS = ["host", "adapter", "path"]


def collect(store):
    rows = []
    info = GaugeMetricFamily("esxi_path_info", "Path identity: the device a path leads to, over which adapter. Always 1.",
                             labels=["host", "path", "adapter", "device"])
    for host in store.hosts.values():
        for path, obj in host.objects["paths"].items():
            rows.append(([host.host, path_adapter(path), path], obj))
            device = host.path_devices.get(path)
            if device is not None:
                info.add_metric([host.host, path, path_adapter(path), device], 1)
    yield from io_families("esxi_path", LABELS, rows)
    if info.samples:
        yield info
