"""One SMART round on one host, whichever way esxcli is asked (over SSH, through the vSphere API):
the plan (exporter.smart.plan), then each local device's page and each NVMe controller's log.

A device without SMART ("CANNOT open device", "not supported") is a state of that device, not
an error; a device that fails, answers garbage or more than a page may be (Limits.answer) is
counted and keeps its last good reading; a value refused alone (exporter.smart.parse.Refusal) is
counted and the rest of its page read; none of it stops the other devices. Only a host whose
device list cannot be read fails the round.
"""

from __future__ import annotations

import re
from typing import Protocol

from exporter.esxcli.inventory import AnswerTooLarge, EsxcliError
from exporter.smart import disks, plan
from exporter.smart.parse import Limits, Refusal, SmartFormatError
from exporter.store import model as m

# How ESXi says a device has no SMART to give (USB media, CD-ROMs, RAID volumes).
UNSUPPORTED = re.compile(r"cannot open device|not supported|unsupported", re.IGNORECASE)
# How a host without an esxcli namespace answers (no `nvme` on ESXi 6.0): nothing to read.
NO_NAMESPACE = re.compile(r"unknown (command|namespace)", re.IGNORECASE)

# (command, reason, message): failed | error | unreadable | too_large | bad_line | bad_value, and
# a value refused alone: out_of_range | label_too_long | too_many_attributes (exporter.smart.parse)
Problem = tuple[str, str, str]


class Esxcli(Protocol):
    """esxcli on one host: each call raises EsxcliError when esxcli fails (AnswerTooLarge past
    limits.answer), SmartFormatError when its answer does not read; values refused alone go
    to `refused`. limits: what it reads and keeps (parse.Limits, from the flags)."""

    limits: Limits

    def records(self, words: list[str]) -> tuple[list[dict[str, str]], list]: ...

    def smart_page(self, device: str, refused: list[Refusal]) -> m.SmartPage: ...

    def nvme_log(self, adapter: str, refused: list[Refusal]) -> m.NvmeHealthLog: ...


def _ask(call, arg, command: str, problems: list[Problem], notes: list[Refusal]) -> disks.Reading:
    refused: list[Refusal] = []
    try:
        reading = disks.Reading("ok", call(arg, refused))
    except AnswerTooLarge as err:
        message = f"{arg}: {err}, the last good reading is kept"
        problems.append((command, "too_large", message))
        notes.append(Refusal(arg, command, "too_large", message))
        return disks.Reading("unreadable", message=str(err))
    except SmartFormatError as err:
        problems.append((command, "unreadable", str(err)))
        return disks.Reading("unreadable", message=str(err))
    except EsxcliError as err:
        if UNSUPPORTED.search(str(err)):
            return disks.Reading("unsupported", message=str(err))
        problems.append((command, "error", f"{arg}: {err}"))
        return disks.Reading("failed", message=str(err))
    problems.extend((command, r.reason, r.message) for r in refused)
    notes.extend(refused)
    return reading


def _listed(esxcli: Esxcli, words: list[str], problems: list[Problem], reason: str) -> list[dict[str, str]] | None:
    command = " ".join(words)
    try:
        records, bad = esxcli.records(words)
    except EsxcliError as err:
        if reason != "failed" and NO_NAMESPACE.search(str(err)):
            return []
        problems.append((command, reason, str(err)))
        return None
    problems.extend((command, _bad(b), str(b)) for b in bad)
    return records


def _bad(problem) -> str:
    """A list's line that does not read (bad_line) or a field of it (bad_value), as esxcli's inventory counts them."""
    return "bad_line" if str(problem).startswith("line ") else "bad_value"


def _named(
    names: list[str], command: list[str], what: str, problems: list[Problem], notes: list[Refusal], max_label: int
) -> list[str]:
    """The names that can be label values; one over max_label characters is refused and counted."""
    kept = []
    for name in names:
        if len(name) <= max_label:
            kept.append(name)
            continue
        message = f"{what} name of {len(name)} characters (over {max_label}): {name[:40]!r}...: refused"
        problems.append((" ".join(command), "label_too_long", message))
        notes.append(Refusal(name[:40], what, "label_too_long", message))
    return kept


def read(
    host: str,
    esxcli: Esxcli,
    now: float,
    previous: m.DiskHealthReport | None = None,
    notes: list[Refusal] | None = None,
):
    """(the host's DiskHealthReport, or None when its devices could not be listed; the problems).
    notes: where what deserves one log line per device and field goes (values refused alone, an
    answer too large), for the caller to log when it first appears."""
    problems: list[Problem] = []
    notes = [] if notes is None else notes
    records = _listed(esxcli, plan.DEVICES, problems, "failed")
    if records is None:
        return None, problems
    local, bad = plan.local_devices(records)
    problems.extend((" ".join(plan.DEVICES), _bad(b), b) for b in bad)
    max_label = esxcli.limits.label
    local = _named(local, plan.DEVICES, "device", problems, notes, max_label)
    online = plan.online_controllers(_listed(esxcli, plan.NVME_CONTROLLERS, problems, "error") or [])
    controllers = _named(online, plan.NVME_CONTROLLERS, "adapter", problems, notes, max_label)
    paths = (_listed(esxcli, plan.PATHS, problems, "error") or []) if controllers else []
    steps = plan.make_plan(local, controllers, paths)
    command = " ".join(plan.NVME_LOG)
    logs = {adapter: _ask(esxcli.nvme_log, adapter, command, problems, notes) for adapter in steps.controllers}
    adapter_of = {device: adapter for adapter, devices in steps.controllers.items() for device in devices}
    report = m.DiskHealthReport(host=host, timestamp=now)
    command = " ".join(plan.SMART_GET)
    for device in steps.devices:
        adapter = adapter_of.get(device, "")
        report.disks[device] = disks.disk_health(
            steps.pages[device],
            _ask(esxcli.smart_page, device, command, problems, notes),
            now,
            adapter=adapter,
            nvme=logs.get(adapter),
            previous=previous.disks.get(device) if previous else None,
        )
    return report, problems
