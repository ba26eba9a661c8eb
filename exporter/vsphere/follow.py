"""A target's inventory walked once through vCenter's property collector, then followed.

Two private property collectors on the target's session (updates.PropertySession):

- hosts: a container view of the tree (folders, datacenters, clusters, hosts: names, parents,
  connection state), two list views of the chosen hosts, one for the properties the LUN,
  adapter and CPU counters need, one for paths, mounts and the vmkernel network, and a container
  view of every datastore for its space (summary, info.timestamp: once per datastore);
- VMs (with --vsphere.vms): a container view of every VM and vApp (name, parent, host, power
  state) and a list view of the chosen VMs for their device lists and, through a second
  filter, their snapshots (snapshot, layoutEx, runtime.consolidationNeeded).

The walk is the collectors' first answers, in the order a cold start needs them: the tree, then
each chosen host's LUNs (published: collection can start), then its paths and mounts, then the
VMs and their device lists; nothing is read twice (the first answer of a filter is the state the
following answers change). Then two threads wait on the collectors (WaitForUpdatesEx, blocking
on the server up to max_wait seconds) and apply each answer to the mirror as it comes, reading
what it asks for (a host whose storage changed, the device list of a VM that came), and hand the
change to the source. Any error in either stream ends both: the source walks again.
"""

from __future__ import annotations

import http.client
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from pyVmomi import vim, vmodl

from exporter.vsphere import discovery, vms
from exporter.vsphere.client import VsphereError, describe
from exporter.vsphere.hostfaults import HostFaults, is_host_fault
from exporter.vsphere.mirror import (
    DATASTORE_PROPERTIES,
    DATASTORES,
    DEVICES,
    LUNS,
    PATHS,
    SNAPSHOT_PROPERTIES,
    SNAPSHOTS,
    TREE,
    TREE_PROPERTIES,
    TREE_TYPES,
    VMS,
    Delta,
    Mirror,
    Wants,
)
from exporter.vsphere.updates import Interrupted, PropertySession

log = logging.getLogger(__name__)

COALESCE = 1.0  # seconds to wait after an answer before asking for the next one
PAGE = 100  # objects per answer while walking (as RetrievePropertiesEx pages did): bounds one answer's memory


class WalkTimedOut(VsphereError):
    """An answer of the walk took longer than its walk timeout."""


def max_wait_for(timeout: float) -> int:
    """How long a WaitForUpdatesEx may block on the server: well inside the call timeout, so a
    server that went silent is told from one with nothing to say."""
    return max(1, int(timeout * 2 / 3))


class Follower:
    """One walk and what follows it, until closed. publish(delta, mirror) is called with the lock
    held after every settled change, from the walk's thread or either follow thread."""

    def __init__(
        self,
        client,
        config,
        publish: Callable[[Delta, Mirror], None],
        faults: HostFaults | None = None,
        walk_timeout: float | None = None,
    ):
        self.client = client
        self.config = config
        # How long the walk waits for each answer of its stages (the source lengthens it after a
        # walk timed out: a large inventory's first answer can take vCenter longer than a call).
        self.walk_timeout = walk_timeout or config.timeout
        self.slowest_answer = 0.0  # seconds: the walk's slowest answer, for the source to settle walk_timeout
        self.publish = publish
        self.faults = faults or HostFaults(None, config.name)  # one host's failing calls (hostfaults.py)
        self.max_wait = max_wait_for(config.timeout)
        self.lock = threading.Lock()
        self.mirror: Mirror | None = None
        self.hosts: PropertySession | None = None
        self.vms: PropertySession | None = None
        self._views: dict[str, object] = {}
        self.failure = ""  # the first error of either stream: the source walks again
        self.unreadable: dict[str, set[tuple[str, str]]] = {}  # host moid -> (object moid, property) the server could not read
        self.staged = False  # publish each stage of the walk (a cold start), else only what follows it
        self.closed = threading.Event()

    # --- the walk --------------------------------------------------------------------------
    def walk(self, between: Callable[[str], None] = lambda stage: None) -> discovery.Topology:
        """Every chosen host and VM, published stage by stage (luns, paths, vms); between(stage) runs
        after each stage is published (the source lets the first collection go first)."""
        start = time.perf_counter()
        try:
            self.hosts = session = self.client.call(lambda c: PropertySession(c))
            # the mirror's objects on the session the walk runs on: the client's may have expired
            # under the stream that failed, and the call above logged in again
            self.mirror = Mirror(session.stub, self.config.selection, self.config.vm_selection, self.config.vms)
            tree = session.container_view(TREE_TYPES)
            session.watch(tree, TREE, TREE_PROPERTIES)
            # every datastore's space, once per datastore (not per host), followed as it changes
            session.watch(session.container_view([vim.Datastore]), DATASTORES, {vim.Datastore: DATASTORE_PROPERTIES})
            for role, properties in ((LUNS, discovery.LUN_PROPERTIES), (PATHS, discovery.PATH_PROPERTIES)):
                self._views[role] = session.list_view()
                session.watch(self._views[role], role, {vim.HostSystem: properties})
            self._drain(session)
            chosen = self.mirror.chosen_hosts()
            self._stage(session, LUNS, lambda: self._list(LUNS, chosen))
            between(LUNS)
            self._stage(session, PATHS, lambda: self._list(PATHS, [m for m in chosen if m in self.mirror.hosts]))
            between(PATHS)
            if self.config.vms:
                self.vms = session = self.client.call(lambda c: PropertySession(c))
                session.watch(session.container_view(list(vms.TREE_TYPES)), VMS, vms.TREE_PROPERTIES)
                self._views[DEVICES] = session.list_view()
                session.watch(self._views[DEVICES], DEVICES, {vim.VirtualMachine: vms.VM_PROPERTIES})
                session.watch(self._views[DEVICES], SNAPSHOTS, {vim.VirtualMachine: SNAPSHOT_PROPERTIES})
                self._drain(session)
                self._stage(session, DEVICES, lambda: None)  # the VMs chosen by the settle after the tree
                between(DEVICES)
            with self.lock:
                self.mirror.start_following()
                self._settle()
                return self.mirror.topology(time.perf_counter() - start)
        except VsphereError:
            self.close()
            raise
        except Interrupted:
            self.close()
            raise VsphereError("the walk was interrupted") from None
        except Exception as err:  # noqa: BLE001 - pyVmomi and the socket raise many kinds
            self.close()
            raise VsphereError(describe(err)) from None

    def _list(self, role: str, moids: list[str]) -> None:
        self.hosts.add_to(self._views[role], "HostSystem", self.mirror.list_hosts(role, moids))

    def _stage(self, session: PropertySession, role: str, ask: Callable[[], None]) -> None:
        """Ask for one role's properties, wait until every object asked for has them, publish."""
        with self.lock:
            ask()
            self._settle()  # serves what the tree asked for (the VMs to list)
        deadline = time.monotonic() + self.walk_timeout
        while True:
            with self.lock:
                waiting = self.mirror.waiting_for(role)
            if not waiting:
                return
            if time.monotonic() > deadline:
                raise WalkTimedOut(
                    f"the server sent no {role} properties of {len(waiting)} object(s) within {self.walk_timeout:g}s"
                )
            if self._drain(session, self.max_wait):
                deadline = time.monotonic() + self.walk_timeout  # still coming: a large inventory takes its time

    def _drain(self, session: PropertySession, max_wait: int = 0) -> bool:
        """One answer and every page after it, applied and settled; False if nothing came."""
        while True:
            asked = time.monotonic()
            try:
                found = session.wait(max_wait, PAGE, timeout=self.walk_timeout + max_wait)
            except TimeoutError:
                raise WalkTimedOut(f"timed out (an answer of the walk, after {self.walk_timeout + max_wait:g}s)") from None
            if found is not None:  # a wait that ended with nothing to say is not a slow answer
                self.slowest_answer = max(self.slowest_answer, time.monotonic() - asked)
            if found is None:
                return False
            with self.lock:
                self.mirror.apply(found.updates)
                self._unreadable(found.updates)
                if not found.truncated:
                    self._settle()
                    return True
            max_wait = 0

    # --- following -------------------------------------------------------------------------
    def follow(self, session: PropertySession, until: float, stop: threading.Event) -> None:
        """Apply this session's changes as they come, until `until` (monotonic), a stop, a close
        or an error in either stream (self.failure says which)."""
        while not (stop.is_set() or self.closed.is_set()) and time.monotonic() < until:
            try:
                found = session.wait(min(self.max_wait, max(1, int(until - time.monotonic()))))
            except Interrupted:
                return
            except Exception as err:  # noqa: BLE001 - any failure of the stream: walk again
                self.fail(describe(err))
                return
            if found is None and not self.mirror.unread:
                continue
            try:
                with self.lock:
                    if found is None:  # nothing changed, but a host's re-read failed: try it again now
                        self._settle()
                        continue
                    self.mirror.apply(found.updates)
                    self._unreadable(found.updates)
                    if not found.truncated:
                        self._settle()
            except VsphereError as err:
                self.fail(str(err))
                return
            except (vmodl.MethodFault, OSError, http.client.HTTPException) as err:
                # the server refused or dropped a call made while settling (its session ended: an
                # expiry, a restart): the stream failed, as when the wait itself fails; no bug
                self.fail(describe(err))
                return
            except Exception:  # noqa: BLE001 - a bug must not end the following: a walk starts afresh
                log.exception("vsphere target %s: applying a change failed", self.config.name)
                self.fail("internal error applying a change (see log)")
                return
            if not found.truncated:
                # Let the changes that come together (DRS moving VMs, a rescan) come in one answer:
                # one request for a burst instead of one each; well inside a collection interval.
                self.closed.wait(COALESCE)

    def fail(self, message: str) -> None:
        if not self.failure:
            self.failure = message
        self.close()

    def close(self) -> None:
        """End both streams (a running wait returns at once) and free the collectors on the server."""
        self.closed.set()
        for session in (self.hosts, self.vms):
            if session is not None:
                session.interrupt()
        for session in (self.hosts, self.vms):
            if session is not None:
                threading.Thread(target=session.close, name="vsphere-close", daemon=True).start()

    # --- settling: what the mirror asks for, read, until nothing more is asked ---------------
    def _settle(self) -> None:
        """Settle the mirror, read what it wants, settle again; publish what changed. Lock held."""
        total = Delta()
        self.mirror.retry_unread()  # hosts whose re-read failed at the last settle: once per settle
        for _ in range(8):  # each round answers the last round's wants; a few suffice
            delta, wants = self.mirror.settle()
            total.changed.update(delta.changed)
            total.removed += delta.removed
            total.statuses |= delta.statuses
            total.space |= delta.space
            total.snapshots |= delta.snapshots
            total.problems += delta.problems
            total.fine += delta.fine
            for kind, count in delta.changes.items():
                total.count(kind, count)
            if not wants:
                break
            self._serve(wants)
            total.built |= delta.built
        total.removed = [name for name in total.removed if name not in {t.name for t in total.changed.values()}]
        if total and (self.staged or self.mirror.following):
            self.publish(total, self.mirror)
        else:  # values refused during a walk again: counted and logged with its last settle
            self.mirror.requeue(total.problems, total.fine)

    def _serve(self, wants: Wants) -> None:
        mirror = self.mirror
        if wants.list_luns:
            self.hosts.add_to(self._views[LUNS], "HostSystem", wants.list_luns)
        if wants.list_paths:
            self.hosts.add_to(self._views[PATHS], "HostSystem", wants.list_paths)
        if wants.list_vms:
            self.vms.add_to(self._views[DEVICES], "VirtualMachine", wants.list_vms)
        if wants.reread:
            found, failed = self._read_hosts(wants.reread)
            for moid in wants.reread:
                if moid in failed:
                    mirror.host_unread(moid)
                else:
                    mirror.host_read(moid, found.get(moid))
        if wants.settings:
            topos = [mirror.hosts[moid] for moid in wants.settings if moid in mirror.hosts]
            faults = self.faults
            workers = max(1, min(len(topos), 4 * self.config.max_parallel_queries))

            def read(topo):  # on the call's own session: a session that expired is logged in again, once
                self.client.call(lambda content: discovery.read_settings(topo, content.propertyCollector._stub, faults))

            with ThreadPoolExecutor(max_workers=workers) as pool:  # two small calls a host, mostly round trips
                list(pool.map(read, topos))

    def _read_hosts(self, moids: list[str]) -> tuple[dict, set[str]]:
        """Hosts' whole storage configuration, read again: (moid -> properties, the moids whose own
        call failed). One host's fault (gone since, no permission on it, not connected, timed out)
        fails the call whole, so the hosts are then asked one by one: a host whose own call fails
        keeps its topology, the fault is its own, and it is read again at the next settle."""

        def together(content):
            try:
                return dict(discovery.retrieve_hosts(content, moids))
            except Exception as err:  # noqa: BLE001 - a host's fault is split below; the rest is raised
                if is_host_fault(err):
                    return None
                raise

        found = self.client.call(together) if len(moids) > 1 else None
        failed: set[str] = set()
        if found is None:
            found = {}
            for moid in moids:
                answer = self.client.call(
                    lambda content, moid=moid: self.faults.call(
                        self._host_name(moid),
                        "RetrievePropertiesEx",
                        lambda: dict(discovery.retrieve_hosts(content, [moid])),
                        None,
                    )
                )
                if answer is None:
                    failed.add(moid)
                else:
                    found.update(answer)
        else:
            for moid in found:
                self.faults.answered(self._host_name(moid), "RetrievePropertiesEx")
        return found, failed

    def _unreadable(self, updates) -> None:
        """Properties the server sent as missing, with the fault it could not read them with (no
        permission on the object, a property that faulted): they read as absent (the mirror), and
        each is its host's fault (a VM's device list: the VM's host's), call WaitForUpdatesEx,
        until the property comes. Lock held."""
        for update in updates:
            if update.role in (LUNS, PATHS):
                host, what = update.moid, ""
            elif update.role == DEVICES:
                entity = self.mirror.entities.get(update.moid)
                host, what = (entity.host, f"VM {entity.name or update.moid} ") if entity is not None else ("", "")
            else:
                continue
            if not host:
                continue
            missing = self.unreadable.setdefault(host, set())
            name = self._host_name(host)
            if update.faults:  # one count and line per object's answer, whatever number of its properties
                paths = sorted(update.faults)
                missing.update((update.moid, path) for path in paths)
                self.faults.failed(name, "WaitForUpdatesEx", f"{what}{', '.join(paths)}: {update.faults[paths[0]]}")
            before = len(missing)
            missing -= {(update.moid, path) for path in update.changes if path not in update.faults}
            if update.kind == "leave":
                missing -= {key for key in missing if key[0] == update.moid}
            if not missing:
                del self.unreadable[host]
                # read again after failing, or a host's properties read whole (a walk: a fault of
                # the walk before is over)
                if before or (update.kind == "enter" and update.role != DEVICES):
                    self.faults.answered(name, "WaitForUpdatesEx")

    def _host_name(self, moid: str) -> str:
        entity = self.mirror.entities.get(moid)
        return entity.name if entity is not None and entity.name else moid
