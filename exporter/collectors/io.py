"""Metric families shared by every I/O object family (LUN, adapter, path): the same rates,
latencies and error counters, differing only in prefix and labels."""

from __future__ import annotations

from exporter.collectors.textformat import counter, gauge, label_string
from exporter.store import model as m

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


def labels_of(obj, names, values) -> str:
    """The object's escaped label string, cached on the object until its label values change."""
    key = tuple(values)
    cache = obj.label_cache
    if cache is None or cache[0] != key:
        cache = obj.label_cache = (key, label_string(names, key))
    return cache[1]


def _fill(family, rows, source: str, field: str):
    for labels, obj in rows:
        value = getattr(obj, source).get(field)
        if value is not None:
            family.add(labels, value)
    return family


def io_families(prefix: str, rows):
    """rows: list of (label string, ObjectState). Yields counter and gauge families."""
    for field, stem, help_text in RATE_COUNTERS:
        yield _fill(counter(f"{prefix}_{stem}_total", help_text), rows, "counters", field)
    for field, stem, what in LATENCIES:
        weight = _WEIGHT.get(field, "commands")
        yield _fill(
            counter(
                f"{prefix}_{stem}_total",
                f"Sum over {weight} of the latency {what}; divide its rate by the rate of {prefix}_{weight}_total for the mean.",
            ),
            rows,
            "counters",
            field + "_total",
        )
        yield _fill(
            gauge(f"{prefix}_{interval_mean(stem)}", f"Mean latency per command {what} over the last interval."),
            rows,
            "gauges",
            field,
        )


def interval_mean(stem: str) -> str:
    """The gauge beside a latency counter: 'device_latency_seconds' -> 'device_latency_mean_seconds'.

    The gauge cannot share the counter's family name (the counter's name without _total): the
    OpenMetrics format and client_python's registry reject the pair."""
    return stem.removesuffix("_seconds") + "_mean_seconds"


def gauge_families(prefix: str, rows, fields):
    """fields: (model field, name stem, help). One gauge family per field."""
    for field, stem, help_text in fields:
        yield _fill(gauge(f"{prefix}_{stem}", help_text), rows, "gauges", field)
