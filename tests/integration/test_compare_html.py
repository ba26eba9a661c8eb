"""The HTML report: one self-contained file that headless Chromium renders without errors."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.support.analysis_captures import Setup, write
from tests.support.cli import run_cli
from tests.support.deploy import tool


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("html")
    before = write(tmp / "before.csv", Setup(dqlen=32), seed=1, samples=240)
    after = write(tmp / "after.csv", Setup(dqlen=64), seed=2, samples=240)
    out = tmp / "report.html"
    done = run_cli("compare", before, after, "--html", out)
    assert done.returncode == 0, done.stderr
    return out


def test_report_is_self_contained_with_plots_and_findings(report):
    html = report.read_text()
    assert not re.search(r'(src|href)\s*=\s*"(https?:)?//', html)  # nothing fetched from anywhere
    assert "<script" not in html
    assert html.count("<svg") >= 5  # GAVG, QUED, ACTV, MB/s time series and the GAVG distribution
    assert "guest latency GAVG" in html and "GAVG distribution" in html
    assert "queue overrun (QUED &gt; 0)" in html and ">resolved<" in html


@pytest.mark.integration
def test_chromium_renders_the_report_without_errors(report, tmp_path):
    chromium = tool("chromium")
    if Path(chromium).resolve().parts[1:2] == ("snap",):
        pytest.skip("this chromium is a snap (Ubuntu's), confined away from the test's files")
    shot = tmp_path / "report.png"
    done = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1360,2400",
            "--enable-logging=stderr",
            "--v=0",
            f"--screenshot={shot}",
            report.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "CONSOLE" not in done.stderr and "Uncaught" not in done.stderr
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000  # a page with content, not a blank one
