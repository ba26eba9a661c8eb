"""backfill: a capture becomes TSDB blocks that a real Prometheus loads, with the live exporter's
metric names, labels and values, and a run label telling captures apart."""

from __future__ import annotations

import time

import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter.analysis.capture import load
from tests.support.analysis_captures import DEVICE, Setup, write
from tests.support.cli import REAL, run_cli
from tests.support.servers import Prometheus

SELF_METRICS = ("esxi_scrape_collector", "esxi_exporter_build_info")


def _key(name, labels):
    # Prometheus stores an empty label value as no label (vm="" when the VM is unknown)
    return name, tuple(sorted((k, v) for k, v in labels.items() if k != "run" and v != ""))


@pytest.mark.integration
def test_blocks_load_into_prometheus_with_the_live_exporters_series(tmp_path):
    start = time.time() - 3 * 3600
    before = write(tmp_path / "before.csv", Setup(dqlen=32), seed=1, samples=120, start=start)
    after = write(tmp_path / "after.csv", Setup(dqlen=64), seed=2, samples=120, start=start + 3600)
    data = tmp_path / "prom" / "data"
    for path, run in ((before, "before"), (after, "after"), (REAL, "home-lab")):
        done = run_cli("backfill", path, "--tsdb", data, "--run", run)
        assert done.returncode == 0, done.stderr
        assert f"run={run!r}" in done.stdout
    # the real capture is from 2018: keep Prometheus from deleting it as past retention
    prom = Prometheus(tmp_path / "prom", [], args=("--storage.tsdb.retention.time=100y",))
    try:
        end_before, end_after = start + 119 * 5, start + 3600 + 119 * 5
        depth = f'esxi_lun_queue_depth{{device="{DEVICE}",run="%s"}}'
        assert prom.query(depth % "before", at=end_before)[0]["value"][1] == "32"
        assert prom.query(depth % "after", at=end_after)[0]["value"][1] == "64"
        assert prom.query(depth % "after", at=end_before) == []  # runs do not mix

        # PromQL over the backfilled counters gives the capture's command-weighted mean GAVG
        expr = 'rate(esxi_lun_guest_latency_seconds_total{run="before"}[5m]) / rate(esxi_lun_commands_total{run="before"}[5m])'
        got = float(prom.query(expr, at=end_before)[0]["value"][1])
        capture = load(before)
        last = slice(-60, None)  # the 5 minutes before end_before: 60 intervals of 5 s
        gavg = capture.frame[("luns", DEVICE, "guest_latency_seconds")].to_numpy()[last]
        cmds = capture.frame[("luns", DEVICE, "commands_per_second")].to_numpy()[last]
        assert got == pytest.approx(np.average(gavg, weights=cmds), rel=0.02)

        # every series `dump` (the live exporter's exposition) shows after the real capture's last
        # sample is in Prometheus with the same name, labels and value
        dump = run_cli("dump", "--esxtop-file", REAL)
        assert dump.returncode == 0, dump.stderr
        expected = {}
        for family in text_string_to_metric_families(dump.stdout):
            for s in family.samples:
                if not s.name.startswith(SELF_METRICS) and not s.name.endswith("_created"):
                    expected[_key(s.name, s.labels)] = s.value
        last_ts = load(REAL).timestamps[-1]
        found = {}
        for item in prom.query('{run="home-lab"}', at=last_ts):
            labels = dict(item["metric"])
            found[_key(labels.pop("__name__"), labels)] = float(item["value"][1])
        assert len(expected) > 100
        assert found.keys() == expected.keys()
        for key, value in expected.items():
            assert found[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key
    finally:
        prom.stop()


def test_backfill_of_a_non_capture_fails_with_one_line(tmp_path):
    bad = tmp_path / "x.csv"
    bad.write_text("a,b\n1,2\n")
    done = run_cli("backfill", bad, "--tsdb", tmp_path / "data")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "no esxtop header" in done.stderr


def test_a_truncated_last_line_is_reported_and_the_rest_backfilled(tmp_path):
    from tests.support.analysis_captures import Setup as S
    from tests.support.analysis_captures import write as w

    cut = w(tmp_path / "cut.csv", S(), seed=1, samples=30, truncate_last=True)
    done = run_cli("backfill", cut, "--tsdb", tmp_path / "data", "--keep-openmetrics", tmp_path / "cut.om")
    assert done.returncode == 0, done.stderr
    assert "cut.csv:31:" in done.stderr and "the last line, ignored; using the 29 samples" in done.stderr
    assert "29 samples written" in done.stdout
    stamps = {line.rsplit(" ", 1)[1] for line in (tmp_path / "cut.om").read_text().splitlines() if not line.startswith("#")}
    assert len(stamps) == 29


def test_a_bad_line_in_the_middle_stops_the_backfill(tmp_path):
    from tests.support.analysis_captures import Setup as S
    from tests.support.analysis_captures import write as w

    lines = w(tmp_path / "ok.csv", S(), seed=1, samples=10).read_text().splitlines()
    lines[4] = lines[4][:100]
    bad = tmp_path / "mid.csv"
    bad.write_text("\n".join(lines) + "\n")
    done = run_cli("backfill", bad, "--tsdb", tmp_path / "data")
    assert done.returncode == 2 and "mid.csv:5:" in done.stderr and done.stderr.count("\n") == 1


def test_a_nan_row_in_the_middle_stops_the_backfill(tmp_path):
    """A NaN cell is not dropped silently from the blocks: one line naming file and line, exit 2."""
    from tests.support.analysis_captures import Setup as S
    from tests.support.analysis_captures import write as w

    lines = w(tmp_path / "ok.csv", S(), seed=1, samples=10).read_text().splitlines()
    cells = lines[4].split(",")
    lines[4] = ",".join([cells[0]] + ['"nan"' if cell.strip('"') else cell for cell in cells[1:]])
    bad = tmp_path / "nan.csv"
    bad.write_text("\n".join(lines) + "\n")
    done = run_cli("backfill", bad, "--tsdb", tmp_path / "data")
    assert done.returncode == 2 and "nan.csv:5:" in done.stderr and "out of range" in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1
