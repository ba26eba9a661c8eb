"""Per-device configuration over the esxtop stream's own SSH connection: a real sshd on 127.0.0.1
whose `esxcli` prints what real hosts print; exact values on /metrics, joined to the esxtop host."""

from __future__ import annotations

import json

import pytest

from tests.support.esxcli_devices import GOLD, NVME, PE, SAN
from tests.support.promtext import eventually, value

pytestmark = pytest.mark.integration
HOST = "esx-sim"  # the name the fake esxtop's header gives


def test_device_configuration_from_esxcli_over_ssh(sshd, exporter_for):
    sshd.set_control(devices=[SAN])
    exporter = exporter_for()
    text = eventually(
        lambda: (lambda t: t if "esxi_lun_dsnro{" in t else None)(exporter.metrics()), timeout=30, what="esxcli values"
    )
    assert value(text, "esxi_lun_dsnro", host=HOST, device=SAN) == 32
    assert value(text, "esxi_lun_configured_queue_depth", host=HOST, device=SAN) == 64
    assert value(text, "esxi_lun_dsnro", host=HOST, device=GOLD) == 64
    assert value(text, "esxi_lun_queue_full_sample_size", host=HOST, device=GOLD) == 32
    assert value(text, "esxi_lun_queue_full_threshold", host=HOST, device=GOLD) == 4
    assert value(text, "esxi_lun_status", host=HOST, device=GOLD, status="degraded") == 1
    assert value(text, "esxi_lun_psp_iops_limit", host=HOST, device=SAN) == 1
    multipath = dict(host=HOST, device=SAN, plugin="NMP", satp="VMW_SATP_ALUA_CX", psp="VMW_PSP_RR", psp_limit_type="Iops")
    assert value(text, "esxi_lun_multipath_info", **multipath) == 1
    assert value(text, "esxi_lun_vvol_pe", host=HOST, device=PE) == 1
    assert value(text, "esxi_lun_local", host=HOST, device=NVME) == 1
    assert (
        value(
            text, "esxi_adapter_driver_queue_depth", host=HOST, adapter="vmhba1", driver="qlnativefc", parameter="ql2xmaxqdepth"
        )
        == 64
    )
    assert value(text, "esxi_host_dsnro_source", host=HOST, source="device") == 1
    assert value(text, "esxi_esxcli_up", host=HOST) == 1
    assert "esxi_esxcli_errors_total{" not in text  # no HPP namespace on this host is not an error
    # the esxtop series of the same host and device sit beside them
    assert value(text, "esxi_lun_queue_depth", host=HOST, device=SAN) is not None
    runs = [json.loads(line)["argv"] for line in (sshd.control.with_name("esxcli-runs.jsonl")).read_text().splitlines()]
    assert ["storage", "core", "device", "list"] in runs and [
        "system",
        "module",
        "parameters",
        "list",
        "-m",
        "qlnativefc",
    ] in runs
    # the key's secret part appears in no output: not in metrics, not in the exporter's log
    key_lines = [line for line in (sshd.tmp / "client_key").read_text().splitlines() if line and not line.startswith("-----")]
    log = (sshd.tmp / "exporter.log").read_text()
    assert key_lines and not any(line in text or line in log for line in key_lines)


def test_esxcli_health_stays_with_the_device_configuration_turned_off(sshd, exporter_for):
    """esxcli's own health has its own collector: --no-collector.device-config hides the settings,
    not esxcli failing or working (#23)."""
    sshd.set_control(devices=[SAN])
    exporter = exporter_for("--no-collector.device-config")
    text = eventually(
        lambda: (lambda t: t if "esxi_esxcli_up{" in t else None)(exporter.metrics()), timeout=30, what="esxcli health"
    )
    assert value(text, "esxi_esxcli_up", host=HOST) == 1
    assert value(text, "esxi_scrape_collector_success", collector="esxcli") == 1
    assert "esxi_lun_queue_full_sample_size{" not in text and 'collector="device_config"' not in text


def test_vaai_and_vmfs_locking_over_ssh(sshd, exporter_for):
    """Issue 44 item 4: the VAAI primitives per device, the ATS heartbeat and hardware-locking
    options and each VMFS volume's lock mode, as the fake host's esxcli prints them."""
    sshd.set_control(devices=[SAN])
    exporter = exporter_for()
    text = eventually(
        lambda: (lambda t: t if "esxi_datastore_vmfs_lock_mode{" in t else None)(exporter.metrics()),
        timeout=30,
        what="VAAI configuration",
    )
    assert value(text, "esxi_lun_vaai_supported", host=HOST, device=SAN, primitive="ats") == 1
    assert value(text, "esxi_lun_vaai_supported", host=HOST, device=GOLD, primitive="unmap") == 0
    assert value(text, "esxi_lun_vaai_supported", host=HOST, device=PE, primitive="ats") is None  # unknown
    assert value(text, "esxi_host_vmfs_ats_heartbeat_enabled", host=HOST) == 0
    assert value(text, "esxi_host_vmfs_hardware_locking_enabled", host=HOST) == 1
    assert value(text, "esxi_datastore_vmfs_lock_mode", host=HOST, datastore="vmfs-legacy", mode="ats_scsi") == 1
    assert value(text, "esxi_datastore_vmfs_lock_mode", host=HOST, datastore="vmfs-shared", mode="ats_only") == 1
    assert value(text, "esxi_datastore_vmfs_lock_mode", host=HOST, datastore="vmfs-shared", mode="ats_scsi") == 0
    assert value(text, "esxi_esxcli_up", host=HOST) == 1 and "esxi_esxcli_errors_total{" not in text
    runs = [json.loads(line)["argv"] for line in (sshd.control.with_name("esxcli-runs.jsonl")).read_text().splitlines()]
    assert ["system", "settings", "advanced", "list", "-o", "/VMFS3/UseATSForHBOnVMFS5"] in runs


def test_datastore_space_from_esxcli_filesystem_list_over_ssh(sshd, exporter_for):
    """`esxcli storage filesystem list` (an ESXi 7/8 host's table, tests/fixtures/esxcli/filesystem-list.txt):
    each datastore's Size and Free under the names vSphere's give, keyed by its url; the nameless
    VMFS volume named by its uuid; OSDATA, boot banks and vFlash left out; an unmounted one with no
    figures."""
    sshd.set_control(devices=[SAN])
    exporter = exporter_for()
    text = eventually(
        lambda: (lambda t: t if "esxi_datastore_capacity_bytes{" in t else None)(exporter.metrics()), timeout=30, what="space"
    )
    shared = dict(datastore="ds-shared-01", type="vmfs", url="ds:///vmfs/volumes/61a4c3e2-9b1f0d22-6a3c-0050569f1a2b/")
    assert value(text, "esxi_datastore_capacity_bytes", **shared) == 1099243192320
    assert value(text, "esxi_datastore_free_bytes", **shared) == 131941395456
    assert value(text, "esxi_datastore_provisioned_bytes", **shared) == 1099243192320 - 131941395456
    assert value(text, "esxi_datastore_uncommitted_bytes", **shared) is None  # esxcli has none
    nameless = "64b0a7f1-2e3c4d5a-7b8c-0050569f1a2b"
    assert value(text, "esxi_datastore_free_bytes", datastore=nameless, type="vmfs") == 268000935936
    names = {
        line.split('datastore="', 1)[1].split('"', 1)[0]
        for line in text.splitlines()
        if line.startswith("esxi_datastore_accessible{")
    }
    assert names == {
        "ds-shared-01",
        "ds-vmfs5-old",
        nameless,
        "nfs-iso",
        "nfs41-backup",
        "vsanDatastore",
        "vvol-01",
        "ds-unmounted",
    }
    assert value(text, "esxi_datastore_accessible", datastore="ds-unmounted") == 0
    assert value(text, "esxi_datastore_capacity_bytes", datastore="ds-unmounted") is None
    assert value(text, "esxi_datastore_free_bytes", datastore="nfs41-backup", type="nfs41") == 1649267441664
    assert "esxi_esxcli_errors_total{" not in text
