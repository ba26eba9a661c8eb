"""A host's storage events from its /var/log/vobd.log: its lines read and counted, whatever brings
them (exporter.events.ssh over SSH, the built-in simulator).

vobd, ESXi's VMkernel observation daemon, writes one line per observation. ESXi 6.x-7.0 write

    2021-03-02T10:14:09.912Z: [APDCorrelator] 2682686563us: [vob.storage.apd.start] Device or filesystem with identifier [naa.6...] has entered the All Paths Down state.

and ESXi 8.x puts the header of its standard log format (severity, its value, the thread name and
id: Broadcom KB 421608, "Log file format" of the ESXi 8.0 documentation) in front of the same body:

    2023-10-05T08:12:44.123Z In(14) vobd[2098835]:  [APDCorrelator] 2682686563us: [esx.problem.storage.apd.start] Device or filesystem ...

A correlator writes most observations twice: the low-level `vob.*` id, then the event it posts
to hostd (and so to vCenter) under its `esx.*` id, with the same arguments, microseconds later
(KB 2004684's and KB 1009557's log excerpts show the pairs). Each event is counted once, under its
esx id: an `esx.*` line is counted; a `vob.X` line is held until its twin (`esx.problem.X`, else
`esx.clear.X`, of the known ids) comes, and counted under that id only if the twin has not come
within PAIR_WINDOW seconds (nor just before it: the order is not always vob first). A vob id
without a known twin is no storage event here.

Lines read again after a reconnection (exporter.events.ssh asks for the last ones) are skipped
up to the newest line read, by the host's time and then by the line itself.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from dataclasses import dataclass

from exporter.events import catalog, extract
from exporter.events.page import timestamp
from exporter.events.tally import Tally
from exporter.store.faultlog import FaultLog

log = logging.getLogger(__name__)

LINE = re.compile(
    r"^(?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?):?"  # the time, with 6.x-7.0's colon
    r"(?:\s+[A-Z][a-z](?:\(\d+\))?\+?\s+vobd\[\d+\]:)?"  # 8.x header: severity (value, line marker), thread
    r"\s+\[(?P<correlator>[^\]]*)\]\s+(?P<uptime>\d+)us:\s+\[(?P<id>[A-Za-z0-9_.-]+)\]\s?(?P<text>.*)$"
)
PAIR_WINDOW = 2.0  # seconds between a vob line and its esx twin (microseconds apart in real logs)


@dataclass(slots=True)
class Line:
    time: float
    id: str
    text: str
    raw: str


def parse(raw: str) -> Line | None:
    """One vobd.log line, or None if it is not in either format."""
    match = LINE.match(raw)
    if match is None:
        return None
    stamp = timestamp(match.group("time"))
    if stamp is None:
        return None
    return Line(stamp, match.group("id"), match.group("text"), raw)


def twin(vob_id: str) -> str | None:
    """The esx id a vob.* observation is posted as, if it is one of the known storage ids."""
    rest = vob_id[len("vob.") :]
    for family in ("esx.problem.", "esx.clear."):
        if family + rest in catalog.KNOWN:
            return family + rest
    return None


class Pairing:
    """vob lines waiting for their esx twin (or whose twin came just before: the order is not
    always vob first); what is to be counted comes out of `line` and `flush`."""

    def __init__(self):
        self.pending: list[tuple[float, str, Line]] = []  # (arrived, esx id, the vob line)
        self.recent: list[tuple[float, str]] = []  # (arrived, esx id) of esx lines counted without a vob yet

    def line(self, line: Line, now: float) -> list[tuple[str, Line]]:
        """(esx id, line) to count for this line, and any held vob line whose window passed."""
        out = self.flush(now)
        if line.id.startswith("vob."):
            esx = twin(line.id)
            if esx is None:
                return out
            for i, (_, counted) in enumerate(self.recent):
                if counted == esx:
                    del self.recent[i]  # its twin came first and was counted: this is the same event
                    return out
            self.pending.append((now, esx, line))
            return out
        for i, (_, esx, _vob) in enumerate(self.pending):
            if esx == line.id:
                del self.pending[i]  # its twin: the event is this line
                break
        else:
            self.recent.append((now, line.id))
        out.append((line.id, line))
        return out

    def flush(self, now: float) -> list[tuple[str, Line]]:
        late = [(esx, vob) for arrived, esx, vob in self.pending if now - arrived >= PAIR_WINDOW]
        self.pending = [p for p in self.pending if now - p[0] < PAIR_WINDOW]
        self.recent = [r for r in self.recent if now - r[0] < PAIR_WINDOW]
        return late


class VobdFollower:
    """The counting of one host's vobd.log lines, whatever brings them (SSH, a test)."""

    def __init__(self, origin: str, store, host_name, max_label: int = 128):
        self.store, self.host_name = store, host_name
        self.tally = Tally(origin, "vobd", max_label)
        self.faults = FaultLog(log)
        self.pairing = Pairing()
        # the newest line's time (host clock) and its lines' digests; None until a line came
        self.last: tuple[float, set[str]] | None = None
        self.origin = origin

    def replayed(self, line: Line) -> bool:
        """A line counted already (read again after a reconnection)."""
        if self.last is None:
            return False
        newest, digests = self.last
        if line.time < newest:
            return True
        return line.time == newest and _digest(line.raw) in digests

    def feed(self, raw: str, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        line = parse(raw)
        if line is None:
            if raw.strip():
                self.tally.drop("unreadable")
                self.faults.failed(
                    "line", f"vobd.log on {self.origin}: a line in no known format (counted, logged once): {raw[:120]!r}"
                )
            return
        if self.replayed(line):
            return
        newest, digests = self.last or (None, set())
        self.last = (line.time, (digests if line.time == newest else set()) | {_digest(line.raw)})
        if not (catalog.in_families(line.id) or line.id.startswith("vob.")):
            return  # another family's observation (UserLevelCorrelator, vSAN, network ...)
        self._count(self.pairing.line(line, now))

    def flush(self, now: float | None = None) -> None:
        self._count(self.pairing.flush(time.monotonic() if now is None else now))

    def _count(self, found: list[tuple[str, Line]]) -> None:
        if not found:
            return
        host = self.host_name() or ""
        inventory = self.store.inventories.get(host) if host else None
        names = extract.Inventory()
        if inventory is not None:
            names.devices[host] = set(inventory.luns)
            names.datastores[host] = set(inventory.datastores) | {
                lun.datastore for lun in inventory.luns.values() if lun.datastore
            }
        hosts = {host} if host else set()
        for event_id, line in found:
            named = extract.names(host, names, [line.text])
            self.tally.count(host, event_id, named, line.time, catalog.KNOWN, hosts)

    def publish(self, up: bool) -> None:
        errors = {str(k): v for k, v in self.faults.snapshot().items()}
        self.store.set_storage_events(self.tally.record(up, errors, len(catalog.KNOWN)))


def _digest(raw: str) -> str:
    return hashlib.blake2b(raw.encode(), digest_size=8).hexdigest()
