"""PerformanceManager: counters resolved by name, QueryPerf batched across hosts and chunked
under vCenter's maxQueryMetrics, CSV results parsed into per-host, per-timestamp values.

Real-time samples are 20 s apart; each host's query starts after the newest sample already
ingested (startTime is exclusive), so every sample is read once. The CSV format keeps the
response small (one string per series instead of one XML element per value).
"""

from __future__ import annotations

import datetime as dt
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from sys import intern

from exporter.vsphere import soap
from exporter.vsphere.client import VsphereError
from exporter.vsphere.mapping import COUNTERS, VDISKS, Counter

REALTIME = 20  # seconds: the real-time interval id
MAX_CATCH_UP = 30 * 60  # beyond this gap, ask for the newest sample only (vCenter keeps ~1 h)
# Instance "*" makes one metric id answer one series per instance: 256 ids over hosts with
# thousands of paths could come back as hundreds of thousands of series. A CSV series is about
# five XML elements, so this keeps one answer (and the memory to parse it) near 250,000 elements
# whatever the inventory; more calls of that size cost little (they run in parallel).
MAX_SERIES_PER_CALL = 50_000


@dataclass(slots=True)
class Resolved:
    by_key: dict[int, tuple[str, Counter]]  # counter key -> (name, where it goes)
    missing: list[str]  # names this server does not have
    by_text: dict[str, tuple[str, Counter]] = field(init=False)  # the same by the key as answers write it

    def __post_init__(self):
        self.by_text = {str(key): entry for key, entry in self.by_key.items()}

    def entry(self, key: str) -> tuple[str, Counter] | None:
        """(name, where it goes) of a counter key as an answer writes it (None: not ours)."""
        found = self.by_text.get(key)
        if found is None and key.removeprefix("-").isdigit():  # "007": the key 7 all the same
            found = self.by_key.get(int(key))
        return found

    @property
    def families(self) -> dict[int, str]:
        return {key: counter.family for key, (_, counter) in self.by_key.items()}

    @property
    def host_keys(self) -> list[int]:
        """The counters asked of hosts."""
        return sorted(key for key, (_, counter) in self.by_key.items() if counter.family != VDISKS)

    @property
    def vm_keys(self) -> list[int]:
        """The counters asked of VMs (virtualDisk.*, one series per disk)."""
        return sorted(key for key, (_, counter) in self.by_key.items() if counter.family == VDISKS)


def resolve(perf_counters) -> Resolved:
    """Map the server's counter keys to our counters by name. perf_counters: (key, group.name.rollup)."""
    by_key, seen = {}, set()
    for key, name in perf_counters:
        counter = COUNTERS.get(name)
        if counter is not None and name not in seen:
            by_key[key] = (name, counter)
            seen.add(name)
    return Resolved(by_key, sorted(set(COUNTERS) - seen))


@dataclass(slots=True)
class HostSeries:
    """One entity's answer: sample times (ascending) and its series, column by column: the series'
    counter keys (as the answer writes them, decimal text: Resolved.entry reads it; not made an
    int per series) and instances, and per sample time one value per series (None: no value).

    Columns, not a dict of (key, instance) -> list: every answer of a collection is held until the
    last call is in (1.24 million series at 2,500 hosts), and a series costs three list slots and
    a float here, against a dict entry, a tuple, a list and a float (about 56 bytes against 190)."""

    stamps: list[tuple[float, int]] = field(default_factory=list)  # (unix time, interval)
    keys: list[str] = field(default_factory=list)
    instances: list[str] = field(default_factory=list)
    columns: list[list[float | None]] = field(default_factory=list)  # [stamp index][series index]
    dropped: dict[str, int] = field(default_factory=dict)  # reason -> series dropped

    def __len__(self) -> int:
        return len(self.keys)

    def at(self, index: int):
        """(counter key, instance, value) of every series at the index-th sample time."""
        return zip(self.keys, self.instances, self.columns[index])

    def table(self) -> dict[tuple[str, str], list[float | None]]:
        """(counter key, instance) -> its values, oldest first (for reading, not for a collection)."""
        return {(k, i): [column[n] for column in self.columns] for n, (k, i) in enumerate(zip(self.keys, self.instances))}


@dataclass(slots=True)
class QuerySpec:
    """One host's part of a QueryPerf call: every instance ("*") of these counters, real-time,
    CSV. Written to XML by soap.query_perf_csv (pyVmomi's serializer cost more than the query)."""

    entity: object  # vim.HostSystem or vim.VirtualMachine
    counters: tuple[int, ...]
    start: float | None = None  # unix seconds, exclusive
    max_sample: int | None = None
    series: tuple[int, ...] = ()  # series expected per counter (its instances); empty: one each

    def expected(self) -> tuple[int, ...]:
        return self.series or (1,) * len(self.counters)


def query_specs(
    hosts, keys: list[int], last: dict[str, float], now: float, families: dict[int, str] | None = None
) -> list[QuerySpec]:
    """One QuerySpec per host: every counter, every instance, after its newest sample.
    families (counter key -> model family) lets each spec say how many series it will return,
    from the host's discovered instances, and leaves out the counters of families whose
    instances the host's topology cannot name yet (its paths and mounts not read yet)."""
    everything = tuple(keys)
    by_families: dict = {}  # the host's known families -> its counters
    specs = []
    for host in hosts:
        counters = everything
        if families:
            known = getattr(host, "families", None)
            if known is not None:
                counters = by_families.get(known)
                if counters is None:
                    counters = by_families[known] = tuple(k for k in everything if families[k] in known)
            counts = host.instances()
            series = tuple(counts.get(families[key], 1) for key in counters)
        else:
            series = ()
        since = last.get(host.name)
        if since is not None and now - since < MAX_CATCH_UP:
            specs.append(QuerySpec(host.ref, counters, start=since, series=series))
        else:
            specs.append(QuerySpec(host.ref, counters, max_sample=1, series=series))
    return specs


def vm_specs(vms, keys: list[int], last: dict[str, float], now: float) -> list[QuerySpec]:
    """One QuerySpec per VM: its virtualDisk counters, after its host's newest sample (its samples
    join the host's). vms: (VmTopology, host name) pairs."""
    counters = tuple(keys)
    specs = []
    for vm, host in vms:
        series = (max(1, len(vm.disks)),) * len(counters)
        since = last.get(host)
        if since is not None and now - since < MAX_CATCH_UP:
            specs.append(QuerySpec(vm.ref, counters, start=since, series=series))
        else:
            specs.append(QuerySpec(vm.ref, counters, max_sample=1, series=series))
    return specs


def query_limit(configured: int, server: int | None) -> int:
    """Metric ids per call: the configured limit, or the server's maxQueryMetrics if that is
    lower (0 configured and -1/None from the server both mean no limit)."""
    limits = [n for n in (configured, server) if n and n > 0]
    return min(limits) if limits else 0


def chunk(specs: list, max_metrics: int, max_series: int = MAX_SERIES_PER_CALL) -> list[list]:
    """Split into QueryPerf calls of at most max_metrics metric ids (0 = no limit) whose answers
    hold at most max_series series (but for a single counter with more instances than that); a
    host over either limit is split into several specs for the same entity."""
    max_ids = max_metrics if max_metrics > 0 else float("inf")
    calls, current, ids, series = [], [], 0, 0
    for piece in (piece for spec in specs for piece in _split(spec, max_ids, max_series)):
        size, weight = len(piece.counters), sum(piece.expected())
        if current and (ids + size > max_ids or series + weight > max_series):
            calls.append(current)
            current, ids, series = [], 0, 0
        current.append(piece)
        ids, series = ids + size, series + weight
    if current:
        calls.append(current)
    return calls


def _split(spec: QuerySpec, max_ids: float, max_series: int) -> list[QuerySpec]:
    """One host's spec in pieces within both limits, counters in their order."""
    expected = spec.expected()
    if len(spec.counters) <= max_ids and sum(expected) <= max_series:
        return [spec]
    pieces, begin, series = [], 0, 0
    for at, weight in enumerate(expected):
        if at > begin and (at - begin >= max_ids or series + weight > max_series):
            pieces.append(_piece(spec, begin, at))
            begin, series = at, 0
        series += weight
    pieces.append(_piece(spec, begin, len(expected)))
    return pieces


def _piece(spec: QuerySpec, begin: int, end: int) -> QuerySpec:
    return QuerySpec(spec.entity, spec.counters[begin:end], spec.start, spec.max_sample, spec.series[begin:end])


def _parse_time(text: str) -> float:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def merge_csv(result: HostSeries, sample_info: str, series) -> None:
    """Fold one entity's CSV answer into a host's series, oldest sample first.
    series: (counter key, instance, comma-separated values) per metric. -1 means no value."""
    info = sample_info.split(",") if sample_info else []
    stamps = [(_parse_time(info[i + 1]), int(info[i])) for i in range(0, len(info) - 1, 2)]
    order = sorted(range(len(stamps)), key=lambda i: stamps[i][0])  # some servers answer newest first
    ordered = [stamps[i] for i in order]
    if result.stamps and ordered != result.stamps:
        # A split host's pieces answered with different sample times: keep the first piece's.
        result.dropped["time_mismatch"] = result.dropped.get("time_mismatch", 0) + len(series)
        return
    result.stamps = ordered
    count, misaligned = len(stamps), 0
    if len(result.columns) != count:
        result.columns = [[] for _ in range(count)]
    keys, instances, columns = result.keys, result.instances, result.columns
    reorder = None if order == list(range(count)) else order
    # Held until every call is answered: one copy of each counter key and instance name (a LUN's
    # is in each of its 15 counters' series, a disk's "scsi0:0" in every VM's).
    if count == 1 and series:
        # The common answer (maxSample=1, or one 20 s step since the last collection): every
        # series one value, read with C-level maps, not a Python step per series; any other
        # shape (several samples, an empty or misaligned series) is read series by series below.
        keys_of, instances_of, texts = zip(*series)
        if "" not in texts and not any("," in text for text in texts):
            keys += map(intern, keys_of)
            instances += map(intern, instances_of)
            columns[0] += [value if value >= 0 else None for value in map(float, texts)]
            return
    for key, instance, text in series:
        if not text:
            continue  # an empty series means no sample
        parsed = list(map(float, text.split(",")))
        if len(parsed) != count:
            # vcsim drops zero values from a series; a misaligned series cannot be placed in time.
            misaligned += 1
            continue
        if reorder is not None:
            parsed = [parsed[i] for i in reorder]
        keys.append(intern(key))
        instances.append(intern(instance))
        for column, value in zip(columns, parsed):
            column.append(None if value < 0 else value)
    if misaligned:
        result.dropped["length_mismatch"] = result.dropped.get("length_mismatch", 0) + misaligned


def _is_vm(spec: QuerySpec) -> bool:
    return type(spec.entity)._wsdlName == "VirtualMachine"


def _run(client, specs) -> tuple[list, list[str], list[str], list[tuple[str, str]]]:
    """One QueryPerf call. A fault from one bad entity (a host gone since discovery) fails the
    whole call, so a faulted call of several entities is asked again one by one. A VM the server
    faults on alone (removed, or powered off, between the state check and the query) is gone,
    not an error: returned third, by moid. A host the server faults on alone (not connected, no
    permission on it) is that host's failure: returned fourth, (moid, the fault)."""

    def ask(batch):
        return client.call(lambda content: soap.query_perf_csv(content.perfManager, batch, REALTIME))

    def alone(spec, err):
        """A fault of this entity alone: (error, gone, host failure)."""
        if err.server_fault and _is_vm(spec):
            return [], [spec.entity._moId], []
        if err.server_fault and err.fault != "NotAuthenticated":  # a session logged in again and refused again: not the host's
            text = str(err)
            return [], [], [(spec.entity._moId, text if not err.fault or text.startswith(err.fault) else f"{err.fault}: {text}")]
        return [f"{spec.entity._moId}: {err}"], [], []

    try:
        return ask(specs), [], [], []
    except VsphereError as err:
        if not err.server_fault:
            return [], [str(err)], [], []
        if len(specs) == 1:
            return [], *alone(specs[0], err)
    answers, errors, gone, hosts = [], [], [], []
    for spec in specs:
        try:
            answers.extend(ask([spec]))
        except VsphereError as err:
            error, vanished, failed = alone(spec, err)
            errors += error
            gone += vanished
            hosts += failed
    return answers, errors, gone, hosts


def query(
    client, calls: list[list], max_parallel: int, gone: list[str] | None = None, host_failures: list | None = None
) -> tuple[dict[str, HostSeries], list[str]]:
    """Run the QueryPerf calls (a few at a time); returns per-entity series by moref id, and the
    errors of failed calls (the other calls still count). VMs the server no longer knows are
    added to `gone` (their moids), not to the errors; hosts the server faults on alone to
    `host_failures` ((moid, the fault): that host's, see hostfaults.py), else to the errors."""
    results: dict[str, HostSeries] = {}
    errors: list[str] = []
    with ThreadPoolExecutor(max_workers=max(1, min(max_parallel, len(calls) or 1))) as pool:
        for answer, failed, vanished, hosts in pool.map(lambda specs: _run(client, specs), calls):
            errors.extend(failed)
            if gone is not None:
                gone.extend(vanished)
            if host_failures is not None:
                host_failures.extend(hosts)
            else:
                errors.extend(f"{moid}: {message}" for moid, message in hosts)
            for entity in answer:
                merge_csv(results.setdefault(entity.entity, HostSeries()), entity.sample_info, entity.series)
    return results, errors
