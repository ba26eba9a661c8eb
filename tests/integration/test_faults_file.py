"""A growing esxtop capture followed like `tail -F` (`serve --esxtop-follow FILE`), while the
test truncates it, rotates it, deletes and re-creates it, and writes a row in two halves."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from simulators import esxtop_csv
from tests.support.promtext import eventually, value
from tests.support.servers import Exporter

HOST = "esx-file"
A, B, C = "naa.60000000000000000000000000000a01", "naa.60000000000000000000000000000b02", "naa.60000000000000000000000000000c03"


class Capture:
    def __init__(self, path, devices):
        self.path, self.ts = path, 1_700_000_000
        self.devices = devices

    def header(self, devices=None):
        self.devices = devices or self.devices
        columns = [col for device in self.devices for col in esxtop_csv.device_columns(device)]
        return esxtop_csv.header(HOST, columns) + "\n"

    def row(self):
        self.ts += 5
        values = []
        for _ in self.devices:
            values += [32, 4, 0, 12, 0.12, 200, 120, 80, 2, 1, 3, 0.1, 3.1, 0.05]
        return esxtop_csv.row(self.ts, values) + "\n"

    def append(self, text):
        with open(self.path, "a") as handle:
            handle.write(text)
            handle.flush()


@pytest.fixture
def followed(tmp_path):
    capture = Capture(tmp_path / "esx.csv", [A])
    capture.append(capture.header())
    exporter = Exporter(f"--esxtop-follow={capture.path}", log_path=tmp_path / "exporter.log")
    yield capture, exporter
    exporter.stop()


def samples_total(exporter):
    return value(exporter.metrics(), "esxi_esxtop_samples_total", host=HOST) or 0


def grows(exporter, by=1):
    before = samples_total(exporter)
    return lambda: samples_total(exporter) >= before + by


def no_parse_errors(exporter):
    assert "esxi_esxtop_parse_errors_total{" not in exporter.metrics()


def test_partial_last_line_waits_for_its_end(followed):
    capture, exporter = followed
    capture.append(capture.row())
    eventually(lambda: samples_total(exporter) == 1, what="first row")
    row = capture.row()
    capture.append(row[:40])  # esxtop is mid-write
    time.sleep(1.5)  # three polls of the file
    assert samples_total(exporter) == 1
    capture.append(row[40:])
    eventually(lambda: samples_total(exporter) == 2, what="the completed row")
    no_parse_errors(exporter)


def test_truncated_file_restarts_from_its_new_header(followed):
    capture, exporter = followed
    capture.append(capture.row() + capture.row())
    eventually(lambda: value(exporter.metrics(), "esxi_lun_commands_total", device=A), what="LUN A counting")
    with open(capture.path, "w") as handle:  # truncate in place (logrotate copytruncate)
        handle.write(capture.header([B]) + capture.row())
    eventually(lambda: value(exporter.metrics(), "esxi_lun_queue_depth", device=B) == 32, what="LUN B after truncation")
    assert value(exporter.metrics(), "esxi_lun_queue_depth", device=A) is None
    no_parse_errors(exporter)
    assert "was truncated, rotated or deleted: reopening" in (exporter.log_path.read_text())


def test_rotated_file_is_followed_to_the_new_one(followed):
    capture, exporter = followed
    capture.append(capture.row())
    eventually(lambda: samples_total(exporter) == 1, what="first row")
    os.rename(capture.path, str(capture.path) + ".1")  # logrotate create mode: a new inode
    capture.append(capture.header([C]) + capture.row() + capture.row())
    eventually(lambda: value(exporter.metrics(), "esxi_lun_commands_total", device=C), what="LUN C from the new file")
    capture.append(capture.row())
    eventually(grows(exporter), what="rows appended to the new file")
    no_parse_errors(exporter)


def test_deleted_and_recreated_file(followed):
    capture, exporter = followed
    capture.append(capture.row())
    eventually(lambda: samples_total(exporter) == 1, what="first row")
    os.unlink(capture.path)
    time.sleep(1.5)  # gone for a while: the exporter waits, serves what it has
    assert samples_total(exporter) == 1 and exporter.proc.poll() is None
    capture.append(capture.header([A]) + capture.row())
    eventually(lambda: samples_total(exporter) == 2, what="the re-created file's row")
    capture.append(capture.row())
    eventually(lambda: samples_total(exporter) == 3, what="rows appended after re-creation")
    no_parse_errors(exporter)


def test_garbage_in_a_followed_file_is_counted_and_skipped(followed):
    capture, exporter = followed
    capture.append(capture.row())
    eventually(lambda: samples_total(exporter) == 1, what="first row")
    capture.append('"11/14/2023 22:13:25","1","2"\n' + "not esxtop at all\n" + capture.row())
    eventually(lambda: samples_total(exporter) == 2, what="the good row after the bad ones")
    text = exporter.metrics()
    assert value(text, "esxi_esxtop_parse_errors_total", stream=str(capture.path), reason="cell_count") == 2


REAL_CAPTURE = Path(__file__).resolve().parents[1] / "fixtures" / "esxtop" / "esxi65-default-3samples.csv"
REAL_HOST = "localhost.home"  # the capture's host: 1 header + 3 samples


@pytest.mark.parametrize("exists_at_start", [True, False], ids=["empty-file", "no-file"])
def test_whole_capture_appended_to_a_file_without_header_yields_every_sample(tmp_path, exists_at_start):
    """The exporter started before resxtop wrote anything (a systemd unit ordering): the rows
    that arrive together with the header are samples too, none dropped."""
    path = tmp_path / "late.csv"
    if exists_at_start:
        path.write_bytes(b"")
    exporter = Exporter(f"--esxtop-follow={path}", log_path=tmp_path / "exporter.log")
    try:
        time.sleep(1.2)  # two polls of the empty or missing file
        with open(path, "ab") as handle:
            handle.write(REAL_CAPTURE.read_bytes())
        eventually(
            lambda: value(exporter.metrics(), "esxi_esxtop_samples_total", host=REAL_HOST) == 3,
            what="all three samples of the capture",
        )
        assert "esxi_esxtop_parse_errors_total{" not in exporter.metrics()
    finally:
        exporter.stop()
