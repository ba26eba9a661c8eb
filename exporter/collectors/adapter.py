"""Storage adapter (HBA) rates, latencies and queue depth: esxtop's disk adapter view."""

from exporter.collectors.io import gauge_families, io_families, labels_of
from exporter.store import model as m

LABELS = ("host", "adapter")
GAUGES = (
    (m.QUEUE_DEPTH, "queue_depth", "Adapter queue depth (AQLEN)."),
    (m.ACTIVE, "active_commands", "Commands in flight at the adapter (vSphere storageAdapter.outstandingIOs)."),
    (m.QUEUED, "queued_commands", "Commands queued at the adapter (vSphere storageAdapter.queued)."),
)


def collect(store):
    rows = [
        (labels_of(obj, LABELS, (host.host, adapter)), obj)
        for host in store.hosts.values()
        for adapter, obj in host.objects["adapters"].items()
    ]
    yield from gauge_families("esxi_adapter", rows, GAUGES)
    yield from io_families("esxi_adapter", rows)
