"""VAAI and VMFS locking configuration from esxcli (issue 44 item 4), every form a host prints.

The fixtures in tests/fixtures/esxcli/ follow the forms public sources show: `vaai status get`
as blocks under the device name (`VAAI Plugin Name:` empty for T10 devices, `supported`,
`unsupported`, `unknown` before the host has tried a primitive, an old host without `Delete
Status`, blank lines at the end); `system settings advanced list -o` as indented fields with no
name line (7.0+ adds `Host Specific` and `Impact`); `storage vmfs lockmode list` as the dashed
table of vSphere's storage guide (`Locking Mode` ATS-only, ATS+SCSI, ATS UPGRADE PENDING; `ATS
Upgrade Modes` "Online or Offline" with spaces; a boolean right-aligned; an empty last cell).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.collectors import device_config
from exporter.esxcli import parse, vaai
from exporter.esxcli.inventory import EsxcliError, read
from exporter.esxcli.ssh import SHAPES
from exporter.store import model as m
from exporter.store.store import Store
from tests.support.esxcli_devices import GOLD, NVME, PE, SAN

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "esxcli"
DREVO = "t10.ATA_____DREVO_X1_SSD____________________________TW1770103538________"


def text(name: str) -> str:
    return (FIXTURES / name).read_text()


def applied(apply, records, inv=None):
    inv = inv or m.Inventory(host="esx01")
    problems: list[str] = []
    apply(inv, records, problems)
    return inv, problems


def test_vaai_status_esxi7_every_status_and_an_empty_plugin_name():
    records, bad = parse.blocks(text("vaai-status.txt"))
    assert bad == [] and len(records) == 4
    inv, problems = applied(vaai.vaai_status, records)
    assert problems == []
    assert inv.luns[SAN].vaai_status == {"ats": "supported", "clone": "supported", "zero": "supported", "unmap": "supported"}
    assert inv.luns[GOLD].vaai_status["unmap"] == "unsupported"
    assert inv.luns[NVME].vaai_status["clone"] == "unsupported"
    assert set(inv.luns[PE].vaai_status.values()) == {"unknown"}


def test_vaai_status_esxi65_local_disk_and_a_host_without_delete_status():
    records, bad = parse.blocks(text("vaai-status-esxi65.txt"))
    assert bad == []  # the trailing blank lines are no record
    inv, problems = applied(vaai.vaai_status, records)
    assert problems == []
    assert set(inv.luns[DREVO].vaai_status.values()) == {"unsupported"}
    assert inv.luns[SAN].vaai_status == {"ats": "supported", "clone": "supported", "zero": "supported"}  # no unmap: not reported


def test_vaai_status_an_unreadable_value_is_one_problem_and_the_rest_kept():
    broken = text("vaai-status.txt").replace("Delete Status: unsupported", "Delete Status: maybe")
    inv, problems = applied(vaai.vaai_status, parse.blocks(broken)[0])
    assert problems == [f"{GOLD}: deletestatus: not supported, unsupported or unknown: 'maybe'"]
    assert "unmap" not in inv.luns[GOLD].vaai_status and inv.luns[GOLD].vaai_status["ats"] == "supported"


@pytest.mark.parametrize(
    ("fixture", "option", "expected"),
    [
        ("advanced-UseATSForHBOnVMFS5.txt", vaai.ATS_HEARTBEAT, True),
        ("advanced-UseATSForHBOnVMFS5-off-esxi65.txt", vaai.ATS_HEARTBEAT, False),
        ("advanced-HardwareAcceleratedLocking.txt", vaai.HARDWARE_LOCKING, True),
    ],
)
def test_advanced_options_both_forms(fixture, option, expected):
    records, bad = parse.settings(text(fixture))
    assert bad == [] and len(records) == 1
    problems: list[str] = []
    assert vaai.option_value(option, records, problems) is expected
    assert problems == []


def test_advanced_option_description_with_a_colon_and_url_is_one_field():
    records, _ = parse.settings(text("advanced-HardwareAcceleratedLocking.txt"))
    assert records[0]["description"].endswith("http://kb.vmware.com/kb/2094604 before disabling this option.")


def test_advanced_option_answer_for_another_option_or_a_bad_value_is_a_problem():
    records, _ = parse.settings(text("advanced-HardwareAcceleratedLocking.txt"))
    problems: list[str] = []
    assert vaai.option_value(vaai.ATS_HEARTBEAT, records, problems) is None
    assert problems == ["/VMFS3/UseATSForHBOnVMFS5: not in the answer"]
    records, _ = parse.settings(text("advanced-UseATSForHBOnVMFS5.txt").replace("Int Value: 1", "Int Value: 7"))
    problems = []
    assert vaai.option_value(vaai.ATS_HEARTBEAT, records, problems) is None
    assert problems == ["/VMFS3/UseATSForHBOnVMFS5: intvalue: not 0 or 1: '7'"]


def test_lockmode_table_every_mode_and_spaces_in_cells():
    records, bad = parse.table(text("vmfs-lockmode-list.txt"))
    assert bad == []
    assert records[1]["atsupgrademodes"] == "Online or Offline" and records[1]["atscompatible"] == "true"
    assert records[2]["atsincompatibilityreason"] == "Device does not support ATS"
    inv, problems = applied(vaai.lock_modes, records)
    assert problems == []
    assert inv.vmfs_lock_modes == {
        "vmfs-shared": "ats_only",
        "vmfs-legacy": "ats_scsi",
        "local datastore 1": "ats_scsi",  # a name with spaces
        "vmfs-upgrading": "ats_upgrade_pending",  # printed in capitals
    }


@pytest.mark.parametrize(
    ("printed", "name"),
    [
        ("ATS-only", "ats_only"),
        ("ATS+SCSI", "ats_scsi"),
        ("ATS upgrade pending", "ats_upgrade_pending"),
        ("ATS DOWNGRADE PENDING", "ats_downgrade_pending"),
        ("SCSI-only", "other"),
    ],
)
def test_lock_mode_names(printed, name):
    assert vaai.lock_mode_name(printed) == name


def test_a_host_without_vmfs_volumes_prints_an_empty_table():
    empty = "\n".join(text("vmfs-lockmode-list.txt").splitlines()[:2]) + "\n"
    records, bad = parse.table(empty)
    assert records == [] and bad == []
    inv, problems = applied(vaai.lock_modes, records)
    assert inv.vmfs_lock_modes == {} and problems == []


GARBAGE = "<html>503 Service Unavailable</html>\n"


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (vaai.VAAI_STATUS, "'<html>503 Service Unavailable</html>': no ATS, Clone, Zero or Delete Status under it"),
        (vaai.advanced(vaai.ATS_HEARTBEAT), "line 1: not 'Key: Value': '<html>503 Service Unavailable</html>'"),
        (vaai.LOCK_MODES, "no table header"),
    ],
)
def test_garbage_is_one_problem_line_naming_the_command(words, expected):
    """Each command's garbage gives exactly one problem, a line naming the command (as the
    exporter logs and counts it), and no value."""

    def fetch(asked):
        if asked == words:
            shape = next(
                f for prefix, f in SHAPES.items() if " ".join(w for w in asked if not w.startswith("-")).startswith(prefix)
            )
            return shape(GARBAGE)
        raise EsxcliError("not asked here")

    inv, problems = read("esx01", fetch)
    mine = [p for p in problems if p[0] == " ".join(words)]
    assert len(mine) == 1, mine
    assert mine[0][2].endswith(expected) and "\n" not in mine[0][2]
    assert inv.vmfs_ats_heartbeat is None and inv.vmfs_lock_modes == {}
    assert all(not lun.vaai_status for lun in inv.luns.values())


def _fixture_fetch(words):
    answers = {
        tuple(vaai.VAAI_STATUS): parse.blocks(text("vaai-status.txt")),
        tuple(vaai.advanced(vaai.ATS_HEARTBEAT)): parse.settings(text("advanced-UseATSForHBOnVMFS5-off-esxi65.txt")),
        tuple(vaai.advanced(vaai.HARDWARE_LOCKING)): parse.settings(text("advanced-HardwareAcceleratedLocking.txt")),
        tuple(vaai.LOCK_MODES): parse.table(text("vmfs-lockmode-list.txt")),
    }
    if tuple(words) not in answers:
        raise EsxcliError("Unknown command or namespace")
    return answers[tuple(words)]


def test_read_asks_every_command_and_the_exposition_shows_them():
    inv, problems = read("esx01", _fixture_fetch)
    assert [p for p in problems if "vaai" in p[0] or "vmfs" in p[0] or "advanced" in p[0]] == []
    assert (inv.vmfs_ats_heartbeat, inv.vmfs_hardware_locking) == (False, True)
    store = Store()
    store.set_inventory(inv)
    families = {f.name: f for f in device_config.collect(store)}
    lines = "".join(families["esxi_lun_vaai_supported"].lines)
    assert f'esxi_lun_vaai_supported{{host="esx01",device="{GOLD}",primitive="unmap"}} 0.0' in lines
    assert f'esxi_lun_vaai_supported{{host="esx01",device="{SAN}",primitive="ats"}} 1.0' in lines
    assert PE not in lines  # unknown everywhere: no series, not 0
    assert families["esxi_host_vmfs_ats_heartbeat_enabled"].lines == ['esxi_host_vmfs_ats_heartbeat_enabled{host="esx01"} 0.0\n']
    assert families["esxi_host_vmfs_hardware_locking_enabled"].lines == [
        'esxi_host_vmfs_hardware_locking_enabled{host="esx01"} 1.0\n'
    ]
    modes = [line for line in families["esxi_datastore_vmfs_lock_mode"].lines if 'datastore="vmfs-legacy"' in line]
    assert len(modes) == len(m.VMFS_LOCK_MODES)
    assert 'esxi_datastore_vmfs_lock_mode{host="esx01",datastore="vmfs-legacy",mode="ats_scsi"} 1.0\n' in modes
    assert sum(line.endswith(" 1.0\n") for line in modes) == 1


def test_nothing_read_exports_nothing():
    store = Store()
    store.set_inventory(m.Inventory(host="esx01"))
    assert all(f.lines == [] for f in device_config.vaai_config(store))


def test_a_host_without_the_lockmode_namespace_is_no_error_but_a_failing_one_is():
    def older(words):
        if words == vaai.LOCK_MODES:  # a host before 6.0, whose esxcli has no lockmode namespace
            raise EsxcliError("Error: Unknown command or namespace storage vmfs lockmode list")
        return _fixture_fetch(words)

    inv, problems = read("esx01", older)
    assert [p for p in problems if p[0] == "storage vmfs lockmode list"] == []
    assert inv.vmfs_lock_modes == {} and inv.vmfs_hardware_locking is True

    def timing_out(words):
        if words == vaai.LOCK_MODES:
            raise EsxcliError("no answer within 60 s")
        return _fixture_fetch(words)

    _, problems = read("esx01", timing_out)
    assert ("storage vmfs lockmode list", "failed", "no answer within 60 s") in problems
