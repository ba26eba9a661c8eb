"""A real Prometheus scrapes `serve` fed live through standard input; PromQL over the latency
counters gives back the latency that was in the input."""

from __future__ import annotations

import subprocess
import time

import pytest

from simulators.esxtop_csv import device_columns, header, row
from tests.support.servers import Exporter, Prometheus

DEV = "naa.60a98000572d54724a346a6170627a51"
DAVG_MS, KAVG_MS, QAVG_MS = 12.5, 2.25, 2.0


@pytest.mark.integration
def test_prometheus_reads_back_the_command_weighted_latency(tmp_path):
    exporter = Exporter("--esxtop-stdin", stdin=subprocess.PIPE, log_path=tmp_path / "exporter.log")
    prometheus = None
    try:
        feed = exporter.proc.stdin
        feed.write((header("esx01", device_columns(DEV)) + "\n").encode())
        t0 = time.time()
        prometheus = Prometheus(tmp_path / "prom", [f"127.0.0.1:{exporter.port}"], scrape_interval="1s")
        expr = (
            f'rate(esxi_lun_device_latency_seconds_total{{device="{DEV}"}}[10s])'
            f' / rate(esxi_lun_commands_total{{device="{DEV}"}}[10s])'
        )
        deadline = time.monotonic() + 40
        result = []
        i = 0
        while time.monotonic() < deadline:
            # A sample every 0.5 s whose timestamps advance 5 s, as esxtop -d 5 would write them.
            cmds = 800 + 400 * (i % 2)  # load varies, latency per command does not
            values = [32, 20, 0, 62.5, 0.63, cmds, cmds / 2, cmds / 2, 4.0, 4.0, DAVG_MS, KAVG_MS, DAVG_MS + KAVG_MS, QAVG_MS]
            feed.write((row(t0 + 5 * i, values) + "\n").encode())
            feed.flush()
            i += 1
            time.sleep(0.5)
            if i > 12:
                result = prometheus.query(expr)
                if result:
                    break
        assert result, "Prometheus never returned the latency ratio"
        assert float(result[0]["value"][1]) == pytest.approx(DAVG_MS / 1000, rel=1e-6)
        assert result[0]["metric"]["host"] == "esx01"
        kernel = prometheus.query(
            f'rate(esxi_lun_kernel_latency_seconds_total{{device="{DEV}"}}[10s])'
            f' / rate(esxi_lun_commands_total{{device="{DEV}"}}[10s])'
        )
        assert float(kernel[0]["value"][1]) == pytest.approx(KAVG_MS / 1000, rel=1e-6)
        up = prometheus.query('up{job="esxi"}')
        assert up and up[0]["value"][1] == "1"
        depth = prometheus.query(f'esxi_lun_queue_depth{{device="{DEV}"}}')
        assert depth[0]["value"][1] == "32"
    finally:
        if prometheus:
            prometheus.stop()
        exporter.stop()
