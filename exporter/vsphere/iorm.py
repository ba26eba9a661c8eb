"""Storage I/O Control configuration: each datastore's `iormConfiguration`, asked of the property
collector by path and read with ElementTree (soap.py).

pyVmomi 9.1 raised AttributeError reading `Datastore.iormConfiguration` from govmomi's simulator
(the structure is deprecated from vSphere 8.0 U3, with no replacement), so the property is never
read through pyVmomi's types: RetrievePropertiesEx over the chosen hosts' datastores
(HostSystem.datastore) names it in its pathSet, and the answer's StorageIORMInfo is read element by element. A datastore whose
answer has no such property (the server sent it as missing, with a fault, or unset) is "not
reported" (SiocConfig(reported=False)): its fields stay unknown, never guessed. A server that
refuses the property name altogether (InvalidProperty) is asked again without it: every datastore
is then not reported.

Datastores are not followed by the change stream (follow.py follows hosts and VMs), so the source
reads this again after every walk and every REFRESH seconds (source.py).
"""

from __future__ import annotations

import dataclasses

from pyVmomi import vim, vmodl

from exporter.store import model as m
from exporter.store import units
from exporter.vsphere import soap

REFRESH = 300.0  # seconds between readings: SIOC settings change by hand, rarely
PROPERTIES = ["name", "host", "iormConfiguration"]
_text, _all = soap.text, soap.children


class BadValue(ValueError):
    """A field of a StorageIORMInfo that is no number or boolean: one line naming the datastore."""


def retrieve(content, hosts: list[str], with_iorm: bool = True) -> list[tuple[str, dict]]:
    """(datastore moid, {property: element}) of every Datastore these hosts (moids) mount,
    reached through HostSystem.datastore: only the chosen hosts' datastores are read."""
    if not hosts:
        return []
    stub = content.propertyCollector._stub
    mounted = vmodl.query.PropertyCollector.TraversalSpec(name="datastores", type=vim.HostSystem, path="datastore")
    spec = vmodl.query.PropertyCollector.FilterSpec(
        objectSet=[
            vmodl.query.PropertyCollector.ObjectSpec(obj=vim.HostSystem(moid, stub), skip=True, selectSet=[mounted])
            for moid in hosts
        ],
        propSet=[
            vmodl.query.PropertyCollector.PropertySpec(type=vim.Datastore, pathSet=PROPERTIES if with_iorm else PROPERTIES[:2])
        ],
    )
    return list(soap.retrieve(content.propertyCollector, spec))


def read(content, hosts: list[str]) -> list[tuple[str, dict]]:
    """retrieve(), asked again without iormConfiguration if the server does not know the name."""
    try:
        return retrieve(content, hosts)
    except vmodl.query.InvalidProperty:
        return retrieve(content, hosts, with_iorm=False)


def _bool(element, path: str, datastore: str) -> bool | None:
    value = _text(element, path).lower()
    if not value:
        return None
    if value not in ("true", "false"):
        raise BadValue(f"datastore {datastore}: iormConfiguration.{path} is {value!r}, not a boolean")
    return value == "true"


def _number(element, path: str, datastore: str) -> float | None:
    value = _text(element, path)
    if not value:
        return None
    try:
        number = float(value)
    except ValueError:
        raise BadValue(f"datastore {datastore}: iormConfiguration.{path} is {value!r}, not a number") from None
    if not number >= 0:  # NaN too
        raise BadValue(f"datastore {datastore}: iormConfiguration.{path} is {value!r}, below 0")
    return number


def config_of(element, datastore: str) -> m.SiocConfig:
    """A StorageIORMInfo element as a SiocConfig; None (no property in the answer): not reported.
    Raises BadValue for a field that is no number or boolean."""
    if element is None or len(element) == 0:
        return m.SiocConfig(reported=False)
    threshold = _number(element, "congestionThreshold", datastore)
    peak = _number(element, "percentOfPeakThroughput", datastore)
    return m.SiocConfig(
        reported=True,
        enabled=_bool(element, "enabled", datastore),
        stats_enabled=_bool(element, "statsCollectionEnabled", datastore),
        mode=_text(element, "congestionThresholdMode"),
        threshold_seconds=None if threshold is None else threshold * units.MILLISECOND,
        peak_throughput_ratio=None if peak is None else peak * units.PERCENT,
    )


def by_host(answer, host_names: dict[str, str]) -> tuple[dict[str, dict[str, m.SiocConfig]], list[str]]:
    """host name -> datastore name -> its SIOC configuration, for the hosts of host_names (moid ->
    name) that mount each datastore (Datastore.host); and the one-line problems met (a bad field
    leaves that datastore not reported)."""
    found: dict[str, dict[str, m.SiocConfig]] = {}
    problems = []
    for _moid, props in answer:
        name = _text_of(props.get("name"))
        if not name:
            continue
        try:
            config = config_of(props.get("iormConfiguration"), name)
        except BadValue as err:
            problems.append(str(err))
            config = m.SiocConfig(reported=False)
        for mount in _all(props.get("host"), "DatastoreHostMount"):
            host = host_names.get(_text(mount, "key"))
            if host is not None:
                found.setdefault(host, {})[name] = config
    return found, problems


def overlay(inventory: m.Inventory, configs: dict[str, m.SiocConfig] | None) -> m.Inventory:
    """The inventory with each of its datastores' SIOC configuration (a copy where any is set;
    the published inventory is never changed)."""
    if not configs:
        return inventory
    datastores = {
        name: ds if configs.get(name) is None else dataclasses.replace(ds, sioc=configs[name])
        for name, ds in inventory.datastores.items()
    }
    return dataclasses.replace(inventory, datastores=datastores)


def _text_of(element) -> str:
    return "" if element is None or element.text is None else element.text.strip()
