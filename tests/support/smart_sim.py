"""The vSphere storage simulator (simulators/storagesim/) with local disks that answer SMART: the fixture's
first host gets the healthy SATA HDD, SATA SSD and NVMe namespace of tests/fixtures/smart/, its
second host the failing ones, both beside their SAN LUNs; the pages and logs are handed to the
simulator (`-smart FILE`, simulators/storagesim/smart.go) as the API's records of those fixture texts."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from exporter.esxcli import parse as esxcli_parse
from simulators.esxi_ssh.esxcli import HDD, NVME, SMART, SSD, USB

LOCAL_HBAS = [
    {"device": "vmhba0", "model": "Lewisburg SATA AHCI Controller", "driver": "vmw_ahci", "speed_gbps": 6, "perf": {}},
    {"device": "vmhba1", "model": "Samsung NVMe SSD Controller 980", "driver": "nvme_pcie", "speed_gbps": 32, "perf": {}},
]
LOCAL_LUNS = [
    (HDD, "Local ATA Disk", "ATA", "WDC WD40EFRX-68N", False, "vmhba0", 0),
    (SSD, "Local ATA Disk", "ATA", "Samsung SSD 870", True, "vmhba0", 1),
    (NVME, "Local NVMe Disk", "NVMe", "Samsung SSD 980 PRO 1TB", True, "vmhba1", 0),
    (USB, "Local USB Direct-Access", "SanDisk", "Ultra Fit", False, "vmhba0", 2),
]
COLUMNS = {"parameter": "Parameter", "value": "Value", "threshold": "Threshold", "worst": "Worst", "raw": "Raw"}


def with_local_disks(fixture: dict) -> dict:
    """The simulator's fixture with the local disks on its first two hosts."""
    out = copy.deepcopy(fixture)
    for host in out["hosts"][:2]:
        host["hbas"] = host["hbas"] + copy.deepcopy(LOCAL_HBAS)
        for name, display, vendor, model, ssd, adapter, target in LOCAL_LUNS:
            host["luns"].append(
                {
                    "name": name,
                    "display": f"{display} ({name})",
                    "vendor": vendor,
                    "model": model,
                    "queue_depth": 31,
                    "local": True,
                    "ssd": ssd,
                    "perf": {},
                    "paths": [{"adapter": adapter, "target": target, "state": "active", "perf": {}}],
                }
            )
    return out


def _rows(text: str) -> list[dict[str, str]]:
    """A SMART table as the API's records (field names as the JSON formatter spells them)."""
    records, problems = esxcli_parse.table(text)
    assert not problems
    return [{COLUMNS[k]: v for k, v in record.items()} for record in records]


def _log(text: str) -> dict[str, str]:
    """An NVMe log as the API's record: its field names without spaces."""
    return {k.strip().replace(" ", ""): v.strip() for k, v in (line.split(":", 1) for line in text.splitlines()[1:])}


def smart_answers(fixture: dict) -> dict:
    """host -> what its esxcli answers (simulators/storagesim/smart.go's -smart file)."""
    out = {}
    for host, bad in zip((h["name"] for h in fixture["hosts"][:2]), ("", "-failing")):
        pages = {
            HDD: _rows((SMART / f"smart-hdd{bad}.txt").read_text()),
            SSD: _rows((SMART / f"smart-ssd{bad}.txt").read_text()),
            NVME: _rows((SMART / f"smart-nvme{bad}.txt").read_text()),
        }
        log = _log((SMART / f"nvme-log{bad}.txt").read_text())
        out[host] = {"pages": pages, "nvme": {"vmhba1": {"status": "Online", "log": log}}}
    return out


def write(fixture: dict, directory: Path) -> tuple[Path, Path]:
    """(simulator fixture file, -smart file) in directory."""
    directory.mkdir(parents=True, exist_ok=True)
    disks = with_local_disks(fixture)
    (directory / "fixture-smart.json").write_text(json.dumps(disks))
    (directory / "smart.json").write_text(json.dumps(smart_answers(disks)))
    return directory / "fixture-smart.json", directory / "smart.json"
