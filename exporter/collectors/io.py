"""Metric families shared by every I/O object family (LUN, adapter, path): the same rates,
latencies and error counters, differing only in prefix and labels."""
from __future__ import annotations

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from exporter import model as m

# model field -> (counter name without _total, help)
RATE_COUNTERS = (
    (m.COMMANDS, "commands", "SCSI commands issued (esxtop CMDS/s integrated over each interval)."),
    (m.READS, "reads", "Read commands issued (READS/s integrated)."),
    (m.WRITES, "writes", "Write commands issued (WRITES/s integrated)."),
    (m.READ_BYTES, "read_bytes", "Bytes read (MBREAD/s integrated)."),
    (m.WRITTEN_BYTES, "written_bytes", "Bytes written (MBWRTN/s integrated)."),
    (m.RESERVATIONS, "reservations", "SCSI reservations (RESV/s integrated)."),
    (m.CONFLICTS, "reservation_conflicts", "SCSI reservation conflicts: another host held the LUN (CONS/s integrated)."),
    (m.ABORTS, "aborts", "Commands aborted (ABRTS/s integrated)."),
    (m.RESETS, "resets", "Bus resets (RESETS/s integrated)."),
    (m.FAILED, "failed_commands", "Commands that failed (FCMDS/s integrated)."),
)
# model field -> (name stem, what it measures); counters are latency x commands.
LATENCIES = (
    (m.DAVG, "device_latency_seconds", "in the device, from HBA to array and back (DAVG)"),
    (m.KAVG, "kernel_latency_seconds", "in the VMkernel, queue time included (KAVG)"),
    (m.QAVG, "queue_latency_seconds", "queued in the VMkernel waiting for a device queue slot (QAVG)"),
    (m.GAVG, "guest_latency_seconds", "as the guest sees it, DAVG + KAVG (GAVG)"),
    (m.GAVG_READ, "read_latency_seconds", "of reads as the guest sees them (GAVG/rd)"),
    (m.GAVG_WRITE, "write_latency_seconds", "of writes as the guest sees them (GAVG/wr)"),
)
_WEIGHT = {m.GAVG_READ: "reads", m.GAVG_WRITE: "writes"}


def io_families(prefix: str, label_names: list[str], rows):
    """rows: iterable of (label values, ObjectState). Yields counter and gauge families."""
    rows = list(rows)
    for field, stem, help_text in RATE_COUNTERS:
        family = CounterMetricFamily(f"{prefix}_{stem}", help_text, labels=label_names)
        for labels, obj in rows:
            value = obj.counters.get(field)
            if value is not None:
                family.add_metric(labels, value)
        if family.samples:
            yield family
    for field, stem, what in LATENCIES:
        weight = _WEIGHT.get(field, "commands")
        total = CounterMetricFamily(
            f"{prefix}_{stem}", f"Sum over {weight} of the latency {what}; divide its rate by the rate of {prefix}_{weight}_total for the mean.",
            labels=label_names)
        last = GaugeMetricFamily(f"{prefix}_{stem}", f"Mean latency per command {what} over the last interval.", labels=label_names)
        for labels, obj in rows:
            value = obj.counters.get(field + "_total")
            if value is not None:
                total.add_metric(labels, value)
            value = obj.gauges.get(field)
            if value is not None:
                last.add_metric(labels, value)
        if total.samples:
            yield total
        if last.samples:
            yield last


def gauge_families(prefix: str, label_names: list[str], rows, fields):
    """fields: (model field, name stem, help). Yields one gauge family per field that has values."""
    rows = list(rows)
    for field, stem, help_text in fields:
        family = GaugeMetricFamily(f"{prefix}_{stem}", help_text, labels=label_names)
        for labels, obj in rows:
            value = obj.gauges.get(field)
            if value is not None:
                family.add_metric(labels, value)
        if family.samples:
            yield family
