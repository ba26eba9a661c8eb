"""compare: capture loading (needed columns only), known differences found, nothing spurious,
clear errors, exit status."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from exporter.analysis import compare as cmp
from exporter.analysis.capture import CaptureError, load
from exporter.esxtop.reader import read_file
from simulators.esxtop_csv import device_columns, header, row
from tests.support.analysis_captures import DEVICE, Setup, write
from tests.support.cli import REAL, run_cli
from tests.support.servers import CAPTURES, ROOT, exporter_env


def assert_same_as_reader(path):
    """Every value the fast loader puts in its frame is the value the core reader puts in its Sample."""
    capture = load(path)
    samples = list(read_file(path))
    assert len(samples) == len(capture.timestamps)
    checked = 0
    for i, sample in enumerate(samples):
        assert sample.timestamp == capture.timestamps[i]
        for family in ("luns", "adapters", "paths", "worlds", "cpus", "datastores", "vdisks", "vms"):
            for key, stats in getattr(sample, family).items():
                for field, value in stats.items():
                    assert capture.frame[(family, key, field)].iloc[i] == value, (family, key, field, i)
                    checked += 1
    assert checked == capture.frame.size
    return capture


def test_loader_matches_the_core_reader_on_the_real_esxi65_capture():
    capture = assert_same_as_reader(REAL)
    assert capture.host == "localhost.home"
    assert np.isnan(capture.intervals[0]) and list(capture.intervals[1:]) == [5.0, 5.0]
    assert len(capture.objects("worlds")) > 0
    assert ("ouranos", "scsi2:0") in capture.objects("vdisks") and "ouranos" in capture.objects("vms")


def test_loader_matches_the_core_reader_on_the_real_esxi60_header_and_row(tmp_path):
    cells = [(CAPTURES / f"esxi60-default-{part}-one-cell-per-line.txt").read_text().splitlines() for part in ("header", "row")]
    path = tmp_path / "esxi60.csv"
    path.write_text(",".join(cells[0]) + "\n" + ",".join(cells[1]) + "\n")
    capture = assert_same_as_reader(path)
    assert capture.host == "localhost" and "naa.600508b1001c87660c0bd32f228a36a8" in capture.objects("luns")


def test_malformed_pcpu_power_state_cells_of_a_cap_a_capture_are_survived(tmp_path):
    # Real `-a` captures glue an unquoted token onto the next cell, in the header and in every row.
    cols = device_columns("naa.1", ["Device Q Depth", "Active Commands", "Queued Commands", "Commands/sec"])
    head = (
        header("h", cols, trailing_comma=False)
        + ',"\\\\h\\PCPU Power State(PCPU 0)\\%T-State T7",   -"\\\\h\\PCPU Power State(PCPU 1)\\%C-State C0"'
    )
    rows = [
        row(1_700_000_000 + 5 * i, [32, 3 + i, 0, 100 * i], trailing_comma=False) + ',"0.00",    73.1"8.93"' for i in range(3)
    ]
    path = tmp_path / "dash-a.csv"
    path.write_text("\n".join([head, *rows]) + "\n")
    capture = load(path)
    assert list(capture.frame[("luns", "naa.1", "active_commands")]) == [3, 4, 5]
    assert capture.notes == []


def test_a_truncated_last_line_is_reported_and_the_rest_used(tmp_path):
    path = write(tmp_path / "cut.csv", Setup(), seed=1, samples=50, truncate_last=True)
    capture = load(path)
    assert len(capture.timestamps) == 49
    assert len(capture.notes) == 1 and f"{path}:51: truncated last line" in capture.notes[0]
    done = run_cli("compare", path, path)
    assert done.returncode == 0 and "truncated last line" in done.stdout


@pytest.mark.parametrize(
    "text, message",
    [
        ("hello,world\n1,2\n", "not an esxtop capture"),
        ("", "empty file"),
    ],
)
def test_a_file_that_is_not_a_capture_gets_one_clear_line(tmp_path, text, message):
    path = tmp_path / "x.csv"
    path.write_text(text)
    with pytest.raises(CaptureError, match=message):
        load(path)
    done = run_cli("compare", path, REAL)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and message in done.stderr and "Traceback" not in done.stderr


def test_a_bad_value_in_a_needed_column_names_the_line_and_column(tmp_path):
    cols = device_columns("naa.1", ["Device Q Depth", "Active Commands"])
    path = tmp_path / "bad.csv"
    path.write_text("\n".join([header("h", cols), row(0, [32, 1]), row(5, [32, "x"]), row(10, [32, 2])]) + "\n")
    with pytest.raises(CaptureError, match=r"bad.csv:3: column 3 .*Active Commands.* is not a number"):
        load(path)


def test_two_hosts_are_refused_unless_asked(tmp_path):
    a = write(tmp_path / "a.csv", Setup(), seed=1, samples=30)
    b = tmp_path / "b.csv"
    b.write_text(a.read_text().replace("esx01.lab.local", "esx02.lab.local"))
    done = run_cli("compare", a, b)
    assert done.returncode == 2 and "is not the host of" in done.stderr and done.stderr.count("\n") == 1
    assert run_cli("compare", a, b, "--allow-other-host").returncode == 0


def significant(result):
    return {(r.family, r.name, r.metric.key, r.verdict) for r in result.rows if r.verdict}


def test_raising_dqlen_to_64_resolves_the_queue_overrun_and_nothing_else(tmp_path):
    before = load(write(tmp_path / "before.csv", Setup(dqlen=32), seed=11))
    after = load(write(tmp_path / "after.csv", Setup(dqlen=64), seed=12))
    result = cmp.compare(before, after)
    assert [(f.rule, f.name, f.state) for f in result.findings] == [("queue overrun (QUED > 0)", DEVICE, "resolved")]
    lun = {(key, verdict) for family, name, key, verdict in significant(result) if family == "luns"}
    assert lun == {
        ("dqlen", "changed"),
        ("actv", "changed"),
        ("qued", "better"),
        ("qued_share", "better"),
        ("gavg", "better"),
        ("kavg", "better"),
        ("qavg", "better"),
        ("iops", "better"),
        ("mbps", "better"),
    }
    others = {(family, key, verdict) for family, name, key, verdict in significant(result) if family != "luns"}
    # the adapter and path carry the same commands; worlds keep 16 outstanding each; CPU unchanged
    assert others == {
        (f, k, v) for f in ("adapters", "paths") for k, v in (("gavg", "better"), ("iops", "changed"), ("mbps", "changed"))
    } | {("adapters", "kavg", "better"), ("adapters", "qavg", "better")}
    assert result.worse == []
    assert all(not names for side in result.only.values() for names in side.values())


def test_a_second_link_ends_the_saturation(tmp_path):
    setup = dict(dqlen=64, vms=4, oio=4, block_kib=64, link_mib=150)
    before = load(write(tmp_path / "one.csv", Setup(links=1, **setup), seed=21))
    after = load(write(tmp_path / "two.csv", Setup(links=2, **setup), seed=22))
    result = cmp.compare(before, after, link_speeds={"*": 150 * 2**20})
    states = {(f.rule, f.name, f.state) for f in result.findings}
    assert states == {
        ("paths carrying I/O", DEVICE, "changed"),
        ("adapters carrying I/O", "esx01.lab.local", "changed"),
        ("link saturation", "vmhba1", "resolved"),
    }
    (spread,) = [f for f in result.findings if f.rule == "adapters carrying I/O"]
    assert (spread.detail_before, spread.detail_after) == ("1 (vmhba1)", "2 (vmhba1, vmhba2)")
    assert result.only["after"]["adapters"] == ["vmhba2"] and result.only["after"]["paths"] == ["vmhba2:C0:T0:L1"]
    lun = {(key, verdict) for family, name, key, verdict in significant(result) if family == "luns"}
    assert lun == {("gavg", "better"), ("davg", "better"), ("iops", "better"), ("mbps", "better")}
    assert result.worse == []


@pytest.mark.parametrize("seeds", [(1, 2), (3, 4), (5, 6)])
@pytest.mark.parametrize("setup", [Setup(dqlen=32), Setup(dqlen=64, oio=4, block_kib=64, link_mib=150)])
def test_two_runs_of_the_same_scenario_differ_in_nothing(tmp_path, setup, seeds):
    a = load(write(tmp_path / "a.csv", setup, seed=seeds[0]))
    b = load(write(tmp_path / "b.csv", setup, seed=seeds[1]))
    result = cmp.compare(a, b, link_speeds={"*": 150 * 2**20})
    assert significant(result) == set()
    assert all(f.state == "persists" for f in result.findings)  # the same problems, still there


def test_exit_status_tells_a_script_that_something_got_worse(tmp_path):
    good = write(tmp_path / "good.csv", Setup(dqlen=64), seed=1, samples=200)
    bad = write(tmp_path / "bad.csv", Setup(dqlen=32), seed=2, samples=200)
    worse = run_cli("compare", good, bad)
    assert worse.returncode == 1
    assert "NEW       queue overrun (QUED > 0)" in worse.stdout and "Result: " in worse.stdout
    assert run_cli("compare", bad, good).returncode == 0


def test_real_capture_against_itself_reports_every_lun_and_no_change():
    done = run_cli("compare", REAL, REAL)
    assert done.returncode == 0, done.stderr
    for device in ("t10.ATA_____DREVO_X1_SSD____________________________TW1770103538________", "mpx.vmhba0:C0:T5:L0"):
        assert f"LUN {device}" in done.stdout
    assert "Result: 0 worse, 0 better." in done.stdout
    assert "too short" in done.stdout  # 2 measured samples: no test pretends otherwise


def test_spreadsheet_resave_with_bare_cr_line_ends_goes_through_pyarrow(tmp_path):
    # Excel re-saves end lines with a bare CR (esxtop-format.md quirk 10): the general reader takes them
    lf = write(tmp_path / "lf.csv", Setup(), seed=4, samples=20)
    cr = tmp_path / "cr.csv"
    cr.write_bytes(lf.read_bytes().replace(b"\n", b"\r"))
    crlf = tmp_path / "crlf.csv"
    crlf.write_bytes(lf.read_bytes().replace(b"\n", b"\r\n"))
    expected = load(lf)
    for path in (cr, crlf):
        got = load(path)
        assert (got.frame.to_numpy() == expected.frame.to_numpy()).all()
        assert (got.timestamps == expected.timestamps).all()


def test_a_short_row_in_the_middle_is_an_error_naming_its_line(tmp_path):
    lines = write(tmp_path / "ok.csv", Setup(), seed=4, samples=10).read_text().splitlines()
    lines[5] = lines[5][: len(lines[5]) // 2]
    path = tmp_path / "mid.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(CaptureError, match=r"mid.csv:6: \d+ cells, the header has \d+"):
        load(path)


def test_long_numbers_fall_back_to_float(tmp_path):
    cols = device_columns("naa.1", ["Device Q Depth", "Commands/sec"])
    path = tmp_path / "long.csv"
    path.write_text("\n".join([header("h", cols), row(0, [32, "123456789012.25"]), row(5, [32, "1e3"])]) + "\n")
    assert list(load(path).frame[("luns", "naa.1", "commands_per_second")]) == [123456789012.25, 1000.0]


def test_skip_leaves_out_the_warm_up(tmp_path):
    capture = load(write(tmp_path / "c.csv", Setup(), seed=1, samples=100))
    trimmed = capture.skip(60)
    assert len(trimmed.timestamps) == 88 and trimmed.timestamps[0] == capture.timestamps[0] + 60
    assert trimmed.measured.all() and "first 60 s skipped" in trimmed.notes[-1]
    with pytest.raises(CaptureError, match="fewer than 2 samples"):
        capture.skip(10_000)


def test_fifty_ms_and_reservation_conflicts_are_found_and_their_end_reported(tmp_path):
    slow = load(write(tmp_path / "slow.csv", Setup(dqlen=64, service_ms=60.0, conflicts=2.0), seed=1, samples=200))
    fast = load(write(tmp_path / "fast.csv", Setup(dqlen=64), seed=2, samples=200))
    states = {(f.rule, f.state) for f in cmp.compare(slow, fast).findings}
    assert states == {("guest latency above 50 ms", "resolved"), ("SCSI reservation conflicts", "resolved")}
    worse = cmp.compare(fast, slow)
    assert {(f.rule, f.state, f.verdict) for f in worse.findings} == {
        ("guest latency above 50 ms", "new", "worse"),
        ("SCSI reservation conflicts", "new", "worse"),
    }
    assert {(r.metric.key, r.verdict) for r in worse.rows if r.family == "luns" and r.verdict == "worse"} >= {
        ("gavg", "worse"),
        ("davg", "worse"),
        ("cons", "worse"),
    }


def test_progress_bar_on_a_terminal_only(tmp_path):
    import os
    import pty

    capture = write(tmp_path / "c.csv", Setup(), seed=1, samples=50)
    piped = run_cli("compare", capture, capture)
    assert "[" not in piped.stderr and piped.stderr == ""
    # stderr on a pseudo-terminal: the bar is drawn, then wiped
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "exporter", "compare", str(capture), str(capture)],
        stdout=subprocess.DEVNULL,
        stderr=follower,
        env=exporter_env(),
        cwd=ROOT,
    )
    os.close(follower)
    out = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    proc.wait()
    os.close(leader)
    assert b"c.csv [" in out and b"%" in out


# -- hostile input (#24): one line naming file and line, exit 2, never a silent drop -------------
HOSTILE_COLUMNS = device_columns("naa.1", ["Device Q Depth", "Commands/sec", "Average Guest MilliSec/Command"])


def _capture_with(tmp_path, cell, newline="\n"):
    path = tmp_path / "hostile.csv"
    rows = [header("h", HOSTILE_COLUMNS)] + [row(5 * n, [32, 100, 2]) for n in range(4)]
    rows[3] = row(10, [32, cell, 2])
    rows[4:] = [row(15 + 5 * n, [32, 100, 2]) for n in range(3)]
    path.write_bytes((newline.join(rows) + newline).encode())
    return path


@pytest.mark.parametrize("newline", ["\n", "\r"], ids=["fastcsv", "pyarrow"])
@pytest.mark.parametrize(
    "cell, message",
    [
        ("nan", "out of range"),
        ("inf", "out of range"),
        ("+Infinity", "out of range"),
        ("1e999", "out of range"),
        ("-1000", "out of range"),
        ("1_000", "is not a number"),
    ],
)
def test_nan_inf_negative_and_underscores_stop_compare_with_file_and_line(tmp_path, cell, message, newline):
    path = _capture_with(tmp_path, cell, newline)
    with pytest.raises(CaptureError, match=rf"hostile.csv:4: .*{message}"):
        load(path)
    for command in (("compare", path, path), ("capacity", "-n", "256", path)):
        done = run_cli(*command)
        assert done.returncode == 2, (command, done.stdout, done.stderr)
        assert done.stderr.count("\n") == 1 and "hostile.csv:4:" in done.stderr and message in done.stderr
        assert "Traceback" not in done.stderr


@pytest.mark.parametrize("newline", ["\n", "\r"], ids=["fastcsv", "pyarrow"])
def test_a_second_header_is_called_a_second_header(tmp_path, newline):
    rows = [header("h", HOSTILE_COLUMNS)] + [row(5 * n, [32, 100, 2]) for n in range(3)]
    rows.insert(3, header("h", HOSTILE_COLUMNS))
    path = tmp_path / "restarted.csv"
    path.write_bytes((newline.join(rows) + newline).encode())
    with pytest.raises(CaptureError, match=r"restarted.csv:4: a second esxtop header"):
        load(path)


def test_utf16_capture_gets_an_encoding_hint(tmp_path):
    path = tmp_path / "utf16.csv"
    text = "\r\n".join([header("h", HOSTILE_COLUMNS)] + [row(5 * n, [32, 100, 2]) for n in range(3)]) + "\r\n"
    path.write_bytes(text.encode("utf-16"))
    with pytest.raises(CaptureError, match=r"utf16.csv:1: .*UTF-16.*iconv"):
        load(path)
    done = run_cli("dump", "--esxtop.file", path)
    assert done.returncode != 0 and "UTF-16" in done.stderr and done.stderr.count("\n") == 1


def test_a_line_over_the_cap_is_an_error_with_bounded_memory(tmp_path, monkeypatch):
    """A line longer than the cap stops the load at that line; the loader never holds it whole
    (tracemalloc's peak stays far below the line's size)."""
    import tracemalloc

    from exporter.analysis import fastcsv

    monkeypatch.setattr(fastcsv, "MAX_LINE", 1 << 20)
    monkeypatch.setattr(fastcsv, "CHUNK", 1 << 18)
    path = tmp_path / "long.csv"
    with open(path, "w") as out:
        out.write(header("h", HOSTILE_COLUMNS) + "\n" + row(0, [32, 100, 2]) + "\n")
        out.write("9" * (40 << 20) + "\n")
        out.write(row(5, [32, 100, 2]) + "\n")
    tracemalloc.start()
    try:
        with pytest.raises(CaptureError, match=r"long.csv:3: line longer than 1 MiB"):
            load(path, show_progress=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, peak


@pytest.mark.parametrize("where", ["cut row", "timestamp"])
def test_bytes_that_are_not_utf8_in_a_cr_capture_read_as_question_marks(tmp_path, where):
    """Bare CR line ends go through pyarrow, which gets a native copy with each byte that is not
    UTF-8 replaced by '?': a cut last row is noted, a bad stamp is one line naming it."""
    rows = [header("h", HOSTILE_COLUMNS)] + [row(5 * n, [32, 100, 2]) for n in range(4)]
    if where == "cut row":
        rows.append(row(20, [32, 100, 2]).split(",")[0] + ',"3\xff')
    else:
        rows[2] = rows[2].replace("00:00:05", "00:\xff0:05")
    path = tmp_path / "latin.csv"
    path.write_bytes(("\r".join(rows) + "\r").encode("utf-8").replace("\xff".encode(), b"\xff"))
    done = run_cli("compare", path, path)
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    if where == "cut row":
        assert done.returncode == 0 and f"{path}:6: truncated last line" in done.stdout, done.stderr
    else:
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and f"{path}:3:" in done.stderr, done.stderr
