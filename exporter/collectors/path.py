"""Per-path rates and latencies, and which device each path leads to."""

from exporter.collectors.io import io_families, labels_of
from exporter.collectors.textformat import gauge, label_string
from exporter.store.model import path_adapter

LABELS = ("host", "adapter", "path")
INFO_LABELS = ("host", "path", "adapter", "device")


def collect(store):
    rows = []
    info = gauge("esxi_path_info", "Path identity: the device a path leads to, over which adapter. Always 1.")
    for host in store.hosts.values():
        for path, obj in host.objects["paths"].items():
            rows.append((labels_of(obj, LABELS, (host.host, path_adapter(path), path)), obj))
            device = host.path_devices.get(path)
            if device is not None:
                info.add(label_string(INFO_LABELS, (host.host, path, path_adapter(path), device)), 1.0)
    yield from io_families("esxi_path", rows)
    yield info
