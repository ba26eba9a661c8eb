"""LUN (SCSI device, NFS volume) queue statistics, rates and latencies: esxtop's disk device view."""

from exporter.collectors.io import gauge_families, io_families, labels_of
from exporter.store import model as m

QUEUE_GAUGES = (
    (m.QUEUE_DEPTH, "queue_depth", "Device queue depth (DQLEN): the most commands the LUN accepts at once."),
    (m.ACTIVE, "active_commands", "Commands in flight at the device (ACTV)."),
    (
        m.QUEUED,
        "queued_commands",
        "Commands waiting in the VMkernel for a device queue slot (QUED); above 0 means the queue depth is too small.",
    ),
    (m.USED, "used_ratio", "Share of the device queue in use, ACTV / DQLEN (%USD / 100)."),
    (m.LOAD, "load", "(ACTV + QUED) / DQLEN (LOAD); above 1 means commands are queuing."),
)
LABELS = ("host", "device")


def collect(store):
    rows = [
        (labels_of(obj, LABELS, (host.host, device)), obj)
        for host in store.hosts.values()
        for device, obj in host.objects["luns"].items()
    ]
    yield from gauge_families("esxi_lun", rows, QUEUE_GAUGES)
    yield from io_families("esxi_lun", rows)
