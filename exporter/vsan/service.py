"""The vSAN management API of one vCenter target: its `/vsanHealth` endpoint, called with the
target's own vCenter session (the session cookie of its /sdk login, no second login), through
pyVmomi's vSAN bindings (pyVmomi >= 8.0.3 ships them).

A session that expires is re-established by the target's Client (one login for both endpoints);
this stub then takes the new cookie. The big answer, VsanPerfQueryPerf's, is read with
ElementTree as it arrives (exporter.vsphere.soap, exporter.vsan.perf); the small ones through pyVmomi.
"""

from __future__ import annotations

import http.client
import logging
import threading
import xml.etree.ElementTree as ET

from pyVmomi import SoapStubAdapter, VmomiSupport, vim, vmodl

from exporter.vsphere import soap, xmlguard
from exporter.vsphere.client import VsphereError

log = logging.getLogger(__name__)

PATH = "/vsanHealth"
PERFORMANCE_MANAGER = "vsan-performance-manager"
HEALTH_SYSTEM = "vsan-cluster-health-system"
SPACE_SYSTEM = "vsan-cluster-space-report-system"
OBJECT_SYSTEM = "vsan-cluster-object-system"
DISK_MANAGEMENT_SYSTEM = "vsan-disk-management-system"
_QUERY_PERF = vim.cluster.VsanPerformanceManager._GetMethodInfo("QueryVsanPerf")
_SUPPORTED = vim.cluster.VsanPerformanceManager._GetMethodInfo("GetSupportedEntityTypes")
# Multi-entity query specs are taken from vSAN 8.0U2, whose API is 8.0.0.3 (the reference marks
# its 8.0U2 additions "Since vSAN API 8.0.0.3").
MULTI_ENTITY_SINCE = "vsan.version.version22"


class PerfFault(VsphereError):
    """VsanPerfQueryPerf answered with a fault; `fault` is its name: InvalidArgument (the call's
    arguments, or a type that refuses the wildcard), NotSupported (the host asked is not the stats
    master), NotFound (no host could be contacted, or the performance service is off), ..."""

    def __init__(self, fault: str, message: str):
        super().__init__(f"{fault}: {message}" if message else fault, server_fault=True)
        self.fault = fault


def known_versions() -> list[str]:
    """pyVmomi's vSAN API versions, newest first: a newer version descends from more versions
    (the ids themselves are no order: "6.8.7", "vSAN 7.0U1", "8.0.0.4", "9.1.1.0")."""
    versions = {v for v in VmomiSupport.versionIdMap if str(v).startswith("vsan.version.")}
    return sorted(versions, key=lambda v: len(VmomiSupport.GetVersionParents(v)), reverse=True)


def _offered(description: bytes | None) -> set[str] | None:
    """The version ids a vsanServiceVersions.xml lists; None without a readable one."""
    if not description:
        return None
    try:
        root = xmlguard.parse(description)
    except (ET.ParseError, xmlguard.AnswerRefused):
        return None
    return {(v.text or "").strip() for v in root.iter() if v.tag.rsplit("}", 1)[-1] == "version"}


def choose_version(description: bytes | None) -> str:
    """The newest vSAN API version both pyVmomi and the server (its vsanServiceVersions.xml) know;
    without a description, pyVmomi's newest (what vsanapiutils does when the file is missing)."""
    offered = _offered(description)
    for version in known_versions() if offered else ():
        if VmomiSupport.versionIdMap.get(version) in offered:
            return version
    return VmomiSupport.newestVersions.GetName("vsan")


def takes_multi_entity(description: bytes | None) -> bool:
    """The server says (vsanServiceVersions.xml) it has the vSAN API of 8.0U2 or later, which
    takes multi-entity query specs. Without the file nothing is assumed."""
    offered = _offered(description)
    if not offered:
        return False
    version = choose_version(description)
    return VmomiSupport.versionIdMap.get(version) in offered and VmomiSupport.IsChildVersion(version, MULTI_ENTITY_SINCE)


class VsanService:
    """One target's vSAN endpoint. Every call goes through the target's Client (its session,
    timeout, re-login once on NotAuthenticated, errors as one-line VsphereError)."""

    def __init__(self, client):
        self.client = client
        self._lock = threading.Lock()
        self._stub = None
        self._version: str | None = None
        self.multi_entity = False  # the server takes multi-entity query specs (known after the first call)

    def _stub_for(self, content):
        """The /vsanHealth stub, carrying the current session's cookie."""
        session = content.propertyCollector._stub
        with self._lock:
            if self._stub is None:
                cfg = self.client.config
                if self._version is None:
                    description = self._service_versions()
                    self._version = choose_version(description)
                    self.multi_entity = takes_multi_entity(description)
                self._stub = SoapStubAdapter(
                    host=cfg.host,
                    port=cfg.port,
                    path=PATH,
                    version=self._version,
                    sslContext=self.client.ssl_context(),
                    httpConnectionTimeout=cfg.timeout,
                    connectionPoolTimeout=-1,
                )
            self._stub.cookie = session.cookie
            return self._stub

    def _service_versions(self) -> bytes | None:
        """The server's vsanServiceVersions.xml (beside vimServiceVersions.xml), or None."""
        cfg = self.client.config
        conn = http.client.HTTPSConnection(cfg.host, cfg.port, context=self.client.ssl_context(), timeout=cfg.timeout)
        try:
            conn.request("GET", cfg.path.rstrip("/") + "/vsanServiceVersions.xml")
            response = conn.getresponse()
            if response.status != 200:
                return None
            return b"".join(xmlguard.read_answer(response))  # capped, a DOCTYPE refused as it arrives
        except (OSError, http.client.HTTPException, xmlguard.AnswerRefused) as err:
            log.debug("vsanServiceVersions.xml: %s", err)
            return None
        finally:
            conn.close()

    def call(self, fn):
        """fn(stub) over the target's session (logging in if needed)."""
        return self.client.call(lambda content: fn(self._stub_for(content)))

    # --- the calls ---------------------------------------------------------------------------
    def supported_labels(self) -> dict[str, set[str]]:
        """entity type -> the metric labels this vSAN version has (VsanPerfGetSupportedEntityTypes)."""

        def ask(stub):
            manager = vim.cluster.VsanPerformanceManager(PERFORMANCE_MANAGER, stub)
            return soap.invoke(manager, _SUPPORTED, [])

        root = self.call(ask)
        out: dict[str, set[str]] = {}
        for entity in _iter(root, "returnval"):
            name = _child_text(entity, "name")
            labels = {(label.text or "").strip() for label in _iter(entity, "label")}
            out[name] = {label for label in labels if label}
        return out

    def query_perf(
        self, cluster_moid: str, specs: list, read, limit: int | None = None, deadline: float | None = None, capped: bool = True
    ):
        """One VsanPerfQueryPerf for a cluster; its answer handed to read() as it arrives (the
        pieces of xmlguard.iter_answer: perf.read_answer), capped at `limit` bytes (capped=False:
        not at all, read() caps what it keeps) and cut at `deadline` (time.monotonic()); what
        read() returns is returned. A fault is raised as a
        PerfFault naming it (the session's own NotAuthenticated excepted: the client logs in again)."""

        def ask(stub):
            manager = vim.cluster.VsanPerformanceManager(PERFORMANCE_MANAGER, stub)
            cluster = vim.ClusterComputeResource(cluster_moid)
            try:
                return soap.invoke_reading(
                    manager, _QUERY_PERF, [specs, cluster], read, limit=limit, deadline=deadline, capped=capped
                )
            except vim.fault.NotAuthenticated:
                raise
            except vmodl.MethodFault as fault:  # returned, not raised: the client would make it a plain error
                return PerfFault(fault._wsdlName, " ".join(str(fault.msg or "").split())[:300])

        answer = self.call(ask)
        if isinstance(answer, PerfFault):
            raise answer
        return answer

    def health_summary(self, cluster_moid: str):
        def ask(stub):
            system = vim.cluster.VsanVcClusterHealthSystem(HEALTH_SYSTEM, stub)
            return system.VsanQueryVcClusterHealthSummary(
                cluster=vim.ClusterComputeResource(cluster_moid),
                includeObjUuids=False,
                fields=["overallHealth", "objectHealth", "timestamp"],
                fetchFromCache=True,
            )

        return self.call(ask)

    def space_usage(self, cluster_moid: str):
        def ask(stub):
            system = vim.cluster.VsanSpaceReportSystem(SPACE_SYSTEM, stub)
            return system.VsanQuerySpaceUsage(cluster=vim.ClusterComputeResource(cluster_moid))

        return self.call(ask)

    def resync_summary(self, cluster_moid: str):
        def ask(stub):
            system = vim.cluster.VsanObjectSystem(OBJECT_SYSTEM, stub)
            return system.QuerySyncingVsanObjectsSummary(cluster=vim.ClusterComputeResource(cluster_moid))

        return self.call(ask)

    def managed_disks(self, host_moid: str, disk_type: str):
        """A host's vSAN disks of one kind (diskGroup, storagePool, directDisk): the vSAN
        Management API's VsanVcDiskManagementSystem.QueryVsanManagedDisks(host, filterSpec), a
        vim.vsan.host.VsanManagedDisksInfo. Under a vSAN API older than 8.0.0.1 pyVmomi leaves the
        filter out (the parameter is newer than the stub) and every kind comes back."""

        def ask(stub):
            system = vim.cluster.VsanVcDiskManagementSystem(DISK_MANAGEMENT_SYSTEM, stub)
            spec = vim.vsan.host.QueryVsanDisksSpec(vsanDiskType=disk_type)
            return system.QueryVsanManagedDisks(host=vim.HostSystem(host_moid), filterSpec=spec)

        return self.call(ask)

    def close(self) -> None:
        with self._lock:
            stub, self._stub = self._stub, None
        if stub is not None:
            try:
                stub.DropConnections()
            except Exception:  # noqa: BLE001 - best effort on a dead connection
                pass


def _iter(element, name: str):
    """Descendants named `name` in any namespace (vSAN answers use urn:vsan and urn:vim25)."""
    return element.iterfind(".//{*}" + name)


def _child_text(element, name: str) -> str:
    found = element.find("{*}" + name)
    return "" if found is None or found.text is None else found.text.strip()
