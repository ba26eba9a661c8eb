"""Every host vCenter lists, reachable or not: its connection state and maintenance mode.

A host vCenter cannot reach (notResponding: storage APD or a hung hostd are common causes) or that
was disconnected has no storage series (they go as for a host that left), but keeps these, so
that it does not vanish without a word. From the vSphere targets' SourceHealth records.
"""

from exporter.collectors.textformat import gauge, label_string
from exporter.store.model import HOST_CONNECTION_STATES


def collect(store):
    state = gauge(
        "esxi_host_connection_state",
        "The host's connection state as vCenter lists it, 1 for the current state and 0 for the others.",
    )
    maintenance = gauge("esxi_host_maintenance_mode", "1 if the host is in maintenance mode, as vCenter lists it.")
    statuses = {}
    for (kind, _), record in sorted(store.health.items()):
        if kind == "vsphere":
            for host, status in record.host_status.items():
                statuses.setdefault(host, status)  # a host two targets list: the first target's view
    for host, status in sorted(statuses.items()):
        current = status.connection_state
        # a state the server reports beyond the known ones is shown too, never dropped
        for name in (*HOST_CONNECTION_STATES, *((current,) if current not in HOST_CONNECTION_STATES else ())):
            state.add(label_string(("host", "state"), (host, name)), 1.0 if name == current else 0.0)
        if status.maintenance is not None:
            maintenance.add(label_string(("host",), (host,)), 1.0 if status.maintenance else 0.0)
    return [state, maintenance]
