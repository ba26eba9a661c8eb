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
from exporter.vsan import discovery, health, perf, perfcsv
from exporter.vsan.service import PerfFault, VsanService
from exporter.vsphere.client import VsphereError

log = logging.getLogger(__name__)

CALLS = ("perf", "health", "space", "resync")
# A query looks back at most this many intervals for the newest complete sample (the first one of
# a cluster, and one after an outage, this far).
_LOOKBACK_SAMPLES = 3


class VsanSource:
    def __init__(self, target, store):
        """target: the vSphere target (exporter.vsphere.VsphereTarget) whose session, settings and
        overrun count this source shares; its name is the records' origin."""
        self.name = target.name
        self.client = target.client
        self.store = store
        self.config = target.config
        self.overruns = target.overruns  # a vSAN round longer than its interval counts under phase "vsan"
        self.service = VsanService(target.client)
        self.lock = threading.Lock()
        self.clusters: list[discovery.ClusterTopology] = []
        self.discovered_at = -1.0  # monotonic time of the last discovery
        self.supported: dict[str, set[str]] | None = None  # entity type -> labels this vSAN version has
        self.resync_supported = True  # False once the server says it has no QuerySyncingVsanObjectsSummary
        self.taken: dict[str, float] = {}  # cluster -> newest sample time taken (never taken twice)
        self.latest: dict[str, m.VsanSample] = {}  # cluster -> that sample
        self.errors: dict[str, dict[str, int]] = {}  # cluster -> call -> failures so far
        self.dropped: dict[str, dict[str, int]] = {}  # cluster -> reason -> values not placed so far
        self.samples: dict[str, int] = {}  # cluster -> samples taken
        self.last_error: dict[tuple[str, str], str] = {}  # (cluster, call) -> last message, logged on change
        # (cluster, entity type) -> the form it is asked in, once the wildcard was refused (perf.FORMS)
        self.forms: dict[tuple[str, str], str] = {}
        self.first_form = perf.WILDCARD  # the form every type is asked in first (a benchmark compares them)
        self.unnamed = False  # a round met uuids the configuration does not name (a new VM, host or disk)

    # --- discovery -------------------------------------------------------------------------
    def discover(self) -> bool:
        try:
            clusters = discovery.discover(self.client, self.config.selection)
        except VsphereError as err:
            log.warning("vsphere target %s: vSAN discovery failed: %s", self.name, err)
            return False
        gone = {c.name for c in self.clusters} - {c.name for c in clusters}
        if clusters and self.supported is None:
            self.supported = self._supported_labels()
        self.clusters = clusters
        self.discovered_at = time.monotonic()
        if gone:
            self.store.drop_vsan(gone, origin=self.name)
            with self.lock:
                for name in gone:
                    for state in (self.taken, self.latest, self.errors, self.dropped, self.samples):
                        state.pop(name, None)
                    for keyed in (self.forms, self.last_error):
                        for key in [k for k in keyed if k[0] == name]:
                            del keyed[key]
            log.info("vsphere target %s: vSAN cluster(s) gone: %s", self.name, ", ".join(sorted(gone)))
        return True

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
        start = time.perf_counter()
        record = m.VsanCluster(
            name=topo.name,
            uuid=topo.uuid,
            esa=topo.esa,
            hosts=dict(topo.hosts),
            disks=dict(topo.disks),
            nic_speeds=dict(topo.nic_speeds),
            unnamed_disks=topo.unnamed_disks,
        )
        failed: dict[str, str] = {}  # call -> message
        dropped: dict[str, int] = {}
        self._performance(topo, now, dropped, failed)
        for call, read in (
            ("health", lambda: health.apply_summary(record, self.service.health_summary(topo.moid))),
            ("space", lambda: health.apply_space(record, self.service.space_usage(topo.moid))),
            ("resync", lambda: self._resync(record, topo)),
        ):
            try:
                read()
            except VsphereError as err:
                failed[call] = str(err)
        self._failed(topo.name, failed)
        if dropped.get("unknown_entity"):
            self.unnamed = True  # read the configuration again before the next round
        record.sample = self.latest.get(topo.name)
        if record.sample is not None:
            record.vms = {vm: topo.vms[vm] for vm in record.sample.vms if vm in topo.vms}
        self.store.set_vsan(record, origin=self.name)
        self._publish(topo.name, not failed, dropped, time.perf_counter() - start)

    def _performance(self, topo: discovery.ClusterTopology, now: float, dropped: dict[str, int], failed: dict[str, str]) -> None:
        """The newest complete sample after the last one taken, if there is one yet, from every
        entity type that answered; a type that failed is in `failed` ("perf:<type>" -> message)."""
        after = self.taken.get(topo.name)
        # The window: since the last sample taken, at most the lookback (only the newest sample is
        # taken; the reference asks for spans under 24 hours, and a long outage must not make one).
        start = now - _LOOKBACK_SAMPLES * perfcsv.DEFAULT_INTERVAL
        if after is not None and after > start:
            start = after
        rows: list[perfcsv.EntityRow] = []
        for kind in perf.entity_types(topo.esa):
            labels = perf.labels_for(kind, self.supported)  # None: every label the type has
            try:
                rows += self._entity_type(topo, kind, labels, start, now, dropped)
            except VsphereError as err:
                failed[f"perf:{kind}"] = str(err)
        stamp = perfcsv.newest_complete(rows, start, now)
        if stamp is None:
            return  # no new complete sample yet: the last one stays, with its own time
        sample = perfcsv.sample_at(rows, stamp, topo.names, dropped)
        with self.lock:
            self.taken[topo.name] = stamp
            self.latest[topo.name] = sample
            self.samples[topo.name] = self.samples.get(topo.name, 0) + 1

    def _entity_type(self, topo, kind: str, labels: list[str] | None, start: float, end: float, dropped: dict[str, int]):
        """One entity type's rows, in the form it is asked in: the wildcard unless the server refused
        it for this cluster and type; a refusal (InvalidArgument) moves to the next form at once and
        is remembered, so it is not asked again every round."""
        key = (topo.name, kind)
        form = self.forms.get(key, self.first_form)
        while True:
            uuids = [] if form == perf.WILDCARD else topo.uuids(kind)
            try:
                rows = []
                for specs in perf.calls(kind, form, uuids, labels, start, end):
                    refused = perf.refusal(specs)
                    if refused:  # never sent: the reference refuses it (a defect of the plan)
                        raise VsphereError(f"not sent: {refused}")
                    rows += perf.rows(self.service.query_perf(topo.moid, specs), dropped)
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

    def _resync(self, record: m.VsanCluster, topo: discovery.ClusterTopology) -> None:
        if not self.resync_supported:
            return
        try:
            health.apply_resync(record, self.service.resync_summary(topo.moid))
        except VsphereError as err:
            if "MethodNotFound" in str(err) or "not implemented" in str(err).lower():
                self.resync_supported = False  # an older vSAN: no resync summary; not an error every interval
                log.info("vsphere target %s: vSAN has no resync summary (%s)", self.name, err)
                return
            raise

    def _failed(self, cluster: str, failed: dict[str, str]) -> None:
        """Count each failed call of a round; log the ones that started failing or fail otherwise
        now, one line per message (several entity types failing alike, such as a performance
        service that is off, are one line); forget the calls that answered."""
        new: dict[str, list[str]] = {}  # message -> calls
        with self.lock:
            calls = self.errors.setdefault(cluster, {})
            for call, message in failed.items():
                calls[call] = calls.get(call, 0) + 1
                if self.last_error.get((cluster, call)) != message:
                    new.setdefault(message, []).append(call)
                self.last_error[(cluster, call)] = message
            for key in [k for k in self.last_error if k[0] == cluster and k[1] not in failed]:
                del self.last_error[key]
        for message, which in new.items():
            log.warning("vsphere target %s: vSAN %s of cluster %s failed: %s", self.name, ", ".join(which), cluster, message)

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
                errors=dict(self.errors.get(cluster, {})),
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
        """One round of the loop: discovery when due, every cluster, and discovery again at once
        when the answers named a VM, host or disk the last discovery did not see."""
        if self.discovered_at < 0 or time.monotonic() - self.discovered_at >= self.config.discovery_interval:
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
