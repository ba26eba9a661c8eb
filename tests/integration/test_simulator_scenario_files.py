"""Scenarios are data: the built-in list, user files, and one-line errors that name file and field."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter.esxtop import read_file
from exporter.simulator import ScenarioError, Simulation, list_scenarios, load_scenario
from exporter.simulator.scenario import load_events_scenario, load_space_scenario, load_vsan_scenario
from exporter.store import model as m
from tests.support.servers import ROOT, exporter_env, free_port, stop, wait_http

# A small valid scenario; each error case below breaks one thing in it.
GOOD = textwrap.dedent("""\
    description: one VM on one LUN
    luns:
      - {device: naa.6000000000000001, datastore: ds1, service_time: 2ms, absorbs: 16}
    hosts:
      - name: lab01
        adapters:
          - {name: vmhba1, type: fc, link_speed: 400MB/s}
        luns:
          - {device: naa.6000000000000001, queue_depth: 16, paths: {vmhba1:C0:T0:L1: active}}
        vms:
          - {name: db, lun: naa.6000000000000001, oio: 24, block_size: 8KiB, read_ratio: 0.5}
    phases:
      - {name: quiet, duration: 1m, vms: {db: {oio: 2}}}
      - {name: busy, duration: 1m}
    """)


def run(*args):
    return subprocess.run(
        [sys.executable, "-m", "exporter", *args], capture_output=True, text=True, env=exporter_env(), cwd=ROOT, timeout=60
    )


def test_builtin_list_has_the_issues_scenarios_each_with_one_line():
    scenarios = list_scenarios()
    names = [n for n, _ in scenarios]
    assert names == sorted(names)
    assert set(names) >= {
        "queue-ok",
        "queue-overrun",
        "shared-lun-N-hosts",
        "link-saturation",
        "reservations",
        "dsnro-mismatch",
        "shared-qdepth-128",
        "cpu-cost",
        "demo",
    }
    for name, description in scenarios:
        assert description and "\n" not in description, name
        # a vSAN cluster, datastores filling, a storage incident's events, or esxtop hosts
        scenario = load_vsan_scenario(name) or load_space_scenario(name) or load_events_scenario(name) or load_scenario(name)
        assert scenario.description == description


def test_the_shared_lun_template_takes_n_from_the_name():
    assert [h.name for h in load_scenario("shared-lun-3-hosts").hosts] == [
        "esx01.lab.local",
        "esx02.lab.local",
        "esx03.lab.local",
    ]
    assert len(load_scenario("shared-lun-N-hosts").hosts) == 8  # the default
    with pytest.raises(ScenarioError, match=r"shared-lun-N-hosts\.yaml: parameter N=65 is outside 1\.\.64"):
        load_scenario("shared-lun-65-hosts")


def test_a_user_scenario_file_runs_with_its_phases(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(GOOD)
    out = tmp_path / "mine.csv"
    result = run("simulate", str(path), "--duration", "2m", "--out", str(out))
    assert result.returncode == 0, result.stderr
    samples = list(read_file(out))[1:]
    lun = [s.luns["naa.6000000000000001"] for s in samples]
    quiet, busy = lun[:11], lun[13:]  # the first minute, then the second (a sample covers the 5 s before it)
    assert {(x[m.ACTIVE], x[m.QUEUED]) for x in quiet} == {(2, 0)}
    assert {(x[m.ACTIVE], x[m.QUEUED]) for x in busy} == {(16, 8)}  # one VM: DQLEN applies, not DSNRO


BROKEN = [
    # (what to replace in GOOD, with what, expected message after the file name)
    ("description: one VM on one LUN\n", "", "description: missing required field"),
    ("oio: 24", "oios: 24", "hosts[0].vms[0].oio: missing required field (is 'oios' a typo?)"),
    ("read_ratio: 0.5", "read_ratio: 0.5, color: red", "hosts[0].vms[0].color: unknown field"),
    ("oio: 24", "oio: lots", "hosts[0].vms[0].oio: expected an integer, got 'lots'"),
    ("oio: 24", "oio: -1", "hosts[0].vms[0].oio: must not be negative, got -1"),
    ("service_time: 2ms", "service_time: 2 parsecs", "luns[0].service_time: expected a duration"),
    ("block_size: 8KiB", "block_size: 8 kilo", "hosts[0].vms[0].block_size: expected a size"),
    ("read_ratio: 0.5", "read_ratio: 50", "hosts[0].vms[0].read_ratio: must be in 0..1, got 50"),
    (
        "{name: db, lun: naa.6000000000000001",
        "{name: db, lun: naa.6000000000000002",
        "hosts[0].vms[0].lun: not one of this host's luns, got 'naa.6000000000000002'",
    ),
    (
        "vmhba1:C0:T0:L1: active",
        "vmhba9:C0:T0:L1: active",
        "hosts[0].luns[0].paths.vmhba9:C0:T0:L1: adapter vmhba9 is not one of this host's adapters",
    ),
    ("vmhba1:C0:T0:L1: active", "vmhba1:C0:T0:L1: standby", "hosts[0].luns[0].paths: at least one path must be active"),
    ("vmhba1:C0:T0:L1: active", "vmhba1:C0:T0:L1: sleepy", "hosts[0].luns[0].paths.vmhba1:C0:T0:L1: state must be one of"),
    ("{name: vmhba1,", "{name: hba1,", "hosts[0].adapters[0].name: not a valid adapter name (vmhbaN): 'hba1'"),
    ("device: naa.6000000000000001, datastore", "device: disk1, datastore", "luns[0].device: not a valid device name"),
    ("name: lab01", "name: lab:01", "hosts[0].name: not a valid name: 'lab:01'"),
    ("vms: {db: {oio: 2}}", "vms: {dbx: {oio: 2}}", "phases[0].vms.dbx: no VM of that name in the scenario"),
    (
        "{name: busy, duration: 1m}",
        "{name: busy, duration: 1m, vmfs_ops: [{host: lab01, lun: naa.6000000000000001, "
        "reservations_per_second: 50, hold: 20ms}]}",
        "phases[1].vmfs_ops: reservations would hold naa.6000000000000001 100%",
    ),
    (
        "{name: busy, duration: 1m}",
        "{name: busy, duration: 1m, vmfs_ops: [{host: lab02, lun: naa.6000000000000001, "
        "reservations_per_second: 1, hold: 20ms}]}",
        "phases[1].vmfs_ops[0].host: no host of that name, got 'lab02'",
    ),
    ("{name: busy, duration: 1m}", "{name: busy, duration: 0s}", "phases[1].duration: must be above zero, got '0s'"),
    (
        "adapters:\n      - {name: vmhba1, type: fc, link_speed: 400MB/s}",
        "adapters: vmhba1",
        "hosts[0].adapters: expected a list, got a string",
    ),
    ("luns:\n  - {device", "luns:\n  - [device", "line 3: invalid YAML"),
    (
        "read_ratio: 0.5}",
        "read_ratio: 0.5, controller: scsi}",
        "hosts[0].vms[0].controller: must be one of pvscsi, lsilogic, lsilogic-sas, buslogic, ahci, nvme, ide, got 'scsi'",
    ),
    ("read_ratio: 0.5}", "read_ratio: 0.5, disks: 0}", "hosts[0].vms[0].disks: must be 1..15 on one pvscsi controller, got 0"),
    (
        "read_ratio: 0.5}",
        "read_ratio: 0.5, controller: ide, disks: 5}",
        "hosts[0].vms[0].disks: must be 1..4 on one ide controller, got 5",
    ),
    (
        "read_ratio: 0.5}",
        "read_ratio: 0.5, provisioning: thick}",
        "hosts[0].vms[0].provisioning: must be one of thin, thick_lazy, thick_eager, got 'thick'",
    ),
]


@pytest.mark.parametrize("old,new,message", BROKEN, ids=[b[2].split(":")[0] for b in BROKEN])
def test_bad_scenario_files_give_one_line_naming_file_and_field(tmp_path, old, new, message):
    assert old in GOOD
    path = tmp_path / "bad.yaml"
    path.write_text(GOOD.replace(old, new, 1))
    with pytest.raises(ScenarioError) as caught:
        load_scenario(str(path))
    text = str(caught.value)
    assert "\n" not in text
    assert text.startswith(f"{path}: "), text
    assert message in text, text


def test_the_command_line_reports_errors_in_one_line_without_traceback(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(GOOD.replace("oio: 24", "oio: lots"))
    for args, message in [
        (["simulate", str(path)], f"simulate: {path}: hosts[0].vms[0].oio: expected an integer"),
        (["simulate", "no-such-scenario"], "simulate: unknown scenario 'no-such-scenario'"),
        (["simulate", str(tmp_path / "missing.yaml")], "missing.yaml: cannot read scenario file"),
        (["simulate", "reservations"], "the scenario has 2 hosts: give --out DIRECTORY"),
        (["simulate", "reservations", "--host", "esx09"], "scenario reservations has no host 'esx09'"),
        (
            ["simulate", "reservations", "--out", str(tmp_path / "both.csv")],
            "both.csv: the scenario has 2 hosts, so --out must be a directory",
        ),
        (["simulate", "queue-ok", "--duration", "soon"], "argument --duration: expected a duration"),
    ]:
        result = run(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert "Traceback" not in result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 or "usage:" in result.stderr, result.stderr
        assert message in result.stderr, (args, result.stderr)


def test_simulate_list_prints_one_line_per_scenario():
    result = run("simulate", "--list")
    assert result.returncode == 0
    lines = result.stdout.strip().splitlines()
    assert [line.split()[0] for line in lines] == [n for n, _ in list_scenarios()]


def test_no_command_serves_the_demo():
    """`esxi-storage-exporter` with no command serves the simulated `demo` hosts (serve is the
    core's; the hosts, devices and configuration in the exposition are the demo scenario's)."""
    demo = Simulation(load_scenario("demo"))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "exporter", f"--web.listen-address=127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=exporter_env(),
        cwd=ROOT,
    )
    try:
        wait_http(url + "/-/healthy", proc=proc)
        body = ""
        deadline = time.monotonic() + 20
        while "esxi_lun_commands_total" not in body and time.monotonic() < deadline:
            time.sleep(0.2)
            with urllib.request.urlopen(url + "/metrics", timeout=10) as response:
                body = response.read().decode()
        series = {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(body)
            for s in family.samples
        }
        for host in demo.hosts:
            key = (("device", "naa.600601601e3021001a2b3c4d5e6f00a1"), ("host", host))
            assert series[("esxi_lun_queue_depth", key)] == 32
            assert series[("esxi_host_dsnro", (("host", host),))] == 32
    finally:
        stop(proc)
