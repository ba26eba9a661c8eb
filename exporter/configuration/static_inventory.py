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

from exporter.configuration import parsers
from exporter.store import model as m

# Each entry's keys and their parsers (the configuration's one set).
_LUN_KEYS = {
    **dict.fromkeys(("display_name", "vendor", "model", "datastore"), parsers.text),
    "queue_depth": parsers.number,
    "dsnro": parsers.number,
}
_ADAPTER_KEYS = {**dict.fromkeys(("type", "model", "driver"), parsers.text), "link_speed": parsers.rate}
_DATASTORE_KEYS = {**dict.fromkeys(("type", "remote_host", "adapter"), parsers.text), "hosts": parsers.number}
_HOST_KEYS = {"luns": dict, "adapters": dict, "datastores": dict, "dsnro": parsers.number}


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
        top = parsers.section(
            {k: v for k, v in body.items() if k not in ("luns", "adapters", "datastores")}, _HOST_KEYS, at, problems
        )
        inv.dsnro = top.get("dsnro")
        if inv.dsnro is not None:
            inv.dsnro_source = "host_option"
        for device, lun in _entries(body.get("luns"), f"{at}.luns", problems):
            values = parsers.section(lun, _LUN_KEYS, f"{at}.luns.{device}", problems)
            depth, dsnro = values.pop("queue_depth", None), values.pop("dsnro", None)
            inv.luns[device] = m.LunConfig(**values, configured_queue_depth=depth, dsnro=dsnro)
            if dsnro is not None:
                inv.dsnro_source = "device"
        for name, adapter in _entries(body.get("adapters"), f"{at}.adapters", problems):
            values = parsers.section(adapter, _ADAPTER_KEYS, f"{at}.adapters.{name}", problems)
            speed = values.pop("link_speed", None)
            inv.adapters[name] = m.AdapterConfig(**values, link_speed_bytes_per_second=speed)
        for name, datastore in _entries(body.get("datastores"), f"{at}.datastores", problems):
            values = parsers.section(datastore, _DATASTORE_KEYS, f"{at}.datastores.{name}", problems)
            hosts = values.pop("hosts", None)
            inv.datastores[name] = m.DatastoreConfig(**values)
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
