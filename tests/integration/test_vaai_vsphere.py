"""VAAI and VMFS locking through the vSphere API's esxcli (issue 44 item 4), as DSNRO is read: the
storage simulator (simulators/storagesim/vaai.go, `-vaai FILE`) answers `storage core device vaai status
get`, `system settings advanced list -o` and `storage vmfs lockmode list` through each host's
managed method executer; `dump --vsphere` shows them, and a host whose answers are bad says so."""

from __future__ import annotations

import json

import pytest
from prometheus_client.parser import text_string_to_metric_families

from simulators.storagesim.sims import PASSWORD, StorageSim
from tests.support.vsphere_api import dump

pytestmark = pytest.mark.integration

N1 = "naa.600a098038303053453f463045727a61"  # ds-shared-01, on all three hosts
N2 = "naa.600a098038303053453f463045727a62"  # ds-shared-02, on esx01 and esx02
ESX01, ESX02 = "esx01.lab.local", "esx02.lab.local"
# esx02: its ds-shared-02 LUN lost ATS (a firmware downgrade), its heartbeats went back to SCSI,
# and the datastore runs ATS+SCSI; esx01 keeps the defaults (all supported, both options 1, ATS-only).
CHANGES = {
    ESX02: {
        "status": {N2: {"ATSStatus": "unsupported", "DeleteStatus": "unknown"}},
        "options": {"/VMFS3/UseATSForHBOnVMFS5": 0},
        "lock_modes": {"ds-shared-02": "ATS+SCSI"},
    },
    "esx03.lab.local": {"status": {N1: {"ATSStatus": "perhaps"}}},
}


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("vaai")
    changes = tmp / "vaai.json"
    changes.write_text(json.dumps(CHANGES))
    password = tmp / "password"
    password.write_text(PASSWORD + "\n")
    sim = StorageSim(tmp, "-vaai", str(changes))
    try:
        proc = dump(sim, password, timeout=60)
    finally:
        sim.stop()
    assert proc.returncode == 0, proc.stderr
    found = {}
    for family in text_string_to_metric_families(proc.stdout):
        for s in family.samples:
            found[(s.name, frozenset(s.labels.items()))] = s.value
    return found, proc.stderr


def value(found, name, **labels):
    return found[0].get((name, frozenset(labels.items())))


def test_defaults_every_primitive_supported_ats_only(samples):
    for primitive in ("ats", "clone", "zero", "unmap"):
        assert value(samples, "esxi_lun_vaai_supported", host=ESX01, device=N1, primitive=primitive) == 1
    assert value(samples, "esxi_host_vmfs_ats_heartbeat_enabled", host=ESX01) == 1
    assert value(samples, "esxi_host_vmfs_hardware_locking_enabled", host=ESX01) == 1
    assert value(samples, "esxi_datastore_vmfs_lock_mode", host=ESX01, datastore="ds-shared-01", mode="ats_only") == 1
    assert value(samples, "esxi_datastore_vmfs_lock_mode", host=ESX01, datastore="ds-shared-01", mode="ats_scsi") == 0
    assert value(samples, "esxi_esxcli_up", host=ESX01) == 1


def test_a_host_whose_device_lost_ats(samples):
    assert value(samples, "esxi_lun_vaai_supported", host=ESX02, device=N2, primitive="ats") == 0
    assert value(samples, "esxi_lun_vaai_supported", host=ESX02, device=N2, primitive="unmap") is None  # unknown
    assert value(samples, "esxi_lun_vaai_supported", host=ESX02, device=N1, primitive="ats") == 1
    assert value(samples, "esxi_host_vmfs_ats_heartbeat_enabled", host=ESX02) == 0
    assert value(samples, "esxi_datastore_vmfs_lock_mode", host=ESX02, datastore="ds-shared-02", mode="ats_scsi") == 1
    assert value(samples, "esxi_esxcli_up", host=ESX02) == 1


def test_a_value_no_host_prints_is_counted_and_the_rest_kept(samples):
    """A status no host prints ("perhaps"): that one primitive is left out (not 0), counted by
    command and reason, and the host's other answers stand (this path logs only failed commands;
    the SSH path logs every problem line, tests/unit/test_esxcli_vaai.py)."""
    host = "esx03.lab.local"
    assert value(samples, "esxi_lun_vaai_supported", host=host, device=N1, primitive="ats") is None
    assert value(samples, "esxi_lun_vaai_supported", host=host, device=N1, primitive="clone") == 1
    errors = {
        (dict(labels)["command"], dict(labels)["reason"]): v
        for (name, labels), v in samples[0].items()
        if name == "esxi_esxcli_errors_total" and dict(labels)["host"] == host
    }
    assert errors == {("storage core device vaai status get", "bad_value"): 1}
    assert value(samples, "esxi_esxcli_up", host=host) == 1  # a bad value is not a failed command
    assert "Traceback" not in samples[1]
