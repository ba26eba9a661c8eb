"""One host's failing call stays that host's.

The walk and what follows it make a few calls per host (its advanced-option manager for DSNRO,
its iSCSI manager for the NICs bound to an iSCSI adapter, its properties read again after a
change). vCenter answers any of them with a fault of that host alone: the manager does not exist
(ManagedObjectNotFound, seen on real 6.7 and 7.0 vCenters), a permission is missing on that
host (NoPermission), the host is not connected or not reachable (HostNotConnected,
HostNotReachable), the call is not supported there (NotSupported, InvalidArgument), or the call
times out. Such a fault leaves that host's value unknown and the rest of the target whole.
(When calls of many hosts time out in a row, the server is silent, not a host: that is raised.)

Each is counted by host and call, logged once per host and call (again only when vCenter's
message changes, and once when the call answers again), and shown on the host's own health
record: a SourceHealth of kind `vsphere_host` per host, made by the target (origin), with its
calls' failures (esxi_vsphere_host_errors_total{host,call}) and whether every call of it answered
the last time it was made (esxi_vsphere_host_up{host}).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from pyVmomi import vim, vmodl

from exporter.store import model as m
from exporter.store.faultlog import FaultLog

log = logging.getLogger(__name__)

KIND = "vsphere_host"
# Timeouts of per-host calls in a row, across hosts, with no answer between: past this the server,
# not a host, is silent (the walk fails as before, instead of waiting out every host's timeout).
TIMEOUTS_IN_A_ROW = 8


def is_host_fault(err: BaseException) -> bool:
    """A failure of one host's call, not of the session or the server: any fault vCenter answers
    (but NotAuthenticated: the session went stale, the client logs in again) and a call that
    timed out (pyVmomi drops its connections and the session goes on). A refused or reset
    connection is the server's, not the host's: the walk fails as before."""
    if isinstance(err, vim.fault.NotAuthenticated):
        return False
    return isinstance(err, (vmodl.MethodFault, TimeoutError))


def fault_text(err: BaseException) -> str:
    """vCenter's fault in one line: its type, its message and the object it names."""
    if isinstance(err, TimeoutError):
        return "timed out"
    name = getattr(err, "_wsdlName", "") or type(err).__name__
    message = " ".join(str(getattr(err, "msg", "") or "").split())
    obj = getattr(err, "obj", None)
    if obj is not None:
        moid = getattr(obj, "_moId", None) or str(obj)
        if moid not in message:
            message = f"{message} (object {moid})" if message else f"object {moid}"
    privilege = getattr(err, "privilegeId", "") or ""
    if privilege and privilege not in message:
        message = f"{message} (privilege {privilege})" if message else f"privilege {privilege}"
    return f"{name}: {message[:300]}" if message else name


class HostFaults:
    """Per-host call health of one vSphere target. Thread-safe: the per-host calls run in a pool."""

    def __init__(self, store, origin: str):
        """store: where the health records go (None: counted and logged only)."""
        self.store, self.origin = store, origin
        self.lock = threading.Lock()
        self.faults = FaultLog(log)  # (host, call) -> failures so far, vCenter's last fault while it fails
        self.timeouts = 0  # per-host calls timed out in a row (see TIMEOUTS_IN_A_ROW)
        self.hidden: set[str] = set()  # hosts vCenter cannot read now: counts kept, record out until read again

    def call(self, host: str, name: str, fn: Callable[[], object], default=None):
        """fn() for one host's call: its answer, or default when it fails with a fault of this
        host (counted, logged once); any other failure propagates (the walk's)."""
        try:
            value = fn()
        except Exception as err:  # noqa: BLE001 - classified here; the rest is raised again
            if not is_host_fault(err) or self._silent(isinstance(err, TimeoutError)):
                raise
            self.failed(host, name, fault_text(err))
            return default
        self._silent(False)
        self.answered(host, name)
        return value

    def _silent(self, timed_out: bool) -> bool:
        """Count a timeout (any answer, a fault included, resets the count); True once the server
        has answered none of TIMEOUTS_IN_A_ROW calls in a row."""
        with self.lock:
            self.timeouts = self.timeouts + 1 if timed_out else 0
            return self.timeouts > TIMEOUTS_IN_A_ROW

    def failed(self, host: str, name: str, message: str) -> None:
        line = f"vsphere target {self.origin}: host {host}: {name} failed: {message} (the rest of the target goes on)"
        self.faults.failed((host, name), message, line)
        self._publish(host)

    def answered(self, host: str, name: str) -> None:
        known = (host, name) in self.faults.counts
        said = self.faults.answered((host, name), f"vsphere target {self.origin}: host {host}: {name} answers again")
        if said or not known or host in self.hidden:
            self._publish(host)  # else nothing changed: no new record

    def errors(self, host: str) -> dict[str, int]:
        """call -> failures so far of one host's calls (0: it answered)."""
        return {call: n for (_, call), n in self.faults.snapshot(lambda key: key[0] == host).items()}

    def forget(self, hosts) -> None:
        """Hosts that left the target: their call health goes with them."""
        for host in hosts:
            self.hidden.discard(host)
            if self.faults.forget(lambda key, host=host: key[0] == host) and self.store is not None:
                self.store.drop_health(KIND, host, self.origin)

    def suspend(self, hosts) -> None:
        """Hosts vCenter lists but cannot read: their record goes (no series of a host that cannot
        be read), their counts stay, so that when the host is read again its error counters go on
        from where they were, not from 0 (which Prometheus would take for a reset)."""
        for host in hosts:
            self.hidden.add(host)
            if self.store is not None:
                self.store.drop_health(KIND, host, self.origin)

    def _publish(self, host: str) -> None:
        self.hidden.discard(host)
        if self.store is None:
            return
        errors = self.errors(host)
        up = 0 if any(self.faults.is_failing((host, call)) for call in errors) else 1
        self.store.set_health(m.SourceHealth(kind=KIND, name=host, origin=self.origin, up=up, errors=errors))
