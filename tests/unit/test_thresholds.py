"""One threshold source: exporter/configuration/thresholds.yaml is read by the alert generator, the dashboard
generator and compare's findings. Change a threshold in a copy and all three follow."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import yaml

from alerts import generate
from exporter.analysis import compare as cmp
from exporter.analysis import stats as st
from exporter.analysis.capture import load
from exporter.configuration import thresholds
from tests.support.analysis_captures import Setup, write
from tests.support.servers import ROOT, exporter_env


@pytest.fixture
def stricter(tmp_path):
    """The thresholds file with latency critical 50 -> 40 ms, link saturation 90% -> 80% and a noisy
    neighbour's share of its LUN 50% -> 60%."""
    config = yaml.safe_load(thresholds.DEFAULT.read_text(encoding="utf-8"))
    assert config["values"]["latency_critical_seconds"]["value"] == 0.05
    assert config["values"]["link_saturation_ratio"]["value"] == 0.9
    assert config["values"]["vm_noisy_neighbour_share"]["value"] == 0.5
    config["values"]["latency_critical_seconds"]["value"] = 0.04
    config["values"]["link_saturation_ratio"]["value"] = 0.8
    config["values"]["vm_noisy_neighbour_share"]["value"] = 0.6
    path = tmp_path / "thresholds.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def _alert(groups, name):
    return next(r for g in groups for r in g["rules"] if r.get("alert") == name)


def test_the_alerts_follow(stricter):
    default, changed = generate.render_groups(generate.load_config()), generate.render_groups(generate.load_config(stricter))
    assert "> 0.05" in _alert(default, "EsxiLunLatencyCritical")["expr"]
    critical = _alert(changed, "EsxiLunLatencyCritical")
    assert "> 0.04" in critical["expr"] and "> 0.05" not in critical["expr"]
    assert critical["annotations"]["summary"] == "LUN latency is above the 40 ms the paper calls overload."
    link = _alert(changed, "EsxiAdapterLinkSaturated")
    assert link["expr"].strip().endswith("> 0.8")
    assert "over 80% of its capacity" in link["annotations"]["summary"]
    # the one 50 ms line is the VM disks' too
    assert "> 0.04" in _alert(changed, "EsxiVmDiskLatencyHigh")["expr"]
    assert "the 40 ms the paper" in _alert(changed, "EsxiVmDiskLatencyHigh")["annotations"]["summary"]
    assert "> 0.5\n" in _alert(default, "EsxiVmNoisyNeighbour")["expr"]
    assert "> 0.6\n" in _alert(changed, "EsxiVmNoisyNeighbour")["expr"]


def _steps(board: dict, title: str) -> list:
    panel = next(p for p in board["panels"] if p.get("title") == title)
    return [s["value"] for s in panel["fieldConfig"]["defaults"]["thresholds"]["steps"]]


def test_the_dashboards_follow(stricter, tmp_path):
    out = tmp_path / "dashboards"
    env = dict(exporter_env(), **{thresholds.ENV: str(stricter)})
    done = subprocess.run(
        [sys.executable, "-m", "dashboards", "--out", str(out)], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    default = json.loads((ROOT / "dashboards" / "provisioned" / "lun-detail.json").read_text())
    changed = json.loads((out / "provisioned" / "lun-detail.json").read_text())
    title = "DAVG, KAVG, QAVG and GAVG"
    assert _steps(default, title) == [None, 0.05]
    assert _steps(changed, title) == [None, 0.04]
    links_default = json.loads((ROOT / "dashboards" / "provisioned" / "adapters-and-links.json").read_text())
    links_changed = json.loads((out / "provisioned" / "adapters-and-links.json").read_text())
    assert _steps(links_default, "Link use") == [None, 0.9]
    assert _steps(links_changed, "Link use") == [None, 0.8]
    vms_default = json.loads((ROOT / "dashboards" / "provisioned" / "vms.json").read_text())
    vms_changed = json.loads((out / "provisioned" / "vms.json").read_text())
    assert _column_steps(vms_default, "VMs on each LUN", "share of LUN") == [None, 0.5]
    assert _column_steps(vms_changed, "VMs on each LUN", "share of LUN") == [None, 0.6]
    assert _column_steps(vms_changed, "VMs on each LUN", "latency") == [None, 0.02, 0.04]


def _column_steps(board: dict, title: str, column: str) -> list:
    panel = next(p for p in board["panels"] if p.get("title") == title)
    override = next(o for o in panel["fieldConfig"]["overrides"] if o["matcher"]["options"] == column)
    return [s["value"] for s in next(p["value"]["steps"] for p in override["properties"] if p["id"] == "thresholds")]


def test_compare_follows(stricter, tmp_path):
    # Guest latency with a p95 near 45 ms (no queueing: 4 VMs x 16 on a 64-deep queue): between
    # the two lines. The same capture before and after: a problem shows as "persists".
    capture = load(write(tmp_path / "c.csv", Setup(dqlen=64, service_ms=40.0), seed=1, samples=200))
    # A link speed that puts the busiest direction's p95 at 78% of it: above 0.9 x 0.8, below 0.9 x 0.9.
    busiest = max(
        float(np.quantile(values, 0.95))
        for a in capture.objects("adapters")
        for f in ("read_bytes_per_second", "written_bytes_per_second")
        if (values := st.rate_values(capture, "adapters", a, f)) is not None
    )
    speeds = {"*": busiest / 0.78}

    def states(limits):
        return {(f.rule, f.state) for f in cmp.compare(capture, capture, link_speeds=speeds, limits=limits).findings}

    default, changed = states(thresholds.read()), states(thresholds.read(stricter))
    assert default == set()  # no problem by the default lines (a report lists problems only)
    assert changed == {("guest latency above 40 ms", "persists"), ("link saturation", "persists")}


def test_a_bad_thresholds_file_is_one_line(tmp_path):
    bad = tmp_path / "t.yaml"
    bad.write_text("values:\n  latency_critical_seconds: {value: 0.05}\ncompare: {}\ndashboards: {}\n")
    with pytest.raises(
        thresholds.ThresholdsError, match=r"t\.yaml: values\.latency_critical_seconds: needs a 'value' and a 'why'"
    ):
        thresholds.read(bad)
    done = subprocess.run(
        [sys.executable, "-m", "exporter", "compare", "a.csv", "b.csv", "--thresholds", str(bad)],
        cwd=ROOT,
        env=exporter_env(),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
