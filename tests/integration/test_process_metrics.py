"""The exporter's own process metrics on /metrics (client_python's process collector through the
project's text format), fresh on every scrape, off with --no-collector.process, never in dump."""

from __future__ import annotations

import gzip
import shutil
import subprocess
import time
import urllib.request

import pytest

from tests.support.cli import REAL, exporter_flags, run_cli
from tests.support.promtext import value
from tests.support.servers import Exporter

PROCESS = (
    "process_resident_memory_bytes",
    "process_virtual_memory_bytes",
    "process_cpu_seconds_total",
    "process_open_fds",
    "process_max_fds",
    "process_start_time_seconds",
)


def scrape(url: str, gzipped: bool = False) -> str:
    request = urllib.request.Request(url + "/metrics", headers={"Accept-Encoding": "gzip"} if gzipped else {})
    with urllib.request.urlopen(request, timeout=10) as response:
        body = response.read()
        return (gzip.decompress(body) if response.headers.get("Content-Encoding") == "gzip" else body).decode()


def test_process_metrics_are_there_plausible_and_fresh(tmp_path):
    started = time.time()
    exporter = Exporter("--simulate.interval", "1s", log_path=tmp_path / "exporter.log")
    try:
        first = scrape(exporter.url)
        time.sleep(1.5)  # the simulator works on: the second scrape reads the process again
        second, zipped = scrape(exporter.url), scrape(exporter.url, gzipped=True)
    finally:
        exporter.stop()
    for name in PROCESS:
        assert value(first, name) is not None, name
        assert value(zipped, name) is not None, name  # the gzip body holds both members
    assert value(first, "process_resident_memory_bytes") > 10 << 20
    assert started - 5 <= value(first, "process_start_time_seconds") <= time.time()
    assert value(first, "process_open_fds") > 2
    assert value(second, "process_cpu_seconds_total") >= value(first, "process_cpu_seconds_total") > 0
    assert value(second, "process_start_time_seconds") == value(first, "process_start_time_seconds")
    assert "# TYPE process_cpu_seconds_total counter" in first
    for generation in ("0", "1", "2"):  # the garbage collector's, as client_python exports them
        assert value(first, "python_gc_collections_total", generation=generation) is not None, generation
        assert value(first, "python_gc_objects_collected_total", generation=generation) is not None, generation
    assert value(second, "python_gc_collections_total", generation="0") >= value(
        first, "python_gc_collections_total", generation="0"
    )
    assert "# TYPE python_gc_collections_total counter" in first
    if shutil.which("promtool"):
        check = subprocess.run(["promtool", "check", "metrics"], input=first, capture_output=True, text=True)
        assert "error" not in (check.stdout + check.stderr).lower(), check.stdout + check.stderr


def test_the_switch_turns_them_off_and_dump_has_none(tmp_path):
    exporter = Exporter("--no-collector.process", log_path=tmp_path / "exporter.log")
    try:
        text = scrape(exporter.url)
    finally:
        exporter.stop()
    assert "esxi_lun_queue_depth{" in text and "process_" not in text and "python_gc_" not in text
    dump = run_cli("dump", "--esxtop-file", REAL)
    assert dump.returncode == 0, dump.stderr
    assert "esxi_lun_" in dump.stdout and "process_" not in dump.stdout


@pytest.mark.parametrize("flag", ["--collector.process", "--no-collector.process"])
def test_the_flag_is_documented(flag):
    assert flag in exporter_flags()
