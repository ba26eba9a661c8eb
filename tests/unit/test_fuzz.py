"""Fuzzing with hypothesis, bounded in time: the esxtop reader, the config loader, the SSH target
section and the web config accept random and mutated input and answer only with their documented
errors (EsxtopError, ConfigError): no other exception, no hang. Hostile numbers (a corpus of what
float() takes but esxtop never writes) keep every counter finite and monotonic and are counted;
lines past the length cap are skipped whole by every line source.

FUZZ_EXAMPLES sets the inputs per target (default 100, a few seconds each); the count tried is
printed (`pytest -s`) and the README quotes a longer run.
"""

from __future__ import annotations

import csv
import os
import signal
import sys
from contextlib import contextmanager

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exporter.configuration import config
from exporter.configuration.flags import exporter_options as serve_options
from exporter.esxtop import EsxtopError, EsxtopReader
from exporter.serving import webconfig
from exporter.ssh.target import targets_from_settings
from simulators import esxtop_csv
from tests.support.servers import CAPTURES

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "100"))
FUZZ = settings(
    max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
TRIED: dict[str, int] = {}
# Objects the exporter reads; the rest of the real header is cut away to keep each input small.
KEEP = {
    "Physical Disk SCSI Device",
    "Physical Disk Adapter",
    "Physical Disk Path",
    "Physical Disk Per-Device-Per-World",
    "Physical Cpu",
    "Vcpu",
}


@contextmanager
def time_limit(seconds: float):
    """A hang fails the test instead of stalling CI."""

    def expired(*_):
        raise TimeoutError(f"no answer within {seconds}s: a hang")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def tried(name: str) -> None:
    TRIED[name] = TRIED.get(name, 0) + 1


@pytest.fixture(scope="module", autouse=True)
def report_counts():
    yield
    print("\nfuzz inputs tried: " + ", ".join(f"{k} {v}" for k, v in sorted(TRIED.items())), file=sys.stderr)


def base_capture() -> list[str]:
    """The real ESXi 6.5 capture narrowed to the columns the exporter reads, or a synthetic one."""
    path = CAPTURES / "esxi65-default-3samples.csv"
    if not path.exists():
        columns = [c for d in ("naa.1", "naa.2") for c in esxtop_csv.device_columns(d)]
        return [esxtop_csv.header("esx", columns)] + [esxtop_csv.row(1_700_000_000 + 5 * n, [1] * len(columns)) for n in range(3)]
    from exporter.esxtop.reader import parse_column

    csv.field_size_limit(sys.maxsize)
    with open(path, newline="") as handle:
        rows = list(csv.reader(handle))
    keep = [0] + [i for i, cell in enumerate(rows[0]) if (p := parse_column(cell)) and p[1] in KEEP][:400]
    return [",".join(f'"{row[i]}"' for i in keep) for row in rows]


BASE = base_capture()
TOKENS = [
    '"',
    ",",
    "(PDH-CSV 4.0) (UTC)(0)",
    "\\\\",
    "\\",
    "(",
    ")",
    "nan",
    "inf",
    "-1",
    "1e308",
    "",
    "99/99/9999 99:99:99",
    "11/14/2023 22:13:25",
    "00:00:60",
    "\x00",
    "\ufeff",
    "\r",
    "é",
    "NaN",
    ",,,,",
]


@st.composite
def mutated_capture(draw) -> list[str]:
    lines = list(BASE)
    for _ in range(draw(st.integers(1, 6))):
        index = draw(st.integers(0, len(lines) - 1))
        line = lines[index]
        op = draw(st.sampled_from(["cut", "insert", "delete", "duplicate", "header_again", "replace_cell", "drop", "join"]))
        pos = draw(st.integers(0, len(line)))
        if op == "cut":
            lines[index] = line[:pos]
        elif op == "insert":
            lines[index] = line[:pos] + draw(st.sampled_from(TOKENS) | st.text(max_size=20)) + line[pos:]
        elif op == "delete":
            lines[index] = line[:pos] + line[pos + draw(st.integers(1, 200)) :]
        elif op == "duplicate":
            lines.insert(index, line)
        elif op == "header_again":
            lines.insert(index, BASE[0])
        elif op == "replace_cell":
            cells = line.split(",")
            cells[draw(st.integers(0, len(cells) - 1))] = draw(st.sampled_from(TOKENS) | st.text(max_size=10))
            lines[index] = ",".join(cells)
        elif op == "drop" and len(lines) > 1:
            del lines[index]
        elif op == "join" and index + 1 < len(lines):
            lines[index : index + 2] = [line + lines[index + 1]]
    return lines


def feed_all(lines: list[str]) -> None:
    reader = EsxtopReader("fuzz")
    with time_limit(10):
        for line in lines:
            try:
                sample = reader.feed(line + "\n")
            except EsxtopError as err:
                assert err.reason and str(err).startswith("fuzz:")
                continue
            if sample is not None:
                assert sample.host is not None and sample.timestamp == sample.timestamp  # not NaN


@FUZZ
@given(mutated_capture())
def test_reader_on_mutated_captures(lines):
    tried("reader-mutated")
    feed_all(lines)


line_text = st.lists(st.sampled_from(TOKENS) | st.text(max_size=8), max_size=40).map("".join)


@FUZZ
@given(st.lists(line_text, max_size=12))
def test_reader_on_random_lines(lines):
    tried("reader-random")
    feed_all(['"(PDH-CSV 4.0) (UTC)(0)",' + lines[0]] + lines[1:] if lines else lines)


# -- config ------------------------------------------------------------------------------------
OPTIONS = serve_options()
KEYS = [o.key for o in OPTIONS] + ["esxtop.ssh_targets", "inventory", "vsphere.targets"]
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats()
    | st.text(max_size=20)
    | st.sampled_from(
        ["5s", "1h30m", "-1s", "0", "nan", "inf", ":10114", "127.0.0.1:99999", "root@esx01", "[::1]:22", "true", "TLS13"]
    )
)
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12
)


def nest(flat: dict) -> dict:
    tree: dict = {}
    for key, value in flat.items():
        *sections, name = key.split(".")
        node = tree
        for section in sections:
            node = node.setdefault(section, {}) if isinstance(node.get(section, {}), dict) else {}
        node[name] = value
    return tree


def scratch(factory):
    folder = factory.getbasetemp() / "fuzz"
    folder.mkdir(exist_ok=True)
    return folder


def load_config(tmp_path, text: str, environ: dict, flags: dict) -> None:
    path = tmp_path / "config.yml"
    path.write_bytes(text.encode("utf-8", "replace"))
    with time_limit(10):
        try:
            resolved = config.load(OPTIONS, flags, environ=environ, config_file=str(path))
        except config.ConfigError as err:
            assert str(err) and "Traceback" not in str(err)
            return
        try:
            targets_from_settings(resolved)
        except config.ConfigError as err:
            assert str(err)


@FUZZ
@given(
    st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=12), values, max_size=8),
    st.dictionaries(st.sampled_from([o.env for o in OPTIONS]), st.text(max_size=12), max_size=3),
    st.dictionaries(st.sampled_from([o.dest for o in OPTIONS]), st.text(max_size=12), max_size=3),
)
def test_config_loader_on_random_settings(tmp_path_factory, flat, environ, flags):
    tried("config-structured")
    load_config(scratch(tmp_path_factory), yaml.safe_dump(nest(flat), allow_unicode=True), environ, flags)


@FUZZ
@given(st.text(alphabet=st.sampled_from(list("abc:-[]{}&*!|>'\"%@`#,?\n \t.0123456789")) | st.characters(), max_size=200))
def test_config_loader_on_random_yaml_text(tmp_path_factory, text):
    tried("config-text")
    load_config(scratch(tmp_path_factory), text, {}, {})


@FUZZ
@given(
    st.dictionaries(
        st.sampled_from(["tls_server_config", "http_server_config", "basic_auth_users"]) | st.text(max_size=8),
        st.recursive(
            scalars | st.sampled_from(["server.crt", "$2y$10$" + "a" * 53]),
            lambda inner: (
                st.dictionaries(
                    st.sampled_from(
                        [
                            "cert_file",
                            "key_file",
                            "min_version",
                            "max_version",
                            "client_auth_type",
                            "client_ca_file",
                            "headers",
                            "alice",
                            "X-Frame-Options",
                        ]
                    )
                    | st.text(max_size=8),
                    inner,
                    max_size=4,
                )
                | st.lists(inner, max_size=3)
            ),
            max_leaves=10,
        ),
        max_size=4,
    )
)
def test_web_config_on_random_files(tmp_path_factory, data):
    tried("web-config")
    path = scratch(tmp_path_factory) / "web.yml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True))
    with time_limit(10):
        try:
            webconfig.load(str(path))
        except config.ConfigError as err:
            assert str(err)


# -- hostile numbers: NaN, infinities, negatives, float()'s extra syntax ---------------------------
# Each token with what it must be: a number, a cell rejected as out of range (the row goes on
# without it), or not a number (the row is rejected). float() takes every one of them.
NUMBER_CORPUS = {
    "nan": "out_of_range",
    "NaN": "out_of_range",
    "-nan": "out_of_range",
    "inf": "out_of_range",
    "-inf": "out_of_range",
    "+Infinity": "out_of_range",
    "1e999": "out_of_range",
    "-1000": "out_of_range",
    "-0.01": "out_of_range",
    "1_000": "bad_value",
    "\u0661\u0662": "bad_value",  # Arabic-Indic digits
    "１": "bad_value",  # a full-width digit
    "0x10": "bad_value",
    "12.50": "ok",
    "0": "ok",
    "3e2": "ok",
}
DEVICES = ("naa.1", "naa.2")
COLUMNS = [c for d in DEVICES for c in esxtop_csv.device_columns(d)]


@FUZZ
@given(
    st.lists(
        st.lists(st.tuples(st.integers(0, len(COLUMNS) - 1), st.sampled_from(sorted(NUMBER_CORPUS))), max_size=4),
        min_size=1,
        max_size=6,
    )
)
def test_hostile_numbers_are_counted_and_counters_stay_monotonic(rows):
    """Rows with hostile cells through the live pump into the real store: every counter stays finite
    and never goes down, a row with a non-number is rejected whole (bad_value), and each NaN,
    infinite or negative cell of an accepted row is counted once (out_of_range)."""
    from exporter.esxtop.streams import pump
    from exporter.store.store import Store

    tried("reader-hostile-numbers")
    store = Store()
    reader = EsxtopReader("fuzz")
    lines = [esxtop_csv.header("esx", COLUMNS), esxtop_csv.row(1_700_000_000, [1] * len(COLUMNS))]
    expected = {"bad_value": 0, "out_of_range": 0}
    for n, changes in enumerate(rows, 1):
        values = [f"{5 + n:.2f}"] * len(COLUMNS)
        for column, token in changes:
            values[column] = token
        kinds = [NUMBER_CORPUS.get(v, "ok") for v in values]
        if "bad_value" in kinds:
            expected["bad_value"] += 1
        else:
            expected["out_of_range"] += kinds.count("out_of_range")
        lines.append(esxtop_csv.row(1_700_000_000 + 5 * n, values))
    previous: dict = {}
    with time_limit(10):
        for line in lines:
            pump([line + "\n"], reader, store.ingest, store.count_parse_error)
            for host in store.hosts.values():
                for key, obj in host.objects["luns"].items():
                    for name, value in obj.counters.items():
                        assert 0.0 <= value < float("inf"), (key, name, value)
                        assert value >= previous.get((key, name), 0.0), (key, name, value)
                        previous[(key, name)] = value
    counted = {reason: n for (_, reason), n in store.parse_errors.items()}
    assert {k: counted.get(k, 0) for k in expected} == expected


def test_number_corpus_each_token_alone():
    """The corpus one token at a time, in the one column that feeds the most counters."""
    column = COLUMNS.index(("Physical Disk SCSI Device", "naa.1", "Commands/sec"))
    for token, kind in NUMBER_CORPUS.items():
        reader = EsxtopReader("corpus")
        reader.feed(esxtop_csv.header("esx", COLUMNS))
        values = ["1.00"] * len(COLUMNS)
        values[column] = token
        try:
            sample = reader.feed(esxtop_csv.row(1_700_000_000, values))
        except EsxtopError as err:
            assert (token, err.reason) == (token, kind), str(err)
            assert "column" in str(err) and "corpus:2" in str(err)
            continue
        got = [reason for reason, _ in reader.rejected] or ["ok"]
        assert (token, got) == (token, [kind])
        assert ("commands_per_second" in sample.luns["naa.1"]) == (kind == "ok")


# -- lines past the cap: follow source, stdin, file readers ----------------------------------------
CAP = 1 << 20  # the sources take their cap as an argument; the default is reader.MAX_LINE (64 MiB)
line_lengths = st.one_of(st.integers(0, 40), st.integers(CAP - 2, CAP + 2), st.integers(CAP + 3, 3 * CAP))


def expected_lines(lengths):
    """What a source must yield for lines of these lengths (without their end), blank lines left
    out: the line itself, or, from the cap on, a LongLine whose text is the bytes read past, the
    first line end byte included."""
    from exporter.esxtop.lines import LongLine

    return [(LongLine, n + 1) if n >= CAP else (str, "x" * n + "\n") for n in lengths if n]


def shape(lines):
    from exporter.esxtop.lines import LongLine

    return [(LongLine, int(line)) if isinstance(line, LongLine) else (str, line) for line in lines if line.strip()]


@settings(FUZZ, max_examples=min(EXAMPLES, 25))
@given(st.lists(line_lengths, min_size=1, max_size=5), st.sampled_from(["\n", "\r\n", "\r"]))
def test_followed_file_caps_lines_and_goes_on(tmp_path_factory, lengths, ending):
    import threading

    from exporter.esxtop.streams import follow_lines

    tried("follow-long-lines")
    path = tmp_path_factory.mktemp("follow") / "capture.csv"
    path.write_bytes(b"header" + ending.encode() + b"".join(b"x" * n + ending.encode() for n in lengths))
    want = expected_lines(lengths)
    stop = threading.Event()
    lines = follow_lines(str(path), stop, poll=0.01, from_start=True, max_line=CAP)
    got = []
    with time_limit(20):
        assert next(lines).rstrip("\r\n") == "header"
        while len(shape(got)) < len(want):
            got.append(next(lines))
    stop.set()
    assert shape(got) == want


@settings(FUZZ, max_examples=min(EXAMPLES, 25))
@given(st.lists(line_lengths, min_size=1, max_size=5))
def test_stdin_caps_lines_and_goes_on(lengths):
    """stdin_lines' reader on a real pipe, written by another thread."""
    import threading

    from exporter.esxtop.lines import bounded_lines

    tried("stdin-long-lines")
    read_end, write_end = os.pipe()
    data = b"".join(b"x" * n + b"\n" for n in lengths)
    writer = threading.Thread(target=_write_all, args=(write_end, data))
    writer.start()
    with open(read_end, "rb") as raw, time_limit(20):
        got = list(bounded_lines(raw, CAP))
    writer.join()
    assert shape(got) == expected_lines(lengths)


def _write_all(fd, data):
    with open(fd, "wb") as out:
        out.write(data)


def test_an_over_long_line_costs_bounded_memory_and_the_stream_goes_on(tmp_path):
    """40 MiB in one line with a 1 MiB cap: the follow source never holds the line (tracemalloc's
    peak stays a few MiB), the pump counts it as line_too_long once, and the next row is a sample."""
    import threading
    import tracemalloc

    from exporter.esxtop.streams import follow_lines, pump
    from exporter.store.store import Store

    columns = esxtop_csv.device_columns("naa.1")
    path = tmp_path / "capture.csv"
    with open(path, "w") as out:
        out.write(esxtop_csv.header("esx", columns) + "\n" + esxtop_csv.row(0, [1] * len(columns)) + "\n")
        out.write("7" * (40 << 20) + "\n")
        out.write(esxtop_csv.row(5, [1] * len(columns)) + "\n")
    store, stop = Store(), threading.Event()
    reader = EsxtopReader("follow")
    samples = []
    tracemalloc.start()
    try:
        lines = follow_lines(str(path), stop, poll=0.01, from_start=True, max_line=CAP)
        with time_limit(30):
            pump((next(lines) for _ in range(4)), reader, samples.append, store.count_parse_error)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        stop.set()
    assert store.parse_errors == {("follow", "line_too_long"): 1}
    assert [s.timestamp for s in samples] == [0.0, 5.0]
    assert peak < 8 << 20, peak


def test_a_file_read_whole_stops_at_an_over_long_line(tmp_path, monkeypatch):
    from exporter.esxtop import reader as reader_module
    from exporter.esxtop.lines import bounded_lines

    monkeypatch.setattr("exporter.esxtop.reader.bounded_lines", lambda raw, max_line=CAP: bounded_lines(raw, CAP))
    columns = esxtop_csv.device_columns("naa.1")
    path = tmp_path / "capture.csv"
    path.write_text(
        esxtop_csv.header("esx", columns) + "\n" + "7" * (3 * CAP) + "\n" + esxtop_csv.row(5, [1] * len(columns)) + "\n"
    )
    with pytest.raises(EsxtopError, match=r"capture.csv:2: line of \d+ bytes is longer than") as caught:
        list(reader_module.read_file(str(path)))
    assert "skipped" not in str(caught.value) and "ignored" not in str(caught.value)  # the read stops there
