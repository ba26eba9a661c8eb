"""The alert rules on a live stack: the exporter serving the simulator's scenarios, a real Prometheus
(Debian `prometheus`) scraping them with the rules loaded, and a real Alertmanager
(`prometheus-alertmanager`) delivering to a webhook receiver in this test. Each scenario must raise
exactly the alerts the paper predicts for it, and the healthy baseline none. An eighth exporter, fed
through stdin by the test, checks the pipeline alerts the same way.

All scenarios run at once, one exporter each, told apart by a `scenario` target label that the rules
keep through the generator's scope_labels (the same knob a multi-site user sets to `cluster`). The
rules are generated from the same source with every window and `for:` shortened (FAST) and the
simulator paced at one sample per second, so the run takes about a minute.
"""

from __future__ import annotations

import copy
import json
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path

import pytest
import yaml

from simulators.esxtop_csv import device_columns, header, row
from simulators.storagesim.sims import FIXTURE, PASSWORD, USER, StorageSim
from tests.support.rules import FAST, rule_file
from tests.support.servers import Alertmanager, Exporter, Prometheus, stop_all

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"

# Watch this long after the first scrape: the longest `for:` (30s) after its window fills, and the
# stale stream's 3 intervals + 10s after its feed stops, plus margin, so a late alert is seen too.
OBSERVE_SECONDS = 65
FEED_SECONDS = 35  # the stdin stream's life: long enough to measure its interval over 30s

SHARED_LUN = "naa.600601601e3021001a2b3c4d5e6f0010"
QDEPTH_LUN = "naa.600601601e3021001a2b3c4d5e6f0050"
FIG2_LUN = "naa.600601601e3021001a2b3c4d5e6f0001"


def esx(i: int) -> str:
    return f"esx{i:02d}.lab.local"


# scenario -> (how to run it, the alerts the paper predicts: alertname and identifying labels)
SCENARIOS = {
    # Figure 2, queue not exceeded: 4 VMs x 8 OIO = DQLEN 32, QUED 0; m = d/a = 32/8 = 4 VMs, exactly.
    "queue-ok": ("queue-ok", []),
    # Figure 2, queue exceeded: 4 x 16 OIO on DQLEN 32 -> ACTV 32, QUED 32; a = 16 so m = 2 < 4 VMs.
    # Guest latency doubles to about 10 ms: below both latency levels.
    "queue-overrun": (
        "queue-overrun",
        [
            {"alertname": "EsxiLunQueueDepthOverrun", "host": esx(1), "device": FIG2_LUN},
            {"alertname": "EsxiLunVmsBeyondHostCapacity", "host": esx(1), "device": FIG2_LUN},
        ],
    ),
    # Figure 4 past 8 hosts: 9 x 32 = 288 commands > n = 256 and 9 VMs > n/a = 8; device latency
    # 5.8 ms x 288/32 = 52 ms on every host (the 20 ms warnings are inhibited by the pages).
    "shared-lun-9-hosts": (
        "shared-lun-9-hosts",
        [
            *({"alertname": "EsxiLunLatencyCritical", "host": esx(i), "device": SHARED_LUN} for i in range(1, 10)),
            # and each host's VM sees it on its virtual disk (esxtop's Virtual Disk group)
            *(
                {"alertname": "EsxiVmDiskLatencyHigh", "host": esx(i), "vm": f"vm{i:02d}", "disk": "scsi0:0"}
                for i in range(1, 10)
            ),
            {"alertname": "EsxiArrayLunQueueOversubscribed", "device": SHARED_LUN},
            {"alertname": "EsxiLunVmsBeyondArrayCapacity", "device": SHARED_LUN},
        ],
    ),
    # Table 3, the phase where esx02 creates and deletes VMs on the LUN esx01's VM is busy on.
    "reservations": (
        "phase:reservations:operations-from-other-host",
        [
            {"alertname": "EsxiLunReservationConflicts", "host": esx(1), "device": "naa.600601601e3021001a2b3c4d5e6f0030"},
        ],
    ),
    # Figure 5's last point: all eight ~45 MB/s readers on one 2 Gb/s link, which carries ~180 MB/s.
    "link-saturation": (
        "all-vms-started:link-saturation",
        [
            {"alertname": "EsxiAdapterLinkSaturated", "host": esx(1), "adapter": "vmhba1", "direction": "read"},
        ],
    ),
    # DQLEN raised to 64, DSNRO left at 32, four busy VMs: ACTV stops at 32 and 32 queue.
    "dsnro-mismatch": (
        "dsnro-mismatch",
        [
            {"alertname": "EsxiLunDsnroMismatch", "host": esx(1), "device": "naa.600601601e3021001a2b3c4d5e6f0040"},
        ],
    ),
    # Four hosts at queue depth 128 on one LUN: 512 commands > n = 256, 8 VMs with a = 64 > n/a = 4,
    # device latency 5 ms x 512/48 = 53 ms on every host.
    "shared-qdepth-128": (
        "shared-qdepth-128",
        [
            *({"alertname": "EsxiSharedLunQueueDepthTooHigh", "host": esx(i), "device": QDEPTH_LUN} for i in range(1, 5)),
            *({"alertname": "EsxiLunLatencyCritical", "host": esx(i), "device": QDEPTH_LUN} for i in range(1, 5)),
            *(
                {"alertname": "EsxiVmDiskLatencyHigh", "host": esx(i), "vm": f"db{i:02d}{ab}", "disk": "scsi0:0"}
                for i in range(1, 5)
                for ab in "ab"
            ),
            {"alertname": "EsxiArrayLunQueueOversubscribed", "device": QDEPTH_LUN},
            {"alertname": "EsxiLunVmsBeyondArrayCapacity", "device": QDEPTH_LUN},
        ],
    ),
    # Storage health a modern host reports (issue 15), one problem per scenario, each seen alone.
    "path-dead": (
        "path-dead",
        [{"alertname": "EsxiPathDead", "host": esx(1), "device": "naa.600601601e3021001a2b3c4d5e6f0061", "adapter": "vmhba2"}],
    ),
    "lost-redundancy": (
        "lost-redundancy",
        [{"alertname": "EsxiLunRedundancyLost", "host": esx(1), "device": "naa.600601601e3021001a2b3c4d5e6f0062"}],
    ),
    "no-active-path": (
        "no-active-path",
        [{"alertname": "EsxiLunNoActivePath", "host": esx(1), "device": "naa.600601601e3021001a2b3c4d5e6f0063"}],
    ),
    "device-degraded": (
        "device-degraded",
        [{"alertname": "EsxiLunDeviceNotOk", "host": esx(1), "device": "naa.600601601e3021001a2b3c4d5e6f0064"}],
    ),
    "qfull-throttled": (
        "qfull-throttled",
        [{"alertname": "EsxiLunQueueDepthThrottled", "host": esx(1), "device": "naa.600601601e3021001a2b3c4d5e6f0065"}],
    ),
    "datastore-not-everywhere": (
        "datastore-not-everywhere",
        [{"alertname": "EsxiDatastoreMountedOnFewerHosts", "cluster": "prod-health", "datastore": "vmfs-two-hosts"}],
    ),
}
# The pipeline itself: an esxtop stream on stdin that sends a malformed line with every sample, then
# falls silent (the SSH session dies) while the exporter keeps running.
PIPE_HOST, PIPE_DEVICE = "esx-pipe.lab.local", "naa.60a98000572d54724a346a6170627a51"
PIPELINE = [
    {"alertname": "EsxiEsxtopParseErrors", "stream": "stdin", "reason": "cell_count"},
    {"alertname": "EsxiEsxtopSamplesStale", "host": PIPE_HOST},
]
# Its parse errors stop with the stream, so that alert has resolved by the end of the run.
RESOLVED_BY_THE_END = {"pipeline": [PIPELINE[0]]}
EXPECTED = {**{name: predicted for name, (_, predicted) in SCENARIOS.items()}, "pipeline": PIPELINE}
IDENTITY = ("alertname", "host", "device", "adapter", "direction", "stream", "reason", "cluster", "datastore", "vm", "disk")
RECEIVER_OF_SEVERITY = {"critical": "pager", "warning": "work-queue", "info": "context"}


def identity(labels: dict) -> tuple:
    return tuple((k, labels[k]) for k in IDENTITY if k in labels)


def scenario_file(spec: str, tmp: Path) -> str:
    """A built-in scenario by name, or one derived from a built-in one so it shows its steady state
    at once instead of after minutes of its timeline."""
    if ":" not in spec:
        return spec
    how, *args = spec.split(":")
    name = args[0]
    data = yaml.safe_load(resources.files("exporter.simulator.scenarios").joinpath(f"{name}.yaml").read_text())
    if how == "phase":  # hold one phase of the timeline
        data["phases"] = [p for p in data["phases"] if p["name"] == args[1]]
        assert data["phases"], f"{name} has no phase {args[1]}"
        data["repeat"] = True
    elif how == "all-vms-started":
        for host in data["hosts"]:
            for vm in host.get("vms", []):
                vm["start"] = "0s"
    path = tmp / f"{name}-{how}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


class Webhook:
    """The Alertmanager receivers: an HTTP server that keeps every notification it is sent."""

    def __init__(self):
        self.notifications: list[tuple[str, dict]] = []  # (receiver path, payload)
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.notifications.append((self.path.strip("/"), json.loads(body)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def alerts(self, status: str) -> dict[str, list[dict]]:
        """Alerts ever notified with this status (firing, resolved), by scenario: receiver and alert."""
        out: dict[str, list[dict]] = {}
        for receiver, payload in self.notifications:
            for alert in payload["alerts"]:
                if alert["status"] == status:
                    out.setdefault(alert["labels"].get("scenario"), []).append({"receiver": receiver, **alert})
        return out

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def alertmanager_config(webhook_port: int) -> str:
    """deploy/alertmanager/alertmanager.yml with the webhooks pointed at the test's receiver and the
    grouping timers cut from minutes to a second; routes and inhibitions as they are."""
    config = yaml.safe_load((DEPLOY / "alertmanager" / "alertmanager.yml").read_text())
    config["route"].update(group_wait="1s", group_interval="1s", repeat_interval="1h")
    for receiver in config["receivers"]:
        for hook in receiver["webhook_configs"]:
            hook["url"] = f"http://127.0.0.1:{webhook_port}/{hook['url'].rsplit('/', 1)[1]}"
    return yaml.safe_dump(config, sort_keys=False)


def prometheus_dir(tmp: Path, exporters: dict[str, Exporter], alertmanager_port: int) -> str:
    """deploy/prometheus as it is, with the test's rules, targets and Alertmanager and 1 s intervals."""
    config = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    config["global"].update(scrape_interval="1s", scrape_timeout="1s", evaluation_interval="1s")
    for sub in ("rules", "targets", "alertmanagers"):
        (tmp / sub).mkdir(parents=True, exist_ok=True)
    rule_file(tmp / "rules" / "esxi-storage.rules.yml", FAST, scope_labels=["scenario"])
    (tmp / "targets" / "scenarios.yml").write_text(
        yaml.safe_dump([{"targets": [f"127.0.0.1:{e.port}"], "labels": {"scenario": name}} for name, e in exporters.items()])
    )
    (tmp / "alertmanagers" / "test.yml").write_text(yaml.safe_dump([{"targets": [f"127.0.0.1:{alertmanager_port}"]}]))
    return yaml.safe_dump(config, sort_keys=False)


def feed_stdin_stream(exporter: Exporter, seconds: float) -> None:
    """One healthy sample a second (DAVG 12.5 ms, ACTV 20 of 32) plus one line of the wrong width,
    then nothing more, with stdin left open."""
    feed = exporter.proc.stdin
    feed.write((header(PIPE_HOST, device_columns(PIPE_DEVICE)) + "\n").encode())
    end = time.time() + seconds
    while time.time() < end:
        values = [32, 20, 0, 62.5, 0.63, 800, 400, 400, 4.0, 4.0, 12.5, 0.25, 12.75, 0.01]
        feed.write((row(time.time(), values) + "\n" + '"garbage",\n').encode())
        feed.flush()
        time.sleep(1)


def test_deploy_configs_pass_promtool_and_amtool():
    result = subprocess.run(
        ["promtool", "check", "config", str(DEPLOY / "prometheus" / "prometheus.yml")], capture_output=True, text=True
    )
    assert result.returncode == 0 and "1 rule files found" in result.stdout, result.stdout + result.stderr
    result = subprocess.run(
        ["amtool", "check-config", str(DEPLOY / "alertmanager" / "alertmanager.yml")], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.integration
def test_each_scenario_raises_exactly_the_predicted_alerts(tmp_path):
    webhook = Webhook()
    alertmanager = prometheus = None
    exporters: dict[str, Exporter] = {}
    try:
        alertmanager = Alertmanager(tmp_path / "alertmanager", alertmanager_config(webhook.port))
        for name, (spec, _) in SCENARIOS.items():
            exporters[name] = Exporter(
                "--simulate", scenario_file(spec, tmp_path), "--simulate.interval=1s", log_path=tmp_path / f"exporter-{name}.log"
            )
        exporters["pipeline"] = Exporter("--esxtop-stdin", stdin=subprocess.PIPE, log_path=tmp_path / "exporter-pipeline.log")
        config = prometheus_dir(tmp_path / "prometheus", exporters, alertmanager.port)
        prometheus = Prometheus(tmp_path / "prometheus", [], config_text=config)
        prometheus.wait_for(
            'count(up{job="esxi-storage"} == 1)', lambda r: r and r[0]["value"][1] == str(len(exporters)), timeout=30
        )
        feeder = threading.Thread(target=feed_stdin_stream, args=(exporters["pipeline"], FEED_SECONDS), daemon=True)
        feeder.start()
        time.sleep(OBSERVE_SECONDS)
        assert not feeder.is_alive()
        in_prometheus: dict[str, set] = {}
        for series in prometheus.query('ALERTS{alertstate="firing"}'):
            in_prometheus.setdefault(series["metric"].get("scenario"), set()).add(identity(series["metric"]))
        notified = webhook.alerts("firing")
        resolved = webhook.alerts("resolved")
    finally:
        if prometheus:
            prometheus.stop()
        for exporter in exporters.values():
            exporter.stop()
        if alertmanager:
            alertmanager.stop()
        webhook.stop()

    assert set(notified) <= set(EXPECTED), f"alerts from outside the scenarios: {set(notified) - set(EXPECTED)}"
    for name, predicted in EXPECTED.items():
        expected = {identity(labels) for labels in predicted}
        received = {identity(alert["labels"]) for alert in notified.get(name, [])}
        assert received == expected, f"{name}: unexpected {sorted(received - expected)}, missing {sorted(expected - received)}"
        # At the end Prometheus fires the same set, plus the 20 ms warnings that Alertmanager
        # inhibits, minus what has resolved (and was notified as resolved).
        inhibited = {
            identity({**labels, "alertname": "EsxiLunLatencyHigh"})
            for labels in predicted
            if labels["alertname"] == "EsxiLunLatencyCritical"
        }
        gone = {identity(labels) for labels in RESOLVED_BY_THE_END.get(name, [])}
        assert in_prometheus.get(name, set()) == (expected | inhibited) - gone, name
        assert {identity(alert["labels"]) for alert in resolved.get(name, [])} == gone, name
        for alert in notified.get(name, []):
            severity = alert["labels"]["severity"]
            assert alert["receiver"] == RECEIVER_OF_SEVERITY[severity], alert["labels"]
            annotations = alert["annotations"]
            assert annotations["summary"] and annotations["runbook_url"].endswith("#" + alert["labels"]["alertname"].lower())
            assert "<no value>" not in annotations["description"] and "unknown" not in annotations["description"], annotations[
                "description"
            ]


# The paper's Figure 2 through the vSphere API alone: on one host, four VMs with one disk each
# keeping 16 reads outstanding on a LUN of queue depth 32 (a = 16, m = d/a = 2 < 4 VMs), and four
# more keeping 4 reads + 4 writes each on a second 32-deep LUN (a = 8, m = 4 = the VMs there).
# Beside them one VM per VM alert, on the second LUN with nothing outstanding (so its Table 2 stays
# the paper's), and on the host's iSCSI LUN (DQLEN 128) a VM keeping 140 of its 148 outstanding
# commands while a neighbour keeps 8.
FIG2_OVER, FIG2_OK = "naa.600a098038303053453f463045727a62", "naa.600a098038303053453f463045727a61"
ISCSI = "naa.6589cfc000000a1b2c3d4e5f60718293"
VSPHERE_HOST = "esx01.lab.local"
VSPHERE_EXPECTED = {
    ("EsxiLunVmsBeyondHostCapacity", FIG2_OVER, ""),
    ("EsxiLunVmsBeyondHostCapacity", ISCSI, ""),  # 2 VMs, a = 74, m = 128/74 = 1.7
    ("EsxiVmNoisyNeighbour", ISCSI, "hog01"),
    ("EsxiVmDiskLatencyHigh", "", "slow01"),
    ("EsxiVmDiskIopsLimited", "", "limited01"),
    ("EsxiVmEmulatedControllerBusy", "", "lsi01"),
}


# vSphere's real-time samples are 20 s apart (however often the exporter asks): a rate needs a
# window that holds two or more of them, so this run's rate window is 60s, not 15s.
VSPHERE_FAST = {**FAST, "rate_window": "60s"}


def vsphere_vms_fixture(path: Path) -> Path:
    """The storage simulator's fixture cut to its first host, three LUNs and the VMs above."""
    host = copy.deepcopy(json.loads(FIXTURE.read_text())["hosts"][0])
    datastores = {FIG2_OVER: "ds-shared-02", FIG2_OK: "ds-shared-01", ISCSI: "ds-iscsi-01"}
    host["luns"] = [lun for lun in host["luns"] if lun["name"] in datastores]
    for lun in host["luns"]:
        lun.pop("state", None)  # healthy devices: only the VMs are in question here
        if lun["name"] != ISCSI:
            lun["queue_depth"] = lun["perf"]["disk.maxQueueDepth.average"] = 32
        else:
            lun["esxcli_dsnro"] = lun["queue_depth"]  # DSNRO = DQLEN, as the paper asks
    host["datastore_perf"] = {ds: v for ds, v in host["datastore_perf"].items() if ds in datastores.values()}

    def vm(name, lun, oio=(0, 0), iops=(100, 100), latency_ms=(5, 5), controller="pvscsi", **extra) -> dict:
        perf = {"virtualDisk.numberReadAveraged.average": iops[0], "virtualDisk.numberWriteAveraged.average": iops[1]}
        perf |= {"virtualDisk.read.average": 8 * iops[0], "virtualDisk.write.average": 8 * iops[1]}  # KB/s
        perf |= {"virtualDisk.totalReadLatency.average": latency_ms[0], "virtualDisk.totalWriteLatency.average": latency_ms[1]}
        perf |= {"virtualDisk.readOIO.latest": oio[0], "virtualDisk.writeOIO.latest": oio[1]}
        disk = {"controller": controller, "bus": 0, "unit": 0, "datastore": datastores[lun], "provisioning": "thin"}
        return {"name": name, "disks": [{**disk, **extra, "perf": perf}]}

    host["vms"] = [vm(f"over{i}", FIG2_OVER, oio=(16, 0)) for i in range(1, 5)]
    host["vms"] += [vm(f"ok{i}", FIG2_OK, oio=(4, 4)) for i in range(1, 5)]
    host["vms"] += [
        vm("slow01", FIG2_OK, latency_ms=(80, 60)),  # 70 ms per I/O at 200 I/Os per second
        vm("limited01", FIG2_OK, iops=(300, 200), iops_limit=500),  # at its limit
        vm("lsi01", FIG2_OK, iops=(2500, 500), controller="lsilogic"),  # 3,000 IOPS through LSI Logic
        vm("hog01", ISCSI, oio=(100, 40)),
        vm("quiet01", ISCSI, oio=(4, 4)),
    ]
    path.write_text(json.dumps({"hosts": [host]}))
    return path


@pytest.mark.integration
def test_the_capacity_rules_and_vm_alerts_work_from_the_vsphere_api_alone(tmp_path):
    """No esxtop, no worlds: the exporter reads the storage simulator through the vSphere API and a
    real Prometheus with the project's rules (windows shortened as above) takes a from the VMs'
    virtual disks, computes m = d/a and n/a, fires EsxiLunVmsBeyondHostCapacity where the paper's
    Figure 2 says (and not on the LUN exactly at m), and each VM alert on its VM, nothing else."""
    password = tmp_path / "password"
    password.write_text(PASSWORD + "\n")
    password.chmod(0o600)
    sim = StorageSim(tmp_path / "sim", fixture=vsphere_vms_fixture(tmp_path / "vms.json"))
    exporter = prometheus = None
    try:
        exporter = Exporter(
            "--vsphere", sim.url, "--vsphere.user", USER, "--vsphere.password-file", str(password),
            "--vsphere.ca-file", str(sim.cert), "--vsphere.interval=1s", log_path=tmp_path / "exporter.log",
        )  # fmt: skip
        rules = rule_file(tmp_path / "esxi-storage.rules.yml", VSPHERE_FAST)
        prometheus = Prometheus(tmp_path / "prometheus", [f"127.0.0.1:{exporter.port}"], rule_files=[rules])
        assert not prometheus.query("esxi_lun_world_active_commands")  # the API alone

        def firing() -> set[tuple[str, str, str]]:
            alerts = prometheus.query('ALERTS{alertstate="firing"}')
            return {(s["metric"]["alertname"], s["metric"].get("device", ""), s["metric"].get("vm", "")) for s in alerts}

        # the longest for: is the emulated controller's 30s, once its rate window holds two samples
        deadline = time.monotonic() + 150
        while firing() != VSPHERE_EXPECTED and time.monotonic() < deadline:
            time.sleep(1)
        time.sleep(5)  # and nothing more comes
        fired = firing()
        hosts = {s["metric"]["host"] for s in prometheus.query('ALERTS{alertstate="firing"}')}

        def value(expr: str) -> dict[str, float]:
            return {s["metric"]["device"]: float(s["value"][1]) for s in prometheus.query(expr)}

        d = value("host_device:esxi_lun_queue_depth:max")
        a = value("host_device:esxi_lun_vm_outstanding_commands:avg")
        m = value("host_device:esxi_lun_vm_capacity:count")
        vms = value("host_device:esxi_lun_vms:count")
        n_over_a = value("device:esxi_lun_vm_capacity:count")
        description = prometheus.query('ALERTS{alertname="EsxiVmNoisyNeighbour"}')
    finally:
        stop_all(prometheus, exporter, sim)
    assert fired == VSPHERE_EXPECTED
    assert hosts == {VSPHERE_HOST}
    assert d == {FIG2_OVER: 32, FIG2_OK: 32, ISCSI: 128}
    assert a == {FIG2_OVER: 16, FIG2_OK: 8, ISCSI: 74}  # the alert VMs on FIG2_OK keep none outstanding
    assert m == {FIG2_OVER: 2, FIG2_OK: 4, ISCSI: pytest.approx(128 / 74)}  # m = d/a
    assert vms == {FIG2_OVER: 4, FIG2_OK: 4, ISCSI: 2}  # 4 > m = 2 fires; 4 = m = 4 does not
    assert n_over_a == {FIG2_OVER: 256 / 16, FIG2_OK: 256 / 8, ISCSI: pytest.approx(256 / 74)}  # n = 256
    assert [s["metric"]["vm"] for s in description] == ["hog01"]
