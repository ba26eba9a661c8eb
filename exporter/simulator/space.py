"""A simulated datastore filling (scenario files with `kind: space`): the datastores' space and a
VM's snapshot as the vSphere source would publish them, produced as model objects directly (the
simulator knows nothing of vSphere; exporter.vsphere.space reads the real answers).

Each step (one --simulate.interval) stands for `step_minutes` of the datastores' life: a forgotten
snapshot's delta disk grows by `grow_gib_per_hour`, taken from the datastore it is on, until the
datastore is `delete_at_used` full; then the snapshot is deleted (its space back, consolidated)
and a new one is taken, so the fill starts over. The other datastores stay as they are.
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from exporter.store import model as m

from .spec import ScenarioError

GIB = float(1 << 30)
_KEYS = {"kind", "description", "datastores", "snapshot", "step_minutes", "delete_at_used"}
_DATASTORE_KEYS = {"name", "type", "capacity_gib", "used_ratio", "uncommitted_gib"}
_SNAPSHOT_KEYS = {"host", "vm", "datastore", "age_hours", "grow_gib_per_hour", "memory_gib"}


@dataclass(frozen=True, slots=True)
class SimDatastore:
    name: str
    type: str
    capacity_bytes: float
    used_bytes: float
    uncommitted_bytes: float


@dataclass(frozen=True, slots=True)
class SpaceScenario:
    name: str
    description: str
    datastores: tuple[SimDatastore, ...]
    host: str
    vm: str
    datastore: str  # where the snapshot grows
    age_seconds: float  # the snapshot's age when the scenario starts
    grow_bytes_per_hour: float
    memory_bytes: float
    step_seconds: float
    delete_at_used: float


def _number(section: dict, key: str, where: str, file: str, default=None, low: float = 0.0, high: float | None = None) -> float:
    value = section.get(key, default)
    if value is None:
        raise ScenarioError(f"{file}: {where}{key}: missing")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ScenarioError(f"{file}: {where}{key}: {value!r} is not a number") from None
    if not low <= number or (high is not None and number > high):
        raise ScenarioError(f"{file}: {where}{key}: {number:g} is outside {low:g}..{'' if high is None else f'{high:g}'}")
    return number


def _unknown(section: dict, known: set[str], where: str, file: str) -> None:
    extra = sorted(set(section) - known)
    if extra:
        raise ScenarioError(f"{file}: {where}unknown key {extra[0]!r} (known: {', '.join(sorted(known))})")


def parse(text: str, name: str, file: str) -> SpaceScenario:
    """A `kind: space` scenario; ScenarioError naming the file and key for anything wrong."""
    doc = yaml.safe_load(text) or {}
    _unknown(doc, _KEYS, "", file)
    datastores = []
    for i, entry in enumerate(doc.get("datastores") or []):
        where = f"datastores[{i}]."
        if not isinstance(entry, dict) or not entry.get("name"):
            raise ScenarioError(f"{file}: {where}name: missing")
        _unknown(entry, _DATASTORE_KEYS, where, file)
        capacity = _number(entry, "capacity_gib", where, file) * GIB
        datastores.append(
            SimDatastore(
                name=str(entry["name"]),
                type=str(entry.get("type", "vmfs")).lower(),
                capacity_bytes=capacity,
                used_bytes=_number(entry, "used_ratio", where, file, high=1.0) * capacity,
                uncommitted_bytes=_number(entry, "uncommitted_gib", where, file, default=0) * GIB,
            )
        )
    if not datastores:
        raise ScenarioError(f"{file}: datastores: at least one is needed")
    snapshot = doc.get("snapshot") or {}
    _unknown(snapshot, _SNAPSHOT_KEYS, "snapshot.", file)
    target = str(snapshot.get("datastore", datastores[0].name))
    if target not in {d.name for d in datastores}:
        raise ScenarioError(f"{file}: snapshot.datastore: {target!r} is none of the datastores")
    return SpaceScenario(
        name=name,
        description=str(doc.get("description", "")),
        datastores=tuple(datastores),
        host=str(snapshot.get("host", "esx-sim01")),
        vm=str(snapshot.get("vm", "app01")),
        datastore=target,
        age_seconds=_number(snapshot, "age_hours", "snapshot.", file, default=80) * 3600,
        grow_bytes_per_hour=_number(snapshot, "grow_gib_per_hour", "snapshot.", file, default=40) * GIB,
        memory_bytes=_number(snapshot, "memory_gib", "snapshot.", file, default=0) * GIB,
        step_seconds=_number(doc, "step_minutes", "", file, default=10) * 60,
        delete_at_used=_number(doc, "delete_at_used", "", file, default=0.97, high=1.0),
    )


class SpaceSimulation:
    """Steps of the scenario's life: datastores' space and the VM's snapshot at each."""

    def __init__(self, scenario: SpaceScenario, start: float):
        self.scenario, self.start = scenario, start
        self.delta = 0.0  # bytes the snapshot's delta disk holds now
        self.taken = start - scenario.age_seconds
        self.steps = 0

    def step(self) -> None:
        s = self.scenario
        self.steps += 1
        self.delta += s.grow_bytes_per_hour * s.step_seconds / 3600
        target = next(d for d in s.datastores if d.name == s.datastore)
        if (target.used_bytes + s.memory_bytes + self.delta) / target.capacity_bytes >= s.delete_at_used:
            self.delta = 0.0  # deleted (consolidated): its space is back; a new one is taken
            self.taken = self.now

    @property
    def now(self) -> float:
        return self.start + self.steps * self.scenario.step_seconds

    def spaces(self) -> dict[str, m.DatastoreSpace]:
        s = self.scenario
        out = {}
        for d in s.datastores:
            used = d.used_bytes + ((s.memory_bytes + self.delta) if d.name == s.datastore else 0.0)
            url = f"ds:///vmfs/volumes/sim-{d.name}/"
            out[url] = m.DatastoreSpace(
                name=d.name,
                url=url,
                type=d.type,
                capacity_bytes=d.capacity_bytes,
                free_bytes=max(d.capacity_bytes - used, 0.0),
                uncommitted_bytes=d.uncommitted_bytes,
                maintenance_mode="normal",
                updated=self.now,
                source="vsphere",
            )
        return out

    def snapshots(self) -> dict[str, m.VmSnapshots]:
        s = self.scenario
        size = s.memory_bytes + self.delta
        return {
            s.vm: m.VmSnapshots(
                host=s.host,
                vm=s.vm,
                count=1,
                oldest=self.taken,
                bytes=size,
                by_datastore=((s.datastore, size),),
                consolidation_needed=False,
            )
        }
