"""Every quirk of real esxtop output (esxtop-format.md §6), and the reader's errors."""

from __future__ import annotations

import pytest

from exporter.esxtop import EsxtopError, EsxtopReader, read_file
from exporter.esxtop.reader import parse_column
from exporter.esxtop.streams import pump
from exporter.store.store import Store
from simulators.esxtop_csv import device_columns, header, row

T0 = 1_700_000_000.0
DEV = "naa.600a0b80002a"


def feed_all(lines, **kwargs):
    reader = EsxtopReader("test", **kwargs)
    return [s for s in (reader.feed(line) for line in lines) if s is not None]


def device_capture(trailing_comma=True, n=3, extra_columns=(), extra_values=()):
    cols = device_columns(DEV) + list(extra_columns)
    lines = [header("esx01", cols, trailing_comma)]
    for i in range(n):
        values = [32, 32 if i else 0, 4 if i else 0, 100.0, 1.12, 1000.0, 600, 400, 10.0, 5.0, 20.0, 3.5, 23.5, 3.0]
        lines.append(row(T0 + 5 * i, values + list(extra_values), trailing_comma))
    return lines


def test_trailing_comma_and_none_read_alike():
    with_comma = feed_all(device_capture(trailing_comma=True))
    without = feed_all(device_capture(trailing_comma=False))
    assert [s.luns for s in with_comma] == [s.luns for s in without]
    assert with_comma[-1].luns[DEV]["device_latency_seconds"] == 0.02


def test_first_sample_is_not_a_measurement_and_intervals_come_from_timestamps():
    samples = feed_all(device_capture())
    assert [s.interval for s in samples] == [None, 5.0, 5.0]
    assert samples[1].luns[DEV]["read_bytes_per_second"] == 10 * 1048576
    store = Store()
    for s in samples:
        store.ingest(s)
    lun = store.hosts["esx01"].objects["luns"][DEV]
    assert lun.counters["commands_per_second"] == 1000 * 5 * 2  # two measured intervals
    assert lun.counters["device_latency_seconds_total"] == pytest.approx(0.02 * 1000 * 5 * 2)


def test_drifting_intervals_use_the_real_spacing():
    lines = device_capture(n=1)
    for _i, t in enumerate((4, 9, 11)):  # 4 s, 5 s, 2 s apart, like IC-headerless
        lines.append(row(T0 + t, [32, 1, 0, 3.0, 0.03, 100.0, 50, 50, 1.0, 1.0, 2.0, 0.5, 2.5, 0.1]))
    store = Store()
    for s in feed_all(lines):
        store.ingest(s)
    assert store.hosts["esx01"].objects["luns"][DEV].counters["commands_per_second"] == pytest.approx(100 * 11)


def test_junk_before_the_header_is_ignored():
    lines = device_capture()
    lines[0] = "no termcap entry for a 'xterm-256color' terminal" + lines[0]
    assert feed_all(lines)[-1].luns[DEV]["queue_depth"] == 32


def test_header_over_one_megabyte():
    filler = [("Vcpu", f"{i}:helper:{65000 + i}:HELPER_QUEUE-{i}", "% Used") for i in range(20000)]
    lines = device_capture(extra_columns=filler, extra_values=["1.00"] * len(filler))
    assert len(lines[0]) > 1_000_000
    assert feed_all(lines)[-1].luns[DEV]["active_commands"] == 32


@pytest.mark.parametrize(
    "cell, expected",
    [
        (
            r"\\esx\Group Cpu(2928526:Ubuntu 14.04-LTS Server (20160602)_10.62.59.186)\% Used",
            ("esx", "Group Cpu", "2928526:Ubuntu 14.04-LTS Server (20160602)_10.62.59.186", "% Used"),
        ),
        (r"\\esx\Vcpu(1:system:65976:TcpipPktComp#0)\% Run", ("esx", "Vcpu", "1:system:65976:TcpipPktComp#0", "% Run")),
        (
            r"\\esx\Virtual Disk(SQL02 (df09cdf2-1e74):scsi0:0)\Reads/sec",
            ("esx", "Virtual Disk", "SQL02 (df09cdf2-1e74):scsi0:0", "Reads/sec"),
        ),
        (
            r"\\esx.example.org\Memory\Memory Overcommit (1 Minute Avg)",
            ("esx.example.org", "Memory", None, "Memory Overcommit (1 Minute Avg)"),
        ),
        (r"\\esx\VSAN\Enabled?", ("esx", "VSAN", None, "Enabled?")),
        ('   -"\\\\esx\\PCPU Power State(PCPU 1)\\%C-State C0"', None),
    ],
)
def test_header_cells_split_on_first_parenthesis_and_last_backslash(cell, expected):
    assert parse_column(cell) == expected


def test_t10_names_are_opaque_and_suffixes_split_on_the_last_dash():
    t10 = "t10.ATA_____ST2000DM0062D2DM164__________________________________Z4Z90XYV"
    cols = device_columns(t10, ["Device Q Depth", "Commands/sec"]) + [
        ("Physical Disk Per-Device-Per-World", "mpx.vmhba0:C0:T5:L0-444767", "Active Commands"),
        ("Physical Disk Per-Device-Per-World", f"{t10}-65544", "Queued Commands"),
        ("Physical Disk Partition", f"{t10}-9", "Commands/sec"),
    ]
    sample = feed_all([header("h", cols), row(T0, [31, 0, 2, 1, 0])])[0]
    assert list(sample.luns) == [t10]  # the partition is not a device
    assert sample.worlds == {
        ("mpx.vmhba0:C0:T5:L0", "444767"): {"active_commands": 2.0},
        (t10, "65544"): {"queued_commands": 1.0},
    }


def test_object_names_match_exactly():
    cols = [
        ("Physical Disk", "vmhba0:vmhba0:C0:T2:L0", "Commands/sec"),
        ("Physical Disk Path", "vmhba0:C0:T2:L0", "Commands/sec"),
        ("Physical Disk SCSI Device Extra", "x", "Commands/sec"),
        ("Physical Disk", "vmhba0", "Adapter Q Depth"),
    ]
    sample = feed_all([header("h", cols), row(T0, [7, 9, 11, 64])])[0]
    # The ESXi 6 legacy path columns are ignored when `Physical Disk Path` exists.
    assert sample.paths == {"vmhba0:C0:T2:L0": {"commands_per_second": 9.0}}
    assert sample.adapters == {"vmhba0": {"queue_depth": 64.0}}
    assert sample.luns == {}


def test_legacy_adapter_path_object_is_used_when_there_is_no_path_object():
    cols = [
        ("Physical Disk", "vmhba1:vmhba1:C0:T0:L4", "Adapter Q Depth"),
        ("Physical Disk", "vmhba1:vmhba1:C0:T0:L4", "Commands/sec"),
    ]
    sample = feed_all([header("h", cols), row(T0, [1024, 42])])[0]
    assert sample.paths == {"vmhba1:C0:T0:L4": {"commands_per_second": 42.0}}
    assert sample.adapters == {"vmhba1": {"queue_depth": 1024.0}}


def test_esx3_per_world_names_from_the_paper():
    cols = [
        ("Physical Disk", "vmhba1:0:3:0:1234", "Active Commands"),
        ("Physical Disk", "vmhba1:0:3:0:1234", "Queued Commands"),
        ("Physical Disk", "WD-vmhba1:3:0-1235", "Active Commands"),
        ("Physical Disk", "WD-vmhba1:3:0-1235", "Queued Commands"),
        ("Physical Disk", "vmhba1:0:3:0", "Active Commands"),
    ]
    sample = feed_all([header("esx35", cols), row(T0, [16, 4, 12, 0, 28])])[0]
    assert sample.worlds == {
        ("vmhba1:0:3:0", "1234"): {"active_commands": 16.0, "queued_commands": 4.0},
        ("vmhba1:3:0", "1235"): {"active_commands": 12.0, "queued_commands": 0.0},
    }
    assert sample.luns == {"vmhba1:0:3:0": {"active_commands": 28.0}}


def test_malformed_pcpu_power_state_cells_do_not_shift_columns():
    # Real -a output: an unquoted, comma-less token fused to the next cell in header and rows.
    head = header("h", device_columns(DEV, ["Active Commands"]) + [("PCPU Power State", "PCPU 0", "%T-State T7")], False)
    head += (
        ',   -"\\\\h\\PCPU Power State(PCPU 1)\\%C-State C0",'
        + header("h", device_columns(DEV, ["Queued Commands"])).split(",", 1)[1]
    )
    data = '"11/14/2023 22:13:20","5","0.00",    73.1"8.93","7",'
    sample = feed_all([head, data])[0]
    assert sample.luns[DEV] == {"active_commands": 5.0, "queued_commands": 7.0}


def test_cr_and_crlf_line_endings_and_spreadsheet_resaves(tmp_path):
    lines = device_capture()
    for ending in ("\r\n", "\r"):
        path = tmp_path / f"capture{len(ending)}.csv"
        path.write_bytes(ending.join(lines).encode() + ending.encode())
        assert [s.luns for s in read_file(path)] == [s.luns for s in feed_all(lines)]
    # Excel re-save: unquoted cells, trailing zeros dropped, timestamps without seconds.
    unquoted = [line.replace('"', "") for line in lines]
    unquoted[1:] = [f"3/26/2015 22:4{i}," + line.split(",", 1)[1] for i, line in enumerate(unquoted[1:])]
    samples = feed_all(unquoted)
    assert samples[-1].luns[DEV]["device_latency_seconds"] == 0.02
    assert samples[1].interval == 60.0
    # Time-only stamps, and rows sharing a stamp: the clock steps by the last real interval.
    timeonly = [
        unquoted[0],
        "22:42:26," + unquoted[1].split(",", 1)[1],
        "22:42:31," + unquoted[2].split(",", 1)[1],
        "22:42:31," + unquoted[3].split(",", 1)[1],
    ]
    assert [s.interval for s in feed_all(timeonly)] == [None, 5.0, 5.0]


def test_vm_names_come_from_the_captures_vcpu_columns():
    cols = [
        ("Vcpu", "1302698:styx:444767:vmx", "% Used"),
        ("Vcpu", "1302698:styx:444769:NetWorld-VM-444768", "% Used"),
        ("Vcpu", "1:system:65976:TcpipPktComp#0", "% Used"),
        ("Physical Disk Per-Device-Per-World", f"{DEV}-444768", "Active Commands"),
        ("Physical Disk Per-Device-Per-World", f"{DEV}-65976", "Active Commands"),
    ]
    sample = feed_all([header("h", cols), row(T0, [1, 1, 1, 3, 1])])[0]
    assert sample.world_vms["444768"] == "styx" and sample.world_vms["444767"] == "styx"
    assert "65976" not in sample.world_vms  # a system world, not a VM


def test_columns_missing_from_a_capture_are_not_invented():
    sample = feed_all([header("h", device_columns(DEV, ["Device Q Depth", "Commands/sec"])), row(T0, [32, 5])])[0]
    assert sample.luns[DEV] == {"queue_depth": 32.0, "commands_per_second": 5.0}


def test_a_new_header_restarts_the_stream():
    lines = device_capture() + device_capture()
    samples = feed_all(lines)
    assert [s.interval for s in samples] == [None, 5.0, 5.0, None, 5.0, 5.0]


@pytest.mark.parametrize(
    "lines, reason, text",
    [
        (['"01/01/2024 00:00:00","1.00"'], "no_header", "test:1: no esxtop header"),
        (
            [header("h", device_columns(DEV, ["Device Q Depth"])), row(T0, [32, 1])],
            "cell_count",
            "test:2: 4 cells, the header has 3",
        ),
        (
            [header("h", device_columns(DEV, ["Device Q Depth"])), row(T0, ["n/a"])],
            "bad_value",
            "test:2: column 2 (\\\\h\\Physical Disk SCSI Device",
        ),
        (
            [header("h", device_columns(DEV, ["Device Q Depth"])), '"yesterday","32",'],
            "bad_timestamp",
            "test:2: timestamp 'yesterday'",
        ),
    ],
)
def test_bad_lines_raise_one_line_errors_naming_stream_and_line(lines, reason, text):
    with pytest.raises(EsxtopError) as caught:
        feed_all(lines)
    assert caught.value.reason == reason
    assert str(caught.value).startswith(text)
    assert "\n" not in str(caught.value)


def test_a_live_stream_counts_bad_lines_and_goes_on():
    lines = device_capture()
    lines.insert(2, '"garbage"')
    lines.insert(3, lines[2][: len(lines[2]) // 2])  # a row cut mid-line
    store = Store()
    pump(lines, EsxtopReader("live"), store.ingest, store.count_parse_error)
    assert store.parse_errors == {("live", "cell_count"): 2}
    assert store.hosts["esx01"].samples == 3


def test_empty_and_headerless_files_are_errors(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(EsxtopError, match=r"empty.csv: empty file"):
        list(read_file(empty))
    headerless = tmp_path / "headerless.csv"
    headerless.write_text("\n".join(device_capture()[1:]) + "\n")
    with pytest.raises(EsxtopError, match=r"headerless.csv:1: no esxtop header"):
        list(read_file(headerless))


def test_two_columns_with_one_name_are_counted_not_overwritten(tmp_path):
    """The second column of a repeated name never overwrites the first one's value. Where the two
    disagree it is counted once (column_conflict) in a live stream, and a saved file or a capture
    for compare still loads, with the first column's values and the conflict reported."""
    from exporter.analysis.capture import load

    cols = device_columns("naa.1", ["Commands/sec", "Reads/sec", "Commands/sec"])
    lines = [header("h", cols), row(0, [100, 60, 999]), row(5, [100, 60, 999])]
    store, samples = Store(), []
    reader = EsxtopReader("live")
    pump([line + "\n" for line in lines], reader, samples.append, store.count_parse_error)
    assert store.parse_errors == {("live", "column_conflict"): 1}
    assert [s.luns["naa.1"]["commands_per_second"] for s in samples] == [100.0, 100.0]
    path = tmp_path / "dup.csv"
    path.write_text("\n".join(lines) + "\n")
    counted = Store()
    assert [s.luns["naa.1"]["commands_per_second"] for s in read_file(path, on_error=counted.count_parse_error)] == [100, 100]
    assert counted.parse_errors == {(str(path), "column_conflict"): 1}
    capture = load(path)
    assert list(capture.series("luns", "naa.1", "commands_per_second")) == [100.0, 100.0]
    assert len(capture.notes) == 1 and "dup.csv:2: column 4 (" in capture.notes[0] and "reads 999" in capture.notes[0]


def test_a_repeated_column_that_agrees_is_not_a_conflict():
    """'32' and '32.00' are one value: nothing counted."""
    cols = device_columns("naa.1", ["Device Q Depth", "Commands/sec", "Device Q Depth"])
    lines = [header("h", cols), row(0, ["32", 1, "32.00"]), row(5, ["32", 2, "32"])]
    store = Store()
    pump([line + "\n" for line in lines], EsxtopReader("live"), store.ingest, store.count_parse_error)
    assert store.parse_errors == {}


def test_the_strict_path_reads_a_quoted_last_cell_with_its_line_end():
    """A row that takes the strict number check (here a NaN cell) and whose last, needed cell is
    quoted and followed by the line end (no trailing comma): the last value is read, not refused."""
    cols = device_columns("naa.1", ["Reads/sec", "Commands/sec"])
    reader = EsxtopReader("strict")
    reader.feed(header("h", cols, trailing_comma=False) + "\n")
    sample = reader.feed(row(0, ["nan", 7], trailing_comma=False) + "\r\n")
    assert sample.luns["naa.1"] == {"commands_per_second": 7.0}
    assert [reason for reason, _ in reader.rejected] == ["out_of_range"]


def test_the_store_refuses_non_finite_and_negative_counter_increments():
    """The store's own guard, for any source (here samples as the vSphere source builds them):
    a NaN, infinite or negative rate or latency never reaches a counter, and each refusal is counted."""
    from exporter.store import model as m

    store = Store()
    hostile = [
        {m.COMMANDS: 10.0, m.READS: 5.0, m.DAVG: 0.002},
        {m.COMMANDS: float("nan"), m.READS: 5.0, m.DAVG: 0.002},  # the rate and its latency product
        {m.COMMANDS: 10.0, m.READS: -4.0, m.DAVG: float("inf")},
        {m.COMMANDS: 10.0, m.READS: 5.0, m.DAVG: -0.001},
        {m.COMMANDS: 10.0, m.READS: 5.0, m.DAVG: 0.002},
    ]
    previous: dict = {}
    for n, stats in enumerate(hostile):
        store.ingest(
            m.Sample(host="h", timestamp=5.0 * n, interval=None if n == 0 else 5.0, source="vsphere", luns={"naa.1": stats})
        )
        counters = store.hosts["h"].objects["luns"]["naa.1"].counters
        for name, value in counters.items():
            assert 0.0 <= value < float("inf") and value >= previous.get(name, 0.0), (n, name, value)
        previous = dict(counters)
    assert store.parse_errors == {("vsphere:h", "out_of_range"): 5}
    assert previous[m.COMMANDS] == 10.0 * 5 * 3


def test_finite_but_huge_cells_never_overflow_a_counter():
    """1e301 MB/s is a finite cell, and each step (1e301 x 2**20 B x 5 s, 5.2e307) is finite too,
    but the fourth one would take the sum past the largest float: that step and the next are
    refused and counted as out_of_range, and every counter stays finite and never goes down."""
    cols = device_columns(DEV, ["Commands/sec", "MBytes Read/sec"])
    lines = [header("esx01", cols)] + [row(T0 + 5 * n, ["100.00", "1e301"]) for n in range(6)]
    store = Store()
    reader = EsxtopReader("huge")
    previous: dict = {}
    pump([lines[0] + "\n"], reader, store.ingest, store.count_parse_error)
    for line in lines[1:]:
        pump([line + "\n"], reader, store.ingest, store.count_parse_error)
        for name, value in store.hosts["esx01"].objects["luns"][DEV].counters.items():
            assert 0.0 <= value < float("inf") and value >= previous.get(name, 0.0), (name, value)
            previous[name] = value
    assert previous["read_bytes_per_second"] == 3 * (1e301 * 2**20 * 5)
    assert store.parse_errors == {("esxtop:esx01", "out_of_range"): 2}
    assert previous["commands_per_second"] == 100.0 * 5 * 5  # the other counters go on


def test_utf16_input_gets_an_encoding_hint_in_a_stream_and_a_file(tmp_path):
    text = "\r\n".join([header("h", device_columns("naa.1")), row(0, [1] * 14)]) + "\r\n"
    data = text.encode("utf-16")
    reader = EsxtopReader("stdin")
    with pytest.raises(EsxtopError, match="UTF-16"):
        for line in data.decode("utf-8", "replace").splitlines(True):
            reader.feed(line)
    path = tmp_path / "u16.csv"
    path.write_bytes(data)
    with pytest.raises(EsxtopError, match=r"u16.csv:1: .*UTF-16.*iconv") as caught:
        list(read_file(path))
    assert str(caught.value).count("looks UTF-16") == 1, str(caught.value)  # the hint once, not the line's and the file's


def test_dump_prints_the_utf16_hint_once(tmp_path):
    import subprocess
    import sys

    from tests.support.servers import ROOT, exporter_env

    path = tmp_path / "u16.csv"
    path.write_bytes(("\r\n".join([header("h", device_columns("naa.1")), row(0, [1] * 14)]) + "\r\n").encode("utf-16"))
    done = subprocess.run(
        [sys.executable, "-m", "exporter", "dump", "--esxtop-file", str(path)],
        capture_output=True,
        text=True,
        env=exporter_env(),
        cwd=ROOT,
    )
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.count("iconv -f UTF-16 -t UTF-8") == 1, done.stderr
