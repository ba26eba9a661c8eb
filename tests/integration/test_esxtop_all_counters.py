"""`esxtop -b -a` (all counters) captures: every per-path `Physical Disk(<adapter>:<path>)`
repeats its adapter's `Adapter Q Depth`. That repeat is normal output: every command reads the
capture with no warning and no error count. Two columns naming one value that really disagree
keep the first column's value, are counted once (parse_errors_total{reason="column_conflict"})
and reported once, and the capture still loads: in saved files (dump, compare, capacity,
backfill), followed files, stdin and SSH streams."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from exporter.esxtop import EsxtopReader, read_file
from exporter.esxtop.streams import pump
from exporter.store.store import Store
from tests.support import all_counters
from tests.support.promtext import eventually, value
from tests.support.servers import ROOT, Exporter, exporter_env

CONFLICT_ROW = 5  # 0-based data row; line 7 of the file (header, then rows 0..5)


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "exporter", *args], capture_output=True, text=True, env=exporter_env(), cwd=ROOT, timeout=120
    )


@pytest.fixture(scope="module")
def captures_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("all-counters")
    all_counters.write(folder / "all.csv")
    all_counters.write(folder / "conflict.csv", conflict_at=CONFLICT_ROW)
    return folder


def test_the_capture_has_every_per_path_group_esxtop_writes():
    """The header under test: one adapter, four paths, and for each path both `-a` groups."""
    cols = all_counters.columns()
    per_path = [c for c in cols if c[0] == "Physical Disk" and ":" in c[1]]
    assert {c[1] for c in per_path} == {f"vmhba0:{p}" for paths in all_counters.PATHS.values() for p in paths}
    assert len(per_path) == 4 * 32  # Adapter Q Depth + the 31 adapter counters, per path
    assert len([c for c in cols if c[0] == "Physical Disk Path"]) == 4 * 31
    assert len([c for c in cols if c[0] == "Physical Disk SCSI Device"]) == 2 * 52
    assert [c[2] for c in cols if c[2] == "Adapter Q Depth"] == ["Adapter Q Depth"] * 5


def test_dump_compare_capacity_and_backfill_read_an_all_counters_capture(captures_dir, tmp_path):
    capture = str(captures_dir / "all.csv")
    dump = run("dump", "--esxtop-file", capture)
    assert (dump.returncode, dump.stderr) == (0, "")
    assert "esxi_esxtop_parse_errors_total{" not in dump.stdout
    assert value(dump.stdout, "esxi_adapter_queue_depth", host=all_counters.HOST, adapter="vmhba0") == 31
    for paths in all_counters.PATHS.values():
        for path in paths:
            assert value(dump.stdout, "esxi_path_commands_total", host=all_counters.HOST, path=path) is not None, path
    compare = run("compare", capture, capture)
    assert (compare.returncode, compare.stderr) == (0, "")
    assert "note:" not in compare.stdout and "Result: 0 worse, 0 better." in compare.stdout
    capacity = run("capacity", "-n", "64", capture)
    assert (capacity.returncode, capacity.stderr) == (0, "")
    assert f"LUN {all_counters.DEVICES[0]}" in capacity.stdout
    backfill = run("backfill", capture, "--tsdb", str(tmp_path / "tsdb"))
    assert (backfill.returncode, backfill.stderr) == (0, "")
    assert "12 samples written" in backfill.stdout


def conflict_message(text: str) -> bool:
    column = all_counters.conflicting_column()
    return (
        f":{CONFLICT_ROW + 2}: column {column} (" in text and "which names the same value" in text and "the first is used" in text
    )


def test_a_real_conflict_is_reported_once_and_every_command_still_reads_the_capture(captures_dir, tmp_path):
    capture, clean = str(captures_dir / "conflict.csv"), str(captures_dir / "all.csv")
    dump = run("dump", "--esxtop-file", capture)
    assert dump.returncode == 0, dump.stderr
    assert len(dump.stderr.splitlines()) == 1 and conflict_message(dump.stderr), dump.stderr
    assert value(dump.stdout, "esxi_esxtop_parse_errors_total", stream=capture, reason="column_conflict") == 1
    assert value(dump.stdout, "esxi_adapter_queue_depth", adapter="vmhba0") == 31  # the first column's value
    compare = run("compare", clean, capture)
    assert (compare.returncode, compare.stderr) == (0, "")
    notes = [line for line in compare.stdout.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and conflict_message(notes[0]) and "(in 1 of 12 samples)" in notes[0], notes
    capacity = run("capacity", "-n", "64", capture)
    assert capacity.returncode == 0 and len(capacity.stderr.splitlines()) == 1 and conflict_message(capacity.stderr)
    backfill = run("backfill", capture, "--tsdb", str(tmp_path / "tsdb"))
    assert backfill.returncode == 0 and "12 samples written" in backfill.stdout
    assert len(backfill.stderr.splitlines()) == 1 and conflict_message(backfill.stderr), backfill.stderr


def test_a_live_stream_counts_a_conflict_once_per_header_and_keeps_the_first_value(captures_dir):
    lines = (captures_dir / "conflict.csv").read_text().splitlines(True)
    # The conflicting row twice more: still one count for that column under this header.
    lines += [lines[CONFLICT_ROW + 1], lines[CONFLICT_ROW + 1]]
    store, samples = Store(), []
    pump(lines, EsxtopReader("live"), samples.append, store.count_parse_error)
    assert store.parse_errors == {("live", "column_conflict"): 1}
    assert len(samples) == 14 and {s.adapters["vmhba0"]["queue_depth"] for s in samples} == {31.0}
    # A restarted esxtop (a new header) starts a new count.
    pump(lines[:1] + lines[CONFLICT_ROW + 1 : CONFLICT_ROW + 2], EsxtopReader("live"), samples.append, store.count_parse_error)
    assert store.parse_errors == {("live", "column_conflict"): 2}


def test_repeats_that_agree_are_not_counted_anywhere(captures_dir):
    path = captures_dir / "all.csv"
    store = Store()
    pump(path.read_text().splitlines(True), EsxtopReader("live"), store.ingest, store.count_parse_error)
    assert store.parse_errors == {}
    assert len(list(read_file(path, on_error=store.count_parse_error))) == 12
    assert store.parse_errors == {}


def test_a_conflict_in_a_followed_file_and_on_stdin_is_counted_and_the_rows_go_on(captures_dir, tmp_path):
    capture = captures_dir / "conflict.csv"
    followed = tmp_path / "followed.csv"
    followed.write_text("")
    with open(capture, "rb") as stdin:
        exporter = Exporter("--esxtop-stdin", f"--esxtop-follow={followed}", stdin=stdin, log_path=tmp_path / "exporter.log")
        try:
            followed.write_text(capture.read_text().replace(all_counters.HOST, "esx-followed"))

            def both_read(text):
                counts = [value(text, "esxi_esxtop_samples_total", host=h) for h in (all_counters.HOST, "esx-followed")]
                return text if counts == [12, 12] else None

            text = eventually(lambda: both_read(exporter.metrics()), what="every row of both streams")
        finally:
            exporter.stop()
    assert value(text, "esxi_esxtop_parse_errors_total", stream="stdin", reason="column_conflict") == 1
    assert value(text, "esxi_esxtop_parse_errors_total", stream=str(followed), reason="column_conflict") == 1
    log = (tmp_path / "exporter.log").read_text()
    assert sum(conflict_message(line) for line in log.splitlines()) == 2, log
    assert "skipped" not in log


@pytest.mark.integration
def test_a_conflict_over_ssh_is_counted_once_and_the_session_goes_on(captures_dir, tmp_path):
    from exporter.esxtop.ssh import SshStream
    from exporter.ssh.target import SshTarget
    from simulators.esxi_ssh.sshd import Sshd

    sshd = Sshd(tmp_path)
    try:
        sshd.set_control(source="capture", capture=str(captures_dir / "conflict.csv"))
        target = SshTarget(
            host="127.0.0.1",
            user=sshd.user,
            port=sshd.port,
            interval=0.1,
            identity_file=str(sshd.tmp / "client_key"),
            known_hosts=str(sshd.known_hosts),
        )
        store, stop = Store(), threading.Event()
        stream = SshStream(target, store, stop)
        thread = threading.Thread(target=stream.run, daemon=True)
        thread.start()
        try:
            eventually(lambda: stream._delivered >= 2 * 11 + 2, timeout=60, what="the conflicting row twice over SSH")
        finally:
            stop.set()
            thread.join(10)
    finally:
        sshd.stop()
    assert store.parse_errors == {("ssh:127.0.0.1", "column_conflict"): 1}
    assert sum(stream.restarts.values()) == 0, stream.restarts
    assert store.hosts[all_counters.HOST].objects["adapters"]["vmhba0"].gauges["queue_depth"] == 31
