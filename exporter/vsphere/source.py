"""One vSphere target as a source: the inventory walked once, then followed as vCenter reports its
changes (follow.py; a full walk again every hour, and after any error in the update stream), and
real-time collection every 20 s decoupled from scrapes.

It pushes model objects into the process's one store, each marked with the target's name (the
store's per-target view serves /probe?target=NAME): Samples, Inventories, and a SourceHealth
record (up, durations, objects, errors) after every change. It keeps no exporter-facing state.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from exporter.esxcli.health import EsxcliHealth
from exporter.esxcli.retry import Retries
from exporter.store import model as m
from exporter.store.faultlog import FaultLog
from exporter.vsphere import discovery, esxcli, gcpause, iorm, mapping, perf, vms
from exporter.vsphere.client import Client, VsphereError
from exporter.vsphere.follow import Follower, WalkTimedOut
from exporter.vsphere.hostfaults import HostFaults
from exporter.vsphere.mirror import LUNS, Delta, Mirror, gone_objects
from exporter.vsphere.overruns import Overruns
from exporter.vsphere.settings import TargetConfig

log = logging.getLogger(__name__)

# How long a host vCenter lists but cannot read keeps its counters (hidden) for its return: an hour,
# longer than a host's reboot or a network cut; a host away longer starts its series again from 0.
SUSPEND_FOR = 3600.0
# How long an object known gone from a host (a VM powered off, moved away or renamed; a LUN, path or
# datastore removed) keeps its counters (hidden) for its return there: back within the hour, its
# series goes on from its total (a counter with the same labels never goes down); later, from 0.
RETIRED_FOR = 3600.0
# How far a walk's wait for each answer may grow past --vsphere.timeout after walks that timed out
# (30 s: up to 4 minutes; 40,000 VMs' first answer from the simulator on a loaded machine took over 30 s).
WALK_TIMEOUT_FACTOR = 8

_UNROUTED, _WILDCARD, _NOT_A_DATASTORE = object(), object(), object()
_TARGET = "target"  # the one key of a target's own failure (its outage FaultLog)


def _object_key(family: str, instance: str, topo: discovery.HostTopology):
    """The model key a perf instance of this family goes to; None for one that is not ours (the
    host aggregate of a disk counter); _WILDCARD for a server that echoes "*" instead of real
    instances (vcsim); _NOT_A_DATASTORE for a datastore.* instance that is none of the host's
    datastores as discovered (a boot bank or OSDATA volume, which discovery leaves out; or one
    mounted since): it would be a series named by a bare UUID, renamed (a new series) once known."""
    if instance == "*":
        return _WILDCARD
    if family == mapping.DATASTORES and instance and instance not in topo.datastore_names:
        return _NOT_A_DATASTORE
    return mapping.instance_key(family, instance, topo.path_names, topo.datastore_names)


class VsphereTarget:
    def __init__(self, config: TargetConfig, store=None):
        """store: the process's store (exporter.store.store.Store), where Samples, Inventories and
        SourceHealth go; a target used on its own (a test, a benchmark) gets a store of its own."""
        if store is None:
            from exporter.store.store import Store

            store = Store()
        self.config = config
        self.name = config.name
        self.client = Client(config)
        self.store = store
        self.lock = threading.Lock()  # guards the health state below
        self.topology: discovery.Topology | None = None  # replaced whole, never mutated
        self.discovered = threading.Event()  # set by the first discovery that succeeds
        self.collected = threading.Event()  # set by the first collection
        self.forget_listeners: list = []  # called with the hosts that left (the SMART rounds: exporter.smart)
        self.running = False  # started as a live source (start()), not driven step by step (dump)
        self.resolved: perf.Resolved | None = None
        self.max_query_metrics = config.max_query_metrics  # lowered to the server's own limit when it has one
        self.last_timestamp: dict[str, float] = {}  # host -> newest sample ingested
        self.up = 0
        self.outage = FaultLog(log)  # the target's own failure (_TARGET): logged once per message, its end once
        self.durations: dict[str, float] = {}  # phase -> seconds of the last run
        self.errors: dict[str, int] = {"discovery": 0, "collection": 0}
        self.dropped: dict[str, int] = {}  # reason -> series dropped
        self.samples: dict[str, int] = {}  # host -> samples ingested
        self.suspended: dict[str, float] = {}  # host vCenter lists but cannot read -> since (monotonic)
        self.esxcli_found: dict[str, m.Inventory] = {}  # host -> esxcli's last answer, laid over each rediscovery
        self.esxcli_health = EsxcliHealth(
            store, origin=self.name, log=log
        )  # shown on this target's /probe too; logs once per cause
        self.esxcli_retries = Retries(config.esxcli_interval)  # a host whose esxcli failed: read again sooner
        self.host_faults = HostFaults(store, self.name)  # one host's failing calls, its own (hostfaults.py)
        self.overruns = Overruns(self.name)  # collections that took longer than their interval
        self.follower: Follower | None = None  # the last walk's, following its changes while running
        self.walking: Follower | None = None  # the walk under way
        self.stopping = False
        self.published: dict[str, m.Inventory] = {}  # host -> the API's view last handed to the store
        self.changes: dict[str, int] = {}  # kind -> inventory changes applied as they came
        self.walks: dict[str, int] = {}  # reason -> full walks
        self.host_status: dict[str, m.HostStatus] = {}  # every host vCenter lists (selected), reachable or not
        self.publishing = threading.Lock()  # one topology and inventory handed over at a time
        self._esxcli_due: set[str] = set()  # hosts whose esxcli is to be read again now (storage changed)
        self._esxcli_all = False  # every host's, now (after a walk)
        self._esxcli_wake = threading.Event()
        self.walk_timeout = config.timeout  # each answer of a walk's stages: lengthened after a walk timed out
        self.iorm: dict[str, dict[str, m.SiocConfig]] = {}  # host -> datastore -> its SIOC configuration (iorm.py)
        self.iorm_faults = FaultLog(log)  # iormConfiguration's failures: counted every time, logged once
        self._iorm_due = 0.0  # monotonic time of the next iormConfiguration reading (0: at the next collection)
        self.refused = FaultLog(log)  # datastore and snapshot values refused: (object) -> count
        self.space_due = Delta()  # space and snapshots changed as they came, handed over with the next collection
        self._hosts_by_name: tuple = (None, {})  # (topology, host name -> its HostTopology): _host_now

    # --- health --------------------------------------------------------------------------
    @property
    def error(self) -> str:
        """The target's last error while it fails ("" once it answers)."""
        return self.outage.failing.get(_TARGET, "")

    def _failed(self, phase: str, message: str) -> None:
        with self.lock:  # up and the outage change together (discovery and collection run apart)
            self.errors[phase] += 1
            self.up = 0
            self.outage.failed(_TARGET, message, f"vsphere target {self.name}: {phase} failed: {message}", level=logging.ERROR)
        self._publish()

    def _ok(self) -> None:
        with self.lock:
            self.up = 1
            self.outage.answered(_TARGET, f"vsphere target {self.name}: reachable again")
        self._publish()

    def _took(self, phase: str, start: float) -> None:
        with self.lock:
            self.durations[phase] = time.perf_counter() - start

    def _publish(self) -> None:
        """Hand the store a fresh health record (copies: the store's reader never sees a change)."""
        topology = self.topology
        with self.lock:
            record = m.SourceHealth(
                kind="vsphere",
                name=self.name,
                up=self.up,
                durations=dict(self.durations),
                errors={**self.errors, **({"login": self.client.login_refusals} if self.client.login_refusals else {})},
                dropped={**self.dropped, **self._refused()},
                objects=topology.counts() if topology is not None else {},
                samples={host: n for host, n in self.samples.items() if host not in self.suspended},
                last_timestamp=dict(self.last_timestamp),
                overruns=self.overruns.snapshot(),
                changes=dict(self.changes),
                walks=dict(self.walks),
                host_status=self.host_status,  # replaced whole, never changed
            )
        self.store.set_health(record)

    def _refused(self) -> dict[str, int]:
        total = sum(self.refused.snapshot().values())
        return {"value_refused": total} if total else {}

    def _space(self, delta: Delta, mirror: Mirror) -> None:
        """Datastore space and the chosen VMs' snapshots, replaced whole when they changed; each
        refused value counted, and logged once per object and cause."""
        self._judged(delta)
        self._hand_over(delta, mirror)

    def _judged(self, delta: Delta) -> None:
        for key, line in delta.problems:
            self.refused.failed(key, f"vsphere target {self.name}: {line}")
        for key in delta.fine:  # a value refused before read again: its recovery logged once
            if self.refused.is_failing(key):
                self.refused.answered(key, f"vsphere target {self.name}: {key}: its values read again")

    def _hand_over(self, delta: Delta, mirror: Mirror) -> None:
        if delta.space:
            self.store.set_space(self.name, mirror.space_by_url(), origin=self.name)
        if delta.snapshots:
            self.store.set_snapshots(mirror.snapshot_records(), origin=self.name)

    # --- discovery: a full walk, then its changes as they come ------------------------------
    def discover(self, reason: str = "start") -> bool:
        """One full walk of the inventory; not running (dump, a test), every host's esxcli after it."""
        with gcpause.paused():  # see gcpause: the walk builds thousands of elements per host
            return self._discover(reason)

    def _discover(self, reason: str) -> bool:
        start = time.perf_counter()
        old, self.follower = self.follower, None
        if old is not None:
            old.close()  # its changes stop here: the walk reads the state as it is now
        follower = Follower(self.client, self.config, self._followed, self.host_faults, self.walk_timeout)
        follower.staged = self.topology is None  # a cold start publishes stage by stage
        self.walking = follower  # a stop ends the walk too
        try:
            if self.resolved is None:
                # First run: the counter catalogue is read while the server walks the inventory.
                with ThreadPoolExecutor(max_workers=1) as pool:
                    counters = pool.submit(self._resolve_counters)
                    topology = follower.walk(lambda stage: self._between(stage, counters))
                    counters.result()
            else:
                topology = follower.walk(lambda stage: self._between(stage, None))
        except VsphereError as err:
            self._took("discovery", start)
            if isinstance(err, WalkTimedOut) and not self.stopping:
                self._lengthen_walk_timeout()
            if not self.stopping:
                self._failed("discovery", str(err))
            return False
        finally:
            self.walking = None
        self._took("discovery", start)
        # Back towards --vsphere.timeout once the walk's answers come quicker (a stall passed),
        # never below it: twice the slowest answer of this walk.
        self.walk_timeout = max(self.config.timeout, min(self.walk_timeout, 2 * follower.slowest_answer))
        with self.lock:
            self.walks[reason] = self.walks.get(reason, 0) + 1
        self.host_status = follower.mirror.host_status()
        previous = {t.name for t in self.topology.hosts} if self.topology is not None else set()
        before = dict(self.published)  # each host's configuration as the API said before this walk
        self._apply(topology, topology.hosts, (previous | set(self.published)) - {t.name for t in topology.hosts})
        with follower.lock:  # a walk again publishes only its last settle: space and snapshots whole
            self._space(Delta(space=True, snapshots=True), follower.mirror)
        self.discovered.set()  # the collection loop starts its first round now, not at its next poll
        self._iorm_due = 0.0  # datastores are not followed: their SIOC settings are read after every walk
        if self.running and self.config.updates:
            self.follower = follower  # followed by the discovery loop
        else:
            follower.close()  # nobody follows its changes: the server's collectors go now
        self._ok()
        log.debug("vsphere target %s: discovered %s in %.2fs", self.name, topology.counts(), topology.duration)
        if self.config.esxcli:
            if not self.running:
                self._read_esxcli(topology.hosts)
            elif reason == "start":
                self._want_esxcli(None)  # every host, in the esxcli thread, after the first collection
            else:
                self._want_esxcli(self._esxcli_stale(topology, before))
        return True

    def _esxcli_stale(self, topology: discovery.Topology, before: dict[str, m.Inventory]) -> set[str]:
        """After a walk again (vCenter restarted, the update stream failed, the hourly safety net):
        the hosts whose esxcli must be read now. Settings esxcli alone reports live on the hosts
        and do not change with vCenter, so the others wait for the esxcli-interval refresh: after
        a vCenter restart at 2,500 hosts that is 17,500 calls not sent to a server just back."""
        return {
            topo.name
            for topo in topology.hosts
            if topo.name not in self.esxcli_found
            or self.esxcli_health.failing(topo.name)
            or before.get(topo.name) != topo.inventory
        }

    def _lengthen_walk_timeout(self) -> None:
        """A walk's answer took longer than it may: the next walk waits twice as long for each,
        up to WALK_TIMEOUT_FACTOR times --vsphere.timeout. Without this a vCenter whose first
        answer for 40,000 VMs takes longer than a call's timeout is walked again and again, each
        walk thrown away at the same answer and each costing vCenter that answer again."""
        longest = WALK_TIMEOUT_FACTOR * self.config.timeout
        if self.walk_timeout >= longest:
            return
        self.walk_timeout = min(longest, 2 * self.walk_timeout)
        log.warning(
            "vsphere target %s: the walk timed out; the next walk waits up to %gs for each of its answers (--vsphere.timeout %gs)",
            self.name,
            self.walk_timeout,
            self.config.timeout,
        )

    def _between(self, stage: str, counters) -> None:
        """After a stage of the walk is published: collection starts once the hosts' LUNs are in
        (and the counter catalogue); the first time, the first collection goes before the rest
        of the walk shares the interpreter with it."""
        if stage != LUNS:
            return
        if counters is not None:
            counters.result()
        self.discovered.set()
        if self.running:
            self.collected.wait(self.config.interval)

    def _followed(self, delta: Delta, mirror: Mirror) -> None:
        """A change the follower settled (a stage of a cold start, or a change as it came)."""
        if delta.statuses:  # a host's connection state or maintenance mode: in the health record below
            self.host_status = mirror.host_status()
        if delta.changed or delta.removed:
            self._apply(mirror.topology(), delta.changed.values(), delta.removed)
        elif delta.statuses:  # a suspended host removed from vCenter: forgotten now
            with self.publishing:
                self._settle_suspended()
        if mirror.following:  # a change as it came, not a stage of the walk
            with self.lock:
                for kind, count in delta.changes.items():
                    self.changes[kind] = self.changes.get(kind, 0) + count
            if self.config.esxcli and delta.built:
                self._want_esxcli({delta.changed[moid].name for moid in delta.built if moid in delta.changed})
            if not (delta.changed or delta.removed or delta.statuses) and self.running:
                # Only space or snapshots (vCenter refreshes each datastore's figures every few
                # minutes): handed over with the next collection, so that each change does not
                # cost a render of the whole exposition of its own (#43's CPU target).
                self._judged(delta)
                with self.lock:
                    self.space_due.space |= delta.space
                    self.space_due.snapshots |= delta.snapshots
                return
        self._space(delta, mirror)
        self._publish()

    def _space_due(self) -> None:
        """The space and snapshots that changed since the last collection, handed to the store."""
        with self.lock:
            due, self.space_due = self.space_due, Delta()
        follower = self.follower
        if not (due.space or due.snapshots) or follower is None:
            return  # nothing changed, or a walk since handed both over whole
        with follower.lock:
            self._hand_over(due, follower.mirror)

    def _apply(self, topology: discovery.Topology, changed, removed) -> None:
        """Swap the topology in (atomic: collection reads one consistent topology), hand the store
        each changed host's configuration, and drop what is gone: hosts, and the objects a host
        no longer has (a VM destroyed, powered off or moved away, a LUN or path removed)."""
        with self.publishing:
            self.topology = topology
            for topo in changed:
                if topo.families != discovery.ALL_FAMILIES:
                    continue  # its configuration goes out once its paths and mounts are read
                # topo.inventory stays the API's view; esxcli's answers are laid over copies of it.
                found = self.esxcli_found.get(topo.name) if self.config.esxcli else None
                self.store.set_inventory(self._with_esxcli(topo, found), origin=self.name)
                before = self.published.get(topo.name)
                self.published[topo.name] = topo.inventory
                gone = gone_objects(before, topo.inventory) if before is not None else {}
                if gone:
                    self.store.drop_objects(topo.name, gone, origin=self.name, keep_for=RETIRED_FOR)
            self._forget(set(removed))
            self._settle_suspended()

    def _with_esxcli(self, topo: discovery.HostTopology, found: m.Inventory | None) -> m.Inventory:
        """The host's inventory as published: the API's view with esxcli's answer laid over a copy.
        Without an answer yet (esxcli on), DSNRO's source stays unknown until esxcli has been asked."""
        if found is None:
            if not self.config.esxcli:
                _settle_dsnro_source(topo.inventory)
            return iorm.overlay(topo.inventory, self.iorm.get(topo.name))
        inventory = _copy(topo.inventory)
        esxcli.merge(found, inventory)
        _settle_dsnro_source(inventory)
        return iorm.overlay(inventory, self.iorm.get(topo.name))

    def _read_esxcli(self, hosts: list[discovery.HostTopology]) -> None:
        """Per-device DSNRO, adaptive queue depth and round robin limits from esxcli through each
        host's managed method executer, laid over a copy of what the API said (a setting esxcli no
        longer reports goes away) and handed to the store; a host that cannot answer keeps its last."""
        start = time.perf_counter()
        try:
            self.client.content()
        except VsphereError as err:  # the server went away after the topology: esxcli waits for the next discovery
            log.debug("vsphere target %s: esxcli skipped: %s", self.name, err)
            with self.lock:  # and these hosts with it (a walk again reads only the hosts it finds stale)
                self._esxcli_due |= {topo.name for topo in hosts}
            for topo in hosts:  # and if no walk comes (a blip), they are tried again a minute on
                self.esxcli_retries.failed(topo.name)
            return

        def one(topo):  # on the call's own session: one that expired is logged in again, once
            found, problems = self.client.call(
                lambda content: esxcli.read(content.propertyCollector._stub, topo.ref._moId, topo.name)
            )
            with self.publishing:
                # A host forgotten while its esxcli ran (it left, or vCenter cannot read it) gets no
                # health record again: it would stay, a host no longer there, for good.
                now = next((t for t in self.topology.hosts if t.name == topo.name), None) if self.topology else None
                if now is None:
                    return
                if self._esxcli_problems(topo.name, problems):
                    self.esxcli_retries.failed(topo.name)
                else:
                    self.esxcli_retries.succeeded(topo.name)
                if found is not None:
                    self.esxcli_found[topo.name] = found
                elif topo.name in self.esxcli_found:
                    return  # keeps esxcli's last answer, already laid over the topology
                else:  # never answered: the host option or none, on a copy (the published one is not changed)
                    found = m.Inventory(host=topo.name)
                # laid over the host's configuration as it is now (a change may have come meanwhile)
                if now.families == discovery.ALL_FAMILIES:
                    self.store.set_inventory(self._with_esxcli(now, found), origin=self.name)

        with ThreadPoolExecutor(max_workers=max(1, self.config.max_parallel_queries)) as pool:
            list(pool.map(one, hosts))
        topology = self.topology
        names = {topo.name for topo in topology.hosts} if topology is not None else set()
        for gone in set(self.esxcli_found) - names:
            del self.esxcli_found[gone]
        self.esxcli_retries.keep_only(names)
        self._took("esxcli", start)
        self._publish()

    def _esxcli_problems(self, host: str, problems) -> bool:
        """A host's esxcli problems, counted (esxi_esxcli_errors_total) and logged once per command
        and reason, its end once (exporter.esxcli.health); True if the refresh failed."""
        return self.esxcli_health.report(host, problems, f"vsphere target {self.name}: esxcli on {host}")

    def _resolve_counters(self) -> None:
        """Counter keys by name (they differ between vCenter and ESXi) and the server's query limit."""
        resolved = perf.resolve(self.client.call(discovery.perf_counters))
        self.max_query_metrics = perf.query_limit(self.config.max_query_metrics, self.client.call(discovery.server_query_limit))
        if resolved.missing:
            log.info("vsphere target %s: server has no counter %s", self.name, ", ".join(resolved.missing))
        self.resolved = resolved

    def _forget(self, hosts: set[str]) -> None:
        """Hosts gone from the topology. One vCenter still lists (disconnected, not responding) is
        suspended: its series go, but the store keeps its counters, hidden, so that they go on from
        where they were when it is read again (not from 0: a counter reset to Prometheus). One that
        left the inventory or the selection, or stayed unreadable longer than SUSPEND_FOR, takes
        every series keyed by it with it: samples, counters and configuration, samples_total and the
        newest sample's time, esxcli's health and errors (published with the next health record)."""
        if not hosts:
            return
        listed = {host for host in hosts if host in self.host_status}
        if listed:
            self.store.suspend_hosts(listed, origin=self.name)
            fresh = listed - set(self.suspended)
            now = time.monotonic()
            for host in listed:
                self.suspended.setdefault(host, now)
            for listener in self.forget_listeners:  # SMART state is not kept (its series come back afresh)
                listener(listed)
            if fresh:  # a walk names the suspended hosts again: logged once
                log.info("vsphere target %s: %d host(s) vCenter cannot read: %s", self.name, len(fresh), ", ".join(sorted(fresh)))
        gone = hosts - listed
        with self.lock:
            for host in hosts:
                self.last_timestamp.pop(host, None)
                self.esxcli_found.pop(host, None)
                self.iorm.pop(host, None)
        for host in hosts:
            self.esxcli_retries.forget(host)  # read again when it is back (a change or a walk)
            if host in listed:
                self.esxcli_health.suspend(host)
            else:
                self.esxcli_health.forget(host)
        self.host_faults.suspend(listed)  # their call errors go on from their count when read again
        if gone:
            self._forget_for_good(gone)

    def _forget_for_good(self, hosts: set[str]) -> None:
        self.store.forget_hosts(hosts, origin=self.name)
        self.host_faults.forget(hosts)
        for host in hosts:
            self.published.pop(host, None)
            self.suspended.pop(host, None)
            self.esxcli_health.forget(host)
        with self.lock:
            for host in hosts:
                self.samples.pop(host, None)
        for listener in self.forget_listeners:
            listener(hosts)
        log.info("vsphere target %s: %d host(s) left the inventory: %s", self.name, len(hosts), ", ".join(sorted(hosts)))

    def _settle_suspended(self) -> None:
        """Suspended hosts read again are no longer suspended; those that left vCenter's list, or
        stayed unreadable longer than SUSPEND_FOR, are forgotten for good (memory stays bounded)."""
        if not self.suspended:
            return
        topology = self.topology
        shown = {t.name for t in topology.hosts} if topology is not None else set()
        now = time.monotonic()
        for host in [h for h in self.suspended if h in shown]:
            del self.suspended[host]
        gone = {h for h, since in self.suspended.items() if h not in self.host_status or now - since > SUSPEND_FOR}
        if gone:
            self._forget_for_good(gone)

    # --- collection --------------------------------------------------------------------
    def collect(self, now: float | None = None) -> bool:
        start = time.monotonic()
        # see gcpause: one list per perf series, one dict per sample; the store's round: a render
        # ahead waits for it to end, so the two do not share the interpreter (exporter.store.rounds)
        with gcpause.paused(), self.store.rounds.round():
            ok = self._collect(now)
        self._space_due()
        if self.overruns.check("collection", time.monotonic() - start, self.config.interval):
            self._publish()  # done or failed, a run past its interval is counted
        self.collected.set()  # done or failed: the first esxcli read waits no longer
        return ok

    def _collect(self, now: float | None) -> bool:
        topology, resolved = self.topology, self.resolved
        if topology is None or resolved is None:
            return False
        now = time.time() if now is None else now
        if time.monotonic() >= self._iorm_due:
            self._read_iorm(topology)
        start = time.perf_counter()
        specs = perf.query_specs(topology.hosts, resolved.host_keys, self.last_timestamp, now, resolved.families)
        try:
            if not resolved.vm_keys:
                running = {}
            elif self._following():  # the topology is as vCenter last said: nothing to check
                running = {topo.name: topo.vms for topo in topology.hosts if topo.vms}
            else:
                running = self._running_vms(topology)
        except VsphereError as err:  # no answer at all: the server or the login is gone
            with self.lock:
                self.durations["collection"] = time.perf_counter() - start
            self._failed("collection", str(err))
            return False
        specs += perf.vm_specs(
            ((vm, topo.name) for topo in topology.hosts for vm in running.get(topo.name, ())),
            resolved.vm_keys,
            self.last_timestamp,
            now,
        )
        calls = perf.chunk(specs, self.max_query_metrics)
        gone: list[str] = []
        host_failures: list[tuple[str, str]] = []
        try:
            results, errors = perf.query(self.client, calls, self.config.max_parallel_queries, gone, host_failures)
        except VsphereError as err:  # the login itself failed
            results, errors = {}, [str(err)]
        if gone:
            self._count_dropped("vm_gone", len(gone))
        self._host_queries(topology, results, host_failures)
        if host_failures:  # failed QueryPerf calls too, as they always were; logged once each (hostfaults)
            with self.lock:
                self.errors["collection"] += len(host_failures)
        for topo in topology.hosts:
            series = results.get(topo.ref._moId)
            if series is not None:
                vm_series = [(vm, results[vm.ref._moId]) for vm in running.get(topo.name, ()) if vm.ref._moId in results]
                self._ingest_host(topo, series, resolved, vm_series, read_with=topology)
        newer = self.topology
        if newer is not topology:  # a discovery swapped in meanwhile: hosts it dropped stay dropped
            self._forget({t.name for t in topology.hosts} - {t.name for t in newer.hosts})
        if self.suspended:  # those unreadable longer than SUSPEND_FOR go, even with no change to apply
            with self.publishing:
                self._settle_suspended()
        with self.lock:
            self.durations["collection"] = time.perf_counter() - start
        if errors and not results:
            self._failed("collection", errors[0])
            return False
        if errors:
            with self.lock:
                self.errors["collection"] += len(errors)
            log.warning(
                "vsphere target %s: %d QueryPerf failure(s), the other hosts were read: %s", self.name, len(errors), errors[0]
            )
        self._ok()
        return True

    def _read_iorm(self, topology: discovery.Topology) -> None:
        """Every datastore's SIOC configuration (iorm.py), laid over the inventories of the hosts
        that mount it; a host's inventory is handed to the store again where it changed. A fault
        of the server makes every datastore "not reported"; no answer at all keeps the last."""
        self._iorm_due = time.monotonic() + iorm.REFRESH
        names = {topo.ref._moId: topo.name for topo in topology.hosts}
        try:
            found, problems = iorm.by_host(self.client.call(lambda content: iorm.read(content, list(names))), names)
        except VsphereError as err:
            self._iorm_failed(f"iormConfiguration not read: {err}")
            if not err.server_fault:
                return  # the server is gone: the collection says so; the last reading stands
            unreported = m.SiocConfig(reported=False)
            found, problems = {t.name: dict.fromkeys(t.inventory.datastores, unreported) for t in topology.hosts}, []
        else:
            if not problems and self.iorm_faults.answered("iorm"):
                log.info("vsphere target %s: iormConfiguration read again", self.name)
        for problem in problems:
            self._iorm_failed(problem)
        with self.publishing:
            for topo in self.topology.hosts if self.topology is not None else ():
                configs = found.get(topo.name, {})
                if configs == self.iorm.get(topo.name, {}):
                    continue
                self.iorm[topo.name] = configs
                if topo.families == discovery.ALL_FAMILIES:
                    found_esxcli = self.esxcli_found.get(topo.name) if self.config.esxcli else None
                    self.store.set_inventory(self._with_esxcli(topo, found_esxcli), origin=self.name)

    def _iorm_failed(self, message: str) -> None:
        """Counted in esxi_vsphere's errors (phase iorm) every time, logged once per cause."""
        with self.lock:
            self.errors["iorm"] = self.errors.get("iorm", 0) + 1
        self.iorm_faults.failed("iorm", message, f"vsphere target {self.name}: {message}")
        self._publish()

    def _host_queries(self, topology: discovery.Topology, results: dict, failures: list[tuple[str, str]]) -> None:
        """Each host's QueryPerf: a fault of that host alone (not connected, no permission on it)
        is its own, counted and logged once (hostfaults.py); the other hosts were read. Only hosts
        still shown: one that left, or that vCenter lost, while the calls ran would get its health
        record back (esxi_vsphere_host_up of a host that cannot be read) until it returns."""
        failed = dict(failures)
        with self.publishing:  # as _apply and _ingest: no host goes from the topology while these are reported
            now = self.topology
            for topo in topology.hosts:
                moid = topo.ref._moId
                if now is not topology and self._host_now(now, topo.name) is None:
                    continue
                if moid in failed:
                    self.host_faults.failed(topo.name, "QueryPerf", failed[moid])
                elif moid in results:
                    self.host_faults.answered(topo.name, "QueryPerf")

    def _running_vms(self, topology: discovery.Topology) -> dict[str, list[vms.VmTopology]]:
        """host name -> its discovered VMs still running there now. A VM powered off, moved or
        removed since discovery is left out and counted by reason (it comes back, or goes, at
        the next discovery). If the server faults the check, every VM is asked for (its fault
        on a gone one is then counted the same way); no answer at all fails the collection."""
        hosts = [topo for topo in topology.hosts if topo.vms]
        if not hosts:
            return {}
        try:
            now = self.client.call(lambda content: vms.states(content, [topo.ref._moId for topo in hosts]))
        except VsphereError as err:
            if not err.server_fault:
                raise
            log.debug("vsphere target %s: VM state check failed, asking for every VM: %s", self.name, err)
            return {topo.name: topo.vms for topo in hosts}
        running: dict[str, list[vms.VmTopology]] = {}
        for topo in hosts:
            for vm in topo.vms:
                reason = vms.gone_reason(vm, now)
                if reason is None:
                    running.setdefault(topo.name, []).append(vm)
                else:
                    self._count_dropped(reason, 1)
        return running

    def _count_dropped(self, reason: str, count: int) -> None:
        with self.lock:
            self.dropped[reason] = self.dropped.get(reason, 0) + count

    def _ingest_host(
        self,
        topo: discovery.HostTopology,
        series: perf.HostSeries,
        resolved: perf.Resolved,
        vm_series: list[tuple[vms.VmTopology, perf.HostSeries]] = (),
        read_with: discovery.Topology | None = None,
    ) -> None:
        """One host's answer (and its VMs') into samples for the store. read_with: the topology the
        collection asked with; a change applied since takes out what it dropped (_ingest)."""
        with self.lock:
            for reason, count in series.dropped.items():
                self.dropped[reason] = self.dropped.get(reason, 0) + count
            for _, one in vm_series:
                for reason, count in one.dropped.items():
                    self.dropped[reason] = self.dropped.get(reason, 0) + count
        # Each VM's samples join the host's of the same time; one at a time no host sample has is
        # dropped. One newer than the host's newest is not: vCenter had it when the VMs were asked
        # and not yet when their host was (a collection across a 20 s boundary), and the next
        # collection asks the VM again from the host's newest sample on (vm_specs), so it is read then.
        vm_stamps = [(vm, one, {stamp: i for i, (stamp, _) in enumerate(one.stamps)}) for vm, one in vm_series]
        host_stamps = {stamp for stamp, _ in series.stamps}
        newest = max(host_stamps, default=float("-inf"))
        unplaced = sum(len(one) for _, one, at in vm_stamps for stamp in at if stamp not in host_stamps and stamp < newest)
        if unplaced:
            self._count_dropped("time_mismatch", unplaced)
        last = self.last_timestamp.get(topo.name, 0.0)
        for index, (stamp, interval) in enumerate(series.stamps):
            if stamp <= last:
                continue  # already ingested: each 20 s sample counts once
            sample = m.Sample(
                host=topo.name, timestamp=stamp, interval=float(interval), source="vsphere", path_devices=topo.path_devices
            )
            host_level: dict[str, dict[str, float]] = {}  # "" -> host-wide values
            wildcards = unknown = 0
            # Routes are kept per family and instance, not per series: a host's series are its
            # instances times its counters, and the cache of each (a million entries at 2,500
            # hosts) held more memory than every other part of the topology.
            routes = topo.routes
            counter_key, counter = None, None
            for key, instance, raw in series.at(index):
                if raw is None:
                    continue
                if key != counter_key:  # an answer lists a counter's instances one after another
                    counter_key, entry = key, resolved.entry(key)
                    counter = None if entry is None else entry[1]
                    if counter is not None:
                        keys = routes.get(counter.family)
                        if keys is None:
                            keys = routes[counter.family] = {}
                        objects = host_level if counter.family == mapping.HOST else getattr(sample, counter.family)
                if counter is None:
                    continue  # not one of our counters
                object_key = keys.get(instance, _UNROUTED)
                if object_key is _UNROUTED:
                    object_key = keys[instance] = _object_key(counter.family, instance, topo)
                if object_key is None:
                    continue
                if object_key is _WILDCARD:
                    wildcards += 1
                    continue
                if object_key is _NOT_A_DATASTORE:
                    unknown += 1
                    continue
                stats = objects.get(object_key)
                if stats is None:
                    stats = objects[object_key] = {}
                stats[counter.field] = mapping.convert(counter, raw, interval)
            sample.host_values = host_level.get("", {})
            for vm, one, at in vm_stamps:
                index_vm = at.get(stamp)
                if index_vm is not None:
                    wildcards += _ingest_vm(sample, vm, one, index_vm, resolved, interval)
            if sample.vdisks:
                for stats in sample.vdisks.values():
                    mapping.finish_vdisk(stats)
                sample.vms = mapping.vm_totals(sample.vdisks)
            if self._ingest(sample, topo, read_with):
                self._count_sample(topo.name, wildcards, unknown)
            last = stamp
        with self.lock:
            self.last_timestamp[topo.name] = last

    def _ingest(self, sample: m.Sample, topo: discovery.HostTopology, read_with: discovery.Topology | None) -> bool:
        """Hand a sample to the store, less what a change applied since the collection asked took
        away (a VM powered off, moved or renamed, a LUN or path removed: their series were dropped,
        kept hidden; a sample read before would show them again, outliving the object). Under the
        publishing lock: no change is applied between the look and the ingest. False: the host
        itself left meanwhile (the end of _collect forgets or suspends it)."""
        with self.publishing:
            topology = self.topology
            if read_with is not None and topology is not read_with:
                current = self._host_now(topology, topo.name)
                if current is None:
                    return False
                if current.inventory is not topo.inventory:
                    for family, keys in gone_objects(topo.inventory, current.inventory).items():
                        objects = getattr(sample, family)
                        for key in keys:
                            objects.pop(key, None)
            self.store.ingest(sample, origin=self.name)
        return True

    def _host_now(self, topology: discovery.Topology | None, name: str) -> discovery.HostTopology | None:
        """The host of that name in this topology (its index kept for the topology it was built for)."""
        if self._hosts_by_name[0] is not topology:
            self._hosts_by_name = (topology, {t.name: t for t in topology.hosts} if topology is not None else {})
        return self._hosts_by_name[1].get(name)

    def _count_sample(self, host: str, wildcards: int, unknown: int = 0) -> None:
        with self.lock:
            if wildcards:
                self.dropped["wildcard_instance"] = self.dropped.get("wildcard_instance", 0) + wildcards
            if unknown:
                self.dropped["not_a_datastore"] = self.dropped.get("not_a_datastore", 0) + unknown
            self.samples[host] = self.samples.get(host, 0) + 1

    # --- running -----------------------------------------------------------------------
    def run_once(self) -> bool:
        """One discovery and one collection (dump)."""
        return self.discover() and self.collect()

    def start(self, stop: threading.Event) -> list[threading.Thread]:
        self.running = True
        loops = [
            (self._discovery_loop, "vsphere-discovery"),
            (self._collection_loop, "vsphere-collect"),
            (self._esxcli_loop, "vsphere-esxcli"),
            (self._stop_following, "vsphere-stop"),
        ]
        threads = [threading.Thread(target=run, args=(stop,), name=f"{name}:{self.name}", daemon=True) for run, name in loops]
        for thread in threads:
            thread.start()
        return threads

    def _following(self) -> bool:
        """Changes are applied as they come: the topology is current."""
        follower = self.follower
        return self.running and follower is not None and not follower.closed.is_set()

    def _discovery_loop(self, stop: threading.Event) -> None:
        """Walk; follow the changes until the next walk is due (discovery_interval: a safety net)
        or the update stream fails (walk again at once); without updates, walk on the interval."""
        reason = "start"
        while not stop.is_set():
            try:
                ok = self.discover(reason)
            except Exception:  # noqa: BLE001 - the loop must survive anything one discovery does
                log.exception("vsphere target %s: discovery failed", self.name)
                self._failed("discovery", "internal error (see log)")
                ok = False
            if not ok:  # retried at the collection pace, not after an hour
                stop.wait(self.config.interval)
                reason = "error" if self.topology is not None else "start"
                continue
            follower = self.follower
            if follower is None:  # --no-vsphere.updates
                stop.wait(self.config.discovery_interval)
                reason = "scheduled"
                continue
            until = time.monotonic() + self.config.discovery_interval
            following_vms = None
            if follower.vms is not None:
                following_vms = threading.Thread(
                    target=follower.follow, args=(follower.vms, until, stop), name=f"vsphere-vms:{self.name}", daemon=True
                )
                following_vms.start()
            follower.follow(follower.hosts, until, stop)
            follower.close()
            if following_vms is not None:
                following_vms.join(self.config.timeout)
            if follower.failure and not stop.is_set():
                self._count_error("updates", f"update stream failed, walking the inventory again: {follower.failure}")
                reason = "error"
            else:
                reason = "scheduled"
        follower = self.follower
        if follower is not None:
            follower.close()
        self.client.close()

    def _stop_following(self, stop: threading.Event) -> None:
        """A stop ends a running WaitForUpdatesEx at once (it may block on the server for a while)."""
        stop.wait()
        self.stopping = True
        for follower in (self.walking, self.follower):
            if follower is not None:
                follower.close()
        self._esxcli_wake.set()

    def _count_error(self, phase: str, message: str) -> None:
        """A failure the target recovers from by itself (it stays up): counted and logged."""
        with self.lock:
            self.errors[phase] = self.errors.get(phase, 0) + 1
        log.warning("vsphere target %s: %s", self.name, message)
        self._publish()

    # --- esxcli: after each walk, every esxcli-interval, and for a host whose storage changed --
    def _want_esxcli(self, hosts: set[str] | None) -> None:
        """Read these hosts' esxcli (None: every host) in the esxcli thread."""
        with self.lock:
            if hosts is None:
                self._esxcli_all = True
            else:
                self._esxcli_due |= hosts
        self._esxcli_wake.set()

    def _esxcli_loop(self, stop: threading.Event) -> None:
        # The first time, the first collection goes first: esxcli's thousands of small answers
        # would share the interpreter with it and delay the first complete /metrics.
        while not (stop.is_set() or self.collected.wait(1.0)):
            pass
        next_all = time.monotonic() + self.config.esxcli_interval
        while not stop.is_set():
            self._esxcli_wake.wait(self.esxcli_retries.wait_until(next_all))
            self._esxcli_wake.clear()
            if stop.is_set():
                return
            retried = self.esxcli_retries.due()  # hosts whose last esxcli failed, a minute or more ago
            with self.lock:
                everything = self._esxcli_all or time.monotonic() >= next_all
                due, self._esxcli_due, self._esxcli_all = self._esxcli_due | retried, set(), False
            topology = self.topology
            if topology is None or not (everything or due):
                continue
            if everything:
                next_all = time.monotonic() + self.config.esxcli_interval
            hosts = [t for t in topology.hosts if (everything or t.name in due) and t.families == discovery.ALL_FAMILIES]
            try:
                with gcpause.paused():
                    self._read_esxcli(hosts)
            except Exception:  # noqa: BLE001 - the loop must survive anything one read does
                log.exception("vsphere target %s: esxcli failed", self.name)

    def _collection_loop(self, stop: threading.Event) -> None:
        while not stop.is_set():
            started = time.monotonic()
            if self.topology is not None:
                try:
                    self.collect()
                except Exception:  # noqa: BLE001 - the loop must survive anything one cycle does
                    log.exception("vsphere target %s: collection failed", self.name)
                    self._failed("collection", "internal error (see log)")
                pause = max(1.0, self.config.interval - (time.monotonic() - started))
                self.store.rounds.due(self.name, time.monotonic() + pause)  # a render ahead keeps out of its way
                stop.wait(pause)
            else:
                # Woken by the first discovery (or by stop): the first complete /metrics follows it at once.
                self.discovered.wait(1.0)
        self.store.rounds.due(self.name, None)


def _ingest_vm(sample: m.Sample, vm: vms.VmTopology, series: perf.HostSeries, index: int, resolved, interval: int) -> int:
    """One VM's values at one time into the host's sample (Sample.vdisks); returns the wildcard
    echoes met. Each instance's (vm, disk) key is cached per VM, as a host's per family."""
    wildcards, keys, vdisks = 0, vm.routes, sample.vdisks
    counter_key, counter = None, None
    for key, instance, raw in series.at(index):
        if raw is None:
            continue
        if key != counter_key:  # an answer lists a counter's instances one after another
            counter_key, entry = key, resolved.entry(key)
            counter = entry[1] if entry is not None and entry[1].family == mapping.VDISKS else None
        if counter is None:
            continue
        object_key = keys.get(instance, _UNROUTED)
        if object_key is _UNROUTED:
            # the VM's aggregate ("") is not a disk; "*": a server's echo of the wildcard
            object_key = keys[instance] = (_WILDCARD if instance == "*" else (vm.name, instance)) if instance else None
        if object_key is None:
            continue
        if object_key is _WILDCARD:
            wildcards += 1
            continue
        stats = vdisks.get(object_key)
        if stats is None:
            stats = vdisks[object_key] = {}
        stats[counter.field] = mapping.convert(counter, raw, interval)
    return wildcards


def _copy(inventory: m.Inventory) -> m.Inventory:
    """A copy esxcli can change: its own LUN and adapter records, the rest shared (never mutated)."""
    return dataclasses.replace(
        inventory,
        luns={name: dataclasses.replace(lun) for name, lun in inventory.luns.items()},
        adapters={name: dataclasses.replace(adapter) for name, adapter in inventory.adapters.items()},
    )


def _settle_dsnro_source(inventory: m.Inventory) -> None:
    """Where DSNRO came from, once known: esxcli's per-device value, else the host-wide option, else none."""
    if inventory.dsnro_source != "device":
        inventory.dsnro_source = "host_option" if inventory.dsnro is not None else "none"
