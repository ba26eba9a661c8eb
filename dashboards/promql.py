"""PromQL building blocks over the metric names in README.md's metrics reference.

Every range query uses Grafana's `$__rate_interval` (at least four scrapes, so a rate never has
fewer than two points); tables that summarise the whole dashboard range use `$__range`.
"""

from __future__ import annotations

RATE = "$__rate_interval"
RANGE = "$__range"

HOST = 'host=~"$host"'
LUN = 'device=~"$lun"'
ADAPTER = 'adapter=~"$adapter"'

# Latency counter stem -> esxtop name; each counter is "seconds of latency x commands".
LATENCIES = {"device": "DAVG", "kernel": "KAVG", "queue": "QAVG", "guest": "GAVG"}


def sel(metric: str, *matchers: str) -> str:
    """`metric{m1,m2}`; matchers are written out ('host=~"$host"')."""
    return f"{metric}{{{','.join(matchers)}}}" if matchers else metric


def rate(metric: str, *matchers: str, window: str = RATE, offset: str = "") -> str:
    shifted = f" offset {offset}" if offset else ""
    return f"rate({sel(metric, *matchers)}[{window}]{shifted})"


def mean_latency(obj: str, stem: str, *matchers: str, window: str = RATE, by: str = "") -> str:
    """Command-weighted mean latency per command over the window: the latency counter's rate over
    the commands counter's rate (for read/write latency, over reads/writes).

    obj is 'lun', 'adapter' or 'path'; stem is device|kernel|queue|guest|read|write.
    by: aggregate first (e.g. 'host' for a host's mean over its LUNs), still weighted by commands.
    """
    if obj == "lun" and stem in RECORDED_LUN_LATENCY and window == RATE and not by:
        return sel(RECORDED_LUN_LATENCY[stem], *matchers)  # the series the latency alerts judge
    weight = {"read": "reads", "write": "writes"}.get(stem, "commands")
    num = rate(f"esxi_{obj}_{stem}_latency_seconds_total", *matchers, window=window)
    den = rate(f"esxi_{obj}_{weight}_total", *matchers, window=window)
    if by:
        num, den = f"sum by ({by}) ({num})", f"sum by ({by}) ({den})"
    return f"{num} / {den}"


def gauge(metric: str, *matchers: str, fn: str = "avg", window: str = RATE) -> str:
    """A gauge smoothed over the window, so no sample between two steps is lost."""
    return f"{fn}_over_time({sel(metric, *matchers)}[{window}])"


def bytes_per_second(obj: str, *matchers: str, window: str = RATE) -> str:
    """Read plus written bytes per second (read and written are separate counters)."""
    return (
        f"{rate(f'esxi_{obj}_read_bytes_total', *matchers, window=window)} + "
        f"{rate(f'esxi_{obj}_written_bytes_total', *matchers, window=window)}"
    )


def one_per(labels: str, expr: str) -> str:
    """One series per label set, for the right-hand side of a join: the same host can be scraped
    twice (two exporters, an HA pair), which would make the join many-to-many and fail."""
    return f"max by ({labels}) ({expr})"


def path_to_device(expr: str, *info_matchers: str) -> str:
    """Attach the `device` label of esxi_path_info to a per-path expression. esxi_path_info comes
    from the same esxtop stream as the path counters, so the join includes the scrape's instance."""
    info = one_per("instance, host, path, device", sel("esxi_path_info", *info_matchers))
    return f"({expr}) * on (instance, host, path) group_left (device) {info}"


# The alerts' recording rules (alerts/rules.src.yml): a panel reads the same series an alert
# judges, so the two cannot disagree on a definition.
LINK_UTILIZATION = "host_adapter:esxi_adapter_link_utilization:ratio"
RECORDED_LUN_LATENCY = {stem: f"host_device:esxi_lun_{stem}_latency_seconds:mean" for stem in LATENCIES}


def link_use(*matchers: str, window: str = RATE) -> str:
    """One direction's bytes per second over the link's payload capacity (0-1), per host, adapter
    and direction: the series EsxiAdapterLinkSaturated judges (an NFS vmknic carries its
    datastores' bytes). Over the whole range (tables), its mean per adapter, busiest direction."""
    recorded = sel(LINK_UTILIZATION, *matchers)
    if window == RATE:
        return recorded
    return f"max by (host, adapter) (avg_over_time({recorded}[{window}]))"


# --- VMs and their virtual disks (esxi_vm_disk_* per disk, esxi_vm_* per VM) -------------------
# The capacity rules' records (alerts/rules.src.yml): what each VM keeps outstanding on a LUN, from
# esxtop's worlds where the host's esxtop reports them on that LUN, else from the VM's virtual disks
# (vSphere readOIO + writeOIO), so a panel counts a VM as the alerts do, whichever source there is.
WORLD_OUTSTANDING = "host_device_world:esxi_lun_world_outstanding_commands:sum"
VDISK_OUTSTANDING = "host_device_vm:esxi_vm_disk_outstanding_commands:sum"
VM_OUTSTANDING = "host_device_vm:esxi_lun_vm_outstanding_commands:sum"  # one series per VM, both sources
VM_OUTSTANDING_SHARE = "host_device_vm:esxi_lun_vm_outstanding_commands:ratio"
DISK_OUTSTANDING = "host_vm_disk:esxi_vm_disk_outstanding_commands:sum"
VM_INFO = "esxi_vm_disk_info"
BACKING = "datastore, device, backing, compatibility_mode, controller, provisioning"


def vm_outstanding(*matchers: str, window: str = RATE) -> str:
    """One series per VM (esxtop: per world, as the paper counts them) on each LUN and host: its
    outstanding commands averaged over the window. The source is chosen over the whole window,
    as the capacity rules choose it, so a VM seen through both sources counts once."""
    worlds = gauge(WORLD_OUTSTANDING, *matchers, window=window)
    disks = gauge(VDISK_OUTSTANDING, *matchers, window=window)
    return f"({worlds} or ({disks} unless on (host, device) {worlds}))"


def vm_rate(stem: str, *matchers: str, obj: str = "vm_disk", window: str = RATE) -> str:
    """Per disk (obj vm_disk) or per VM (obj vm); max by: a disk both sources report is one disk."""
    by = "host, vm, disk" if obj == "vm_disk" else "host, vm"
    return f"max by ({by}) ({rate(f'esxi_{obj}_{stem}', *matchers, window=window)})"


def vm_iops(*matchers: str, obj: str = "vm_disk", window: str = RATE) -> str:
    return f"{vm_rate('reads_total', *matchers, obj=obj, window=window)} + {vm_rate('writes_total', *matchers, obj=obj, window=window)}"


def vm_latency_seconds(*matchers: str, obj: str = "vm_disk", window: str = RATE) -> str:
    """Mean latency per I/O, reads and writes weighted by their counts (the VM alert's definition)."""
    total = (
        f"{vm_rate('read_latency_seconds_total', *matchers, obj=obj, window=window)} + "
        f"{vm_rate('write_latency_seconds_total', *matchers, obj=obj, window=window)}"
    )
    return f"({total}) / ({vm_iops(*matchers, obj=obj, window=window)})"


def per_vm_on(place: str, disk_expr: str, *info_matchers: str) -> str:
    """A per-disk expression added up per (host, place, vm), place being device (each LUN under the
    disk, RDMs included) or datastore: the disk's backing comes from esxi_vm_disk_info."""
    extra = ('device!=""',) if place == "device" else ()
    info = one_per(f"host, vm, disk, {place}", sel(VM_INFO, *extra, *info_matchers))
    return f"sum by (host, {place}, vm) ({info} * on (host, vm, disk) group_left () ({disk_expr}))"


def with_backing(disk_expr: str, *info_matchers: str) -> str:
    """A per-disk expression with what backs the disk as labels (one row per LUN under it); disks
    the API does not describe (esxtop alone) keep their bare labels."""
    info = one_per(f"host, vm, disk, {BACKING}", sel(VM_INFO, *info_matchers))
    joined = f"{info} * on (host, vm, disk) group_left () ({disk_expr})"
    return f"({joined}) or (({disk_expr}) unless on (host, vm, disk) {info})"
