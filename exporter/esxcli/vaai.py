"""VAAI and VMFS locking configuration from esxcli, into the model (issue 44 item 4):

- `storage core device vaai status get`: per device, whether each primitive (ATS, Clone, Zero,
  Delete) is `supported`, `unsupported` or still `unknown` (the host has not tried it yet);
- `system settings advanced list -o /VMFS3/UseATSForHBOnVMFS5` and `-o
  /VMFS3/HardwareAcceleratedLocking`: whether VMFS heartbeats use ATS, and whether ATS is used
  for locking at all (its `Int Value`, 0 or 1);
- `storage vmfs lockmode list`: per VMFS volume its locking mode (ATS-only, ATS+SCSI, or an
  upgrade or downgrade between them pending).

Each applier takes records as exporter.esxcli.parse returns them (text and API records alike)
and appends one line per problem; an answer with nothing of what it should hold is one problem.
"""

from __future__ import annotations

import re

from exporter.store import model as m

VAAI_STATUS = ["storage", "core", "device", "vaai", "status", "get"]
ATS_HEARTBEAT = "/VMFS3/UseATSForHBOnVMFS5"
HARDWARE_LOCKING = "/VMFS3/HardwareAcceleratedLocking"
LOCK_MODES = ["storage", "vmfs", "lockmode", "list"]


def advanced(option: str) -> list[str]:
    return ["system", "settings", "advanced", "list", "-o", option]


# esxcli's field -> the model's primitive (esxcli says Delete for UNMAP, Clone for XCOPY).
STATUS_FIELDS = {"atsstatus": "ats", "clonestatus": "clone", "zerostatus": "zero", "deletestatus": "unmap"}
STATUSES = ("supported", "unsupported", "unknown")


def vaai_status(inv: m.Inventory, records: list[dict[str, str]], problems: list[str]) -> None:
    if not records:
        problems.append("no device in the answer")
    for record in records:
        device = record.get("device", "")
        if not device:
            problems.append("a device without a name")
            continue
        if not any(field in record for field in STATUS_FIELDS):  # a line that is no device (garbage)
            problems.append(f"{device[:60]!r}: no ATS, Clone, Zero or Delete Status under it")
            continue
        lun = inv.luns.get(device)
        if lun is None:
            lun = inv.luns[device] = m.LunConfig()
        for field, primitive in STATUS_FIELDS.items():
            text = record.get(field, "").strip().lower()
            if text in STATUSES:
                lun.vaai_status[primitive] = text
            elif text:
                problems.append(f"{device}: {field}: not supported, unsupported or unknown: {text[:30]!r}")
            # absent: an older host that does not report the primitive (5.0 had no Delete Status)


def option_value(option: str, records: list[dict[str, str]], problems: list[str]) -> bool | None:
    """The advanced option's Int Value as on (1) or off (0); None and a problem if unreadable."""
    record = next((r for r in records if r.get("path", "").lower() == option.lower()), None)
    if record is None:
        if not problems:  # an unreadable answer has said so already, line by line
            problems.append(f"{option}: not in the answer")
        return None
    text = record.get("intvalue", "")
    if text not in ("0", "1"):
        problems.append(f"{option}: intvalue: not 0 or 1: {text[:30]!r}")
        return None
    return text == "1"


def ats_heartbeat(inv: m.Inventory, records: list[dict[str, str]], problems: list[str]) -> None:
    inv.vmfs_ats_heartbeat = option_value(ATS_HEARTBEAT, records, problems)


def hardware_locking(inv: m.Inventory, records: list[dict[str, str]], problems: list[str]) -> None:
    inv.vmfs_hardware_locking = option_value(HARDWARE_LOCKING, records, problems)


def lock_mode_name(text: str) -> str:
    """The lock modes vSphere's storage guide lists, as m.VMFS_LOCK_MODES names them (hosts print
    the pending ones in capitals too): 'ATS-only' -> 'ats_only', 'ATS+SCSI' -> 'ats_scsi', 'ATS UPGRADE PENDING' -> 'ats_upgrade_pending';
    anything else -> 'other'."""
    name = re.sub(r"[^a-z]+", "_", text.strip().lower()).strip("_")
    return name if name in m.VMFS_LOCK_MODES else "other"


def lock_modes(inv: m.Inventory, records: list[dict[str, str]], problems: list[str]) -> None:
    """Volumes by name (the datastore's name); a volume without a locking mode is a problem.
    No record at all is a host without VMFS volumes: nothing to say."""
    for record in records:
        volume, mode = record.get("volumename", ""), record.get("lockingmode", "")
        if not volume:
            problems.append("a VMFS volume without a name")
        elif not mode:
            problems.append(f"{volume}: no locking mode")
        else:
            inv.vmfs_lock_modes[volume] = lock_mode_name(mode)
