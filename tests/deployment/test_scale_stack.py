"""Scale-out on a real stack, all on 127.0.0.1 and stopped by PID: the shared-LUN scenario's 9 hosts
split over two exporters (--simulate.shard), each scraped by its own Prometheus shard (hashmod
relabelling, deploy/sharded/), both remote-writing into VictoriaMetrics, where vmalert evaluates
the cross-host rules (alerts/esxi-storage.global.rules.yml).

The array's per-LUN queue n = 256 is oversubscribed only over all 9 hosts (9 x 32 = 288): each
shard sees 96 or 192 commands, so the same rule evaluated per shard misses what the global layer
catches. Every dashboard query then returns data through VictoriaMetrics' Prometheus API.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from importlib import resources
from pathlib import Path

import pytest
import yaml

from alerts import generate
from dashboards.evaluate import PROVISIONED, evaluate, report
from dashboards.evaluate import Prometheus as PromAPI
from tests.support.rules import FAST
from tests.support.servers import Alertmanager, Exporter, Prometheus, VictoriaMetrics, free_port, launch, stop
from tests.support.shards import hashmod

pytestmark = pytest.mark.integration

SHARED_LUN = "naa.600601601e3021001a2b3c4d5e6f0010"
SHARDS = 2
SCRAPE = 1.0


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


class VmAlert:
    def __init__(self, tmp: Path, rules: Path, store: str, notifier: str):
        tmp.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc, self.log = launch(
            ("vmalert",),
            [
                f"-rule={rules}",
                f"-datasource.url={store}",
                f"-remoteWrite.url={store}",  # recording rules and ALERTS go back to the global store
                f"-notifier.url={notifier}",
                f"-evaluationInterval={SCRAPE:g}s",
                f"-httpListenAddr=127.0.0.1:{self.port}",
            ],
            tmp,
            self.url + "/health",
        )

    def firing(self) -> list[dict]:
        return [a for a in get_json(self.url + "/api/v1/alerts")["data"]["alerts"] or [] if a["state"] == "firing"]

    def stop(self):
        stop(self.proc)
        self.log.close()


def fast_rules(tmp: Path) -> tuple[Path, Path]:
    """The shard and global rule files as generated, with the integration test's short windows."""
    config = generate.load_config()
    config["values"] = {name: {**entry, "value": FAST.get(name, entry["value"])} for name, entry in config["values"].items()}
    shard, global_ = generate.split_cross_host(generate.render_groups(config))
    (tmp / "shard.rules.yml").write_text(generate.rule_file(shard))
    (tmp / "global.rules.yml").write_text(generate.rule_file(global_))
    return tmp / "shard.rules.yml", tmp / "global.rules.yml"


def shard_config(k: int, targets: list[str], rules: list[Path], remote_write: str) -> str:
    """deploy/sharded/prometheus-shard.yml with this shard's number, the test's targets and rules."""
    config = yaml.safe_load((Path(__file__).resolve().parents[2] / "deploy" / "sharded" / "prometheus-shard.yml").read_text())
    config["global"].update(
        scrape_interval=f"{SCRAPE:g}s",
        scrape_timeout=f"{SCRAPE:g}s",
        evaluation_interval=f"{SCRAPE:g}s",
        external_labels={"prometheus_shard": str(k)},
    )
    config["rule_files"] = [str(r) for r in rules]
    config.pop("alerting", None)
    job = config["scrape_configs"][0]
    job.pop("file_sd_configs", None)
    job["static_configs"] = [{"targets": targets}]
    keep = next(r for r in job["relabel_configs"] if r.get("action") == "keep")
    keep["regex"] = str(k)
    next(r for r in job["relabel_configs"] if r.get("action") == "hashmod")["modulus"] = SHARDS
    config["remote_write"][0].update(url=remote_write, queue_config={"batch_send_deadline": "1s"})
    return yaml.safe_dump(config, sort_keys=False)


def shared_lun_scenario(tmp: Path) -> Path:
    """The paper's Figure 4 with 9 hosts, their VMs reading and writing (so every dashboard panel,
    the write latency too, has data)."""
    text = (resources.files("exporter.simulator.scenarios") / "shared-lun-N-hosts.yaml").read_text()
    text = "\n".join(line for line in text.splitlines() if not line.startswith("parameter:"))
    path = tmp / "shared-lun-9-hosts-mixed.yaml"
    path.write_text(text.replace("${N}", "9").replace("read_ratio: 1.0", "read_ratio: 0.7"))
    return path


def exporters_on_different_shards(tmp: Path) -> list[Exporter]:
    """One exporter per scenario shard, on ports whose hashmod puts them on different Prometheus
    shards (the relabelling decides; the test only retries a port that would collide)."""
    exporters: list[Exporter] = []
    for k in range(SHARDS):
        for _ in range(30):
            e = Exporter(
                "--simulate",
                str(shared_lun_scenario(tmp)),
                "--simulate.interval",
                f"{SCRAPE:g}s",
                "--simulate.shard",
                f"{k}/{SHARDS}",
                log_path=tmp / f"exporter-{k}.log",
            )
            if hashmod(f"127.0.0.1:{e.port}", SHARDS) == k:
                exporters.append(e)
                break
            e.stop()
    assert len(exporters) == SHARDS
    return exporters


# Virtual disks' outstanding I/O and IOPS limits come from the vSphere API alone: the esxtop
# simulator these exporters run has neither, so the VMs dashboard's panels of them are empty here.
VSPHERE_ONLY = (
    "esxi_vm_disk_outstanding_reads",
    "esxi_vm_disk_outstanding_writes",
    "esxi_vm_disk_iops_limit",
    "host_vm_disk:esxi_vm_disk_outstanding_commands:sum",
    "esxi_host_connection_state",
    "esxi_host_maintenance_mode",
    "esxi_lun_sioc_queue_depth",  # the depth Storage I/O Control allows: the vSphere API's counter
)
VSPHERE_ONLY_PANELS = {
    "Disks of the selected VMs",
    "IOPS per disk against its limit",
    "Outstanding reads and writes per disk",
    "Hosts not connected",
    "Hosts in maintenance mode",
    "Host states",
    "ACTV and QUED against DQLEN and DSNRO",  # its query of the depth SIOC allows (esxi_lun_sioc_queue_depth)
    "Device configuration",  # its "SIOC allows" column
}
# Boards of sources this esxtop stack does not run (local disks' SMART, vSAN, the vSphere API's SIOC
# counters, datastore space and snapshots from vCenter or esxcli): every query of theirs would be
# empty here; tests/integration/test_dashboards_live.py runs them on their own scenarios.
OTHER_SOURCES_BOARDS = {"disks.json", "vsan.json", "sioc.json", "space-and-snapshots.json"}


def reads_vsphere_only(expr: str) -> bool:
    return any(name in expr for name in VSPHERE_ONLY)


@pytest.mark.skipif(not shutil.which("victoria-metrics"), reason="victoria-metrics is not installed: run .ci/install")
def test_global_rules_see_what_no_shard_sees_and_every_panel_has_data(tmp_path, capsys):
    shard_rules, global_rules = fast_rules(tmp_path)
    started = []
    try:
        vm = VictoriaMetrics(tmp_path / "vm")
        started.append(vm)
        am = Alertmanager(tmp_path / "am", "route: {receiver: none}\nreceivers: [{name: none}]\n")
        started.append(am)
        exporters = exporters_on_different_shards(tmp_path)
        started += exporters
        targets = [f"127.0.0.1:{e.port}" for e in exporters]
        shards = []
        for k in range(SHARDS):
            # Each shard also loads the global rules, to show what a per-shard evaluation sees.
            text = shard_config(k, targets, [shard_rules, global_rules], vm.url + "/api/v1/write")
            shards.append(Prometheus(tmp_path / f"prom-{k}", [], config_text=text))
            started.append(shards[-1])
        vmalert = VmAlert(tmp_path / "vmalert", global_rules, vm.url, am.url)
        started.append(vmalert)

        # Each shard scrapes exactly one exporter: the hashmod relabelling split them.
        for k, prom in enumerate(shards):
            up = prom.wait_for("up", lambda r: len(r) == 1 and r[0]["value"][1] == "1")
            assert up[0]["metric"]["instance"] == targets[k]

        deadline = time.monotonic() + 90
        firing = []
        while time.monotonic() < deadline and not firing:
            firing = [a for a in vmalert.firing() if a["name"] == "EsxiArrayLunQueueOversubscribed"]
            time.sleep(1)
        assert [a["labels"].get("device") for a in firing] == [SHARED_LUN], vmalert.firing()

        # The global store holds all 9 hosts; the sum over them is 288 > 256.
        total = vm.query(f'device:esxi_lun_active_commands:sum{{device="{SHARED_LUN}"}}')
        assert [float(r["value"][1]) for r in total] == [288.0]
        assert len(vm.query(f'count by (host) (esxi_lun_active_commands{{device="{SHARED_LUN}"}})')) == 9
        # Each shard evaluating the same rule sees only its hosts' share and never fires.
        per_shard = sorted(
            float(prom.query(f'device:esxi_lun_active_commands:sum{{device="{SHARED_LUN}"}}')[0]["value"][1]) for prom in shards
        )
        assert per_shard == [96.0, 192.0]  # 3 and 6 hosts x 32
        for prom in shards:
            assert prom.query('ALERTS{alertname="EsxiArrayLunQueueOversubscribed"}') == []

        # Every dashboard panel query returns data through the global store's Prometheus API.
        end = time.time()
        panels, annotations, problems = evaluate(
            sorted(p for p in PROVISIONED.glob("*.json") if p.name not in OTHER_SOURCES_BOARDS),
            PromAPI(vm.url),
            end - 20,
            end,
            SCRAPE,
            overrides={"shift": "20s"},
        )
        with capsys.disabled():
            print("\n[dashboards through VictoriaMetrics]")
            report(panels, annotations, problems, out=__import__("sys").stdout)
        assert problems == []
        empty = [r for r in panels if not r.ok]
        assert [f"{r.dashboard} / {r.panel} [{r.ref}]: {r.detail}" for r in empty if not reads_vsphere_only(r.expr)] == []
        # what only the vSphere API reports is empty here and only that (tests/integration/test_dashboards_live.py has it)
        assert {r.panel for r in empty} <= VSPHERE_ONLY_PANELS
    finally:
        for server in reversed(started):
            server.stop()


def test_shard_and_global_rule_files_are_the_whole_rule_file_and_pass_their_checkers():
    alerts = Path(__file__).resolve().parents[2] / "alerts"
    names = {}
    for part in ("rules", "shard.rules", "global.rules"):
        doc = yaml.safe_load((alerts / f"esxi-storage.{part}.yml").read_text())
        names[part] = sorted(r.get("record") or r["alert"] for g in doc["groups"] for r in g["rules"])
    assert sorted(names["shard.rules"] + names["global.rules"]) == names["rules"]  # split, not drifted
    assert "EsxiArrayLunQueueOversubscribed" in names["global.rules"]
    assert not any(n.startswith("device:") for n in names["shard.rules"])
    for part in ("shard.rules", "global.rules"):
        done = subprocess.run(
            ["promtool", "check", "rules", str(alerts / f"esxi-storage.{part}.yml")], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stdout + done.stderr
    if shutil.which("vmalert"):
        done = subprocess.run(
            ["vmalert", "-dryRun", f"-rule={alerts / 'esxi-storage.global.rules.yml'}"], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stdout + done.stderr
    else:
        pytest.fail("vmalert is not installed: run .ci/install")
