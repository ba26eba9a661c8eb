"""Storage configuration: LUN identity and datastores, queue-depth settings, HBA and NFS link
speeds, path states. Comes from the vSphere API, the simulator, or the config file's inventory section."""

from exporter.collectors.textformat import gauge, label_string
from exporter.store.model import PATH_STATES, device_kind


class _Family:
    """A gauge family with its label names, so rows can be added as plain value lists."""

    def __init__(self, name, help_text, labels):
        self.family, self.names = gauge(name, help_text), labels

    def put(self, values, value):
        self.family.add(label_string(self.names, values), float(value))


def collect(store):
    lun_info = _Family(
        "esxi_lun_info",
        "LUN identity and the datastore on it. Always 1; join with group_left.",
        labels=["host", "device", "display_name", "vendor", "model", "datastore", "plugin", "kind"],
    )
    configured = _Family("esxi_lun_configured_queue_depth", "Configured device queue depth.", labels=["host", "device"])
    lun_dsnro = _Family("esxi_lun_dsnro", "Per-device outstanding I/Os with competing worlds (DSNRO).", labels=["host", "device"])
    host_dsnro = _Family(
        "esxi_host_dsnro", "Disk.SchedNumReqOutstanding: cap on a LUN's outstanding commands when VMs share it.", labels=["host"]
    )
    core_clock = _Family(
        "esxi_host_cpu_core_frequency_hertz",
        "Nominal clock of one physical CPU core; busy cores x this / IOPS is the CPU cost per I/O.",
        labels=["host"],
    )
    adapter_info = _Family(
        "esxi_adapter_info",
        "Storage adapter identity; type nfs: the vmknic carrying NFS datastores, model its vmnic, driver that vmnic's driver. Always 1.",
        labels=["host", "adapter", "type", "model", "driver"],
    )
    link = _Family(
        "esxi_adapter_link_speed_bytes_per_second",
        "Link speed of the adapter (FC HBA speed, or the vmnic behind iSCSI/NFS).",
        labels=["host", "adapter"],
    )
    path_state = _Family(
        "esxi_path_state",
        "Path state, 1 for the current state and 0 for the others.",
        labels=["host", "device", "path", "adapter", "state"],
    )
    # As node_exporter's dmmultipath: counts per LUN, so "fewer active paths than paths" needs no join.
    paths = _Family("esxi_lun_paths", "Paths to the LUN, in any state.", labels=["host", "device"])
    active_paths = _Family(
        "esxi_lun_active_paths", "Paths to the LUN in the active state (carrying I/O).", labels=["host", "device"]
    )
    datastore_hosts = _Family(
        "esxi_datastore_hosts",
        "Hosts that mount the datastore; above 1 the LUN is shared and its queue depth should not exceed 64.",
        labels=["datastore"],
    )
    datastore_info = _Family(
        "esxi_datastore_info",
        "Datastore type, NFS server and the adapter (vmknic) carrying an NFS datastore's traffic. Always 1; join with group_left.",
        labels=["host", "datastore", "type", "remote_host", "adapter"],
    )
    host_info = _Family(
        "esxi_host_info",
        'Where the host sits in vSphere: its datacenter and cluster ("" standalone or unknown). Always 1.',
        labels=["host", "datacenter", "cluster"],
    )
    shares: dict[str, int] = {}
    for host, inv in sorted(store.inventories.items()):
        host_info.put([host, inv.datacenter, inv.cluster], 1)
        for device, lun in sorted(inv.luns.items()):
            lun_info.put(
                [host, device, lun.display_name, lun.vendor, lun.model, lun.datastore, lun.plugin, device_kind(device, lun)], 1
            )
            if lun.configured_queue_depth is not None:
                configured.put([host, device], lun.configured_queue_depth)
            if lun.dsnro is not None:
                lun_dsnro.put([host, device], lun.dsnro)
        if inv.dsnro is not None:
            host_dsnro.put([host], inv.dsnro)
        if inv.cpu_core_hertz is not None:
            core_clock.put([host], inv.cpu_core_hertz)
        for name, adapter in sorted(inv.adapters.items()):
            adapter_info.put([host, name, adapter.type, adapter.model, adapter.driver], 1)
            if adapter.link_speed_bytes_per_second is not None:
                link.put([host, name], adapter.link_speed_bytes_per_second)
        counts = {device: [0, 0] for device in inv.luns}  # device -> [paths, active]
        for name, path in sorted(inv.paths.items()):
            for state in PATH_STATES:
                path_state.put([host, path.device, name, path.adapter, state], 1 if path.state == state else 0)
            count = counts.setdefault(path.device, [0, 0])
            count[0] += 1
            count[1] += path.state == "active"
        if inv.paths:  # a source that knows no paths (esxtop without vSphere) says nothing
            for device, (total, active) in sorted(counts.items()):
                paths.put([host, device], total)
                active_paths.put([host, device], active)
        for datastore, ds in sorted(inv.datastores.items()):
            datastore_info.put([host, datastore, ds.type, ds.remote_host, ds.adapter], 1)
        for datastore, count in inv.datastore_hosts.items():
            shares[datastore] = max(shares.get(datastore, 0), count)
    for datastore, count in sorted(shares.items()):
        datastore_hosts.put([datastore], count)
    families = [
        host_info,
        lun_info,
        configured,
        lun_dsnro,
        host_dsnro,
        core_clock,
        adapter_info,
        link,
        path_state,
        paths,
        active_paths,
        datastore_hosts,
        datastore_info,
    ]
    return [f.family for f in families]
