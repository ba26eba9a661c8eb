"""VAAI from esxtop (issue 44 item 3): the `Physical Disk SCSI Device` VAAI columns read from the
real ESXi 6.5 all-counters capture and from synthetic ones, the evidence that the counts are running
totals (not per interval), and the counters' behaviour across esxtop restarts and host reboots."""

from __future__ import annotations

import csv
import sys

import pytest

from exporter.esxtop import EsxtopReader, read_file
from exporter.esxtop import columns as c
from exporter.serving.exposition import Exposition
from exporter.store import model as m
from exporter.store.store import Store
from simulators.esxtop_csv import device_columns, header, row
from tests.support.promtext import samples, value
from tests.support.servers import CAPTURES

ALL = CAPTURES / "esxi65-all-counters-4samples.csv"
DEFAULT = CAPTURES / "esxi65-default-3samples.csv"
DREVO = "t10.ATA_____DREVO_X1_SSD____________________________TW1770103538________"
T0 = 1_700_000_000.0
DEV = "naa.600601601e3021001a2b3c4d5e6f0030"
# A synthetic device with the VAAI columns beside its command rate (the reader's own list of them).
VAAI = ["Commands/sec", *c.VAAI_COUNTERS]


def _cells(path, device):
    csv.field_size_limit(sys.maxsize)
    with open(path, newline="") as handle:
        rows = list(csv.reader(handle))
    prefix = f"\\\\localhost.home\\Physical Disk SCSI Device({device})\\"
    index = {cell[len(prefix) :]: i for i, cell in enumerate(rows[0]) if cell.startswith(prefix)}
    return {name: [r[i] for r in rows[1:]] for name, i in index.items()}


def test_the_real_capture_shows_running_totals_not_counts_per_interval():
    """The evidence written in docs/esxtop.md: on the DREVO SSD, Delete reads 22790 and Deletes
    Failed 43 in both measured samples, 5 s apart, while MBytes Deletes/sec reads 0.00 in both.
    Per interval, that would be 22,790 unmaps in each of two 5 s intervals moving no byte at all;
    as totals since the device was registered, it is no unmap during the capture. The first sample
    reads 0, as every esxtop column does in its first sample."""
    cells = _cells(ALL, DREVO)
    assert cells["Delete"] == ["0", "22790", "22790"]
    assert cells["Deletes Failed"] == ["0", "43", "43"]
    assert cells["MBytes Deletes/sec"] == ["0.00", "0.00", "0.00"]
    # and the reader takes them as such: the counter is the device's total, not twice it
    store = Store()
    for sample in read_file(ALL):
        store.ingest(sample)
    lun = store.hosts["localhost.home"].objects["luns"][DREVO]
    assert lun.counters[m.vaai_commands("unmap")] == 22790
    assert lun.counters[m.vaai_failures("unmap")] == 43
    assert lun.counters[m.vaai_bytes("unmap")] == 0
    assert lun.gauges[m.vaai_latency("ats", "success")] == 0


def test_the_real_capture_exports_every_family_per_device():
    store = Store()
    for sample in read_file(ALL):
        store.ingest(sample)
    text = Exposition(store).body().decode()
    assert value(text, "esxi_lun_vaai_commands_total", device=DREVO, primitive="unmap") == 22790
    assert value(text, "esxi_lun_vaai_failures_total", device=DREVO, primitive="unmap") == 43
    found = [(name, labels) for name, labels, _ in samples(text) if "vaai" in name]
    for family, primitives in (
        ("esxi_lun_vaai_commands", m.VAAI_COMMAND_PRIMITIVES),  # the parser names counters without _total
        ("esxi_lun_vaai_failures", m.VAAI_FAILURE_PRIMITIVES),
        ("esxi_lun_vaai_bytes", m.VAAI_BYTE_PRIMITIVES),
    ):
        got = {
            labels["primitive"] for name, labels in found if name.removesuffix("_total") == family and labels["device"] == DREVO
        }
        assert got == set(primitives), family
    latency = {
        (labels["primitive"], labels["outcome"])
        for name, labels in found
        if name == "esxi_lun_vaai_latency_mean_seconds" and labels["device"] == DREVO
    }
    assert latency == {(p, o) for p in m.VAAI_LATENCY_PRIMITIVES for o in m.VAAI_OUTCOMES}
    # the capture's four SCSI devices, each with its VAAI series, all on the capture's host
    assert len({labels["device"] for _, labels in found}) == 4
    assert {labels["host"] for _, labels in found} == {"localhost.home"}


def test_a_capture_without_the_vaai_columns_has_no_vaai_series():
    store = Store()
    for sample in read_file(DEFAULT):
        store.ingest(sample)
    assert "vaai" not in Exposition(store).body().decode()


def _stream(host, values_per_row, start=T0):
    """One esxtop run: its header, then rows of VAAI values (dicts by column; others 0)."""
    lines = [header(host, device_columns(DEV, VAAI))]
    for i, values in enumerate(values_per_row):
        cells = [values.get(c, 0) for c in VAAI]
        lines.append(row(start + 5 * i, [f"{v:d}" if isinstance(v, int) else v for v in cells]))
    return lines


def _ingest(store, lines):
    reader = EsxtopReader("test")
    for line in lines:
        sample = reader.feed(line)
        if sample is not None:
            store.ingest(sample)


def _counter(store, field):
    return store.hosts["esx01"].objects["luns"][DEV].counters.get(field)


def test_units_bytes_integrated_and_latencies_in_seconds():
    store = Store()
    _ingest(
        store,
        _stream(
            "esx01",
            [
                {},  # esxtop's first sample: all zero
                {
                    "ATS": 1000,
                    "ATS Failed": 3,
                    "MBytes Deletes/sec": 2.0,
                    "MBytes CReads/sec": 4.0,
                    "Average Success Latency ms/ATS": 1.5,
                    "Average Failure Latency ms/ATS": 12.25,
                },
            ],
        ),
    )
    assert _counter(store, m.vaai_bytes("unmap")) == 2.0 * 1048576 * 5
    assert _counter(store, m.vaai_bytes("clone_read")) == 4.0 * 1048576 * 5
    gauges = store.hosts["esx01"].objects["luns"][DEV].gauges
    assert gauges[m.vaai_latency("ats", "success")] == 0.0015
    assert gauges[m.vaai_latency("ats", "failure")] == 0.01225
    assert _counter(store, m.vaai_commands("ats")) == 1000
    assert _counter(store, m.vaai_failures("ats")) == 3


def test_first_sample_zeros_are_not_a_restart_of_the_count():
    """Before its first measured sample a device has no VAAI counter at all (not 0: a 0 followed
    by the device's total since boot would read as a burst of failures)."""
    store = Store()
    lines = _stream("esx01", [{}])
    _ingest(store, lines)
    assert _counter(store, m.vaai_failures("ats")) is None
    assert _counter(store, m.COMMANDS) == 0  # the rates' counters do start at 0


def test_counters_across_an_esxtop_restart_count_what_happened_in_between():
    store = Store()
    _ingest(store, _stream("esx01", [{}, {"ATS": 100, "ATS Failed": 1}, {"ATS": 130, "ATS Failed": 4}]))
    assert (_counter(store, m.vaai_commands("ats")), _counter(store, m.vaai_failures("ats"))) == (130, 4)
    # esxtop restarted a minute later: its first sample reads 0, then the host's totals again,
    # which went on rising while no esxtop ran
    _ingest(store, _stream("esx01", [{}, {"ATS": 150, "ATS Failed": 6}, {"ATS": 151, "ATS Failed": 6}], start=T0 + 70))
    assert (_counter(store, m.vaai_commands("ats")), _counter(store, m.vaai_failures("ats"))) == (151, 6)


def test_a_total_that_falls_restarts_from_zero_and_the_counter_never_goes_down():
    """The host rebooted (or the device was registered again): its totals start over."""
    store = Store()
    _ingest(store, _stream("esx01", [{}, {"Delete": 500, "Deletes Failed": 9}]))
    _ingest(
        store, _stream("esx01", [{}, {"Delete": 20, "Deletes Failed": 1}, {"Delete": 25, "Deletes Failed": 1}], start=T0 + 600)
    )
    assert _counter(store, m.vaai_commands("unmap")) == 525
    assert _counter(store, m.vaai_failures("unmap")) == 10


def test_counts_per_interval_would_not_pass_for_totals():
    """Had esxtop printed counts per interval, 10 ATS in each of three intervals would be 30; read
    as totals (the finding) they are 10. This pins the chosen reading, so a change of mind shows."""
    store = Store()
    _ingest(store, _stream("esx01", [{}, {"ATS": 10}, {"ATS": 10}, {"ATS": 10}]))
    assert _counter(store, m.vaai_commands("ats")) == 10


@pytest.mark.parametrize("cell", ["-1", "nan"])
def test_a_bad_total_is_refused_and_the_counter_stays(cell):
    store = Store()
    lines = _stream("esx01", [{}, {"ATS": 40}])
    reader = EsxtopReader("test")
    for line in lines:
        sample = reader.feed(line)
        if sample is not None:
            store.ingest(sample)
    bad = row(T0 + 10, [cell if c == "ATS" else 0 for c in VAAI])
    sample = reader.feed(bad)
    assert [reason for reason, _ in reader.rejected] == ["out_of_range"]
    store.ingest(sample)
    assert _counter(store, m.vaai_commands("ats")) == 40
