"""Datastore-level I/O: an NFS volume (esxtop's NFS Volume object) and every datastore as vSphere's
host-level datastore.* counters see it, under one family whichever source saw it."""

from exporter.collectors.io import gauge_families, io_families, labels_of
from exporter.store import model as m

GAUGES = ((m.ACTIVE, "active_commands", "Commands in flight to the datastore (NFS volume ACTV)."),)
LABELS = ("host", "datastore")


def rows(store) -> list:
    """(labels, object) of every host's datastores: the rows of every esxi_datastore_* family keyed
    by host and datastore (this module's and exporter.collectors.sioc's)."""
    return [
        (labels_of(obj, LABELS, (host.host, name)), obj)
        for host in store.hosts.values()
        for name, obj in host.objects["datastores"].items()
    ]


def collect(store):
    rows_ = rows(store)
    yield from gauge_families("esxi_datastore", rows_, GAUGES)
    yield from io_families("esxi_datastore", rows_)
