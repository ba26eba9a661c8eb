"""esxcli's storage configuration as real hosts print it (fixtures written to the rules of the
format: colons and spaces in values, padded vendors, missing keys on older hosts, CSV with sorted
columns and a trailing comma, quoted cells, empty values), read into the model."""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.esxcli import filesystem, parse, storage
from exporter.esxcli.inventory import ADAPTERS, DEVICES, HPP, NMP, EsxcliError, read
from exporter.store import model as m
from tests.support.esxcli_devices import GOLD, NVME, PE, SAN

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "esxcli"


def text(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_default_device_list_per_device_values():
    records, problems = parse.blocks(text("device-list.txt"))
    assert problems == []
    inv = m.Inventory(host="esx01")
    lines: list[str] = []
    storage.devices(inv, records, lines)
    assert lines == []
    san, gold, nvme, pe = (inv.luns[d] for d in (SAN, GOLD, NVME, PE))
    assert (san.dsnro, san.configured_queue_depth, san.queue_full_sample_size, san.queue_full_threshold) == (32, 64, 0, 8)
    assert (gold.dsnro, gold.queue_full_sample_size, gold.queue_full_threshold, gold.status) == (64, 32, 4, "degraded")
    assert san.display_name == f"DGC Fibre Channel Disk ({SAN})"  # a value with parentheses and spaces
    assert (san.vendor, san.model) == ("DGC", "VRAID")  # padded vendor strings trimmed
    assert (nvme.plugin, nvme.is_local, nvme.is_ssd, nvme.configured_queue_depth) == ("HPP", True, True, 1023)
    assert pe.is_vvol_pe is True and m.device_kind(PE, pe) == "vvol_pe" and m.device_kind(NVME, nvme) == "nvme"
    assert inv.dsnro_source == "device"


def test_csv_device_list_reads_the_same_as_text():
    records, problems = parse.csv_records(text("device-list.csv"))
    assert problems == [] and len(records) == 2
    inv = m.Inventory(host="esx01")
    storage.devices(inv, records, [])
    assert inv.luns[GOLD].display_name == "LUN 20, gold tier"  # a quoted cell with a comma
    assert (inv.luns[SAN].dsnro, inv.luns[SAN].configured_queue_depth, inv.luns[SAN].vendor) == (32, 64, "DGC")
    from_text, _ = parse.blocks(text("device-list.txt"))
    inv_text = m.Inventory(host="esx01")
    storage.devices(inv_text, from_text, [])
    for field in (
        "dsnro",
        "configured_queue_depth",
        "queue_full_sample_size",
        "queue_full_threshold",
        "plugin",
        "status",
        "is_ssd",
    ):
        assert getattr(inv.luns[GOLD], field) == getattr(inv_text.luns[GOLD], field), field


def test_an_older_host_without_max_queue_depth_is_unknown_not_an_error():
    records, problems = parse.blocks(text("device-list-esxi55.txt"))
    inv = m.Inventory(host="esx55")
    lines: list[str] = []
    storage.devices(inv, records, lines)
    (lun,) = inv.luns.values()
    assert problems == [] and lines == []
    assert lun.configured_queue_depth is None and lun.dsnro == 32 and lun.is_vvol_pe is None


def test_nmp_round_robin_limits_and_policies():
    records, problems = parse.blocks(text("nmp-device-list.txt"))
    assert problems == []
    inv = m.Inventory(host="esx01")
    storage.nmp_devices(inv, records, [])
    san, gold, pe = inv.luns[SAN], inv.luns[GOLD], inv.luns[PE]
    assert (san.satp, san.psp, san.psp_limit_type, san.psp_iops_limit, san.psp_bytes_limit) == (
        "VMW_SATP_ALUA_CX",
        "VMW_PSP_RR",
        "Iops",
        1,
        10485760,
    )
    assert (gold.psp, gold.psp_limit_type, gold.psp_iops_limit) == ("VMW_PSP_MRU", "", None)
    assert (pe.psp_limit_type, pe.psp_iops_limit) == ("Default", 1000)


def test_adapter_table_and_driver_queue_depth_parameter():
    records, problems = parse.table(text("adapter-list.txt"))
    assert problems == [] and [r["hbaname"] for r in records] == ["vmhba0", "vmhba1", "vmhba2", "vmhba64"]
    assert records[0]["capabilities"] == ""  # an empty cell
    inv = m.Inventory(host="esx01")
    storage.adapters(inv, records, [])
    params, problems = parse.table(text("module-parameters-qlnativefc.txt"))
    assert problems == [] and params[0]["value"] == ""  # the default in force
    storage.module_parameters(inv, "qlnativefc", params, [])
    assert (inv.adapters["vmhba1"].driver, inv.adapters["vmhba1"].queue_depth_parameter) == ("qlnativefc", "ql2xmaxqdepth")
    assert inv.adapters["vmhba1"].queue_depth_parameter_value == 64 == inv.adapters["vmhba2"].queue_depth_parameter_value
    assert inv.adapters["vmhba0"].queue_depth_parameter == "" and inv.adapters["vmhba0"].queue_depth_parameter_value is None


def test_a_bad_line_and_a_bad_value_are_each_one_problem_and_the_rest_is_kept():
    broken = text("device-list.txt").replace("   Queue Full Threshold: 4\n", "   garbage without a colon\n")
    broken = broken.replace(
        "No of outstanding IOs with competing worlds: 64", "No of outstanding IOs with competing worlds: lots"
    )
    records, problems = parse.blocks(broken)
    assert [(p.reason, p.line) for p in problems] == [("bad_line", 55)]  # the line it replaced
    inv = m.Inventory(host="esx01")
    lines: list[str] = []
    storage.devices(inv, records, lines)
    assert lines == [f"{GOLD}: noofoutstandingioswithcompetingworlds: not a whole number: 'lots'"]
    assert inv.luns[GOLD].dsnro is None and inv.luns[GOLD].queue_full_sample_size == 32  # the rest kept
    assert inv.luns[SAN].dsnro == 32 and len(inv.luns) == 4


def host_outputs() -> dict:
    """What a host's esxcli prints for each command read (words -> parsed answer)."""
    return {
        tuple(DEVICES): parse.blocks(text("device-list.txt")),
        tuple(NMP): parse.blocks(text("nmp-device-list.txt")),
        tuple(ADAPTERS): parse.table(text("adapter-list.txt")),
        ("system", "module", "parameters", "list", "-m", "qlnativefc"): parse.table(text("module-parameters-qlnativefc.txt")),
        # VAAI and VMFS locking (tests/unit/test_esxcli_vaai.py reads every form)
        ("storage", "core", "device", "vaai", "status", "get"): parse.blocks(text("vaai-status.txt")),
        ("system", "settings", "advanced", "list", "-o", "/VMFS3/UseATSForHBOnVMFS5"): parse.settings(
            text("advanced-UseATSForHBOnVMFS5.txt")
        ),
        ("system", "settings", "advanced", "list", "-o", "/VMFS3/HardwareAcceleratedLocking"): parse.settings(
            text("advanced-HardwareAcceleratedLocking.txt")
        ),
        ("storage", "vmfs", "lockmode", "list"): parse.table(text("vmfs-lockmode-list.txt")),
    }


def test_read_runs_every_command_and_counts_failures_without_stopping():
    outputs = host_outputs()

    def fetch(words):
        if tuple(words) in (tuple(HPP),):
            raise EsxcliError("Unknown command or namespace storage hpp device list")  # an older host
        if tuple(words) == ("system", "module", "parameters", "list", "-m", "nvme_pcie"):
            raise EsxcliError("module not found")
        return outputs[tuple(words)]

    inv, problems = read("esx01", fetch)
    assert problems == []  # no HPP namespace is no error
    assert inv.luns[SAN].psp_iops_limit == 1 and inv.luns[SAN].dsnro == 32
    assert inv.adapters["vmhba1"].queue_depth_parameter_value == 64
    outputs.pop(tuple(NMP))

    def failing_nmp(words):
        if tuple(words) == tuple(NMP):
            raise EsxcliError("connection closed")
        return fetch(words)

    inv, problems = read("esx01", failing_nmp)
    assert problems == [("storage nmp device list", "failed", "connection closed")]
    assert inv.luns[SAN].dsnro == 32 and inv.luns[SAN].psp == ""  # the rest of the inventory kept


@pytest.mark.parametrize("bad", ["", "header only without rule\n"])
def test_empty_or_headerless_tables_are_problems(bad):
    records, problems = parse.table(bad)
    assert records == [] and [p.reason for p in problems] == ["empty"]


def test_a_refresh_over_ssh_counts_every_problem_and_logs_each_cause_once(caplog):
    """Every 5 minutes the same fault: counted each refresh, logged once (FaultLog, through
    exporter.esxcli.health); logged again when its message changes, and its end once."""
    import logging
    import threading

    from exporter.esxcli.ssh import EsxcliOverSsh
    from exporter.ssh.target import SshTarget
    from exporter.store.store import Store

    nmp_fails = ["connection closed"]
    outputs = host_outputs()

    def fetch(words):
        if tuple(words) == tuple(HPP):
            raise EsxcliError("Unknown command or namespace storage hpp device list")
        if tuple(words) == tuple(NMP) and nmp_fails:
            raise EsxcliError(nmp_fails[0])
        if tuple(words) == tuple(filesystem.COMMAND):
            return [], []  # no datastores: space is test_space's
        return outputs[tuple(words)]

    store = Store()
    runner = EsxcliOverSsh(SshTarget(host="esx01.lab"), store, threading.Event(), lambda: "esx01")
    runner.fetch = fetch
    with caplog.at_level(logging.INFO, logger="exporter.esxcli.ssh"):
        assert [runner.refresh("esx01") for _ in range(3)] == [False] * 3
        nmp_fails[0] = "hostd is busy"
        assert not runner.refresh("esx01") and not runner.refresh("esx01")
        nmp_fails.clear()
        assert runner.refresh("esx01") and runner.refresh("esx01")
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", "esxcli on esx01.lab: storage nmp device list failed: connection closed"),
        ("WARNING", "esxcli on esx01.lab: storage nmp device list failed: hostd is busy"),
        ("INFO", "esxcli on esx01.lab: storage nmp device list answers again"),
    ]
    record = store.health[("esxcli", "esx01")]
    assert (record.up, record.errors) == (1, {"storage nmp device list/failed": 5})
