"""Collectors: one module per object family, each `collect(store) -> iterable of metric families`.

`COLLECTORS` is the registry, the one place every collector is named: name -> (collect function,
enabled by default). Each name becomes a `--collector.NAME` / `--no-collector.NAME` flag and a
`collector` label on esxi_scrape_collector_success / _duration_seconds. Collectors read only the
store (model objects); none reaches into a source.
"""

from exporter.collectors import (
    adapter,
    cpu,
    datastore,
    device_config,
    esxcli,
    esxtop,
    events,
    host_state,
    inventory,
    lun,
    path,
    sioc,
    smart,
    space,
    ssh,
    vm,
    vsan,
    vsphere,
    world,
)

COLLECTORS = {
    "lun": (lun.collect, True),
    "adapter": (adapter.collect, True),
    "path": (path.collect, True),
    "datastore": (datastore.collect, True),
    "world": (world.collect, True),
    "vm": (vm.collect, True),  # virtual disks and VMs (vSphere), with their backing
    "cpu": (cpu.collect, True),
    "inventory": (inventory.collect, True),
    "device_config": (device_config.collect, True),  # per-device tuning and health (esxcli, vSphere)
    "esxcli": (esxcli.collect, True),  # esxcli's own health per host (up, errors), whichever runner
    "esxtop": (esxtop.collect, True),
    "esxtop_ssh": (ssh.collect, True),  # SSH streams' health (nothing without --esxtop.ssh)
    "vsphere": (vsphere.collect, True),  # vSphere targets' health (nothing without --vsphere)
    "host_state": (host_state.collect, True),  # hosts' connection state and maintenance mode (vSphere)
    "smart": (smart.collect, True),  # local disks' SMART pages and NVMe health logs (exporter.smart)
    "vsan": (vsan.collect, True),  # vSAN clusters: performance, health, space (nothing without a vSAN cluster)
    "sioc": (sioc.collect, True),  # Storage I/O Control per datastore (vSphere: its counters and iormConfiguration)
    "events": (events.collect, True),  # ESXi's storage events (vCenter's event stream, vobd.log over SSH)
    "space": (space.collect, True),  # datastore space (vSphere, esxcli) and VM snapshots (vSphere)
}
