"""LUN (SCSI device, NFS volume) queue statistics, rates and latencies: esxtop's disk device view."""

from exporter.collectors.io import gauge_families, io_families, labels_of
from exporter.collectors.textformat import counter, gauge, label_string
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
    yield from vaai_families(store)


def vaai_families(store):
    """VAAI per device from esxtop (-a): commands and failures by primitive (esxtop's running
    totals, folded by the store), bytes (its MBytes .../sec integrated) and mean latencies."""
    commands = counter(
        "esxi_lun_vaai_commands_total", "VAAI commands completed, by primitive (esxtop ATS, CLONE_RD, CLONE_WR, ZERO, DELETE)."
    )
    failures = counter(
        "esxi_lun_vaai_failures_total", "VAAI commands failed, by primitive (esxtop ATSF, CLONE_F, ZERO_F, DELETE_F)."
    )
    moved = counter(
        "esxi_lun_vaai_bytes_total",
        "Bytes the array copied, zeroed or unmapped for VAAI commands (MBC_RD/s, MBC_WR/s, MBZERO/s, MBDEL/s integrated).",
    )
    latency = gauge(
        "esxi_lun_vaai_latency_mean_seconds",
        "Mean latency of a VAAI primitive's commands of one outcome over the last interval (AAVG, CAVG, ZAVG /suc and /f).",
    )
    for host in store.hosts.values():
        for device, obj in host.objects["luns"].items():
            found, gauges = obj.counters, obj.gauges
            for family, primitives, field in (
                (commands, m.VAAI_COMMAND_PRIMITIVES, m.vaai_commands),
                (failures, m.VAAI_FAILURE_PRIMITIVES, m.vaai_failures),
                (moved, m.VAAI_BYTE_PRIMITIVES, m.vaai_bytes),
            ):
                for primitive in primitives:
                    value = found.get(field(primitive))
                    if value is not None:
                        family.add(label_string(VAAI_LABELS, (host.host, device, primitive)), value)
            for primitive in m.VAAI_LATENCY_PRIMITIVES:
                for outcome in m.VAAI_OUTCOMES:
                    value = gauges.get(m.vaai_latency(primitive, outcome))
                    if value is not None:
                        latency.add(label_string(VAAI_LATENCY_LABELS, (host.host, device, primitive, outcome)), value)
    yield from (commands, failures, moved, latency)


VAAI_LABELS = ("host", "device", "primitive")
VAAI_LATENCY_LABELS = ("host", "device", "primitive", "outcome")
