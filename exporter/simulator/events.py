"""A simulated ESXi storage incident (scenario files with `kind: storage-events`): the lines vobd
would write to /var/log/vobd.log, read by the real vobd.log reader (exporter.events.vobd), as the
esxtop simulator writes esxtop for the esxtop reader.

Per cycle, on the incident's host: after `after` seconds the LUN goes All Paths Down and the host
loses access to the VMFS volume on it (vob.storage.apd.start, vob.vmfs.heartbeat.timedout and
their esx twins); 140 s later ESXi's APD timeout fails its I/O (apd.timeout); after `lost` seconds
the paths come back (apd.exit) and access to the volume is restored (heartbeat.recovered). Then
`calm` seconds and the cycle starts again. With `lost` over five minutes EsxiVolumeAccessLost and
EsxiDeviceAllPathsDown fire, and resolve when it recovers. The other hosts mount the same volume
and see nothing. Times are the simulator's clock (--simulate.interval per step).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import yaml

from exporter.store import model as m

from .spec import ScenarioError
from .units import duration

APD_TIMEOUT = 140.0  # Misc.APDTimeout's default (KB 2004684)
_KEYS = {"kind", "description", "hosts", "datastore", "device", "incident"}


@dataclass(frozen=True)
class EventsScenario:
    name: str
    description: str
    hosts: int
    datastore: str
    device: str
    host: int  # 1-based index of the host that loses access
    after: float
    lost: float
    calm: float


def parse(text: str, name: str, file: str) -> EventsScenario:
    """A `kind: storage-events` scenario; ScenarioError naming the file and key for anything wrong."""
    doc = yaml.safe_load(text) or {}
    unknown = sorted(set(doc) - _KEYS)
    if unknown:
        raise ScenarioError(f"{file}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_KEYS))})")
    incident = doc.get("incident") or {}

    def get(section: dict, key: str, where: str, convert, default):
        try:
            value = convert(section.get(key, default))
        except (TypeError, ValueError) as err:
            raise ScenarioError(f"{file}: {where}{key}: {err}") from None
        if value <= 0:
            raise ScenarioError(f"{file}: {where}{key}: must be more than 0")
        return value

    hosts = get(doc, "hosts", "", int, 2)
    host = get(incident, "host", "incident.", int, 1)
    if host > hosts:
        raise ScenarioError(f"{file}: incident.host: {host} is past the scenario's {hosts} hosts")
    device = str(doc.get("device", "naa.6000000000000000000000000000a001"))
    if not device.startswith(("naa.", "t10.", "eui.")):
        raise ScenarioError(f"{file}: device: {device!r} is no naa., t10. or eui. name")
    return EventsScenario(
        name=name,
        description=str(doc.get("description", "")),
        hosts=hosts,
        datastore=str(doc.get("datastore", "ds-sim-01")),
        device=device,
        host=host,
        after=get(incident, "after", "incident.", duration, "60s"),
        lost=get(incident, "lost", "incident.", duration, "420s"),
        calm=get(incident, "calm", "incident.", duration, "300s"),
    )


class EventsSimulation:
    """The scenario's hosts, their inventory and, step by step, the vobd.log lines of each."""

    def __init__(self, scenario: EventsScenario, start: float):
        self.scenario, self.start, self.now = scenario, start, start
        self.hosts = [f"esx-ev{i:02d}" for i in range(1, scenario.hosts + 1)]
        self.uuid = "64f1a2b3-5c6d7e8f-9a0b-0050569a%04x" % (sum(map(ord, scenario.datastore)) % 0xFFFF)
        self.uptime = 1_234_000_000

    def inventories(self) -> list[m.Inventory]:
        s = self.scenario
        return [
            m.Inventory(
                host=host,
                luns={s.device: m.LunConfig(datastore=s.datastore, vendor="SIM", model="LUN")},
                datastores={s.datastore: m.DatastoreConfig(type="vmfs")},
                datastore_hosts={s.datastore: len(self.hosts)},
            )
            for host in self.hosts
        ]

    def _marks(self, cycle_start: float) -> list[tuple[float, str, str]]:
        """(time, vob id, text) of one cycle's observations."""
        s = self.scenario
        lost, back = cycle_start + s.after, cycle_start + s.after + s.lost
        apd = f"Device or filesystem with identifier [{s.device}] has"
        marks = [
            (lost, "storage.apd.start", f"{apd} entered the All Paths Down state."),
            (lost + 16.0, "vmfs.heartbeat.timedout", f"{self.uuid} {s.datastore}"),  # 16 s without a heartbeat
            (back, "storage.apd.exit", f"{apd} exited the All Paths Down state."),
            (back + 1.0, "vmfs.heartbeat.recovered", f"{self.uuid} {s.datastore}"),
        ]
        if s.lost > APD_TIMEOUT:
            marks.append(
                (lost + APD_TIMEOUT, "storage.apd.timeout",
                 f"{apd} entered the All Paths Down Timeout state after being in the All Paths Down state for 140 seconds. I/Os will now be fast failed.")
            )  # fmt: skip
        return sorted(marks)

    def step(self, interval: float) -> dict[str, list[str]]:
        """The lines each host's vobd writes in the next `interval` seconds."""
        s = self.scenario
        cycle = s.after + s.lost + s.calm
        begin, end = self.now, self.now + interval
        self.now = end
        lines: list[str] = []
        first = int((begin - self.start) // cycle)
        for n in range(first, int((end - self.start) // cycle) + 1):
            for at, vob, text in self._marks(self.start + n * cycle):
                if begin <= at < end:
                    lines += self._pair(at, vob, text)
        return {host: (lines if i + 1 == s.host else []) for i, host in enumerate(self.hosts)}

    def _pair(self, at: float, vob: str, text: str) -> list[str]:
        """The observation's vob line and its esx twin, microseconds apart, as a correlator writes them."""
        esx = {"storage.apd.exit": "esx.clear.storage.apd.exit"}.get(vob, f"esx.problem.{vob}")
        stamp = dt.datetime.fromtimestamp(at, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        correlator = "vmfsCorrelator" if vob.startswith("vmfs") else "APDCorrelator"
        self.uptime += int(at) % 1000 + 200
        return [
            f"{stamp} In(14) vobd[2098835]:  [{correlator}] {self.uptime}us: [vob.{vob}] {text}",
            f"{stamp} In(14) vobd[2098835]:  [{correlator}] {self.uptime + 211}us: [{esx}] {text}",
        ]
