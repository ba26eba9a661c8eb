"""What an event names: the device (naa., t10., eui.) and the datastore, from its `ds` field or
its arguments (vCenter) or its message text (vobd.log), checked against the inventory the
exporter already holds, so a label value is always one of the inventory's.

ESXi's storage events put the device in an argument or the text (`[naa.6...]`, `Device naa.6...
performance has deteriorated`, `Device: naa.6... has been removed`) and a VMFS volume as its uuid
(`4f5f2e19-4e1b0d0e-7a3c-001b21857010`, the form of /vmfs/volumes/<uuid>) beside its label. A
uuid is resolved to the datastore's name through the host's mounts; a label is taken only if the
inventory has a datastore of that name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

DEVICE = re.compile(r"(?<![\w.])((?:naa|t10|eui)\.[0-9A-Za-z_.:-]+?)(?=[\],:;\"'\s)]|$|\.\s|\.$)")
VMFS_UUID = re.compile(r"(?<![0-9a-f])([0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{12})(?![0-9a-f])")
QUOTED = re.compile(r'"([^"]{1,255})"')
# Only this much of an argument or a line is searched: a 1 MB argument is cut, not scanned.
SCAN = 4096


@dataclass(slots=True)
class Inventory:
    """The names an event may be labelled with, per host: its devices, its datastores by name,
    and its VMFS uuids -> datastore names."""

    devices: dict[str, set[str]] = field(default_factory=dict)  # host -> canonical device names
    datastores: dict[str, set[str]] = field(default_factory=dict)  # host -> datastore names
    uuids: dict[str, dict[str, str]] = field(default_factory=dict)  # host -> VMFS uuid -> name

    def hosts(self) -> set[str]:
        return set(self.devices) | set(self.datastores)


@dataclass(slots=True)
class Named:
    device: str = ""
    datastore: str = ""
    unknown_device: bool = False  # the event named a device the inventory does not have
    unknown_datastore: bool = False


def names(host: str, inventory: Inventory, texts, ds_name: str = "") -> Named:
    """The device and datastore an event names, from its ds field's name and its texts (argument
    values, or a log line's message), each checked against the host's inventory."""
    found = Named()
    devices = inventory.devices.get(host, set())
    datastores = inventory.datastores.get(host, set())
    uuids = inventory.uuids.get(host, {})
    labels = []
    for text in texts:
        text = text[:SCAN]
        if not found.device:
            match = DEVICE.search(text)
            if match:
                if match.group(1) in devices:
                    found.device = match.group(1)
                else:
                    found.unknown_device = True
        if not found.datastore:
            match = VMFS_UUID.search(text)
            if match and match.group(1) in uuids:
                found.datastore = uuids[match.group(1)]
            elif match:
                found.unknown_datastore = True
                labels.append(text[match.end() :].strip(" ()"))  # vobd.log: "<uuid> <label>"
        labels.append(text.strip())
        labels.extend(QUOTED.findall(text))  # "Affected datastores: \"DS\""
    if ds_name:
        if ds_name in datastores:
            found.datastore, found.unknown_datastore = ds_name, False
        else:
            found.unknown_datastore = True
    if not found.datastore:
        # a volume's label given beside its uuid (heartbeat events: "{1} ({2})"), if it is one of the host's
        named = next((label for label in labels if label in datastores), "")
        if named:
            found.datastore, found.unknown_datastore = named, False
    if found.device:
        found.unknown_device = False
    return found
