"""vCenter's property collector, followed: a private PropertyCollector on the target's session,
the views and filters on it, and WaitForUpdatesEx answers read with ElementTree.

A filter over a view tells what changed in the objects the view holds: an object entering
(created, or added to a list view) comes with every property the filter names; a change comes
with the new value of the changed property; an object leaving comes alone. The version each
answer carries is handed back with the next call, so nothing is sent twice and nothing is lost
between calls. Two kinds of view are used: container views (every object of some types under
the root folder: the server adds and removes members) and list views (the objects we chose:
we add and remove them).

WaitForUpdatesEx blocks on the server up to maxWaitSeconds. It runs on a connection of its own,
kept for the session's life, so another thread can cut it short at once (`interrupt`): a stop
never waits for the server, even one that stopped answering. The small control calls (create a
view or filter) go through pyVmomi; the answers, which can hold every host's storage
configuration or thousands of device lists, are parsed as in soap.py; a list view's members are
written as text (pyVmomi serializes each reference as a data object).
"""

from __future__ import annotations

import http.client
import socket
import threading
from dataclasses import dataclass, field
from xml.sax.saxutils import escape

from pyVmomi import vim, vmodl

from exporter.vsphere import soap, xmlguard

_NS = "{urn:vim25}"
_WAIT = vmodl.query.PropertyCollector._GetMethodInfo("WaitForUpdatesEx")
_MODIFY = vim.view.ListView._GetMethodInfo("Modify")  # ModifyListView
(
    _RETURNVAL,
    _VERSION,
    _TRUNCATED,
    _FILTERSET,
    _FILTER,
    _OBJECTSET,
    _KIND,
    _OBJ,
    _CHANGESET,
    _NAME,
    _OP,
    _VAL,
    _MISSING,
    _PATH,
) = (
    _NS + n
    for n in (
        "returnval",
        "version",
        "truncated",
        "filterSet",
        "filter",
        "objectSet",
        "kind",
        "obj",
        "changeSet",
        "name",
        "op",
        "val",
        "missingSet",
        "path",
    )
)
_REMOVED = ("remove", "indirectRemove")
_XSI_TYPE = "{http://www.w3.org/2001/XMLSchema-instance}type"


class Interrupted(Exception):
    """The session was closed (a stop, or a new walk) while a wait was running."""


@dataclass(slots=True)
class ObjectUpdate:
    """One object's part of an answer. kind: enter | modify | leave; changes: property path ->
    its new <val> element, None when it was unset (or the server could not read it)."""

    role: str  # what the filter it came through is for (PropertySession.watch)
    kind: str
    type: str  # managed object type: HostSystem, VirtualMachine, Folder, ...
    moid: str
    changes: dict
    faults: dict = field(default_factory=dict)  # property path -> the fault the server could not read it with


@dataclass(slots=True)
class UpdateSet:
    version: str
    truncated: bool
    updates: list[ObjectUpdate]


def parse_update_set(root, roles: dict[str, str]) -> UpdateSet | None:
    """A WaitForUpdatesEx answer; None when nothing changed within maxWaitSeconds. roles: filter
    moid -> role (an update of a filter not listed has role "")."""
    ret = root.find(f".//{_RETURNVAL}")
    if ret is None:
        return None
    updates = []
    for filter_set in ret.iterfind(_FILTERSET):
        role = roles.get((filter_set.findtext(_FILTER) or "").strip(), "")
        for update in filter_set.iterfind(_OBJECTSET):
            obj = update.find(_OBJ)
            if obj is None:
                continue
            changes = {}
            for change in update.iterfind(_CHANGESET):
                changes[change.findtext(_NAME, "")] = None if change.findtext(_OP) in _REMOVED else change.find(_VAL)
            faults = {}
            for missing in update.iterfind(_MISSING):  # a property the server could not read: absent
                path = missing.findtext(_PATH, "")
                changes.setdefault(path, None)
                faults[path] = missing_fault(missing)
            kind = (update.findtext(_KIND) or "").strip()
            updates.append(ObjectUpdate(role, kind, obj.get("type", ""), (obj.text or "").strip(), changes, faults))
    truncated = (ret.findtext(_TRUNCATED) or "").strip() == "true"
    return UpdateSet((ret.findtext(_VERSION) or "").strip(), truncated, updates)


def missing_fault(missing) -> str:
    """A MissingProperty's fault in one line: its type and localized message, as
    hostfaults.fault_text writes a fault raised by a call."""
    localized = missing.find(_NS + "fault")
    if localized is None:
        return "no fault given"
    inner = localized.find(_NS + "fault")
    name = inner.get(_XSI_TYPE, "").split(":")[-1] if inner is not None else ""
    message = " ".join((localized.findtext(_NS + "localizedMessage") or "").split())[:300]
    return f"{name or 'fault'}: {message}" if message else name or "fault"


def _set_timeout(conn, timeout: float | None) -> None:
    """The socket timeout of the session's own connection, for this call and after (http.client
    reads conn.timeout when it connects, the socket's own once connected)."""
    conn.timeout = timeout
    if conn.sock is not None:
        conn.sock.settimeout(timeout)


class PropertySession:
    """One private PropertyCollector with its views and filters. Not thread-safe but for
    `interrupt`, which any thread may call."""

    def __init__(self, content):
        self.content = content
        self.collector = content.propertyCollector.CreatePropertyCollector()
        self.stub = self.collector._stub
        self.version = ""
        self.roles: dict[str, str] = {}  # filter moid -> role
        self.views: list = []
        self.closed = False
        self._lock = threading.Lock()  # guards _conn against interrupt()
        self._conn = None
        self._timeout = None

    # --- views and filters ---------------------------------------------------------------
    def container_view(self, types: list) -> object:
        """Every object of these types under the root folder, kept current by the server."""
        view = self.content.viewManager.CreateContainerView(self.content.rootFolder, types, True)
        self.views.append(view)
        return view

    def list_view(self) -> object:
        """An empty list of objects of our choosing (add_to)."""
        view = self.content.viewManager.CreateListView(obj=[])
        self.views.append(view)
        return view

    def watch(self, view, role: str, properties: dict) -> None:
        """A filter over the view's objects for these properties (managed type -> paths);
        its updates carry `role`."""
        pc = vmodl.query.PropertyCollector
        kind = vim.view.ContainerView if isinstance(view, vim.view.ContainerView) else vim.view.ListView
        spec = pc.FilterSpec(
            objectSet=[pc.ObjectSpec(obj=view, skip=True, selectSet=[pc.TraversalSpec(name="view", path="view", type=kind)])],
            propSet=[pc.PropertySpec(type=t, pathSet=list(paths)) for t, paths in properties.items()],
        )
        found = self.collector.CreateFilter(spec, partialUpdates=False)
        self.roles[found._moId] = role

    def add_to(self, view, kind: str, moids) -> None:
        """Add objects of one managed type to a list view: the filters over it report them as
        entering, with their properties, at the next wait. (Nothing is ever taken out: an object
        no longer wanted is ignored until the next walk builds new views.)"""
        refs = "".join(f'<add type="{kind}">{escape(m)}</add>' for m in moids)
        if not refs:
            return
        body = f'<ModifyListView xmlns="urn:vim25"><_this type="ListView">{escape(view._moId)}</_this>{refs}</ModifyListView>'
        soap.invoke(view, _MODIFY, None, soap.envelope(body))

    # --- waiting -------------------------------------------------------------------------
    def wait(self, max_wait: int, max_objects: int | None = None, timeout: float | None = None) -> UpdateSet | None:
        """The changes since the last answer (the first call: every object's current state),
        waiting up to max_wait seconds for one (0: answer at once). timeout: this call's socket
        timeout (None: the session's, --vsphere.timeout). Raises Interrupted when another thread
        closed the session meanwhile."""
        options = f"<maxWaitSeconds>{int(max_wait)}</maxWaitSeconds>"
        if max_objects:
            options += f"<maxObjectUpdates>{int(max_objects)}</maxObjectUpdates>"
        version = f"<version>{escape(self.version)}</version>" if self.version else ""
        body = (
            f'<WaitForUpdatesEx xmlns="urn:vim25"><_this type="PropertyCollector">{escape(self.collector._moId)}</_this>'
            f"{version}<options>{options}</options></WaitForUpdatesEx>"
        )
        with self._lock:
            if self.closed:
                raise Interrupted()
            if self._conn is None:
                self._conn = self.stub.GetConnection()
                self._timeout = self._conn.timeout  # the pool's: --vsphere.timeout
            conn = self._conn
        _set_timeout(conn, timeout or self._timeout)
        try:
            root = soap.invoke(self.collector, _WAIT, None, soap.envelope(body), conn=conn)
        except (OSError, http.client.HTTPException, xmlguard.AnswerRefused):
            with self._lock:
                if self.closed:
                    raise Interrupted() from None
                self._conn = None  # post() closed it: the next wait opens another
            raise
        found = parse_update_set(root, self.roles)
        if found is not None:
            self.version = found.version
        return found

    def interrupt(self) -> None:
        """End a running wait at once, from any thread; the session is closed for waiting."""
        with self._lock:
            self.closed = True
            conn = self._conn
        sock = getattr(conn, "sock", None)
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        """Interrupt, then destroy the collector, its filters and the views on the server (best
        effort: a session that is gone took them with it)."""
        self.interrupt()
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
        for destroy in [self.collector.DestroyPropertyCollector] + [view.DestroyView for view in self.views]:
            try:
                destroy()
            except Exception:  # noqa: BLE001 - cleanup of a session that may be gone
                break
