"""Every family of `serve`, `dump` and `backfill`, on a real capture and on simulated ones, is
accepted by client_python's text and OpenMetrics parsers, by client_python's registry (which
rejects a gauge named like a counter's family) and by `promtool check metrics`."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from prometheus_client.core import CollectorRegistry
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families as parse_text

from tests.support.cli import REAL, run_cli
from tests.support.servers import Exporter

pytestmark = pytest.mark.integration


class _Families:
    """A client_python collector yielding already-parsed families, to register them."""

    def __init__(self, families):
        self.families = families

    def collect(self):
        return iter(self.families)


def check_text_exposition(text: str) -> list:
    families = list(parse_text(text))
    names = [f.name for f in families]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    # A gauge and a counter sharing a family name (x and x_total) clash here: registration fails.
    CollectorRegistry().register(_Families(families))
    promtool = shutil.which("promtool")
    if not promtool:
        pytest.fail("promtool is not installed: run .ci/install")
    lint = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    return families


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    """Captures of two built-in scenarios, one file per host (esxtop -a fields, per-world series)."""
    out = tmp_path_factory.mktemp("sim")
    files = []
    for scenario in ("demo", "reservations"):
        done = run_cli("simulate", scenario, "--duration", "2m", "--out", out / scenario)
        assert done.returncode == 0, done.stderr
        files += sorted((out / scenario).glob("*.csv"))
    return files


def test_dump_of_the_real_capture_parses_and_lints():
    done = run_cli("dump", "--esxtop-file", REAL)
    assert done.returncode == 0, done.stderr
    families = check_text_exposition(done.stdout)
    assert {("esxi_lun_device_latency_seconds", "counter"), ("esxi_lun_device_latency_mean_seconds", "gauge")} <= {
        (f.name, f.type) for f in families
    }


def test_dump_of_simulated_captures_parses_and_lints(simulated):
    args = [a for path in simulated for a in ("--esxtop-file", path)]
    done = run_cli("dump", *args)
    assert done.returncode == 0, done.stderr
    families = check_text_exposition(done.stdout)
    hosts = {s.labels["host"] for f in families for s in f.samples if "host" in s.labels}
    assert len(hosts) >= 2  # every simulated host is there


@pytest.mark.parametrize("source", ["real", "simulated"])
def test_serve_output_parses_and_lints(tmp_path, simulated, source):
    args = ["--esxtop-file", str(REAL)] if source == "real" else ["--simulate", "demo", "--simulate.interval", "1s"]
    exporter = Exporter(*args, log_path=tmp_path / "exporter.log")
    try:
        text = exporter.metrics()
        if source == "simulated":  # wait for a measured interval, so the latency gauges are there
            from tests.support.promtext import eventually

            text = eventually(lambda: (lambda t: t if "esxi_lun_guest_latency_mean_seconds{" in t else None)(exporter.metrics()))
        check_text_exposition(text)
    finally:
        exporter.stop()


def test_backfill_openmetrics_parses(tmp_path, simulated):
    for capture in (REAL, simulated[0]):
        kept = tmp_path / f"{capture.stem}.om"
        done = run_cli("backfill", capture, "--tsdb", tmp_path / f"data-{capture.stem}", "--keep-openmetrics", kept)
        assert done.returncode == 0, done.stderr
        families = list(parse_openmetrics(kept.read_text()))
        assert families and all(f.samples for f in families)
        names = [f.name for f in families]
        assert len(names) == len(set(names))
