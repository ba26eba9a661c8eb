"""CPU and efficiency: host CPU utilisation and CPU cost per I/O (MHz per IOPS)."""

from __future__ import annotations

from .. import variables as v
from ..panels import Q, row, stat_panel, timeseries_panel
from ..promql import HOST, gauge, rate, sel
from ..render import new_dashboard

UID = "esxi-cpu-efficiency"
FILE = "cpu-and-efficiency.json"

# Physical CPUs only: a `_Total` series, where a source has one, would count every core twice.
CPUS = (HOST, 'cpu!="_Total"')
BUSY_CORES = f"sum by (host) ({gauge('esxi_cpu_utilization_ratio', *CPUS)})"
IOPS = f"sum by (host) ({rate('esxi_lun_commands_total', HOST)})"
CORE_MHZ = f"max by (host) ({sel('esxi_host_cpu_core_frequency_hertz', HOST)}) / 1e6"
CPU_SECONDS_PER_IO = f"{BUSY_CORES} / {IOPS}"
MHZ_PER_IOPS = f"{BUSY_CORES} * {CORE_MHZ} / {IOPS}"


def build():
    d = new_dashboard(
        UID,
        "ESXi CPU and efficiency",
        "What storage I/O costs the host in CPU: utilisation, CPU time per command and MHz per IOPS.",
        [v.datasource(), v.host()],
    )
    d = d.with_row(row("Cost per I/O"))
    d = d.with_panel(
        stat_panel(
            "MHz per IOPS (worst host)",
            "CPU cycles the busiest-per-I/O host spends for one command per second. Compare hosts, paths and "
            "drivers doing the same I/O: a higher figure means a costlier storage stack (software iSCSI or "
            "NFS cost more than FC HBAs).",
            "none",
            Q(f"max({MHZ_PER_IOPS})"),
            w=6,
            h=8,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "MHz per IOPS",
            "Busy cores x nominal core clock / commands per second, per host. A rise at the same IOPS means each I/O "
            "got more expensive (smaller blocks, a software initiator, more paths, CPU contention).",
            "none",
            [Q(MHZ_PER_IOPS, "{{host}}")],
            w=9,
            h=8,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "CPU time per command",
            "CPU seconds the host spends per SCSI command (busy cores / IOPS), comparable across CPU clocks. "
            "Tens of microseconds are normal; hundreds mean the host, not the array, limits I/O.",
            "s",
            [Q(CPU_SECONDS_PER_IO, "{{host}}")],
            w=9,
            h=8,
        )
    )
    d = d.with_row(row("CPU and I/O"))
    d = d.with_panel(
        timeseries_panel(
            "Host CPU utilisation",
            "Mean utilisation over the physical CPUs of each host. Above 80% guests and the storage stack "
            "compete for CPU and latency grows in the host (KAVG).",
            "percentunit",
            [Q(f"avg by (host) ({gauge('esxi_cpu_utilization_ratio', *CPUS)})", "{{host}}")],
            maximum=1,
            line_at=((None, "transparent"), (0.8, "red")),
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "IOPS per host",
            "SCSI commands per second over all LUNs of each host: the denominator of the cost per I/O.",
            "iops",
            [Q(IOPS, "{{host}}")],
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "Utilisation per physical CPU",
            "Each core's utilisation. One core pinned near 100% while others idle: an interrupt or a "
            "single-threaded storage path is the bottleneck.",
            "percentunit",
            [Q(gauge("esxi_cpu_utilization_ratio", *CPUS), "{{host}} cpu {{cpu}}")],
            maximum=1,
            w=24,
        )
    )
    return d
