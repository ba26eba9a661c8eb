"""Fuzzing with hypothesis, bounded in time: the esxtop reader, the config loader, the SSH target
section and the web config accept random and mutated input and answer only with their documented
errors (EsxtopError, ConfigError): no other exception, no hang.

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
from tests.support import captures
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
        columns = [c for d in ("naa.1", "naa.2") for c in captures.device_columns(d)]
        return [captures.header("esx", columns)] + [captures.row(1_700_000_000 + 5 * n, [1] * len(columns)) for n in range(3)]
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
