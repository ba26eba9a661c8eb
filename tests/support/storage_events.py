"""Posting ESXi's storage events to the storage simulator (simulators/storagesim/events.go) and reading the
names they carry: a datastore's VMFS uuid as its hosts mount it."""

from __future__ import annotations

import json
import ssl
import urllib.request

from pyVmomi import vim

from tests.support.vsphere_api import named


def post(sim, events: list[dict] | None = None, **switches) -> None:
    """POST /storagesim/events: events as {host, id, arguments, ds, key, age_seconds}; switches:
    distinct_ids, page_events."""
    context = ssl.create_default_context(cafile=str(sim.cert))
    context.check_hostname = False
    base = sim.url.rsplit("/sdk", 1)[0]
    body = json.dumps({"events": events or [], **switches}).encode()
    request = urllib.request.Request(base + "/storagesim/events", data=body, method="POST")
    with urllib.request.urlopen(request, context=context, timeout=120) as answer:
        assert answer.status == 204


def vmfs_uuid(content, host: str, datastore: str) -> str:
    """The VMFS uuid of `datastore` as `host` mounts it (config.fileSystemVolume.mountInfo)."""
    for mount in named(content, vim.HostSystem, host).config.fileSystemVolume.mountInfo:
        if mount.volume.name == datastore:
            return mount.volume.uuid
    raise LookupError(f"{host} mounts no {datastore}")
