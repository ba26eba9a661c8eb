"""compare on simulator captures of the study's shared LUN with Storage I/O Control off, then on
(scenarios sioc-off and sioc-on; the model in exporter/simulator/queueing.py, step 5).

Eight hosts x one VM with 32 outstanding I/Os, DQLEN 32, on a LUN whose array serves 32 commands
in 5.8 ms: off, every host keeps 32 on the array (256) and sees ~46 ms. On, SIOC holds the
datastore near its 30 ms threshold: the hosts together keep n x L / S = 32 x 30 / 5.8 = 165,
split by shares. esx08's VM has twice the shares of the others: its 2/9 of 165 is above the 32 it
asks, so it keeps its whole queue; the seven others share the rest (19 each) and queue the other
13 in the VMkernel.
"""

from __future__ import annotations

import pytest

from exporter.analysis import compare as cmp
from exporter.analysis.capture import load
from tests.support.cli import run_cli

LUN = "naa.600601601e3021001a2b3c4d5e6f0044"
HIGH, NORMAL = "esx08.lab.local", "esx01.lab.local"


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    out = {}
    for scenario, seed in (("sioc-off", 1), ("sioc-on", 2)):
        directory = tmp_path_factory.mktemp(scenario)
        done = run_cli("simulate", scenario, "--duration", "4m", "--seed", seed, "--out", directory)
        assert done.returncode == 0, done.stderr
        out[scenario] = directory
    return out


def rows(captures, host):
    result = cmp.compare(load(captures["sioc-off"] / f"{host}.csv"), load(captures["sioc-on"] / f"{host}.csv"))
    return {r.metric.key: r for r in result.rows if r.family == "luns" and r.name == LUN}


def test_sioc_cuts_a_normal_share_host_queue_and_moves_its_latency_into_the_kernel(captures):
    lun = rows(captures, NORMAL)
    assert lun["dqlen"].config == (32.0, 19.0)  # the effective queue depth: SIOC's cut, as esxtop shows it
    assert lun["dqlen"].verdict == "changed"
    davg, kavg, iops = lun["davg"], lun["kavg"], lun["iops"]
    assert davg.before.mean == pytest.approx(0.0464, rel=0.05)  # 5.8 ms x 256 / 32
    assert davg.after.mean == pytest.approx(0.030, rel=0.05)  # held near the threshold
    assert davg.verdict == "better"
    assert kavg.before.mean < 0.001 and kavg.after.mean > 0.015  # 13 queued in the VMkernel
    assert kavg.verdict == "worse"
    assert iops.after.mean < iops.before.mean  # 19 of 165 active against 32 of 256
    assert lun["qued"].after.mean == pytest.approx(13, abs=0.5)


def test_sioc_lets_the_high_share_host_keep_its_queue_and_gain_throughput(captures):
    lun = rows(captures, HIGH)
    assert lun["dqlen"].config == (32.0, 32.0)  # not cut: it asks for less than its shares give it
    assert lun["davg"].after.mean < lun["davg"].before.mean
    assert lun["iops"].verdict == "better"
    assert lun["iops"].after.mean / lun["iops"].before.mean == pytest.approx((32 / 0.030) / (32 / 0.0464), rel=0.08)
    assert lun["qued"].after.mean == pytest.approx(0, abs=0.5)


def test_the_array_serves_the_same_total_either_way(captures):
    """SIOC changes who gets the array, not how much it serves: the array is saturated both times."""
    hosts = [f"esx0{i}.lab.local" for i in range(1, 9)]
    total = {side: 0.0 for side in ("before", "after")}
    for host in hosts:
        iops = rows(captures, host)["iops"]
        total["before"] += iops.before.mean
        total["after"] += iops.after.mean
    assert total["before"] == pytest.approx(32 / 0.0058, rel=0.05)
    assert total["after"] == pytest.approx(total["before"], rel=0.05)


def test_compare_says_sioc_was_turned_on(captures):
    result = cmp.compare(load(captures["sioc-off"] / f"{NORMAL}.csv"), load(captures["sioc-on"] / f"{NORMAL}.csv"))
    assert f"{NORMAL} vmfs-sioc: Storage I/O Control off -> on" in result.tuning
