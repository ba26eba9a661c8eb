"""The alert rules: promtool checks and unit tests, coverage of every alert, the generator, the runbook."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from alerts import generate
from tests.support.servers import ROOT

ALERTS = ROOT / "alerts"
RULES = ALERTS / "esxi-storage.rules.yml"
TEST_FILES = sorted((ALERTS / "tests").glob("*.test.yml"))
RUNBOOK = ALERTS / "RUNBOOK.md"
STATE_ALERTS = {
    "EsxiVsphereTargetDown",
    "EsxiCollectorFailing",
    "EsxiEsxcliFailing",
    "EsxiDiskSmartFailing",
    "EsxiPathDead",
    "EsxiLunDeviceNotOk",
    "EsxiHostNotResponding",
    "EsxiDiskHealthNotOk",
    "EsxiDiskNvmeCriticalWarning",
    "EsxiVsanHealthRed",
    "EsxiDatastoreInaccessible",
    "EsxiVmConsolidationNeeded",
}  # value is a 0/1 state; labels say it all
IDENTITY_LABELS = (
    "host",
    "device",
    "datastore",
    "adapter",
    "target",
    "stream",
    "reason",
    "collector",
    "vm",
    "disk",
    "cluster",
    "disk_group",
    "layer",
    "vmnic",
)


def promtool(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    binary = shutil.which("promtool")
    if not binary:
        pytest.fail("promtool is not installed: run .ci/install")
    return subprocess.run([binary, *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def alert_rules() -> dict[str, dict]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return {rule["alert"]: rule for group in groups for rule in group["rules"] if "alert" in rule}


def duration_seconds(text: str) -> float:
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
    return sum(float(n) * units[u] for n, u in re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)", text))


def test_promtool_check_rules():
    result = promtool("check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


@pytest.mark.parametrize("test_file", TEST_FILES, ids=lambda p: p.name)
def test_promtool_unit_tests(test_file):
    result = promtool("test", "rules", str(test_file))
    assert result.returncode == 0, result.stdout + result.stderr


def _series_identity(series: str) -> dict[str, str]:
    return dict(re.findall(r'(\w+)="([^"]*)"', series))


def test_every_alert_is_tested_before_and_after_its_for_and_beside_a_healthy_series():
    """For each alert: a silent check one evaluation before a firing check in the same test, the
    firing check with exact labels and all three annotations, and an input series that stays silent."""
    covered = {}
    for path in TEST_FILES:
        doc = yaml.safe_load(path.read_text())
        step = duration_seconds(doc.get("evaluation_interval", "1m"))
        for test in doc["tests"]:
            checks = test.get("alert_rule_test", [])
            for fire in (c for c in checks if c.get("exp_alerts")):
                name = fire["alertname"]
                fire_at = duration_seconds(fire["eval_time"])
                silent = [
                    c
                    for c in checks
                    if c["alertname"] == name and not c.get("exp_alerts") and duration_seconds(c["eval_time"]) == fire_at - step
                ]
                for alert in fire["exp_alerts"]:
                    assert set(alert["exp_annotations"]) == {"summary", "description", "runbook_url"}, (path, name)
                    assert alert["exp_labels"]["severity"] == alert_rules()[name]["labels"]["severity"]
                fired = [alert["exp_labels"] for alert in fire["exp_alerts"]]
                healthy = [
                    s
                    for s in test["input_series"]
                    if not any(
                        all(_series_identity(s["series"]).get(k, v) == v for k, v in labels.items() if k in IDENTITY_LABELS)
                        for labels in fired
                    )
                ]
                if silent and healthy:
                    covered[name] = f"{path.name}: {test['name']}"
    missing = sorted(set(alert_rules()) - set(covered))
    assert not missing, f"alerts without a silent-before/firing-after test beside a healthy series: {missing}"


def test_every_alert_has_severity_summary_description_and_runbook_anchor():
    runbook = RUNBOOK.read_text()
    anchors = {heading.strip().lower() for heading in re.findall(r"^## (\w+)\s*$", runbook, re.M)}
    for name, rule in alert_rules().items():
        assert rule["labels"]["severity"] in {"critical", "warning", "info"}, name
        annotations = rule["annotations"]
        assert annotations["summary"] and "{{" not in annotations["summary"], name  # static, short
        if name not in STATE_ALERTS:
            assert "{{ $value" in annotations["description"], f"{name}: description shows no value"
        assert "{{ $labels." in annotations["description"], f"{name}: description names nothing"
        url, _, anchor = annotations["runbook_url"].partition("#")
        assert url.endswith("alerts/RUNBOOK.md") and anchor == name.lower(), name
        assert anchor in anchors, f"RUNBOOK.md has no section '## {name}'"
    assert anchors == {name.lower() for name in alert_rules()}, "runbook sections without an alert"


def test_runbook_says_for_each_alert_what_it_means_how_to_confirm_in_esxtop_and_what_to_change():
    sections = re.split(r"^## ", RUNBOOK.read_text(), flags=re.M)[1:]
    for section in sections:
        name = section.split("\n", 1)[0].strip()
        for part in ("**Meaning**", "**Confirm**", "**Change**"):
            assert part in section, f"{name}: no {part}"


def test_generated_files_are_what_the_sources_produce():
    for path, text in generate.outputs().items():
        assert path.read_text() == text, f"{path.relative_to(ROOT)} is stale: run python3 alerts/generate.py"
    check = subprocess.run([sys.executable, str(ALERTS / "generate.py"), "--check"], capture_output=True, text=True, cwd=ROOT)
    assert check.returncode == 0, check.stderr


def test_prometheusrule_carries_exactly_the_rule_file_groups():
    rule_file = yaml.safe_load(RULES.read_text())
    k8s = yaml.safe_load(generate.K8S_OUT.read_text())
    assert k8s["apiVersion"] == "monitoring.coreos.com/v1" and k8s["kind"] == "PrometheusRule"
    assert k8s["spec"]["groups"] == rule_file["groups"]


def test_every_threshold_has_a_reason_and_is_used():
    config = generate.load_config()
    for name, entry in config["values"].items():
        assert len(entry["why"].split()) >= 6, f"{name}: the reason is too short"
    source = generate.SOURCE.read_text()
    rendered = RULES.read_text()
    assert "${" not in rendered
    for name in config["values"]:
        assert "${" + name + "}" in source


def test_unknown_placeholder_is_an_error_naming_the_line():
    config = generate.load_config()
    text = generate.SOURCE.read_text().replace("> ${latency_critical_seconds}", "> ${latency_critcal}", 1)
    line = text[: text.index("${latency_critcal}")].count("\n") + 1
    with pytest.raises(generate.ConfigError, match=rf"rules.src.yml:{line}: unknown placeholder \$\{{latency_critcal\}}"):
        generate.render_groups(config, text)


def test_array_limit_overrides_and_scope_labels_render_rules_promtool_accepts(tmp_path):
    """n set per array (vendor/model) and per LUN, first match wins; with a scope label every
    aggregation keeps it, so two sites' hosts of the same name stay apart."""
    config = generate.load_config()
    config["scope_labels"] = ["cluster"]
    config["array_queue_limit"]["overrides"] = [
        {"match": {"device": "naa.small"}, "value": 64},
        {"match": {"vendor": "BIGARRAY", "model": "X.*"}, "value": 1024},
    ]
    rules = tmp_path / "rules.yml"
    rules.write_text(generate.rule_file(generate.render_groups(config)))
    assert promtool("check", "rules", str(rules)).returncode == 0
    series = []
    for cluster in ("a", "b"):
        for device, vendor, active in (("naa.small", "BIGARRAY", 40), ("naa.big", "BIGARRAY", 300), ("naa.plain", "OTHER", 300)):
            for host in ("esx01", "esx02"):
                labels = f'cluster="{cluster}",host="{host}",device="{device}"'
                series += [
                    {"series": f"esxi_lun_queue_depth{{{labels}}}", "values": "32x20"},
                    {"series": f"esxi_lun_active_commands{{{labels}}}", "values": f"{active // 2 if cluster == 'a' else 1}x20"},
                    {
                        "series": f'esxi_lun_info{{{labels},vendor="{vendor}",model="X1",display_name="",datastore=""}}',
                        "values": "1x20",
                    },
                ]
    limit = "device:esxi_array_lun_queue_limit:commands"
    test = {
        "rule_files": [str(rules)],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": series,
                "promql_expr_test": [
                    {
                        "expr": limit + '{cluster="a"}',
                        "eval_time": "1m",
                        "exp_samples": [
                            {"labels": limit + '{cluster="a",device="naa.small"}', "value": 64},
                            {"labels": limit + '{cluster="a",device="naa.big"}', "value": 1024},
                            {"labels": limit + '{cluster="a",device="naa.plain"}', "value": 256},
                        ],
                    }
                ],
                "alert_rule_test": [
                    {
                        # cluster a: naa.small 40 > 64? no; naa.big 300 > 1024? no; naa.plain 300 > 256: yes.
                        # cluster b (1 command per host) never adds to cluster a's sums.
                        "eval_time": "10m",
                        "alertname": "EsxiArrayLunQueueOversubscribed",
                        "exp_alerts": [
                            {
                                "exp_labels": {"severity": "warning", "cluster": "a", "device": "naa.plain"},
                                "exp_annotations": {
                                    "summary": "Hosts sharing a LUN keep more commands active than the array's per-LUN queue takes.",
                                    "description": "2 hosts together keep 300 commands active on LUN naa.plain, above the array's "
                                    "per-LUN queue limit n = 256. The array queues the rest itself: throughput stays "
                                    "flat while latency rises on every host. Lower the hosts' queue depths so that "
                                    "their sum stays within n, or spread the VMs over more LUNs.",
                                    "runbook_url": config["runbook_url"] + "#esxiarraylunqueueoversubscribed",
                                },
                            }
                        ],
                    }
                ],
            }
        ],
    }
    test_file = tmp_path / "override.test.yml"
    test_file.write_text(yaml.safe_dump(test))
    result = promtool("test", "rules", str(test_file))
    assert result.returncode == 0, result.stdout + result.stderr
