"""esxcli through the vSphere API, with no SSH: the host's managed method executer on the logged-in
session (RetrieveManagedMethodExecuter, then ExecuteSoap), as govc host.esxcli does. pyVmomi has
no binding for these calls, so the requests are written here and posted over the session's own
connection (exporter.vsphere.soap). Works through vCenter and against a standalone host."""

from __future__ import annotations

import http.client
import xml.etree.ElementTree as ET
from xml.sax.saxutils import escape

from pyVmomi import vim

from exporter.esxcli.inventory import AnswerTooLarge, EsxcliError
from exporter.esxcli.parse import key
from exporter.vsphere import soap, xmlguard
from exporter.vsphere.client import describe

_NS = "{urn:vim25}"
LONG_NAMES = {"-m": "module", "-d": "device", "-o": "option"}  # esxcli's short flags as the API names the arguments


def _call(stub, body: str, limit: int | None = None) -> ET.Element:
    """The answer to one request; a connection that fails or an answer that cannot be read
    (refused by xmlguard, not XML) is this command's EsxcliError, like a fault."""
    try:
        status, answer = soap.post(stub, soap.envelope(body), limit=limit)
        root = xmlguard.parse(answer)
    except xmlguard.AnswerTooLarge as err:
        raise AnswerTooLarge(str(err)) from None
    except (OSError, http.client.HTTPException, xmlguard.AnswerRefused, ET.ParseError) as err:
        raise EsxcliError(describe(err)) from None
    if status != 200:
        kind, text = fault_of(root)
        if kind == "NotAuthenticatedFault":  # the session ended: the client logs in again and asks once more
            raise vim.fault.NotAuthenticated(msg=text)
        raise EsxcliError((text or kind or f"HTTP {status}")[:200])
    return root


def fault_of(root: ET.Element) -> tuple[str, str]:
    """A SOAP fault's type as its detail names it (NotAuthenticatedFault, VimEsxCLICLIFaultFault,
    ...) and its message: esxcli's own errMsg lines where it sent them (ESXi's faultstring for them
    is only "EsxCLI.CLIFault.summary"), else the faultstring."""
    detail = root.find(".//detail")
    first = next(iter(detail), None) if detail is not None else None
    if first is None:
        return "", (root.findtext(".//faultstring") or "").strip()
    return first.tag.rsplit("}", 1)[-1], _err_msgs(first) or (root.findtext(".//faultstring") or "").strip()


def _err_msgs(element: ET.Element) -> str:
    """esxcli's errMsg lines under an element, each on one line, joined with "; " ("" if none)."""
    said = (" ".join(e.text.split()) for e in element.iter() if e.tag.rsplit("}", 1)[-1] == "errMsg" and e.text)
    return "; ".join(line for line in said if line)


def executer(stub, host_moid: str) -> str:
    """The host's executer (its moref id)."""
    root = _call(
        stub,
        f'<RetrieveManagedMethodExecuter xmlns="urn:vim25"><_this type="HostSystem">{escape(host_moid)}</_this></RetrieveManagedMethodExecuter>',
    )
    found = root.find(f".//{_NS}returnval")
    if found is None or not (found.text or "").strip():
        raise EsxcliError("the host returned no managed method executer")
    return found.text.strip()


def run(stub, executer_moid: str, words: list[str], max_answer: int | None = None) -> tuple[list[dict[str, str]], list[str]]:
    """`esxcli <words>` (a namespace path and method, then -x VALUE pairs) as records; max_answer:
    a cap on this answer below --vsphere.max-answer-size (AnswerTooLarge past it)."""
    first_flag = next((i for i, w in enumerate(words) if w.startswith("-")), len(words))
    path, flags = words[:first_flag], words[first_flag:]
    namespace = path[:-1]
    args = "".join(
        f"<argument><name>{name}</name><val>{escape(f'<{name}>{escape(value)}</{name}>')}</val></argument>"
        for name, value in ((LONG_NAMES.get(f, f.lstrip("-")), v) for f, v in zip(flags[::2], flags[1::2]))
    )
    body = (
        f'<ExecuteSoap xmlns="urn:vim25"><_this type="ManagedMethodExecuter">{escape(executer_moid)}</_this>'
        f"<moid>ha-cli-handler-{'-'.join(namespace)}</moid><version>urn:vim25/5.0</version>"
        f"<method>vim.EsxCLI.{'.'.join(path)}</method>{args}</ExecuteSoap>"
    )
    root = _call(stub, body, max_answer)
    result = root.find(f".//{_NS}returnval")
    if result is None:
        raise EsxcliError(f"esxcli {' '.join(path)}: no answer")
    fault = result.find(f"{_NS}fault")
    if fault is not None:  # faultDetail may hold esxcli's own words, as a document of its own
        raise EsxcliError(
            (_detail_message(fault.findtext(f"{_NS}faultDetail")) or fault.findtext(f"{_NS}faultMsg") or "esxcli fault").strip()[
                :200
            ]
        )
    response = result.findtext(f"{_NS}response") or ""
    if not response.strip():
        return [], []
    try:
        objects = xmlguard.parse(response)  # a document of its own inside the answer: checked too
    except ET.ParseError as err:
        raise EsxcliError(f"esxcli {' '.join(path)}: the answer is not XML: {err}") from None
    except xmlguard.AnswerRefused as err:
        raise EsxcliError(f"esxcli {' '.join(path)}: {err}") from None
    records = []
    for obj in objects.iter():
        if obj.tag.rsplit("}", 1)[-1] == "DataObject":
            records.append({key(child.tag.rsplit("}", 1)[-1]): (child.text or "").strip() for child in obj})
    return records, []


def _detail_message(detail: str | None) -> str:
    """The errMsg lines of a returned fault's faultDetail document, or "" (none, or not XML)."""
    if not detail or "errMsg" not in detail:
        return ""
    try:
        document = xmlguard.parse(detail)
    except (ET.ParseError, xmlguard.AnswerRefused):
        return ""
    return _err_msgs(document)


# The per-device settings esxcli knows and the standard API does not (or knows less well).
_LUN_FIELDS = (
    "dsnro",
    "configured_queue_depth",
    "queue_full_sample_size",
    "queue_full_threshold",
    "plugin",
    "satp",
    "psp",
    "psp_limit_type",
    "psp_iops_limit",
    "psp_bytes_limit",
    "status",
    "is_ssd",
    "is_local",
    "is_vvol_pe",
)


def read(stub, host_moid: str, host: str):
    """esxcli's storage configuration of one host, as an Inventory of its own, and the problems as
    (command, reason, message)."""
    from exporter.esxcli.inventory import read as read_commands

    try:
        moid = executer(stub, host_moid)
    except EsxcliError as err:
        return None, [("RetrieveManagedMethodExecuter", "failed", str(err))]
    return read_commands(host, lambda words: run(stub, moid, words))


def merge(found, inventory) -> None:
    """What esxcli found, laid over the Inventory discovery built from the standard API."""
    for device, lun in found.luns.items():
        target = inventory.luns.get(device)
        if target is None:
            continue  # a device the API does not list (filtered out): not ours to add
        for field in _LUN_FIELDS:
            value = getattr(lun, field)
            if value not in (None, ""):
                setattr(target, field, value)
        if lun.vaai_status:
            target.vaai_status = dict(lun.vaai_status)
    inventory.vmfs_ats_heartbeat = found.vmfs_ats_heartbeat
    inventory.vmfs_hardware_locking = found.vmfs_hardware_locking
    inventory.vmfs_lock_modes = dict(found.vmfs_lock_modes)
    for name, adapter in found.adapters.items():
        target = inventory.adapters.get(name)
        if target is not None and adapter.queue_depth_parameter:
            target.queue_depth_parameter = adapter.queue_depth_parameter
            target.queue_depth_parameter_value = adapter.queue_depth_parameter_value
    if any(lun.dsnro is not None for lun in found.luns.values()):
        inventory.dsnro_source = "device"
