"""The disk alerts on what the exporter makes of real-format answers: the fixtures of
tests/fixtures/smart/ (a SATA HDD, a SATA SSD, an NVMe device through both its pages, healthy and
failing) read by the real parser and collector, then judged by the generated rules in promtool.
One host stays healthy for 90 minutes; the other is healthy for 30 and then fails. Healthy disks
raise nothing; each failing one raises exactly the alerts its answers call for."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from exporter.serving.exposition import Exposition
from exporter.smart.rounds import SmartRounds
from exporter.smart.ssh import SshEsxcli
from exporter.store.store import Store
from simulators.esxi_ssh.esxcli import HDD, NVME, SSD
from tests.support.promtext import samples
from tests.support.servers import ROOT
from tests.support.smart_runner import FixtureRunner

HEALTHY_PHASE, FAILING_PHASE = 30, 60  # minutes


def exposition(host: str, variant: str) -> dict[tuple, float]:
    store = Store()
    SmartRounds(store).refresh(host, SshEsxcli(FixtureRunner(variant)))
    text = Exposition(store, ["smart"]).body().decode()
    return {(name, tuple(sorted(labels.items()))): value for name, labels, value in samples(text)}


def selector(name: str, labels: tuple) -> str:
    return name + "{" + ",".join(f'{k}="{v}"' for k, v in labels) + "}"


def input_series() -> list[dict]:
    series = []
    steady = exposition("esx-ok", "healthy")
    for (name, labels), value in steady.items():
        series.append({"series": selector(name, labels), "values": f"{value:g}x{HEALTHY_PHASE + FAILING_PHASE}"})
    before, after = exposition("esx-bad", "healthy"), exposition("esx-bad", "failing")
    for key in sorted(set(before) | set(after)):
        first = f"{before[key]:g}" if key in before else "_"
        then = f"{after[key]:g}" if key in after else "_"
        series.append({"series": selector(*key), "values": f"{first}x{HEALTHY_PHASE - 1} {then}x{FAILING_PHASE}"})
    return series


def firing(alertname: str, severity: str, **labels) -> dict:
    all_labels = {"alertname": alertname, "alertstate": "firing", "severity": severity, "host": "esx-bad", **labels}
    return {"labels": selector("ALERTS", tuple(sorted(all_labels.items()))), "value": 1}


EXPECTED = [
    firing("EsxiDiskHealthNotOk", "critical", device=SSD),  # IMPENDING FAILURE
    firing("EsxiDiskHealthNotOk", "critical", device=NVME),
    firing("EsxiDiskSmartAttributeFailing", "critical", device=HDD, parameter="reallocated_sector_count"),  # 9 <= 10
    firing("EsxiDiskSmartAttributeFailing", "critical", device=SSD, parameter="media_wearout_indicator"),  # 4 <= 5
    *(
        firing("EsxiDiskNvmeCriticalWarning", "critical", device=NVME, adapter="vmhba2", warning=w)
        for w in ("available_spare", "temperature", "reliability_degraded")
    ),
    firing("EsxiDiskNvmeWearHigh", "warning", device=NVME, adapter="vmhba2"),  # 95 %
    firing("EsxiDiskSectorsReallocating", "warning", device=HDD, sectors="reallocated"),  # 0 -> 1,736
    firing("EsxiDiskSectorsReallocating", "warning", device=HDD, sectors="pending"),  # 0 -> 24
    firing("EsxiDiskSectorsReallocating", "warning", device=NVME, sectors="reallocated"),  # 0 -> 97 (its SCSI page)
    firing("EsxiDiskTemperatureHigh", "warning", device=SSD),  # 63 °C in the raw's low byte
    firing("EsxiDiskTemperatureHigh", "warning", device=NVME),  # 357 K = 84 °C
]


def test_healthy_disks_raise_nothing_and_failing_ones_exactly_their_alerts(tmp_path):
    if not shutil.which("promtool"):
        pytest.fail("promtool is not installed: run .ci/install")
    test = {
        "rule_files": [str(ROOT / "alerts" / "esxi-storage.rules.yml")],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": input_series(),
                "promql_expr_test": [
                    # the healthy half hour of both hosts: nothing fires, nothing is pending
                    {"expr": 'ALERTS{alertname=~"EsxiDisk.*"}', "eval_time": f"{HEALTHY_PHASE - 1}m", "exp_samples": []},
                    # the failing host, its for: long past; the healthy host still silent
                    {
                        "expr": 'ALERTS{alertname=~"EsxiDisk.*",alertstate="firing"}',
                        "eval_time": f"{HEALTHY_PHASE + FAILING_PHASE - 1}m",
                        "exp_samples": EXPECTED,
                    },
                    {"expr": 'ALERTS{host="esx-ok"}', "eval_time": f"{HEALTHY_PHASE + FAILING_PHASE - 1}m", "exp_samples": []},
                ],
            }
        ],
    }
    path = tmp_path / "disks-from-fixtures.test.yml"
    path.write_text(yaml.safe_dump(test, sort_keys=False))
    done = subprocess.run(["promtool", "test", "rules", str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
