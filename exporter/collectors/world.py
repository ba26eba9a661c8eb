"""Per-world outstanding commands on each LUN: which VM fills the queue (esxtop per-device-per-world)."""

from exporter.collectors.io import gauge_families, labels_of
from exporter.store import model as m

LABELS = ("host", "device", "world", "vm")
GAUGES = (
    (m.ACTIVE, "active_commands", "Commands in flight from one world (VM) to one LUN (per-world ACTV)."),
    (m.QUEUED, "queued_commands", "Commands one world (VM) has queued in the VMkernel for one LUN (per-world QUED)."),
)


def collect(store):
    rows = [
        (labels_of(obj, LABELS, (host.host, device, world, host.world_vms.get(world, ""))), obj)
        for host in store.hosts.values()
        for (device, world), obj in host.objects["worlds"].items()
    ]
    yield from gauge_families("esxi_lun_world", rows, GAUGES)
