"""An inventory snapshot written beside a capture (`<capture>.inventory.json`): the hosts' storage
configuration when the capture was taken, so `compare` can say what was tuned between two."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from exporter.store import model as m


def path_for(capture: str | Path) -> Path:
    return Path(capture).with_suffix(".inventory.json")


def _as_json(inventory: m.Inventory) -> dict:
    data = dataclasses.asdict(inventory)
    # JSON keys are strings: a virtual disk's (vm, disk) key becomes two fields of a list entry
    data["vdisks"] = [{"vm": vm, "disk": disk, **cfg} for (vm, disk), cfg in data["vdisks"].items()]
    return data


def write(capture: str | Path, inventories: list[m.Inventory]) -> Path:
    target = path_for(capture)
    target.write_text(json.dumps({inv.host: _as_json(inv) for inv in inventories}, indent=1, sort_keys=True) + "\n")
    return target


def read(capture: str | Path) -> dict[str, m.Inventory] | None:
    """The snapshot beside a capture, or None if there is none; ValueError naming the file if it
    cannot be read."""
    source = path_for(capture)
    if not source.exists():
        return None
    try:
        data = json.loads(source.read_text())
        out = {}
        for host, raw in data.items():
            raw = dict(raw)
            raw["luns"] = {k: m.LunConfig(**v) for k, v in raw.get("luns", {}).items()}
            raw["adapters"] = {k: m.AdapterConfig(**v) for k, v in raw.get("adapters", {}).items()}
            raw["paths"] = {k: m.PathConfig(**v) for k, v in raw.get("paths", {}).items()}
            raw["datastores"] = {k: _datastore(v) for k, v in raw.get("datastores", {}).items()}
            raw["vdisks"] = {(v.pop("vm"), v.pop("disk")): _vdisk(v) for v in map(dict, raw.get("vdisks", []))}
            out[host] = m.Inventory(**raw)
        return out
    except (ValueError, TypeError, AttributeError, KeyError) as err:
        raise ValueError(f"{source}: not an inventory snapshot: {err}") from None


def _vdisk(fields: dict) -> m.VirtualDiskConfig:
    return m.VirtualDiskConfig(**{**fields, "devices": tuple(fields.get("devices", ()))})


def _datastore(fields: dict) -> m.DatastoreConfig:
    sioc = fields.get("sioc")
    return m.DatastoreConfig(**{**fields, "sioc": None if sioc is None else m.SiocConfig(**sioc)})
