"""An inventory snapshot written beside a capture (`<capture>.inventory.json`): the hosts' storage
configuration when the capture was taken, so `compare` can say what was tuned between two."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from exporter.store import model as m


def path_for(capture: str | Path) -> Path:
    return Path(capture).with_suffix(".inventory.json")


def write(capture: str | Path, inventories: list[m.Inventory]) -> Path:
    target = path_for(capture)
    target.write_text(json.dumps({inv.host: dataclasses.asdict(inv) for inv in inventories}, indent=1, sort_keys=True) + "\n")
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
            raw["datastores"] = {k: m.DatastoreConfig(**v) for k, v in raw.get("datastores", {}).items()}
            out[host] = m.Inventory(**raw)
        return out
    except (ValueError, TypeError, AttributeError) as err:
        raise ValueError(f"{source}: not an inventory snapshot: {err}") from None
