"""Storage configuration: LUN identity and datastores, queue-depth settings, HBA link speeds,
path states. Comes from the vSphere API, the simulator, or the config file's inventory section."""
from prometheus_client.core import GaugeMetricFamily

from exporter.model import PATH_STATES


def collect(store):
    lun_info = GaugeMetricFamily("esxi_lun_info", "LUN identity and the datastore on it. Always 1; join with group_left.",
                                 labels=["host", "device", "display_name", "vendor", "model", "datastore"])
    configured = GaugeMetricFamily("esxi_lun_configured_queue_depth", "Configured device queue depth.", labels=["host", "device"])
    lun_dsnro = GaugeMetricFamily("esxi_lun_dsnro", "Per-device outstanding I/Os with competing worlds (DSNRO).", labels=["host", "device"])
    host_dsnro = GaugeMetricFamily("esxi_host_dsnro", "Disk.SchedNumReqOutstanding: cap on a LUN's outstanding commands when VMs share it.", labels=["host"])
    adapter_info = GaugeMetricFamily("esxi_adapter_info", "Storage adapter identity. Always 1.", labels=["host", "adapter", "type", "model", "driver"])
    link = GaugeMetricFamily("esxi_adapter_link_speed_bytes_per_second", "Link speed of the adapter (FC HBA speed, or the vmnic behind iSCSI/NFS).", labels=["host", "adapter"])
    path_state = GaugeMetricFamily("esxi_path_state", "Path state, 1 for the current state and 0 for the others.",
                                   labels=["host", "device", "path", "adapter", "state"])
    datastore_hosts = GaugeMetricFamily("esxi_datastore_hosts", "Hosts that mount the datastore; above 1 the LUN is shared and its queue depth should not exceed 64.",
                                        labels=["datastore"])
    shares: dict[str, int] = {}
    for host, inv in sorted(store.inventories.items()):
        for device, lun in sorted(inv.luns.items()):
            lun_info.add_metric([host, device, lun.display_name, lun.vendor, lun.model, lun.datastore], 1)
            if lun.configured_queue_depth is not None:
                configured.add_metric([host, device], lun.configured_queue_depth)
            if lun.dsnro is not None:
                lun_dsnro.add_metric([host, device], lun.dsnro)
        if inv.dsnro is not None:
            host_dsnro.add_metric([host], inv.dsnro)
        for name, adapter in sorted(inv.adapters.items()):
            adapter_info.add_metric([host, name, adapter.type, adapter.model, adapter.driver], 1)
            if adapter.link_speed_bytes_per_second is not None:
                link.add_metric([host, name], adapter.link_speed_bytes_per_second)
        for name, path in sorted(inv.paths.items()):
            for state in PATH_STATES:
                path_state.add_metric([host, path.device, name, path.adapter, state], 1 if path.state == state else 0)
        for datastore, count in inv.datastore_hosts.items():
            shares[datastore] = max(shares.get(datastore, 0), count)
    for datastore, count in sorted(shares.items()):
        datastore_hosts.add_metric([datastore], count)
    families = [lun_info, configured, lun_dsnro, host_dsnro, adapter_info, link, path_state, datastore_hosts]
    return [f for f in families if f.samples]
