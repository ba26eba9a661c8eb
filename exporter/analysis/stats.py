"""Per-object statistics of one capture: what `compare` reports and tests, metric by metric.

Latencies are command-weighted (an interval with 5,000 commands at 40 ms weighs more than one
with 3 commands at 2 ms, as in the exporter's `_total` counters); rates are time-weighted; the
first sample of a capture is esxtop's all-zero first sample and is left out of everything but
configuration values (DQLEN).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from exporter.analysis.capture import Capture
from exporter.store import model as m

MS = 1e-3
MIB = float(1 << 20)


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    kind: str  # latency | level | share | rate | config
    better: str | None  # "lower", "higher" or None (neither is better: a load or a setting)
    scale: float  # base unit -> display unit
    unit: str
    floor: float  # smallest change (display units) that matters in practice, however significant
    relative: float = 0.10  # ... and at least this share of the before value


def _latency(key, label):
    # 1 ms and 10%: below that no guest notices, and the simulator's seed-to-seed spread stays under it
    return Metric(key, label, "latency", "lower", 1 / MS, "ms", 1.0)


GAVG, DAVG, KAVG, QAVG = (_latency("gavg", "GAVG"), _latency("davg", "DAVG"), _latency("kavg", "KAVG"), _latency("qavg", "QAVG"))
ACTV = Metric("actv", "ACTV", "level", None, 1.0, "cmds", 0.5)
QUED = Metric("qued", "QUED", "level", "lower", 1.0, "cmds", 0.5)
QUED_SHARE = Metric("qued_share", "QUED>0", "share", "lower", 100.0, "% of samples", 5.0, 0.0)
DQLEN = Metric("dqlen", "DQLEN", "config", None, 1.0, "", 0.0, 0.0)
AQLEN = Metric("aqlen", "AQLEN", "config", None, 1.0, "", 0.0, 0.0)
IOPS = Metric("iops", "IOPS", "rate", "higher", 1.0, "cmd/s", 1.0)
MBPS = Metric("mbps", "MB/s", "rate", "higher", 1 / MIB, "MiB/s", 0.1)
RESV = Metric("resv", "reservations", "rate", "lower", 1.0, "/s", 0.01, 0.0)
CONS = Metric("cons", "conflicts", "rate", "lower", 1.0, "/s", 0.01, 0.0)
# An adapter's or path's share of the traffic moves when paths are added or balanced: a change,
# not better or worse in itself (the LUN's own IOPS and MB/s say whether the host got more done).
LINK_IOPS = Metric("iops", "IOPS", "rate", None, 1.0, "cmd/s", 1.0)
LINK_MBPS = Metric("mbps", "MB/s", "rate", None, 1 / MIB, "MiB/s", 0.1)
OUTSTANDING = Metric("outstanding", "ACTV+QUED", "level", None, 1.0, "cmds", 0.5)
# A virtual disk's latency is per read and per write as the guest sees it (LAT/rd, LAT/wr), and its
# outstanding I/O, which esxtop does not print, follows by Little's law from rates and latencies.
READ_LATENCY = Metric("read_latency", "LAT/rd", "latency", "lower", 1 / MS, "ms", 1.0)
WRITE_LATENCY = Metric("write_latency", "LAT/wr", "latency", "lower", 1 / MS, "ms", 1.0)
LITTLE = Metric("little", "outstanding (Little)", "level", None, 1.0, "cmds", 0.5)
CPU = Metric("cpu", "CPU util", "level", "lower", 100.0, "%", 2.0, 0.0)
# vSAN (from the Prometheus history, one value per performance-service sample): what a host's VMs
# keep outstanding in vSAN, and the congestion vSAN raised (its back-pressure).
VSAN_OIO = Metric("oio", "outstanding I/O", "level", None, 1.0, "I/Os", 0.5)
VSAN_CONGESTION = Metric("congestion", "congestion", "level", "lower", 1.0, "/s", 0.01, 0.0)
# A vSAN vmnic: what it carries (a load, neither better nor worse), the packets it loses and the
# frames it receives damaged (0.01 percentage points: vSAN's loss line is 0.1%).
NIC_MBPS = Metric("nic_mbps", "MB/s rx+tx", "rate", None, 1 / MIB, "MiB/s", 0.1)
NIC_LOSS = Metric("rx_loss", "rx loss", "level", "lower", 100.0, "%", 0.01, 0.0)
NIC_CRC = Metric("crc", "rx CRC errors", "level", "lower", 100.0, "%", 0.01, 0.0)

FAMILY_METRICS = {
    "luns": (GAVG, DAVG, KAVG, QAVG, ACTV, QUED, QUED_SHARE, DQLEN, IOPS, MBPS, RESV, CONS),
    "adapters": (GAVG, DAVG, KAVG, QAVG, AQLEN, LINK_IOPS, LINK_MBPS, RESV, CONS),
    "paths": (GAVG, DAVG, LINK_IOPS, LINK_MBPS),
    "datastores": (GAVG, IOPS, MBPS),  # NFS volumes: guest latency only
    "worlds": (OUTSTANDING,),
    "vdisks": (READ_LATENCY, WRITE_LATENCY, IOPS, MBPS, LITTLE),
    "cpus": (CPU,),
    "vsan_hosts": (READ_LATENCY, WRITE_LATENCY, IOPS, MBPS, VSAN_OIO, VSAN_CONGESTION),
    "vsan_vms": (READ_LATENCY, WRITE_LATENCY, IOPS, MBPS),
    "vsan_esa_disks": (READ_LATENCY, WRITE_LATENCY, IOPS, MBPS),
    "vsan_nics": (NIC_MBPS, NIC_LOSS, NIC_CRC),
}
FAMILY_LABEL = {
    "luns": "LUN",
    "adapters": "adapter",
    "paths": "path",
    "worlds": "world",
    "cpus": "CPU",
    "datastores": "datastore",
    "vdisks": "virtual disk",
    "vsan_hosts": "vSAN host",
    "vsan_vms": "vSAN VM",
    "vsan_esa_disks": "vSAN ESA disk tier",
    "vsan_nics": "vSAN vmnic",
}
_LATENCY_FIELD = {
    "gavg": m.GAVG,
    "davg": m.DAVG,
    "kavg": m.KAVG,
    "qavg": m.QAVG,
    "read_latency": m.GAVG_READ,
    "write_latency": m.GAVG_WRITE,
}
_LATENCY_WEIGHT = {"read_latency": m.READS, "write_latency": m.WRITES}  # the others: per command


@dataclass
class Series:
    """One metric of one object over the measured samples: values, weights and their times."""

    times: np.ndarray
    values: np.ndarray
    weights: np.ndarray | None  # None: every sample weighs the same


@dataclass
class Summary:
    mean: float
    p50: float
    p95: float
    p99: float
    samples: int


def _col(capture: Capture, family, obj, name):
    s = capture.series(family, obj, name)
    return None if s is None else s.to_numpy(dtype=float)


def rate_values(capture: Capture, family: str, obj, field: str):
    """One model rate field (bytes read per second ...) per measured sample, or None."""
    values = _col(capture, family, obj, field)
    if values is None:
        return None
    values = values[capture.measured]
    return values[np.isfinite(values)]


def series(capture: Capture, family: str, obj, metric: Metric) -> Series | None:
    """The metric's values per measured sample, or None if the capture has no column for it.
    Samples without a value (a gap or a counter reset in stored history) are left out, never zero."""
    found = _series(capture, family, obj, metric)
    if found is None:
        return None
    keep = np.isfinite(found.values) if found.weights is None else np.isfinite(found.values) & np.isfinite(found.weights)
    if keep.all():
        return found
    return Series(found.times[keep], found.values[keep], None if found.weights is None else found.weights[keep])


def _series(capture: Capture, family: str, obj, metric: Metric) -> Series | None:
    rows = capture.measured
    if metric.kind == "config":
        values = _col(capture, family, obj, m.QUEUE_DEPTH)
        return None if values is None else Series(capture.timestamps, values, None)
    intervals = capture.intervals[rows]
    if metric.kind == "latency":
        weight = _LATENCY_WEIGHT.get(metric.key, m.COMMANDS)
        values, commands = _col(capture, family, obj, _LATENCY_FIELD[metric.key]), _col(capture, family, obj, weight)
        if values is None or commands is None:
            return None
        return Series(capture.timestamps[rows], values[rows], commands[rows] * intervals)
    if metric is LITTLE:
        values = little_outstanding(capture, family, obj)
        return None if values is None else Series(capture.timestamps[rows], values[rows], None)
    if metric.key in (MBPS.key, NIC_MBPS.key):
        fields = (m.READ_BYTES, m.WRITTEN_BYTES) if metric.key == MBPS.key else (m.VSAN_RX_BYTES, m.VSAN_TX_BYTES)
        read, written = _col(capture, family, obj, fields[0]), _col(capture, family, obj, fields[1])
        if read is None and written is None:
            return None
        values = (0 if read is None else read) + (0 if written is None else written)
        return Series(capture.timestamps[rows], values[rows], intervals)
    field = {
        ACTV.key: m.ACTIVE,
        QUED.key: m.QUEUED,
        QUED_SHARE.key: m.QUEUED,
        IOPS.key: m.COMMANDS,
        RESV.key: m.RESERVATIONS,
        CONS.key: m.CONFLICTS,
        CPU.key: m.CPU_UTIL,
        VSAN_OIO.key: m.VSAN_OUTSTANDING_IO,
        VSAN_CONGESTION.key: m.VSAN_CONGESTION,
        NIC_LOSS.key: m.VSAN_RX_LOSS,
        NIC_CRC.key: m.VSAN_RX_CRC_ERRORS,
    }.get(metric.key)
    if metric is OUTSTANDING:
        active, queued = _col(capture, family, obj, m.ACTIVE), _col(capture, family, obj, m.QUEUED)
        if active is None:
            return None
        values = active + (0 if queued is None else queued)
    else:
        values = _col(capture, family, obj, field)
        if values is None:
            return None
    if metric is QUED_SHARE:
        values = np.where(np.isnan(values), np.nan, values > 0)
    weights = intervals if metric.kind == "rate" else None
    return Series(capture.timestamps[rows], values[rows], weights)


def little_outstanding(capture: Capture, family: str, obj) -> np.ndarray | None:
    """Mean I/Os outstanding per sample, every sample: reads/s x read latency + writes/s x write
    latency (Little's law on each direction); None without a rate and its latency."""
    total = None
    for rate, latency in ((m.READS, m.GAVG_READ), (m.WRITES, m.GAVG_WRITE)):
        r, lat = _col(capture, family, obj, rate), _col(capture, family, obj, latency)
        if r is not None and lat is not None:
            total = r * lat if total is None else total + r * lat
    return total


def weighted_quantile(values: np.ndarray, weights: np.ndarray | None, q: float) -> float:
    if weights is None:
        return float(np.quantile(values, q))
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(weights[order])
    if cumulative[-1] <= 0:
        return float("nan")
    return float(values[order][np.searchsorted(cumulative, q * cumulative[-1])])


def summarize(s: Series) -> Summary | None:
    values, weights = s.values, s.weights
    if len(values) == 0:
        return None
    if weights is not None and weights.sum() <= 0:
        return Summary(float("nan"), float("nan"), float("nan"), float("nan"), len(values))
    mean = float(np.average(values, weights=weights))
    return Summary(mean, *(weighted_quantile(values, weights, q) for q in (0.5, 0.95, 0.99)), len(values))


def config_value(s: Series) -> float:
    """A setting as the capture ends (a change mid-capture shows as the last value)."""
    return float(s.values[-1])
