"""LUN include/exclude filters (`lun.include`, `lun.exclude`): a LUN left out costs no series.

Applied to every Sample and Inventory before the store sees them, so a filtered LUN's device
series, its per-world series and the series of the paths leading to it are never created, from
any source. Each pattern is a regular expression searched in the device name (`naa.*`, `t10.*`,
`mpx.*`, or the NFS datastore name); anchor it with ^ and $ for a whole-name match. A path whose
device is not known yet is kept: dropping it would lose data we cannot attribute.
"""

from __future__ import annotations

import re
from dataclasses import replace

from exporter.store import model as m


class LunFilter:
    def __init__(self, include: str | None = None, exclude: str | None = None):
        self.include = re.compile(include) if include else None
        self.exclude = re.compile(exclude) if exclude else None
        self._decided: dict[str, bool] = {}  # device -> kept; a host has a bounded set of LUNs

    def __bool__(self) -> bool:
        return self.include is not None or self.exclude is not None

    def keeps(self, device: str) -> bool:
        kept = self._decided.get(device)
        if kept is None:
            kept = (self.include is None or self.include.search(device) is not None) and (
                self.exclude is None or self.exclude.search(device) is None
            )
            if len(self._decided) >= 65536:  # LUNs that come and go must not grow it forever
                self._decided.clear()
            self._decided[device] = kept
        return kept

    def sample(self, sample: m.Sample) -> m.Sample:
        keeps, devices = self.keeps, sample.path_devices
        return replace(
            sample,
            luns={d: s for d, s in sample.luns.items() if keeps(d)},
            worlds={k: s for k, s in sample.worlds.items() if keeps(k[0])},
            paths={p: s for p, s in sample.paths.items() if p not in devices or keeps(devices[p])},
            path_devices={p: d for p, d in devices.items() if keeps(d)},
        )

    def inventory(self, inventory: m.Inventory) -> m.Inventory:
        return replace(
            inventory,
            luns={d: c for d, c in inventory.luns.items() if self.keeps(d)},
            paths={p: c for p, c in inventory.paths.items() if not c.device or self.keeps(c.device)},
            vdisks=self._vdisks(inventory.vdisks),
        )

    def _vdisks(self, vdisks: dict) -> dict:
        """A virtual disk's backing names only the LUNs kept; a disk that sits only on LUNs left out
        loses its backing series (its I/O series stay: they are the VM's, not the LUN's)."""
        out = {}
        for key, config in vdisks.items():
            kept = tuple(d for d in config.devices if self.keeps(d))
            if config.devices and not kept:
                continue
            out[key] = config if kept == config.devices else replace(config, devices=kept)
        return out
