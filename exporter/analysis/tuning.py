"""What was tuned between two captures: the settings that differ in their inventory snapshots."""

from __future__ import annotations

from exporter.store import model as m

# LunConfig field -> how a person names it
LUN_SETTINGS = {
    "configured_queue_depth": "queue depth",
    "dsnro": "DSNRO",
    "queue_full_sample_size": "queue-full sample size",
    "queue_full_threshold": "queue-full threshold",
    "plugin": "multipath plugin",
    "psp": "path selection policy",
    "psp_limit_type": "round robin limit type",
    "psp_iops_limit": "round robin IOPS limit",
    "psp_bytes_limit": "round robin bytes limit",
}
ADAPTER_SETTINGS = {"queue_depth_parameter_value": "driver queue depth", "link_speed_bytes_per_second": "link speed (bytes/s)"}
# VirtualDiskConfig field -> name: the paper's PVSCSI advice, a disk's own IOPS limit and shares
VDISK_SETTINGS = {"controller": "controller", "iops_limit": "IOPS limit", "shares": "I/O shares", "provisioning": "provisioning"}


def _show(value) -> str:
    if value is None or value == "":
        return "unset"
    return f"{value:g}" if isinstance(value, float) else str(value)


# SiocConfig field -> name: a datastore's Storage I/O Control
SIOC_SETTINGS = {
    "enabled": "Storage I/O Control",
    "threshold_seconds": "SIOC congestion threshold (s)",
    "mode": "SIOC threshold mode",
}


def _sioc_changes(where: str, before: m.SiocConfig | None, after: m.SiocConfig | None) -> list[str]:
    """A datastore's SIOC settings that differ; unknown (not reported) shows as unset."""
    out = []
    for field, label in SIOC_SETTINGS.items():
        old, new = getattr(before, field, None), getattr(after, field, None)
        if old != new:
            if field == "enabled":
                old, new = ({True: "on", False: "off"}.get(v, "unset") for v in (old, new))
            out.append(f"{where}: {label} {_show(old)} -> {_show(new)}")
    return out


def changes(before: dict[str, m.Inventory] | None, after: dict[str, m.Inventory] | None) -> list[str]:
    """One line per setting that differs, e.g. 'esx01 naa.1: DSNRO 32 -> 64'."""
    if not before or not after:
        return []
    out = []
    for host in sorted(set(before) & set(after)):
        b, a = before[host], after[host]
        if b.dsnro != a.dsnro:
            out.append(f"{host}: Disk.SchedNumReqOutstanding {_show(b.dsnro)} -> {_show(a.dsnro)}")
        for device in sorted(set(b.luns) & set(a.luns)):
            for field, label in LUN_SETTINGS.items():
                old, new = getattr(b.luns[device], field), getattr(a.luns[device], field)
                if old != new:
                    out.append(f"{host} {device}: {label} {_show(old)} -> {_show(new)}")
        for name in sorted(set(b.adapters) & set(a.adapters)):
            for field, label in ADAPTER_SETTINGS.items():
                old, new = getattr(b.adapters[name], field), getattr(a.adapters[name], field)
                if old != new:
                    out.append(f"{host} {name}: {label} {_show(old)} -> {_show(new)}")
        for vm, disk in sorted(set(b.vdisks) & set(a.vdisks)):
            for field, label in VDISK_SETTINGS.items():
                old, new = getattr(b.vdisks[vm, disk], field), getattr(a.vdisks[vm, disk], field)
                if old != new:
                    out.append(f"{host} {vm}:{disk}: {label} {_show(old)} -> {_show(new)}")
        for name in sorted(set(b.datastores) & set(a.datastores)):
            out.extend(_sioc_changes(f"{host} {name}", b.datastores[name].sioc, a.datastores[name].sioc))
        for path in sorted(set(b.paths) & set(a.paths)):
            if b.paths[path].state != a.paths[path].state:
                out.append(f"{host} {path}: path state {b.paths[path].state} -> {a.paths[path].state}")
        for device in sorted(set(a.luns) - set(b.luns)):
            out.append(f"{host} {device}: LUN added")
        for device in sorted(set(b.luns) - set(a.luns)):
            out.append(f"{host} {device}: LUN removed")
    return out
