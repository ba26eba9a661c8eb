"""The limits on what a host or vCenter may make the exporter read and keep (issue 37, goal 7;
docs/operations.md#limits): each is an option (flag, environment, YAML) whose default is the code's
constant, a value out of range is refused in one line naming it, and the value given reaches the
code that uses it through the app's wiring: a small one makes a small answer refused."""

from __future__ import annotations

import sys
import types

import pytest

from exporter import app as app_module
from exporter.app import App
from exporter.configuration import config
from exporter.configuration.flags import exporter_options
from exporter.esxcli import ssh as esxcli_ssh
from exporter.esxcli.inventory import AnswerTooLarge
from exporter.smart import parse, plan
from exporter.smart.rounds import SmartRounds
from exporter.smart.ssh import SmartOverSsh
from exporter.smart.vsphere import SmartOverVsphere
from exporter.store import model as m
from exporter.store.store import Store
from exporter.vsan import refused
from simulators.esxi_ssh.esxcli import HDD, NVME, SSD
from tests.support.cli import REAL, run_cli
from tests.support.smart_runner import GET, HOST, Edited, FixtureRunner, table

LIMITS = {  # option -> the constant its default is
    "smart.max_answer_size": plan.MAX_ANSWER,
    "smart.max_attributes": parse.MAX_ATTRIBUTES,
    "esxtop.ssh_esxcli_max_answer_size": esxcli_ssh.MAX_OUTPUT,
    "limits.max_label_length": parse.MAX_LABEL,
}
BASE = {
    "vsphere__url": "https://vc.example.com",
    "vsphere__user": "u",
    "vsphere__password_file": "/p",
    "esxtop__ssh": ["root@esx01"],
}


def wired(monkeypatch, **flags) -> dict[str, object]:
    """The objects serve builds from these flags (as `--smart.max-attributes 3` gives them), by
    thread name, without starting a thread or connecting anywhere."""
    settings = config.load(exporter_options(), {**BASE, **{key.replace(".", "__"): v for key, v in flags.items()}})
    app = App(settings)
    built: dict[str, object] = {}
    monkeypatch.setattr(app_module, "start_thread", lambda name, run, *args: built.setdefault(name, run.__self__))
    app._start_smart()
    app._start_esxcli_over_ssh(app.ssh.streams)
    built["vsan"] = app.vsan[0]
    return built


def smart_round(smart, runner) -> Store:
    """One SMART round through the SshEsxcli the app built (its limits), over the fixture host."""
    store = Store()
    smart.esxcli.runner = runner
    assert SmartRounds(store).refresh(HOST, smart.esxcli)
    return store


def test_each_limit_is_an_option_whose_default_is_the_constant():
    defaults = {o.key: o.default for o in exporter_options()}
    assert {key: defaults[key] for key in LIMITS} == LIMITS
    assert LIMITS == {
        "smart.max_answer_size": 1 << 20,
        "smart.max_attributes": 256,
        "esxtop.ssh_esxcli_max_answer_size": 16 << 20,
        "limits.max_label_length": 128,
    }
    assert refused.MAX_LABEL == parse.MAX_LABEL == parse.Limits().label  # one bound for SMART and vSAN labels
    assert parse.Limits().answer == plan.MAX_ANSWER and parse.Limits().attributes == parse.MAX_ATTRIBUTES


def test_a_limit_out_of_range_is_refused_in_one_line_naming_its_flag():
    done = run_cli(
        "dump",
        "--esxtop-file",
        REAL,
        "--smart.max-answer-size",
        "0",
        "--smart.max-attributes",
        "0",
        "--esxtop.ssh-esxcli-max-answer-size",
        "lots",
        "--limits.max-label-length",
        "10",
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [
        "esxi-storage-exporter: flag --smart.max-answer-size: must be larger than 0: '0'",
        "esxi-storage-exporter: flag --smart.max-attributes: must be 1 or more: '0'",
        "esxi-storage-exporter: flag --esxtop.ssh-esxcli-max-answer-size: not a number with a unit: 'lots'",
        "esxi-storage-exporter: flag --limits.max-label-length: must be 100 or more: '10'",
    ]


def test_the_environment_and_the_file_are_validated_alike(tmp_path):
    path = tmp_path / "exporter.yml"
    path.write_text("smart:\n  max_attributes: -1\nlimits:\n  max_label_length: 99\n")
    with pytest.raises(config.ConfigError) as err:
        config.load(exporter_options(), {}, environ={"ESXI_EXPORTER_SMART_MAX_ANSWER_SIZE": "0B"}, config_file=str(path))
    assert err.value.problems == [
        "environment ESXI_EXPORTER_SMART_MAX_ANSWER_SIZE: must be larger than 0: '0B'",
        f"{path}: smart.max_attributes: must be 1 or more: -1",
        f"{path}: limits.max_label_length: must be 100 or more: 99",
    ]
    good = config.load(exporter_options(), {}, environ={"ESXI_EXPORTER_SMART_MAX_ANSWER_SIZE": "2MiB"})
    assert good["smart.max_answer_size"] == 2 << 20 and good["smart.max_attributes"] == 256


def test_smart_max_answer_size_reaches_both_ways_of_reading_smart(monkeypatch):
    built = wired(monkeypatch, **{"smart.max_answer_size": "600"})  # the HDD page is 657 bytes, the SSD's 728
    ssh, api = built["smart-ssh:esx01"], built["smart-vsphere:vc.example.com"]
    assert isinstance(ssh, SmartOverSsh) and isinstance(api, SmartOverVsphere)
    assert ssh.esxcli.limits.answer == api.limits.answer == 600
    store = smart_round(ssh, FixtureRunner())
    disks = store.disk_health[HOST].disks
    assert disks[HDD].smart_status == disks[SSD].smart_status == "unreadable"
    assert disks[NVME].smart_status == "ok"  # 385 bytes: read
    assert store.health[("smart", HOST)].errors == {f"{GET}/too_large": 2, "nvme device log smart get/too_large": 1}  # 788 bytes
    default = smart_round(wired(monkeypatch)["smart-ssh:esx01"], FixtureRunner())
    assert default.disk_health[HOST].disks[HDD].smart_status == "ok" and default.health[("smart", HOST)].errors == {}


def test_smart_max_attributes_reaches_the_parser(monkeypatch):
    built = wired(monkeypatch, **{"smart.max_attributes": "3"})
    assert built["smart-vsphere:vc.example.com"].limits.attributes == 3
    store = smart_round(built["smart-ssh:esx01"], FixtureRunner())
    assert list(store.disk_health[HOST].disks[HDD].smart.attributes) == [
        "read_error_count",
        "power_on_hours",
        "power_cycle_count",
    ]
    assert store.health[("smart", HOST)].errors == {f"{GET}/too_many_attributes": 3}  # each page has more than 3
    default = smart_round(wired(monkeypatch)["smart-ssh:esx01"], FixtureRunner())
    assert len(default.disk_health[HOST].disks[HDD].smart.attributes) > 3 and default.health[("smart", HOST)].errors == {}


def test_the_label_length_reaches_smart_pages_device_lists_and_vsan(monkeypatch):
    name = "Vendor Specific Attribute " + "X" * 84  # 110 characters: over 100, under 128
    device = "t10.ATA_____" + "Y" * 98  # 110 characters
    page = table(("Health Status", "OK", "N/A", "N/A", "N/A"), (name, "100", "0", "100", "7"))

    class LongNames(Edited):
        def answer(self, words):
            text = super().answer(words)
            return text.replace(SSD, device) if words[:4] == ["storage", "core", "device", "list"] else text

    built = wired(monkeypatch, **{"limits.max_label_length": "100"})
    assert built["smart-vsphere:vc.example.com"].limits.label == 100
    store = smart_round(built["smart-ssh:esx01"], LongNames({HDD: lambda _: page}))
    assert store.disk_health[HOST].disks[HDD].smart.attributes == {} and device not in store.disk_health[HOST].disks
    assert store.health[("smart", HOST)].errors == {f"{GET}/label_too_long": 1, "storage core device list/label_too_long": 1}
    default = smart_round(wired(monkeypatch)["smart-ssh:esx01"], LongNames({HDD: lambda _: page}))
    assert list(default.disk_health[HOST].disks[HDD].smart.attributes) == [parse.snake_case(name)]
    assert device in default.disk_health[HOST].disks

    # vSAN: the source the app built refuses a state over 100 characters, which the default keeps
    state = "reducedavailability" + "x" * 91  # 110 characters
    detail = types.SimpleNamespace(health=state, numObjects=2)
    summary = types.SimpleNamespace(
        overallHealth="green", timestamp=None, objectHealth=types.SimpleNamespace(objectHealthDetail=[detail])
    )
    for source, kept in ((built["vsan"], False), (wired(monkeypatch)["vsan"], True)):
        cluster, dropped = m.VsanCluster(name="c", uuid="u"), refused.Dropped()
        source._apply_summary(cluster, summary, dropped)
        assert (cluster.objects != {}) is kept and dropped == ({} if kept else {"label_too_long": 1})


def test_the_esxcli_cap_over_ssh_reaches_both_runners(monkeypatch, tmp_path):
    fake_ssh = tmp_path / "ssh"  # stands in for the ssh client: prints 2,000 bytes whatever is asked
    fake_ssh.write_text(f"#!{sys.executable}\nimport sys\nsys.stdout.write('x' * 2000)\n")
    fake_ssh.chmod(0o755)
    built = wired(monkeypatch, **{"esxtop.ssh_esxcli_max_answer_size": "1KiB"})
    runners = [built["esxcli-ssh:esx01"], built["smart-ssh:esx01"].esxcli.runner]  # the configuration's, SMART's lists
    for runner in runners:
        runner.ssh = str(fake_ssh)
        assert runner.max_output == 1024
        with pytest.raises(AnswerTooLarge):
            runner.text(["storage", "core", "device", "list"])
    default = wired(monkeypatch)["esxcli-ssh:esx01"]
    default.ssh = str(fake_ssh)
    assert default.text(["storage", "core", "device", "list"]) == "x" * 2000
