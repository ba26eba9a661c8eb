"""The config file's `inventory:` section: storage configuration for an esxtop-only host, so its
LUNs get esxi_lun_info, DSNRO and configured queue depth and its HBAs a link speed."""

from __future__ import annotations

import pytest

from exporter.configuration import static_inventory
from tests.support.cli import REAL, run_cli
from tests.support.promtext import value

HOST = "localhost.home"  # the real capture's host
DEVICE = "t10.ATA_____ST2000DM0062D2DM164__________________________________Z4Z90XYV"


def test_dump_of_a_real_capture_carries_the_configured_inventory(tmp_path):
    config = tmp_path / "exporter.yml"
    config.write_text(f"""
inventory:
  {HOST}:
    dsnro: 32
    luns:
      {DEVICE}: {{display_name: "ST2000 data", vendor: ATA, model: ST2000DM006, datastore: vmfs-data, queue_depth: 31, dsnro: 31}}
    adapters:
      vmhba0: {{type: sata, model: AHCI, driver: vmw_ahci, link_speed: 6Gb/s}}
    datastores:
      vmfs-data: {{type: vmfs, hosts: 1}}
""")
    done = run_cli("dump", "--config.file", config, "--esxtop-file", REAL)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    labels = dict(host=HOST, device=DEVICE, display_name="ST2000 data", vendor="ATA", model="ST2000DM006", datastore="vmfs-data")
    assert value(text, "esxi_lun_info", **labels) == 1
    assert value(text, "esxi_lun_configured_queue_depth", host=HOST, device=DEVICE) == 31
    assert value(text, "esxi_lun_dsnro", host=HOST, device=DEVICE) == 31
    assert value(text, "esxi_host_dsnro", host=HOST) == 32
    assert value(text, "esxi_adapter_link_speed_bytes_per_second", host=HOST, adapter="vmhba0") == 6e9 / 8
    assert value(text, "esxi_datastore_hosts", datastore="vmfs-data") == 1
    # and the esxtop data of the same host and LUN is there beside it
    assert value(text, "esxi_lun_queue_depth", host=HOST, device=DEVICE) is not None


def test_every_bad_field_is_named_on_its_own_line(tmp_path):
    config = tmp_path / "exporter.yml"
    config.write_text("""
inventory:
  esx01:
    luns:
      naa.1: {queue_depth: deep, colour: red}
    adapters:
      vmhba1: {link_speed: fast}
""")
    done = run_cli("dump", "--config.file", config, "--esxtop-file", REAL)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert "Traceback" not in done.stderr
    assert any("inventory.esx01.luns.naa.1.queue_depth: a number of 0 or more, not 'deep'" in line for line in lines), lines
    assert any("inventory.esx01.luns.naa.1.colour: unknown setting (known: " in line for line in lines), lines
    assert any("inventory.esx01.adapters.vmhba1.link_speed: not a number with a unit" in line for line in lines), lines


def test_no_section_is_no_inventory():
    assert static_inventory.parse(None) == []
    with pytest.raises(static_inventory.InventoryError, match="inventory: a mapping of host name"):
        static_inventory.parse(["esx01"])
