"""esxcli records -> the model's per-device and per-adapter configuration.

Each function takes records as exporter.esxcli.parse returns them (keys normalised, so the text
and CSV formats read alike) and fills an Inventory; a value it cannot read is a problem line
naming the device or adapter and the field, and that one field stays unknown.
"""

from __future__ import annotations

import re

from exporter.esxcli.parse import key
from exporter.store import model as m

# esxcli `storage core device list` field -> LunConfig attribute, by kind of value.
DEVICE_NUMBERS = {
    "noofoutstandingioswithcompetingworlds": "dsnro",
    "devicemaxqueuedepth": "configured_queue_depth",
    "queuefullsamplesize": "queue_full_sample_size",
    "queuefullthreshold": "queue_full_threshold",
}
DEVICE_FLAGS = {"isssd": "is_ssd", "islocal": "is_local", "isvvolpe": "is_vvol_pe"}
DEVICE_TEXTS = {
    "displayname": "display_name",
    "vendor": "vendor",
    "model": "model",
    "multipathplugin": "plugin",
    "status": "status",
}
# Round robin's limit types as NMP's device config names them (policy=...).
RR_LIMIT_TYPES = {"rr": "Default", "iops": "Iops", "bytes": "Bytes", "latency": "Latency"}
# The HBA driver module's parameter that caps every LUN's queue depth behind the adapter.
DRIVER_QUEUE_DEPTH = {
    "qlnativefc": "ql2xmaxqdepth",
    "lpfc": "lpfc_lun_queue_depth",
    "nfnic": "lun_queue_depth_per_path",
    "iscsi_vmk": "iscsivmk_LunQDepth",
}


def _lun(inv: m.Inventory, device: str) -> m.LunConfig:
    lun = inv.luns.get(device)
    if lun is None:
        lun = inv.luns[device] = m.LunConfig()
    return lun


def devices(inv: m.Inventory, records: list[dict[str, str]], problems: list[str]) -> None:
    for record in records:
        device = record.get("device", "")
        if not device:
            problems.append("a device without a name")
            continue
        lun = _lun(inv, device)
        for field, attribute in DEVICE_TEXTS.items():
            if record.get(field):
                setattr(lun, attribute, record[field].strip())
        for field, attribute in DEVICE_NUMBERS.items():
            text = record.get(field, "")
            if text:  # absent on older hosts (5.5 has no Device Max Queue Depth): unknown, not wrong
                try:
                    setattr(lun, attribute, float(int(text)))
                except ValueError:
                    problems.append(f"{device}: {field}: not a whole number: {text[:30]!r}")
        for field, attribute in DEVICE_FLAGS.items():
            text = record.get(field, "").lower()
            if text in ("true", "false"):
                setattr(lun, attribute, text == "true")
            elif text:
                problems.append(f"{device}: {field}: not true or false: {text[:30]!r}")
    if any(lun.dsnro is not None for lun in inv.luns.values()):
        inv.dsnro_source = "device"


def nmp_devices(inv: m.Inventory, records: list[dict[str, str]], problems: list[str]) -> None:
    for record in records:
        device = record.get("device", "")
        if not device:
            continue
        lun = _lun(inv, device)
        lun.plugin = lun.plugin or "NMP"
        lun.satp = record.get("storagearraytype", lun.satp)
        lun.psp = record.get("pathselectionpolicy", lun.psp)
        config = record.get("pathselectionpolicydeviceconfig", "")
        if config and lun.psp == "VMW_PSP_RR":
            settings = dict(re.findall(r"(\w+)=([^,;}]*)", config))
            policy = settings.get("policy", "")
            if policy not in RR_LIMIT_TYPES:
                problems.append(f"{device}: pathselectionpolicydeviceconfig: unknown round robin policy {policy!r}")
            else:
                lun.psp_limit_type = RR_LIMIT_TYPES[policy]
            for name, attribute in (("iops", "psp_iops_limit"), ("bytes", "psp_bytes_limit")):
                if name in settings:
                    try:
                        setattr(lun, attribute, float(int(settings[name])))
                    except ValueError:
                        problems.append(f"{device}: pathselectionpolicydeviceconfig: {name} is not a number: {settings[name]!r}")


def hpp_devices(inv: m.Inventory, records: list[dict[str, str]], problems: list[str]) -> None:
    """`storage hpp device list` (7.0+): the path selection scheme of devices on the HPP.
    No real sample was at hand: read by the same rules, only the scheme is taken."""
    for record in records:
        device = record.get("device", "")
        if device:
            lun = _lun(inv, device)
            lun.plugin = "HPP"
            lun.psp = record.get("pathselectionscheme", lun.psp)


def adapters(inv: m.Inventory, records: list[dict[str, str]], problems: list[str]) -> None:
    for record in records:
        name, driver = record.get("hbaname", ""), record.get("driver", "")
        if not name:
            problems.append("an adapter without a name")
            continue
        adapter = inv.adapters.get(name)
        if adapter is None:
            adapter = inv.adapters[name] = m.AdapterConfig()
        adapter.driver = driver or adapter.driver
        adapter.queue_depth_parameter = DRIVER_QUEUE_DEPTH.get(driver, "")


def module_parameters(inv: m.Inventory, driver: str, records: list[dict[str, str]], problems: list[str]) -> None:
    """The driver's queue-depth parameter onto every adapter it drives; empty = the default."""
    parameter = DRIVER_QUEUE_DEPTH.get(driver)
    row = next((r for r in records if r.get("name") == parameter), None)
    if parameter is None or row is None:
        return
    value: float | None = None
    if row.get("value"):
        try:
            value = float(int(row["value"]))
        except ValueError:
            problems.append(f"{driver}: {parameter}: not a whole number: {row['value'][:30]!r}")
    for adapter in inv.adapters.values():
        if adapter.driver == driver:
            adapter.queue_depth_parameter_value = value


def normalised(record: dict[str, str]) -> dict[str, str]:
    return {key(k): v for k, v in record.items()}
