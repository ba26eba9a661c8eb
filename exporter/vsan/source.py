"""The vSAN clusters of one vSphere target as a source, on their own interval (default 5 min: the
performance service keeps 5-minute samples), over the target's session.

Per cluster and interval: VsanPerfQueryPerf once per entity type (a wildcard spec alone in its
call, or by uuid for a type that refuses it: exporter.vsan.perf), the health summary (from vSAN's
cache), the space report and the resync summary. Each call fails on its own: a fault on one
cluster, one call or one entity type hides nothing else, and no vSAN call touches the LUN
collection. A failure is counted by cluster and call (`perf:<entity type>` for the performance
calls) and logged once, when it starts or its message changes, not every round. Each cluster's
record (a model.VsanCluster) and its health (a SourceHealth of kind "vsan": up, duration, errors
per call, values dropped per reason, samples) go to the store whole; a cluster that leaves the
target (vSAN off, removed) takes its series with it.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from exporter.store import model as m
from exporter.store.faultlog import FaultLog
from exporter.vsan import discovery, health, perf, perfcsv, refused
from exporter.vsan.service import PerfFault, VsanService
from exporter.vsphere.client import VsphereError

log = logging.getLogger(__name__)

CALLS = ("perf", "health", "space", "resync")
# A query looks back at most this many intervals for the newest complete sample (the first one of
# a cluster, and one after an outage, this far).
_LOOKBACK_SAMPLES = 3
_LATE = "not asked: the round's deadline passed"
_DISCOVERY = ("", "discovery")  # the discovery's own failure: no cluster's (counted in no cluster's errors)
_DISK_QUERIES = {discovery.MANAGED_DISKS: "QueryVsanManagedDisks", discovery.DISKS_FOR_VSAN: "QueryDisksForVsan"}


class _Round:
    """One cluster's round: what its calls answered before the round's deadline. The worker that
    makes the calls keeps an answer only under the lock and while the round is open; at the
    deadline the round is closed, and every call still pending fails with the reason given."""

    def __init__(self, topo: discovery.ClusterTopology, deadline: float, calls: list[str]):
        self.deadline = deadline  # time.monotonic()
        self.record = m.VsanCluster(
            name=topo.name,
            uuid=topo.uuid,
            esa=topo.esa,
            hosts=dict(topo.hosts),
            disks=dict(topo.disks),
            nic_speeds=dict(topo.nic_speeds),
            unnamed_disks=topo.unnamed_disks,
        )
        self.failed: dict[str, str] = {}  # call -> message
        self.dropped = refused.Dropped()
        self.pending = set(calls)
        self.lock = threading.Lock()
        self.open = True

    def late(self) -> bool:
        return time.monotonic() >= self.deadline

    def done(self, call: str | None, apply=None, dropped: refused.Dropped | None = None, error: str | None = None) -> bool:
        """One call's outcome: apply() its answer, count what it refused; False (nothing kept)
        once the round is closed."""
        with self.lock:
            if not self.open:
                return False
            self.pending.discard(call)
            if error is not None:
                self.failed[call] = error
            elif apply is not None:
                apply()
            for reason, count in (dropped or {}).items():
                refused.count(self.dropped, reason, count)
            for key, note in getattr(dropped, "refusals", {}).items():
                self.dropped.refusals.setdefault(key, note)
            return True

    def close(self, reason: str) -> None:
        with self.lock:
            self.open = False
            for call in self.pending:
                self.failed[call] = reason
            self.pending.clear()


class VsanSource:
    def __init__(self, target, store, max_label: int = refused.MAX_LABEL):
        """target: the vSphere target (exporter.vsphere.VsphereTarget) whose session, settings and
        overrun count this source shares; its name is the records' origin. max_label: the longest
        state or entity id kept (--limits.max-label-length)."""
        self.name, self.max_label = target.name, max_label
        self.client = target.client
        self.store = store
        self.config = target.config
        self.overruns = target.overruns  # a vSAN round longer than its interval counts under phase "vsan"
        self.service = VsanService(target.client)
        self.lock = threading.Lock()
        self.clusters: list[discovery.ClusterTopology] = []  # those with a connected host: the rounds read them
        self.vsan_clusters: frozenset = frozenset()  # every vSAN cluster the last discovery found, hosts or none
        self.discovered_at = -1.0  # monotonic time of the last discovery
        self.members: frozenset = frozenset()  # the vSAN clusters' readable hosts at the last discovery (readable_members())
        self.supported: dict[str, set[str]] | None = None  # entity type -> labels this vSAN version has
        self.resync_supported = True  # False once the server says it has no QuerySyncingVsanObjectsSummary
        self.taken: dict[str, float] = {}  # cluster -> newest sample time taken (never taken twice)
        self.latest: dict[str, m.VsanSample] = {}  # cluster -> that sample
        # (cluster, call) and, for the ESA disk queries, (cluster, call, host): failures so far, each
        # logged once per message, its end once; a cluster's errors are their sum by call
        self.faults = FaultLog(log)
        self.dropped: dict[str, dict[str, int]] = {}  # cluster -> reason -> values not placed so far
        self.samples: dict[str, int] = {}  # cluster -> samples taken
        # (cluster, entity type) -> the form it is asked in, once the wildcard was refused (perf.FORMS)
        self.forms: dict[tuple[str, str], str] = {}
        self.first_form = perf.WILDCARD  # the form every type is asked in first (a benchmark compares them)
        self.unnamed = False  # a round met uuids the configuration does not name (a new VM, host or disk)
        self.workers: dict[str, threading.Thread] = {}  # cluster -> the worker of its last round
        self.refusals = FaultLog(log)  # (cluster, field, reason): a value refused, logged the first time only

    # --- discovery -------------------------------------------------------------------------
    def discover(self) -> bool:
        try:
            found = discovery.discover(self.client, self.config.selection, self.service)
        except VsphereError as err:  # retried at the real-time pace until a first one works: logged once
            self.faults.failed(_DISCOVERY, str(err), f"vsphere target {self.name}: vSAN discovery failed: {err}")
            return False
        self.faults.answered(_DISCOVERY, f"vsphere target {self.name}: vSAN discovery answers again")
        clusters = [c for c in found if c.hosts]
        self.vsan_clusters = frozenset(c.name for c in found)
        gone = {c.name for c in self.clusters} - {c.name for c in clusters}
        if clusters and self.supported is None:
            self.supported = self._supported_labels()
        self.clusters = clusters
        self.discovered_at = time.monotonic()
        self.members = self.readable_members()
        self._disk_query_faults(clusters)
        if gone:
            self.store.drop_vsan(gone, origin=self.name)
            with self.lock:
                for name in gone:
                    for state in (self.taken, self.latest, self.dropped, self.samples):
                        state.pop(name, None)
                    for key in [k for k in self.forms if k[0] == name]:
                        del self.forms[key]
            for faults in (self.faults, self.refusals):
                faults.forget(lambda key: key[0] in gone)
            log.info("vsphere target %s: vSAN cluster(s) gone: %s", self.name, ", ".join(sorted(gone)))
        return True

    def readable_members(self) -> frozenset:
        """(host, cluster) of every host the target's vSphere source reads now (its store
        inventories, which its change stream keeps current: a host added, removed, disconnected or
        reconnected) in a cluster the last discovery found with vSAN on, whether or not any of its
        hosts could be read then. When they differ from those at the last discovery, the next round
        discovers again rather than an hour later: a vSAN host that came has its series, one that
        went has none, and a cluster whose every host was away is read again when one returns."""
        names = self.vsan_clusters
        with self.store.lock:
            inventories = self.store.view(self.name).inventories
        return frozenset((host, inventory.cluster) for host, inventory in inventories.items() if inventory.cluster in names)

    def _disk_query_faults(self, clusters: list[discovery.ClusterTopology]) -> None:
        """Count each ESA disk query that failed for a host in this discovery, by cluster and call
        (esxi_vsan_errors_total{call="managed_disks"|"disks_for_vsan"}, published with the next
        round); log it once per host, again when its message changes, and its end once."""
        for topo in clusters:
            for (call, host), message in sorted(topo.join_faults.items()):
                then = (
                    "naming its disks with QueryDisksForVsan"
                    if call == discovery.MANAGED_DISKS
                    else "its vSAN ESA disks stay unnamed (their values count as unknown_entity)"
                )
                line = (
                    f"vsphere target {self.name}: vSAN cluster {topo.name}: {_DISK_QUERIES[call]} failed for host {host}: "
                    f"{message}; {then} (counted, logged once)"
                )
                self.faults.failed((topo.name, call, host), message, line)
            self.faults.recovered(
                lambda key, topo=topo: len(key) == 3 and key[0] == topo.name and key[1:] not in topo.join_faults,
                lambda key: (
                    f"vsphere target {self.name}: vSAN cluster {key[0]}: {_DISK_QUERIES[key[1]]} answers again for host {key[2]}"
                ),
            )

    def _supported_labels(self) -> dict[str, set[str]] | None:
        """The labels this vSAN version has per entity type; None (ask for all of ours) if it cannot say."""
        try:
            return self.service.supported_labels() or None
        except VsphereError as err:
            log.info("vsphere target %s: vSAN did not list its metrics (%s); asking for every label", self.name, err)
            return None

    # --- collection ------------------------------------------------------------------------
    def collect(self, now: float | None = None) -> None:
        """One round over every vSAN cluster, clusters in parallel."""
        now = time.time() if now is None else now
        clusters = self.clusters
        if not clusters:
            return
        with ThreadPoolExecutor(max_workers=max(1, min(len(clusters), self.config.max_parallel_queries))) as pool:
            list(pool.map(lambda cluster: self.collect_cluster(cluster, now), clusters))

    def collect_cluster(self, topo: discovery.ClusterTopology, now: float) -> None:
        """One cluster's round under one deadline (the vSphere call timeout from its start) for all
        its calls: a cluster whose vSAN endpoint hangs is published down at the deadline, with
        every call that had not answered failed, not after each call timed out in turn. The calls
        are made by a worker thread; what it reads after the deadline is dropped."""
        start = time.perf_counter()
        timeout = self.config.timeout
        round_ = _Round(topo, time.monotonic() + timeout, self._calls(topo))
        previous = self.workers.get(topo.name)
        if previous is not None and previous.is_alive():  # a call of the last round still hangs
            round_.close("not asked: a call of the cluster's previous round has not ended")
        else:
            worker = threading.Thread(
                target=self._read, args=(round_, topo, now), name=f"vsan:{self.name}:{topo.name}", daemon=True
            )
            self.workers[topo.name] = worker
            worker.start()
            worker.join(max(0.0, round_.deadline - time.monotonic()))
            late = worker.is_alive()
            round_.close(f"no answer within the round's deadline ({timeout:g}s)" if late else "not read: the round failed")
        record, failed, dropped = round_.record, round_.failed, round_.dropped
        self._failed(topo.name, failed)
        self._refused(topo, dropped.refusals)
        if dropped.get("unknown_entity"):
            self.unnamed = True  # read the configuration again before the next round
        record.sample = self.latest.get(topo.name)
        if record.sample is not None:
            record.vms = {vm: topo.vms[vm] for vm in record.sample.vms if vm in topo.vms}
        self.store.set_vsan(record, origin=self.name)
        self._publish(topo.name, not failed, dropped, time.perf_counter() - start)

    def _calls(self, topo: discovery.ClusterTopology) -> list[str]:
        """The calls of a cluster's round, as errors name them."""
        kinds = perf.entity_types(topo.esa)  # every type is asked: with our labels, or with no label list
        return [f"perf:{kind}" for kind in kinds] + ["health", "space"] + (["resync"] if self.resync_supported else [])

    def _read(self, round_: _Round, topo: discovery.ClusterTopology, now: float) -> None:
        """The worker of one cluster's round: every call, each answer kept while the round is open."""
        try:
            self._performance(round_, topo, now)
            moid, service = topo.moid, self.service
            for call, ask, apply in (
                ("health", lambda: service.health_summary(moid), self._apply_summary),
                ("space", lambda: service.space_usage(moid), health.apply_space),
                ("resync", lambda: service.resync_summary(moid), health.apply_resync),
            ):
                if call == "resync" and not self.resync_supported:
                    continue
                if round_.late():
                    round_.done(call, error=_LATE)
                    continue
                try:
                    answer = ask()
                except VsphereError as err:
                    if call == "resync" and ("MethodNotFound" in str(err) or "not implemented" in str(err).lower()):
                        self.resync_supported = False  # an older vSAN: no resync summary; not an error every interval
                        log.info("vsphere target %s: vSAN has no resync summary (%s)", self.name, err)
                        round_.done(call)
                    else:
                        round_.done(call, error=str(err))
                    continue
                dropped = refused.Dropped()
                round_.done(call, lambda: apply(round_.record, answer, dropped), dropped)  # noqa: B023 - applied at once
        except Exception:  # noqa: BLE001 - a worker must not die silently; its calls are failed by the round
            log.exception("vsphere target %s: vSAN collection of cluster %s failed", self.name, topo.name)

    def _apply_summary(self, cluster: m.VsanCluster, summary, dropped: refused.Dropped) -> None:
        health.apply_summary(cluster, summary, dropped, self.max_label)

    def _performance(self, round_: _Round, topo: discovery.ClusterTopology, now: float) -> None:
        """The newest complete sample after the last one taken, if there is one yet, from every
        entity type that answered; a type that failed is failed in the round ("perf:<type>")."""
        after = self.taken.get(topo.name)
        # The window: since the last sample taken, at most the lookback (only the newest sample is
        # taken; the reference asks for spans under 24 hours, and a long outage must not make one).
        start = now - _LOOKBACK_SAMPLES * perfcsv.DEFAULT_INTERVAL
        if after is not None and after > start:
            start = after
        rows: list[perfcsv.EntityRow] = []
        for kind in perf.entity_types(topo.esa):
            labels = perf.labels_for(kind, self.supported)  # None: every label the type has
            dropped = refused.Dropped()
            try:
                found = self._entity_type(topo, kind, labels, start, now, dropped, round_.deadline)
            except VsphereError as err:
                round_.done(f"perf:{kind}", dropped=dropped, error=str(err))
                continue
            if round_.done(f"perf:{kind}", dropped=dropped):
                rows += found
        stamp = perfcsv.newest_complete(rows, start, now)
        if stamp is None:
            return  # no new complete sample yet: the last one stays, with its own time
        dropped = refused.Dropped()
        sample = perfcsv.sample_at(rows, stamp, topo.names, dropped)

        def take() -> None:
            with self.lock:
                self.taken[topo.name] = stamp
                self.latest[topo.name] = sample
                self.samples[topo.name] = self.samples.get(topo.name, 0) + 1

        round_.done(None, take, dropped)

    def _entity_type(self, topo, kind: str, labels: list[str] | None, start: float, end: float, dropped, deadline: float):
        """One entity type's rows, in the form it is asked in: the wildcard unless the server refused
        it for this cluster and type; a refusal (InvalidArgument) moves to the next form at once and
        is remembered, so it is not asked again every round. Each answer is read as it arrives,
        entities the discovery does not name dropped as they come, and capped by what was asked."""
        key = (topo.name, kind)
        form = self.forms.get(key, self.first_form)

        while True:
            uuids = [] if form == perf.WILDCARD else topo.uuids(kind)
            try:
                rows = []
                for specs in perf.calls(kind, form, uuids, labels, start, end):
                    refusal = perf.refusal(specs)
                    if refusal:  # never sent: the reference refuses it (a defect of the plan)
                        raise VsphereError(f"not sent: {refusal}")
                    if time.monotonic() >= deadline:
                        raise VsphereError(_LATE)
                    if form == perf.WILDCARD:
                        asked = list(topo.uuids(kind))
                    else:
                        asked = [uuid for s in specs for uuid in s.entityRefId.partition(":")[2].split(",")]
                    limit = perf.answer_cap(len(asked), len(labels) if labels is not None else perf.unlisted_labels(kind))

                    def read(pieces, limit=limit, asked=asked):  # the cap is on what is kept: see perf
                        return perf.read_answer(pieces, topo.names, dropped, self.max_label, cap=limit, asked=(kind, asked))

                    rows += self.service.query_perf(topo.moid, specs, read, deadline=deadline, capped=False)
                return rows
            except PerfFault as err:
                following = perf.next_form(form, self.service.multi_entity) if err.fault == "InvalidArgument" else None
                if following is None:
                    raise
                log.info(
                    "vsphere target %s: vSAN cluster %s: %s refused the %s query (%s); asking it %s from now on",
                    self.name, topo.name, kind, form, err, "by multi-entity specs" if following == perf.MULTI else "by uuid, 100 specs a call",
                )  # fmt: skip
                with self.lock:
                    self.forms[key] = form = following

    def _refused(self, topo: discovery.ClusterTopology, refusals: dict[tuple[str, str], refused.Refusal]) -> None:
        """One line for each field and reason of a cluster the first time a value is refused, not
        every round (they are counted every time)."""
        for (field, reason), note in refusals.items():
            key = (topo.name, field, reason)
            if self.refusals.is_failing(key):
                continue
            entity = perfcsv.describe(note.entity, topo.names) if ":" in note.entity else note.entity
            why = f"over {self.max_label} characters" if reason == refused.LABEL_TOO_LONG else refused.WHY.get(reason, reason)
            line = (
                f"vsphere target {self.name}: vSAN cluster {topo.name}: {entity}, {field} {note.value!r} refused: {why} "
                f"({reason}; counted, logged once)"
            )
            self.refusals.failed(key, reason, line)

    def _failed(self, cluster: str, failed: dict[str, str]) -> None:
        """Count each failed call of a round; log the ones that started failing or fail otherwise
        now, one line per message (several entity types failing alike, such as a performance
        service that is off, are one line), and the calls that answer again, once."""
        new: dict[str, list[str]] = {}  # message -> calls
        for call, message in failed.items():
            if self.faults.failed((cluster, call), message, quiet=True):
                new.setdefault(message, []).append(call)
        for message, which in new.items():
            log.warning("vsphere target %s: vSAN %s of cluster %s failed: %s", self.name, ", ".join(which), cluster, message)
        ended = self.faults.recovered(lambda key: len(key) == 2 and key[0] == cluster and key[1] not in failed)
        if ended:
            log.info("vsphere target %s: vSAN %s of cluster %s answers again", self.name, ", ".join(k[1] for k in ended), cluster)

    def cluster_errors(self, cluster: str) -> dict[str, int]:
        """call -> failures so far of one cluster (the ESA disk queries summed over its hosts)."""
        errors: dict[str, int] = {}
        for key, n in self.faults.snapshot(lambda key: key[0] == cluster).items():
            errors[key[1]] = errors.get(key[1], 0) + n
        return errors

    def _publish(self, cluster: str, up: bool, dropped: dict[str, int], seconds: float) -> None:
        with self.lock:
            totals = self.dropped.setdefault(cluster, {})
            for reason, count in dropped.items():
                totals[reason] = totals.get(reason, 0) + count
            record = m.SourceHealth(
                kind="vsan",
                name=cluster,
                origin=self.name,
                up=int(up),
                durations={"collection": seconds},
                errors=self.cluster_errors(cluster),
                dropped=dict(totals),
                samples={cluster: self.samples.get(cluster, 0)},
            )
        self.store.set_health(record)

    # --- running ---------------------------------------------------------------------------
    def run_once(self) -> bool:
        """One discovery and one collection (dump)."""
        ok = self.discover()
        self.collect()
        return ok

    def start(self, stop: threading.Event) -> list[threading.Thread]:
        thread = threading.Thread(target=self._loop, args=(stop,), name=f"vsan:{self.name}", daemon=True)
        thread.start()
        return [thread]

    def run_round(self) -> None:
        """One round of the loop: discovery when due or when the vSAN clusters' hosts changed,
        every cluster, and discovery again at once when the answers named a VM, host or disk the
        last discovery did not see."""
        due = self.discovered_at < 0 or time.monotonic() - self.discovered_at >= self.config.discovery_interval
        if due or self.readable_members() != self.members:
            self.discover()
        self.collect()
        if self.unnamed:
            self.unnamed = False
            self.discover()

    def _loop(self, stop: threading.Event) -> None:
        interval = self.config.vsan_interval
        while not stop.is_set():
            started = time.monotonic()
            try:
                self.run_round()
            except Exception:  # noqa: BLE001 - the loop must survive anything one round does
                log.exception("vsphere target %s: vSAN collection failed", self.name)
            self.overruns.check("vsan", time.monotonic() - started, interval)
            # A first discovery that failed is retried at the real-time pace, not after 5 minutes.
            wait = interval if self.discovered_at >= 0 else self.config.interval
            stop.wait(max(1.0, wait - (time.monotonic() - started)))
        self.service.close()
