"""The config file's `inventory:` section: storage configuration written by hand for hosts no
vSphere target covers (an esxtop-only host), so their LUNs get `esxi_lun_info`, DSNRO and the
configured queue depth, and their HBAs a link speed for the saturation rule.

    inventory:
      esx01.example.com:                 # the host name as esxtop prints it
        dsnro: 32                        # host-wide Disk.SchedNumReqOutstanding (older hosts)
        luns:
          naa.600a0b80001234: {display_name: prod-01, vendor: NETAPP, model: LUN, datastore: vmfs-prod,
                               queue_depth: 64, dsnro: 32}
        adapters:
          vmhba2: {type: fc, model: QLE2562, driver: qlnativefc, link_speed: 8Gb/s}
        datastores:
          vmfs-prod: {type: vmfs, hosts: 4}   # hosts: how many hosts mount it (shared LUN rules)
"""

from __future__ import annotations

from exporter.store import model as m
from exporter.store import units

_LUN_TEXT = ("display_name", "vendor", "model", "datastore")
_ADAPTER_TEXT = ("type", "model", "driver")
_DATASTORE_TEXT = ("type", "remote_host", "adapter")


class InventoryError(ValueError):
    """Every problem of the section, one line each, naming the field."""

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


def parse(section, where: str = "inventory") -> list[m.Inventory]:
    """The section as model Inventories; InventoryError lists every bad field at once."""
    if section is None:
        return []
    problems: list[str] = []
    if not isinstance(section, dict):
        raise InventoryError([f"{where}: a mapping of host name -> configuration"])
    out = []
    for host, body in section.items():
        at = f"{where}.{host}"
        if not isinstance(body, dict):
            problems.append(f"{at}: a mapping with luns, adapters, datastores, dsnro")
            continue
        inv = m.Inventory(host=str(host))
        for key in set(body) - {"luns", "adapters", "datastores", "dsnro"}:
            problems.append(f"{at}.{key}: unknown key (luns, adapters, datastores, dsnro)")
        inv.dsnro = _number(body.get("dsnro"), f"{at}.dsnro", problems)
        if inv.dsnro is not None:
            inv.dsnro_source = "host_option"
        for device, lun in _entries(body.get("luns"), f"{at}.luns", problems):
            config = m.LunConfig(**_texts(lun, _LUN_TEXT, f"{at}.luns.{device}", problems, {"queue_depth", "dsnro"}))
            config.configured_queue_depth = _number(lun.get("queue_depth"), f"{at}.luns.{device}.queue_depth", problems)
            config.dsnro = _number(lun.get("dsnro"), f"{at}.luns.{device}.dsnro", problems)
            inv.luns[device] = config
            if config.dsnro is not None:
                inv.dsnro_source = "device"
        for name, adapter in _entries(body.get("adapters"), f"{at}.adapters", problems):
            config = m.AdapterConfig(**_texts(adapter, _ADAPTER_TEXT, f"{at}.adapters.{name}", problems, {"link_speed"}))
            speed = adapter.get("link_speed")
            if speed is not None:
                try:
                    config.link_speed_bytes_per_second = units.parse_rate(str(speed))
                except ValueError as err:
                    problems.append(f"{at}.adapters.{name}.link_speed: {err}")
            inv.adapters[name] = config
        for name, datastore in _entries(body.get("datastores"), f"{at}.datastores", problems):
            inv.datastores[name] = m.DatastoreConfig(
                **_texts(datastore, _DATASTORE_TEXT, f"{at}.datastores.{name}", problems, {"hosts"})
            )
            hosts = _number(datastore.get("hosts"), f"{at}.datastores.{name}.hosts", problems)
            if hosts is not None:
                inv.datastore_hosts[name] = int(hosts)
        out.append(inv)
    if problems:
        raise InventoryError(problems)
    return out


def _entries(section, where: str, problems: list[str]):
    if section is None:
        return []
    if not isinstance(section, dict) or not all(isinstance(v, dict) for v in section.values()):
        problems.append(f"{where}: a mapping of name -> settings")
        return []
    return [(str(k), v) for k, v in section.items()]


def _texts(entry: dict, names, where: str, problems: list[str], numbers: set[str]) -> dict[str, str]:
    for key in set(entry) - set(names) - numbers:
        problems.append(f"{where}.{key}: unknown key ({', '.join(sorted({*names, *numbers}))})")
    return {k: str(entry[k]) for k in names if entry.get(k) is not None}


def _number(value, where: str, problems: list[str]) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        problems.append(f"{where}: a number of 0 or more, not {value!r}")
        return None
    return float(value)
