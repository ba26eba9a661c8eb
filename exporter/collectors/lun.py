"""LUN (SCSI device, NFS volume) queue statistics, rates and latencies: esxtop's disk device view."""

from exporter.collectors.io import gauge_families, io_families, labels_of
from exporter.collectors.textformat import counter, gauge
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
    yield from vaai_families(rows)


# (family, model field, primitive) of the VAAI counters; (model field, primitive, outcome) of the latencies.
_VAAI_COUNTERS = (
    *(("commands", m.vaai_commands(p), p) for p in m.VAAI_COMMAND_PRIMITIVES),
    *(("failures", m.vaai_failures(p), p) for p in m.VAAI_FAILURE_PRIMITIVES),
    *(("bytes", m.vaai_bytes(p), p) for p in m.VAAI_BYTE_PRIMITIVES),
)
_VAAI_LATENCIES = tuple((m.vaai_latency(p, o), p, o) for p in m.VAAI_LATENCY_PRIMITIVES for o in m.VAAI_OUTCOMES)
_VAAI_SEEN = m.vaai_bytes("unmap")  # a rate counter, there from a -a capture's first sample on


def vaai_families(rows):
    """VAAI per device from esxtop (-a): commands and failures by primitive (esxtop's running
    totals, folded by the store), bytes (its MBytes .../sec integrated) and mean latencies.
    rows: (the device's cached label string, ObjectState)."""
    families = {
        "commands": counter(
            "esxi_lun_vaai_commands_total",
            "VAAI commands completed, by primitive (esxtop ATS, CLONE_RD, CLONE_WR, ZERO, DELETE).",
        ),
        "failures": counter(
            "esxi_lun_vaai_failures_total", "VAAI commands failed, by primitive (esxtop ATSF, CLONE_F, ZERO_F, DELETE_F)."
        ),
        "bytes": counter(
            "esxi_lun_vaai_bytes_total",
            "Bytes the array copied, zeroed or unmapped for VAAI commands (MBC_RD/s, MBC_WR/s, MBZERO/s, MBDEL/s integrated).",
        ),
    }
    latency = gauge(
        "esxi_lun_vaai_latency_mean_seconds",
        "Mean latency of a VAAI primitive's commands of one outcome over the last interval (AAVG, CAVG, ZAVG /suc and /f).",
    )
    for labels, obj in rows:
        counters, gauges = obj.counters, obj.gauges
        if _VAAI_SEEN not in counters:
            continue  # no VAAI columns for this device (default fields, the vSphere API)
        head = labels[:-1]  # '{host="..",device=".."' of the device's cached label string
        for family, field, primitive in _VAAI_COUNTERS:
            value = counters.get(field)
            if value is not None:
                families[family].add(f'{head},primitive="{primitive}"}}', value)
        for field, primitive, outcome in _VAAI_LATENCIES:
            value = gauges.get(field)
            if value is not None:
                latency.add(f'{head},primitive="{primitive}",outcome="{outcome}"}}', value)
    yield from (*families.values(), latency)
