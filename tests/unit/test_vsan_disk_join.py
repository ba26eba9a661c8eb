"""vSAN ESA's disk uuid -> device join (exporter/vsan/discovery.py): QueryVsanManagedDisks' storage
pool disks read from pyVmomi's own types, QueryDisksForVsan where it fails or names none, each
failure kept by call and host, counted and logged once by the source, and the pool disks' state in
the exposition. The calls themselves run against the storage simulator in
tests/integration/test_vsan_vcsim.py and test_vcsim_vsan.py."""

from __future__ import annotations

import logging
from types import SimpleNamespace

from pyVmomi import vim

from exporter.collectors import vsan as vsan_collector
from exporter.collectors.textformat import render
from exporter.store import model as m
from exporter.store.faultlog import FaultLog
from exporter.store.store import Store
from exporter.vsan import discovery
from exporter.vsan.source import VsanSource
from exporter.vsphere.client import VsphereError

UUID_A, UUID_B = "52000000-0000-0000-0000-00000000000a", "52000000-0000-0000-0000-00000000000b"


def _disk(name: str, uuid: str | None = None) -> vim.host.ScsiDisk:
    disk = vim.host.ScsiDisk(canonicalName=name)
    if uuid:
        disk.vsanDiskInfo = vim.vsan.host.VsanDiskInfo(vsanUuid=uuid, formatVersion=20)
    return disk


def _info(*entries) -> vim.vsan.host.VsanManagedDisksInfo:
    return vim.vsan.host.VsanManagedDisksInfo(storagePools=[vim.vsan.host.StoragePoolInfo(storagePoolDisks=list(entries))])


class _Service:
    def __init__(self, answer):
        self.answer, self.asked = answer, []

    def managed_disks(self, moid: str, kind: str):
        self.asked.append((moid, kind))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


class _Client:
    """QueryDisksForVsan's answer as discovery._query_disks gives it, or its failure."""

    def __init__(self, answer):
        self.answer, self.calls = answer, 0

    def call(self, fn):
        self.calls += 1
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def _cluster() -> discovery.ClusterTopology:
    return discovery.ClusterTopology(moid="domain-c1", name="esa", esa=True, hosts={"esx1": "node-1"})


def test_the_uuid_on_the_pool_disk_or_on_its_scsi_disk_names_the_device():
    cluster = _cluster()
    info = _info(
        vim.vsan.host.StoragePoolDiskInfo(disk=_disk("eui.a"), vsanUuid=UUID_A, isMounted=True),
        # no uuid on the entry: its ScsiDisk's vsanDiskInfo (what Broadcom's ESA sample reads)
        vim.vsan.host.StoragePoolDiskInfo(disk=_disk("eui.b", UUID_B), isMounted=False, error=vim.fault.VsanFault()),
        vim.vsan.host.StoragePoolDiskInfo(disk=_disk("eui.c")),  # neither: counted, not named
    )
    assert discovery._add_managed_disks(cluster, "esx1", info)
    assert cluster.names.disks == {UUID_A: ("esx1", "eui.a"), UUID_B: ("esx1", "eui.b")}
    a, b = cluster.disks[("esx1", "eui.a")], cluster.disks[("esx1", "eui.b")]
    assert (a.uuid, a.tier, a.disk_group, a.mounted, a.fault) == (UUID_A, discovery.STORAGE_POOL, "", True, "")
    assert (b.uuid, b.mounted, b.fault) == (UUID_B, False, "VsanFault")  # unmounted, in error: still named
    assert cluster.unnamed_disks == 1
    assert cluster.uuids("vsan-esa-disk-layer") == sorted([UUID_A, UUID_B])


def test_managed_disks_first_and_no_disk_query_when_it_names_them():
    cluster, service, client = (
        _cluster(),
        _Service(_info(vim.vsan.host.StoragePoolDiskInfo(disk=_disk("eui.a"), vsanUuid=UUID_A))),
        _Client([]),
    )
    discovery._name_pool_disks(client, service, cluster, "host-1", "esx1", "vsanSystem-1")
    assert service.asked == [("host-1", "storagePool")] and client.calls == 0
    assert cluster.names.disks == {UUID_A: ("esx1", "eui.a")} and cluster.join_faults == {}


def test_a_fault_or_an_empty_pool_asks_query_disks_for_vsan():
    in_use = [("eui.a", "inUse", UUID_A), ("eui.x", "eligible", "")]
    for answer, faults in (
        (
            VsphereError("NotSupported: not here", server_fault=True, fault="NotSupported"),
            {("managed_disks", "esx1"): "NotSupported: not here"},
        ),
        (vim.vsan.host.VsanManagedDisksInfo(), {}),  # no storage pool disk listed: the other query is asked
    ):
        cluster, client = _cluster(), _Client(in_use)
        discovery._name_pool_disks(client, _Service(answer), cluster, "host-1", "esx1", "vsanSystem-1")
        assert client.calls == 1
        assert cluster.names.disks == {UUID_A: ("esx1", "eui.a")}
        assert cluster.join_faults == faults


def test_both_queries_failing_leave_the_host_unnamed_with_both_faults_kept():
    cluster = _cluster()
    client = _Client(VsphereError("HostNotConnected: gone", server_fault=True))
    discovery._name_pool_disks(client, _Service(VsphereError("VsanFault: gone")), cluster, "host-1", "esx1", "vsanSystem-1")
    assert cluster.disks == {} and cluster.names.disks == {}
    assert cluster.join_faults == {
        ("managed_disks", "esx1"): "VsanFault: gone",
        ("disks_for_vsan", "esx1"): "HostNotConnected: gone",
    }


def test_only_no_answer_at_all_stops_asking_the_vsan_endpoint():
    """A fault is the server's answer for that host (the next host is asked); no answer (a timeout,
    a closed connection) says the endpoint is down or hangs: the discovery's other hosts skip it."""
    for err, answered in ((VsphereError("NotSupported", server_fault=True), True), (VsphereError("timed out"), False)):
        cluster = _cluster()
        named = discovery._name_pool_disks(
            _Client([("eui.a", "inUse", UUID_A)]), _Service(err), cluster, "host-1", "esx1", "vs-1"
        )
        assert named is answered and cluster.names.disks == {UUID_A: ("esx1", "eui.a")}


def test_the_source_counts_every_failure_and_logs_each_host_once(caplog):
    source = SimpleNamespace(name="vc", faults=FaultLog(logging.getLogger("exporter.vsan.source")))
    cluster = _cluster()
    cluster.join_faults = {("managed_disks", "esx1"): "NotSupported", ("managed_disks", "esx2"): "VsanFault"}
    with caplog.at_level(logging.INFO, logger="exporter.vsan.source"):
        VsanSource._disk_query_faults(source, [cluster])
        VsanSource._disk_query_faults(source, [cluster])  # the next discovery, failing alike: counted, not logged
        assert VsanSource.cluster_errors(source, "esa") == {"managed_disks": 4}
        assert len(caplog.records) == 2
        assert "QueryVsanManagedDisks failed for host esx1: NotSupported; naming its disks with QueryDisksForVsan" in caplog.text
        cluster.join_faults = {("managed_disks", "esx1"): "NotSupported"}  # esx2 answers again: said once
        VsanSource._disk_query_faults(source, [cluster])
        VsanSource._disk_query_faults(source, [cluster])
        cluster.join_faults = {("managed_disks", "esx1"): "NotSupported", ("managed_disks", "esx2"): "VsanFault"}
        VsanSource._disk_query_faults(source, [cluster])  # esx2 fails again: logged again
        cluster.join_faults = {("managed_disks", "esx1"): "HostNotConnected"}  # esx1's message changed: logged
        VsanSource._disk_query_faults(source, [cluster])
    assert [(r.levelname, r.getMessage().split(";")[0]) for r in caplog.records][2:] == [
        ("INFO", "vsphere target vc: vSAN cluster esa: QueryVsanManagedDisks answers again for host esx2"),
        ("WARNING", "vsphere target vc: vSAN cluster esa: QueryVsanManagedDisks failed for host esx2: VsanFault"),
        ("WARNING", "vsphere target vc: vSAN cluster esa: QueryVsanManagedDisks failed for host esx1: HostNotConnected"),
        ("INFO", "vsphere target vc: vSAN cluster esa: QueryVsanManagedDisks answers again for host esx2"),
    ]
    assert VsanSource.cluster_errors(source, "esa") == {"managed_disks": 9}


def test_a_failing_call_is_counted_every_round_logged_once_and_its_end_once(caplog):
    """A round's failed calls (exporter.vsan.source._failed): alike failures are one line, a call
    failing again alike is counted, not logged; a new message is logged; the end is said once."""
    source = SimpleNamespace(name="vc", faults=FaultLog(logging.getLogger("exporter.vsan.source")))
    off = "ServerFaultCode: the performance service is off"
    with caplog.at_level(logging.INFO, logger="exporter.vsan.source"):
        for _ in range(3):
            VsanSource._failed(source, "osa", {"perf:cluster-domclient": off, "perf:host-domclient": off, "health": "timed out"})
        VsanSource._failed(source, "osa", {"perf:cluster-domclient": off, "perf:host-domclient": off, "health": "NotFound"})
        VsanSource._failed(source, "osa", {})
        VsanSource._failed(source, "osa", {})
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", f"vsphere target vc: vSAN perf:cluster-domclient, perf:host-domclient of cluster osa failed: {off}"),
        ("WARNING", "vsphere target vc: vSAN health of cluster osa failed: timed out"),
        ("WARNING", "vsphere target vc: vSAN health of cluster osa failed: NotFound"),
        ("INFO", "vsphere target vc: vSAN health, perf:cluster-domclient, perf:host-domclient of cluster osa answers again"),
    ]
    assert VsanSource.cluster_errors(source, "osa") == {"perf:cluster-domclient": 4, "perf:host-domclient": 4, "health": 4}


def test_pool_disk_state_in_the_exposition():
    store = Store()
    disks = {
        ("esx1", "eui.a"): m.VsanDisk("esx1", "eui.a", "", "storage_pool", UUID_A, mounted=True),
        ("esx1", "eui.b"): m.VsanDisk("esx1", "eui.b", "", "storage_pool", UUID_B, mounted=False, fault="VsanFault"),
        ("esx1", "naa.c"): m.VsanDisk("esx1", "naa.c", "naa.c", "cache", UUID_A),  # OSA: no state said, no series
    }
    store.set_vsan(m.VsanCluster(name="esa", esa=True, disks=disks), origin="vc")
    text = render(vsan_collector.collect(store)).decode()
    assert 'esxi_vsan_disk_mounted{cluster="esa",host="esx1",device="eui.a"} 1.0' in text
    assert 'esxi_vsan_disk_mounted{cluster="esa",host="esx1",device="eui.b"} 0.0' in text
    assert 'esxi_vsan_disk_fault_info{cluster="esa",host="esx1",device="eui.b",fault="VsanFault"} 1.0' in text
    assert "naa.c" not in "".join(line for line in text.splitlines() if "mounted" in line or "fault_info" in line)


def test_a_failing_vsan_discovery_is_logged_once_and_its_end_once(caplog, monkeypatch):
    """Until a first discovery works it is retried at the real-time pace (20 s): one line, not one a try."""
    answers = [VsphereError("timed out")] * 3 + [VsphereError("NotAuthenticated")] + [[], []]

    def discover(client, selection, service):
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(discovery, "discover", discover)
    config = SimpleNamespace(selection=None)
    source = VsanSource(SimpleNamespace(name="vc", client=None, config=config, overruns=None), Store())
    with caplog.at_level(logging.INFO, logger="exporter.vsan.source"):
        assert [source.discover() for _ in range(6)] == [False] * 4 + [True] * 2
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", "vsphere target vc: vSAN discovery failed: timed out"),
        ("WARNING", "vsphere target vc: vSAN discovery failed: NotAuthenticated"),
        ("INFO", "vsphere target vc: vSAN discovery answers again"),
    ]
