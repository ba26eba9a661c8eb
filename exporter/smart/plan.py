"""Which esxcli commands one SMART round runs on a host, decided from what the host lists:

1. `storage core device list`: the local devices (`Is Local: true`); SAN LUNs are never asked
   (they answer errors, and their health is the array's);
2. `nvme device list`: the NVMe controllers (vmhbaN) that are online;
3. `storage core path list` (only when there are NVMe controllers): which devices sit behind each,
   so a controller's log is labelled with its namespaces' device names, as the LUN families are;
4. `storage core device smart get -d DEV` per local device, and
   `nvme device log smart get -A vmhbaN` per controller with a local namespace.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from exporter.configuration.config import default
from exporter.esxcli import storage
from exporter.store import model as m

# The most one SMART page or NVMe log may be by default, 1 MiB (a page of 256 rows is about 20 KiB):
# past it the answer is refused whole, unread, and the device keeps its last good reading. Set
# by --smart.max-answer-size (parse.Limits.answer).
MAX_ANSWER = default("smart.max_answer_size")

DEVICES = ["storage", "core", "device", "list"]
NVME_CONTROLLERS = ["nvme", "device", "list"]
PATHS = ["storage", "core", "path", "list"]
SMART_GET = ["storage", "core", "device", "smart", "get"]
NVME_LOG = ["nvme", "device", "log", "smart", "get"]


def smart_get(device: str) -> list[str]:
    return [*SMART_GET, "-d", device]


def nvme_log(adapter: str) -> list[str]:
    return [*NVME_LOG, "-A", adapter]


@dataclass(frozen=True)
class Plan:
    devices: tuple[str, ...] = ()  # local devices, each asked for its SMART page
    pages: dict[str, str] = field(default_factory=dict)  # device -> ata | nvme (what its page's Value holds)
    controllers: dict[str, tuple[str, ...]] = field(default_factory=dict)  # NVMe vmhbaN -> its local namespaces


def local_devices(records: list[dict[str, str]]) -> tuple[list[str], list[str]]:
    """The local devices of `storage core device list` (records as exporter.esxcli.parse reads
    them, text or API), read by the same rules as the device configuration; and its problems."""
    inventory, problems = m.Inventory(host=""), []
    storage.devices(inventory, records, problems)
    return sorted(d for d, lun in inventory.luns.items() if lun.is_local), problems


def online_controllers(records: list[dict[str, str]]) -> list[str]:
    """NVMe controllers of `nvme device list` (HBA Name, Status, Signature) that are online."""
    return sorted({r["hbaname"] for r in records if r.get("hbaname") and r.get("status", "").lower() == "online"})


def make_plan(local: list[str], controllers: list[str], path_records: list[dict[str, str]]) -> Plan:
    namespaces: dict[str, set[str]] = {}
    wanted, local_set = set(controllers), set(local)
    for record in path_records:
        adapter, device = record.get("adapter", ""), record.get("device", "")
        if adapter in wanted and device in local_set:
            namespaces.setdefault(adapter, set()).add(device)
    behind = {d for devices in namespaces.values() for d in devices}
    pages = {d: "nvme" if d in behind or m.device_kind(d) == "nvme" else "ata" for d in local}
    return Plan(
        devices=tuple(local),
        pages=pages,
        controllers={a: tuple(sorted(devices)) for a, devices in sorted(namespaces.items())},
    )
