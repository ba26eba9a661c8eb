"""The storage simulator's vSAN (simulators/storagesim/vsan.go, fixture simulators/storagesim/vsan.json) through pyVmomi's
own vSAN bindings, over the real wire protocol, with the vCenter session's cookie.

The Python calls that work (the exporter's vSAN client uses the same ones):

    si = pyVim.connect.SmartConnect(host=HOST, port=PORT, user=USER, pwd=PASSWORD, sslContext=ctx)
    stub = pyVmomi.SoapStubAdapter(host=HOST, port=PORT, path="/vsanHealth", sslContext=ctx,
                                   version=pyVmomi.VmomiSupport.newestVersions.GetName("vsan"))
    stub.cookie = si._stub.cookie  # the /sdk session: no second login
    perf = vim.cluster.VsanPerformanceManager("vsan-performance-manager", stub)
    perf.QueryVsanPerf(querySpecs=[vim.cluster.VsanPerfQuerySpec(entityRefId="host-domclient:*",
                       startTime=t0, endTime=t1, labels=["latencyAvgRead", ...])], cluster=cluster)
        # wire name VsanPerfQueryPerf -> [vim.cluster.VsanPerfEntityMetricCSV]
    vim.cluster.VsanVcClusterHealthSystem("vsan-cluster-health-system", stub).QueryClusterHealthSummary(
        cluster=cluster, fields=["overallHealth", "objectHealth"], fetchFromCache=True)
        # wire name VsanQueryVcClusterHealthSummary -> vim.cluster.VsanClusterHealthSummary
    vim.cluster.VsanSpaceReportSystem("vsan-cluster-space-report-system", stub).QuerySpaceUsage(cluster=cluster)
        # wire name VsanQuerySpaceUsage -> vim.cluster.VsanSpaceUsage {totalCapacityB, freeCapacityB}
    vim.cluster.VsanObjectSystem("vsan-cluster-object-system", stub).QuerySyncingVsanObjectsSummary(cluster=cluster)
        # -> vim.vsan.host.VsanSyncingObjectQueryResult {totalObjectsToSync, totalBytesToSync, totalRecoveryETA}
    vim.cluster.VsanVcDiskManagementSystem("vsan-disk-management-system", stub).QueryVsanManagedDisks(
        host=host, filterSpec=vim.vsan.host.QueryVsanDisksSpec(vsanDiskType="storagePool"))
        # -> vim.vsan.host.VsanManagedDisksInfo {storagePools[].storagePoolDisks[] {vsanUuid, disk, isMounted, error}}

`cluster` is the vim.ClusterComputeResource from /sdk (a stub of either endpoint serialises it
the same). Times may be naive (taken as UTC) or aware. SmartConnect agrees on vim API 6.5 with this
simulator (its ServiceContent's), with a real vCenter 8 on 8.x; under 6.5 pyVmomi refuses a data
type newer than 6.5 (the simulator sends none) but reads newer properties of older types, such as
vsanEsaEnabled. Optional numbers of the answers that are
zero arrive unset (None): read them as 0. With pyVmomi 9.1.1 the version name is
vsan.version.v9_1_1_0; pyVmomi's VmomiSupport.newestVersions.GetName("vsan") picks the newest it
knows, whatever its release.

OSA cluster vsan-osa (esx21-23, two disk groups of one cache and two capacity disks each, two VMs
a host), ESA cluster vsan-esa (esx31-32, no disk groups, one VM each), esx41 in the simulator's
own cluster DC0_C0 without vSAN. A second simulator (`faulty`) serves the same fixture with 2 s
samples, vsan-esa's performance service off, vsan-osa's health, space and resync faulting, its
VMs and capacity disks refusing the wildcard and its disk groups answering NotSupported, and
vsan-esa's disk queries as feared or failing (QueryDisksForVsan not listing pool disks in use,
QueryVsanManagedDisks faulting for esx31, esx32's second pool disk unmounted and in error). A third
(`older`) serves vSAN API 8.0.0.2 (8.0U1: no multi-entity specs) with vsan-esa's performance
service answering NotSupported (the host asked is not the stats master).

VsanPerfQueryPerf follows the vSAN Management API reference (VsanPerformanceManager, its
querySpecs parameter): startTime and endTime in every spec; a wildcard spec (`type:*`) or a
multi-entity spec (`type:uuid1,uuid2,...`, from 8.0U2, at most 400 uuids) alone in its call;
otherwise at most 100 specs; InvalidArgument for anything else.
"""

from __future__ import annotations

import datetime as dt
import http.client
import json
import ssl
import subprocess

import pytest
from pyVim.connect import Disconnect, SmartConnect
from pyVmomi import SoapStubAdapter, VmomiSupport, vim, vmodl

from simulators.storagesim.sims import HERE, PASSWORD, USER, StorageSim, storagesim_binary

pytestmark = pytest.mark.integration

FIXTURE = HERE / "vsan.json"
OSA_UUID = "52a1b2c3-d4e5-4f60-8123-456789abcd01"
ESA_UUID = "52f0e1d2-c3b4-4a59-8687-0123456789e5"
SAMPLE = 300
UTC = dt.timezone.utc


class Session:
    """A vCenter session on one simulator and a /vsanHealth stub sharing its cookie."""

    def __init__(self, sim: StorageSim):
        self.sim = sim
        self.ctx = ssl.create_default_context(cafile=str(sim.cert))
        self.si = SmartConnect(host="127.0.0.1", port=sim.port, user=USER, pwd=PASSWORD, sslContext=self.ctx)
        self.content = self.si.RetrieveContent()
        self.stub = self.vsan_stub(cookie=self.si._stub.cookie)
        self.clusters = {c.name: c for c in self.view(vim.ClusterComputeResource)}

    def vsan_stub(self, cookie: str | None):
        stub = SoapStubAdapter(
            host="127.0.0.1",
            port=self.sim.port,
            path="/vsanHealth",
            version=VmomiSupport.newestVersions.GetName("vsan"),
            sslContext=self.ctx,
        )
        if cookie is not None:
            stub.cookie = cookie
        return stub

    def view(self, kind):
        return self.content.viewManager.CreateContainerView(self.content.rootFolder, [kind], True).view

    def retrieve(self, kind, paths: list[str], objects=None) -> dict[str, dict]:
        """{name: {path: value}} for every object of a kind (or the objects given), in one
        PropertyCollector call, as the exporter's discovery reads the inventory."""
        pc = vmodl.query.PropertyCollector
        if objects is None:
            view = self.content.viewManager.CreateContainerView(self.content.rootFolder, [kind], True)
            traverse = pc.TraversalSpec(name="view", path="view", type=vim.view.ContainerView)
            object_set = [pc.ObjectSpec(obj=view, skip=True, selectSet=[traverse])]
        else:
            object_set = [pc.ObjectSpec(obj=o) for o in objects]
        spec = pc.FilterSpec(objectSet=object_set, propSet=[pc.PropertySpec(type=kind, pathSet=["name", *paths])])
        out = {}
        for content in self.content.propertyCollector.RetrieveContents([spec]):
            props = {p.name: p.val for p in content.propSet}
            out[props["name"]] = props
        return out

    def perf(self, cluster: str, *specs):
        manager = vim.cluster.VsanPerformanceManager("vsan-performance-manager", self.stub)
        return manager.QueryVsanPerf(querySpecs=list(specs), cluster=self.clusters[cluster])

    def health(self, cluster: str, **kwargs):
        system = vim.cluster.VsanVcClusterHealthSystem("vsan-cluster-health-system", self.stub)
        return system.QueryClusterHealthSummary(cluster=self.clusters[cluster], **kwargs)

    def space(self, cluster: str):
        system = vim.cluster.VsanSpaceReportSystem("vsan-cluster-space-report-system", self.stub)
        return system.QuerySpaceUsage(cluster=self.clusters[cluster])

    def resync(self, cluster: str):
        system = vim.cluster.VsanObjectSystem("vsan-cluster-object-system", self.stub)
        return system.QuerySyncingVsanObjectsSummary(cluster=self.clusters[cluster])

    def close(self):
        Disconnect(self.si)


@pytest.fixture(scope="module")
def fixture():
    return json.loads(FIXTURE.read_text())


@pytest.fixture(scope="module")
def vc(tmp_path_factory):
    sim = StorageSim(tmp_path_factory.mktemp("vsan"), fixture=FIXTURE)
    session = Session(sim)
    yield session
    session.close()
    sim.stop()


@pytest.fixture(scope="module")
def faulty(tmp_path_factory, fixture):
    """vsan.json with vsan-esa's performance service off, vsan-osa's three other methods faulting,
    its VMs and capacity disks refusing the wildcard and its disk groups NotSupported, 2 s samples."""
    tmp = tmp_path_factory.mktemp("vsan-faulty")
    data = json.loads(json.dumps(fixture))
    osa, esa = data["vsan"]["clusters"]
    esa["perf_service"] = False
    osa["faults"] = {"health": "VsanFault", "space": "NotSupported", "resync": "Timedout"}
    osa["wildcard_refused"] = ["virtual-machine", "capacity-disk"]
    osa["perf_faults"] = {"disk-group": "NotSupported"}
    esa["managed_disks_faults"] = {"esx31.lab.local": "NotSupported"}
    esa["disk_query_hides_pool"] = True
    esx32 = next(h for h in data["hosts"] if h["name"] == "esx32.lab.local")
    esx32["vsan"]["storage_pool"][1] = {"device": esx32["vsan"]["storage_pool"][1], "unmounted": True, "fault": "VsanFault"}
    path = tmp / "vsan-faulty.json"
    path.write_text(json.dumps(data))
    sim = StorageSim(tmp, "-vsan-sample-seconds", "2", fixture=path)
    session = Session(sim)
    yield session
    session.close()
    sim.stop()


@pytest.fixture(scope="module")
def older(tmp_path_factory, fixture):
    """vsan.json served as vSAN API 8.0.0.2 (vSAN 8.0U1), vsan-esa's performance service answering NotSupported."""
    tmp = tmp_path_factory.mktemp("vsan-older")
    data = json.loads(json.dumps(fixture))
    data["vsan"]["api_version"] = "8.0.0.2"
    data["vsan"]["clusters"][1]["faults"] = {"perf": "NotSupported"}
    path = tmp / "vsan-older.json"
    path.write_text(json.dumps(data))
    sim = StorageSim(tmp, fixture=path)
    session = Session(sim)
    yield session
    session.close()
    sim.stop()


@pytest.fixture(scope="module")
def vsan7(tmp_path_factory, fixture):
    """vsan.json served as vSAN API 7.4, older than QueryVsanManagedDisks' filterSpec (8.0.0.1)."""
    tmp = tmp_path_factory.mktemp("vsan-7")
    data = json.loads(json.dumps(fixture))
    data["vsan"]["api_version"] = "7.4"
    path = tmp / "vsan-7.json"
    path.write_text(json.dumps(data))
    sim = StorageSim(tmp, fixture=path)
    session = Session(sim)
    yield session
    session.close()
    sim.stop()


def spec(entity: str, start=None, end=None, labels=None):
    return vim.cluster.VsanPerfQuerySpec(entityRefId=entity, startTime=start, endTime=end, labels=labels)


def stamps(metric) -> list[dt.datetime]:
    return [dt.datetime.strptime(t, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC) for t in (metric.sampleInfo or "").split(",") if t]


def series(metric) -> dict[str, list[str]]:
    return {v.metricId.label: v.values.split(",") for v in metric.value}


def cells(value, stamp: dt.datetime, sample: int = SAMPLE) -> str:
    """The fixture's cell for a sample: a number's text, '' for null, a list cycled by t / sample."""
    if isinstance(value, list):
        value = value[int(stamp.timestamp()) // sample % len(value)]
    return "" if value is None else json.dumps(value)


# --- inventory (/sdk) ---


def test_vsan_clusters_are_found_from_configuration_ex_and_hold_their_hosts(vc):
    clusters = vc.retrieve(
        vim.ClusterComputeResource,
        [
            "configurationEx.vsanConfigInfo.enabled",
            "configurationEx.vsanConfigInfo.defaultConfig.uuid",
            "configurationEx",
            "host",
        ],
    )
    assert set(clusters) == {"vsan-osa", "vsan-esa", "DC0_C0"}
    osa, esa, plain = clusters["vsan-osa"], clusters["vsan-esa"], clusters["DC0_C0"]
    assert osa["configurationEx.vsanConfigInfo.enabled"] is True
    assert osa["configurationEx.vsanConfigInfo.defaultConfig.uuid"] == OSA_UUID
    assert osa["configurationEx"].vsanConfigInfo.vsanEsaEnabled is False
    assert esa["configurationEx.vsanConfigInfo.defaultConfig.uuid"] == ESA_UUID
    assert esa["configurationEx"].vsanConfigInfo.vsanEsaEnabled is True
    assert plain["configurationEx"].vsanConfigInfo is None  # the non-vSAN cluster: absent
    names = {c: sorted(h.name for h in props["host"]) for c, props in clusters.items()}
    assert names == {
        "vsan-osa": ["esx21.lab.local", "esx22.lab.local", "esx23.lab.local"],
        "vsan-esa": ["esx31.lab.local", "esx32.lab.local"],
        "DC0_C0": ["esx41.lab.local"],
    }
    # vCenter also lists each host's vSAN configuration on the cluster
    assert sorted(h.clusterInfo.nodeUuid for h in osa["configurationEx"].vsanHostConfig) == sorted(
        h.config.vsanHostConfig.clusterInfo.nodeUuid for h in osa["host"]
    )


def test_vsan_hosts_show_node_uuid_and_disk_groups_of_their_own_local_luns(vc, fixture):
    hosts = vc.retrieve(
        vim.HostSystem,
        [
            "config.vsanHostConfig",
            "config.storageDevice.scsiLun",
            "config.storageDevice.multipathInfo",
            "config.storageDevice.hostBusAdapter",
        ],
    )
    by_name = {h["name"]: h for h in fixture["hosts"]}
    esx21 = hosts["esx21.lab.local"]["config.vsanHostConfig"]
    assert esx21.enabled is True and esx21.vsanEsaEnabled is False
    assert esx21.clusterInfo.uuid == OSA_UUID
    assert esx21.clusterInfo.nodeUuid == "5f0c1a2b-2121-4e21-a021-0050569a2121"  # the fixture's
    for name in ("esx21.lab.local", "esx22.lab.local", "esx23.lab.local"):
        config = hosts[name]["config.vsanHostConfig"]
        luns = {lun.canonicalName: lun for lun in hosts[name]["config.storageDevice.scsiLun"]}
        want = by_name[name]["vsan"]["disk_groups"]
        mapping = config.storageInfo.diskMapping
        assert [m.ssd.canonicalName for m in mapping] == [g["cache"] for g in want]
        assert [[d.canonicalName for d in m.nonSsd] for m in mapping] == [
            [d if isinstance(d, str) else d["device"] for d in g["capacity"]] for g in want
        ]
        for disk in [m.ssd for m in mapping] + [d for m in mapping for d in m.nonSsd]:
            lun = luns[disk.canonicalName]  # the same device the LUN families label
            assert lun.localDisk is True
            assert disk.vsanDiskInfo.vsanUuid.startswith("52")
            assert lun.vsanDiskInfo.vsanUuid == disk.vsanDiskInfo.vsanUuid
        assert all(luns[m.ssd.canonicalName].ssd for m in mapping)
        # a vSAN disk has one active path through the host's local SAS adapter
        adapters = {a.key: a for a in hosts[name]["config.storageDevice.hostBusAdapter"]}
        for unit in hosts[name]["config.storageDevice.multipathInfo"].lun:
            assert [p.state for p in unit.path] == ["active"]
            assert isinstance(adapters[unit.path[0].adapter], vim.host.SerialAttachedHba)
            assert unit.policy.policy == "VMW_PSP_FIXED"
    first = hosts["esx21.lab.local"]["config.vsanHostConfig"].storageInfo.diskMapping[0].nonSsd[0]
    assert first.vsanDiskInfo.vsanUuid == "52e1f0aa-0021-4c00-8a01-00000000c001"  # the fixture's
    for name in ("esx31.lab.local", "esx32.lab.local"):
        config = hosts[name]["config.vsanHostConfig"]
        assert config.enabled is True and config.vsanEsaEnabled is True and config.clusterInfo.uuid == ESA_UUID
        assert list(config.storageInfo.diskMapping) == []  # ESA: a storage pool, no disk groups
    assert hosts["esx41.lab.local"]["config.vsanHostConfig"].enabled is False


def test_vsan_datastore_is_mounted_by_its_cluster_and_holds_its_vms(vc, fixture):
    clusters = vc.retrieve(vim.ClusterComputeResource, ["datastore", "host"])
    for cluster, name, space in (
        ("vsan-osa", "vsanDatastore", fixture["vsan"]["clusters"][0]["space"]),
        ("vsan-esa", "vsanDatastore (1)", fixture["vsan"]["clusters"][1]["space"]),
    ):
        (ds,) = [d for d in clusters[cluster]["datastore"] if d.summary.type == "vsan"]
        assert ds.name == name
        assert (ds.summary.capacity, ds.summary.freeSpace) == (space["total_bytes"], space["free_bytes"])
        assert {m.key.name for m in ds.host} == {h.name for h in clusters[cluster]["host"]}
        assert ds.info.freeSpace == space["free_bytes"]
        vms = vc.retrieve(vim.VirtualMachine, ["datastore", "runtime.host"], objects=list(ds.vm))
        on_hosts = {h.name for h in clusters[cluster]["host"]}
        assert vms and all(v["runtime.host"].name in on_hosts for v in vms.values())
        assert {v["runtime.host"].name for v in vms.values()} == on_hosts
    mounts = vc.retrieve(vim.HostSystem, ["config.fileSystemVolume.mountInfo"])["esx22.lab.local"][
        "config.fileSystemVolume.mountInfo"
    ]
    (mount,) = [m for m in mounts if m.volume.type == "vsan"]
    assert mount.volume.name == "vsanDatastore"
    assert mount.mountInfo.path == "/vmfs/volumes/vsan:52a1b2c3d4e54f60-8123456789abcd01"


def test_vms_carry_instance_uuids(vc):
    vms = vc.retrieve(vim.VirtualMachine, ["config.instanceUuid"])
    assert vms["web21"]["config.instanceUuid"] == "5021aaaa-0000-4000-8000-000000000021"  # the fixture's
    uuids = [v["config.instanceUuid"] for v in vms.values()]
    assert len(set(uuids)) == len(uuids) == 9 and all(uuids)


# --- the performance service ---


def entity_uuids(vc, fixture) -> dict[str, dict[str, str]]:
    """vsan-osa's perf entities as the fixture keys them -> the uuid vSAN names them by, read from the inventory."""
    hosts = vc.retrieve(vim.HostSystem, ["config.vsanHostConfig"])
    vms = vc.retrieve(vim.VirtualMachine, ["config.instanceUuid"])
    out = {"cluster-domclient": {"": OSA_UUID}, "host-domclient": {}, "disk-group": {}, "cache-disk": {}, "capacity-disk": {}}
    for name in fixture["vsan"]["clusters"][0]["hosts"]:
        config = hosts[name]["config.vsanHostConfig"]
        out["host-domclient"][name] = config.clusterInfo.nodeUuid
        for m in config.storageInfo.diskMapping:
            out["disk-group"][m.ssd.canonicalName] = m.ssd.vsanDiskInfo.vsanUuid
            out["cache-disk"][m.ssd.canonicalName] = m.ssd.vsanDiskInfo.vsanUuid
            for d in m.nonSsd:
                out["capacity-disk"][d.canonicalName] = d.vsanDiskInfo.vsanUuid
    out["virtual-machine"] = {
        vm: vms[vm]["config.instanceUuid"] for vm in fixture["vsan"]["clusters"][0]["perf"]["virtual-machine"]
    }
    return out


def window():
    end = dt.datetime.now(UTC)
    return end - dt.timedelta(hours=1), end


def expected_stamps(start: dt.datetime, end: dt.datetime, sample: int = SAMPLE) -> list[dt.datetime]:
    """start < t <= end: the reference's "returned samples do not include the sample at startTime"."""
    first = int(start.timestamp()) // sample + 1
    return [dt.datetime.fromtimestamp(k * sample, UTC) for k in range(first, int(end.timestamp()) // sample + 1)]


TYPES = ["cluster-domclient", "host-domclient", "disk-group", "cache-disk", "capacity-disk", "virtual-machine"]


def test_every_entity_type_answers_the_fixture_values_exactly(vc, fixture):
    start, end = window()
    types = TYPES
    answer = [metric for t in types for metric in vc.perf("vsan-osa", spec(f"{t}:*", start, end))]  # a wildcard alone
    uuids = entity_uuids(vc, fixture)
    perf = fixture["vsan"]["clusters"][0]["perf"]
    want_stamps = expected_stamps(start, end)
    assert len(want_stamps) == 12
    got = {}
    for metric in answer:
        kind, uuid = metric.entityRefId.split(":", 1)
        got[(kind, uuid)] = metric
        assert stamps(metric) == want_stamps
        assert metric.sampleInfo.split(",")[0] == want_stamps[0].strftime("%Y-%m-%d %H:%M:%S")
        assert {v.metricId.metricsCollectInterval for v in metric.value} == {SAMPLE}
    wanted = {(t, uuid) for t in types for uuid in uuids[t].values()}
    assert set(got) == wanted  # 1 cluster, 3 hosts, 6 disk groups, 6 cache and 12 capacity disks, 6 VMs
    assert len(wanted) == 1 + 3 + 6 + 6 + 12 + 6
    for kind in types:
        for key, uuid in uuids[kind].items():
            values = perf[kind] if kind == "cluster-domclient" else perf[kind][key]
            metric = got[(kind, uuid)]
            assert [v.metricId.label for v in metric.value] == sorted(values)  # no labels asked: all, sorted
            assert series(metric) == {label: [cells(v, t) for t in want_stamps] for label, v in values.items()}


def test_values_are_passed_through_with_blank_cells_and_cycles(vc, fixture):
    start, end = window()
    uuids = entity_uuids(vc, fixture)
    (esx22,) = vc.perf("vsan-osa", spec(f"host-domclient:{uuids['host-domclient']['esx22.lab.local']}", start, end))
    (esx23,) = vc.perf("vsan-osa", spec(f"host-domclient:{uuids['host-domclient']['esx23.lab.local']}", start, end))
    (cluster,) = vc.perf("vsan-osa", spec("cluster-domclient:*", start, end))
    times = stamps(esx22)
    # vSAN's units as written: µs, a list cycled by t / 300, a null as a blank cell
    assert series(esx22)["latencyAvgWrite"] == [["58000", "62000", "66000"][int(t.timestamp()) // 300 % 3] for t in times]
    assert series(esx23)["clientCacheHitRate"] == [""] * len(times)
    assert series(esx23)["latencyAvgRead"] == [["1500", "", "1700"][int(t.timestamp()) // 300 % 3] for t in times]
    assert "" in series(esx23)["latencyAvgRead"]
    assert series(cluster)["clientCacheHitRate"] == ["37.5"] * len(times)
    assert series(cluster)["throughputRead"] == ["221184000"] * len(times)


def test_labels_filter_in_request_order_and_unknown_labels_are_left_out(vc, fixture):
    start, end = window()
    uuids = entity_uuids(vc, fixture)
    answer = vc.perf("vsan-osa", spec("host-domclient:*", start, end, labels=["latencyAvgWrite", "portRxpkts", "iopsRead"]))
    assert len(answer) == 3
    for metric in answer:
        assert [v.metricId.label for v in metric.value] == ["latencyAvgWrite", "iopsRead"]
    vm = uuids["virtual-machine"]["db22"]
    (one,) = vc.perf("vsan-osa", spec(f"virtual-machine:{vm}", start, end, labels=["latencyWrite"]))
    assert one.entityRefId == f"virtual-machine:{vm}"
    assert set(series(one)["latencyWrite"]) == {"64000"}
    assert list(vc.perf("vsan-osa", spec("virtual-machine:00000000-0000-0000-0000-000000000000", start, end))) == []


def test_esa_has_cluster_host_and_vm_entities_and_no_disk_groups(vc):
    start, end = window()
    answer = [metric for t in TYPES for metric in vc.perf("vsan-esa", spec(f"{t}:*", start, end))]
    kinds = sorted(m.entityRefId.split(":")[0] for m in answer)
    assert kinds == ["cluster-domclient", "host-domclient", "host-domclient", "virtual-machine", "virtual-machine"]
    (cluster,) = [m for m in answer if m.entityRefId == f"cluster-domclient:{ESA_UUID}"]
    assert set(series(cluster)["latencyAvgWrite"]) == {"610"}


ESA_TYPES = ["vsan-esa-disk-layer", "vsan-esa-disk-scsifw"]
NET_TYPES = ["vsan-host-net", "vsan-pnic-net", "vsan-vnic-net", "vsan-tcpip-stats"]
BACKEND_TYPES = ["host-domcompmgr", "cluster-domcompmgr", "cluster-domowner", "host-domowner"]


def test_esa_serves_one_entity_per_storage_pool_disk_named_by_its_vsan_uuid(vc, fixture):
    """vsan-esa-disk-layer and -scsifw: one entity per disk (not per host), id the disk's vSAN uuid,
    which the host's QueryDisksForVsan answers (state inUse) beside the device's canonical name."""
    start, end = window()
    hosts = vc.retrieve(vim.HostSystem, ["configManager.vsanSystem", "config.vsanHostConfig"])
    by_uuid = {}
    for name in ("esx31.lab.local", "esx32.lab.local"):
        config = hosts[name]["config.vsanHostConfig"]
        assert config.vsanEsaEnabled and not config.storageInfo.diskMapping  # ESA: no disk groups
        results = hosts[name]["configManager.vsanSystem"].QueryDisksForVsan()
        in_use = {r.disk.canonicalName: r.vsanUuid for r in results if r.state == "inUse"}
        pool = [
            d if isinstance(d, str) else d["device"]
            for d in {h["name"]: h for h in fixture["hosts"]}[name]["vsan"]["storage_pool"]
        ]
        assert sorted(in_use) == sorted(pool)
        by_uuid.update({uuid: (name, device) for device, uuid in in_use.items()})
    assert by_uuid["52e5a000-0031-4e00-8a01-00000000e001"] == ("esx31.lab.local", "eui.0025384003110000")  # the fixture's
    (one,) = hosts["esx31.lab.local"]["configManager.vsanSystem"].QueryDisksForVsan(canonicalName=["eui.0025384003110000"])
    assert one.state == "inUse"
    perf = fixture["vsan"]["clusters"][1]["perf"]
    for kind in ESA_TYPES:
        answer = vc.perf("vsan-esa", spec(f"{kind}:*", start, end))
        assert sorted(m.entityRefId for m in answer) == sorted(f"{kind}:{uuid}" for uuid in by_uuid)
        for metric in answer:
            device = by_uuid[metric.entityRefId.split(":", 1)[1]][1]
            assert set(series(metric)) == set(perf[kind][device])
        assert vc.perf("vsan-osa", spec(f"{kind}:*", start, end)) == []  # OSA has no ESA disks, and no error
    for kind in ("disk-group", "cache-disk", "capacity-disk"):
        assert vc.perf("vsan-esa", spec(f"{kind}:*", start, end)) == []  # ESA: empty, no error


POOL = vim.vsan.host.QueryVsanDisksSpec(vsanDiskType="storagePool")


def managed_disks(session: Session, host, filter_spec=None, stub=None):
    system = vim.cluster.VsanVcDiskManagementSystem("vsan-disk-management-system", stub or session.stub)
    return system.QueryVsanManagedDisks(host=host, filterSpec=filter_spec)


def pool_disks(info) -> list:
    return [d for pool in info.storagePools for d in pool.storagePoolDisks]


def test_esa_pool_disks_are_named_by_query_vsan_managed_disks(vc, fixture):
    """VsanVcDiskManagementSystem.QueryVsanManagedDisks(host, filterSpec storagePool): one storage
    pool per ESA host, each disk with its vSAN uuid on the entry and on its ScsiDisk's vsanDiskInfo,
    the ids of the ESA disk entities; on OSA no pool, and without a filter its disk groups."""
    start, end = window()
    hosts = {h.name: h for h in vc.view(vim.HostSystem)}
    fixture_hosts = {h["name"]: h for h in fixture["hosts"]}
    named = {}
    for name in ("esx31.lab.local", "esx32.lab.local"):
        info = managed_disks(vc, hosts[name], POOL)
        assert len(info.storagePools) == 1 and info.vSANDiskMapInfo == [] and info.vSANDirectDisks == []
        disks = pool_disks(info)
        pool = [d if isinstance(d, str) else d["device"] for d in fixture_hosts[name]["vsan"]["storage_pool"]]
        assert [d.disk.canonicalName for d in disks] == pool
        for d in disks:
            assert d.vsanUuid and d.vsanUuid == d.disk.vsanDiskInfo.vsanUuid
            assert (d.isMounted, d.error, d.isEncrypted, d.diskType) == (True, None, False, "singleTier")
            named[d.vsanUuid] = (name, d.disk.canonicalName)
    assert named["52e5a000-0031-4e00-8a01-00000000e001"] == ("esx31.lab.local", "eui.0025384003110000")  # the fixture's
    for kind in ESA_TYPES:  # the performance service names the ESA disks by those uuids
        assert sorted(m.entityRefId for m in vc.perf("vsan-esa", spec(f"{kind}:*", start, end))) == sorted(
            f"{kind}:{uuid}" for uuid in named
        )
    (one,) = pool_disks(
        managed_disks(vc, hosts["esx31.lab.local"], vim.vsan.host.QueryVsanDisksSpec(diskName="eui.0025384003120000"))
    )
    assert one.disk.canonicalName == "eui.0025384003120000"
    assert (
        managed_disks(vc, hosts["esx31.lab.local"], vim.vsan.host.QueryVsanDisksSpec(vsanDiskType="diskGroup")).storagePools == []
    )
    # OSA: no storage pool; every kind (no filter) is its disk groups, as config.vsanHostConfig has them
    osa = managed_disks(vc, hosts["esx21.lab.local"], POOL)
    assert (osa.storagePools, osa.vSANDiskMapInfo) == ([], [])
    groups = managed_disks(vc, hosts["esx21.lab.local"])
    mapping = vc.retrieve(vim.HostSystem, ["config.vsanHostConfig"])["esx21.lab.local"][
        "config.vsanHostConfig"
    ].storageInfo.diskMapping
    assert groups.storagePools == [] and [g.mapping.ssd.canonicalName for g in groups.vSANDiskMapInfo] == [
        m.ssd.canonicalName for m in mapping
    ]
    assert all(g.isMounted and g.isAllFlash for g in groups.vSANDiskMapInfo)
    assert [[d.canonicalName for d in g.mapping.nonSsd] for g in groups.vSANDiskMapInfo] == [
        [d.canonicalName for d in m.nonSsd] for m in mapping
    ]
    none = managed_disks(vc, hosts["esx41.lab.local"], POOL)  # a host without vSAN: nothing, no fault
    assert (none.storagePools, none.vSANDiskMapInfo) == ([], [])


def post_vsan(session: Session, body: str) -> tuple[int, str]:
    envelope = (
        '<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body>'
        f"{body}</soapenv:Body></soapenv:Envelope>"
    )
    conn = http.client.HTTPSConnection("127.0.0.1", session.sim.port, context=session.ctx)
    try:
        conn.request("POST", "/vsanHealth", envelope, {"Cookie": session.si._stub.cookie, "Content-Type": "text/xml"})
        answer = conn.getresponse()
        return answer.status, answer.read().decode()
    finally:
        conn.close()


def set_host_state(session: Session, host: str, state: str) -> None:
    conn = http.client.HTTPSConnection("127.0.0.1", session.sim.port, context=session.ctx)
    try:
        conn.request(
            "POST", "/storagesim/hoststate", f"host={host}&state={state}", {"Content-Type": "application/x-www-form-urlencoded"}
        )
        assert conn.getresponse().status == 204
    finally:
        conn.close()


def test_query_vsan_managed_disks_refuses_what_vcenter_refuses(vc):
    """The reference's VsanFault for a host that does not exist or is not connected to vCenter; an
    unknown vsanDiskType InvalidArgument; a reference that is not a HostSystem ManagedObjectNotFound."""
    hosts = {h.name: h for h in vc.view(vim.HostSystem)}
    with pytest.raises(vmodl.fault.InvalidArgument) as err:
        managed_disks(vc, hosts["esx31.lab.local"], vim.vsan.host.QueryVsanDisksSpec(vsanDiskType="disk"))
    assert err.value.invalidProperty == "filterSpec.vsanDiskType"
    with pytest.raises(vim.fault.VsanFault, match="host doesn't exist"):
        managed_disks(vc, vim.HostSystem("host-99999", vc.stub), POOL)
    status, text = post_vsan(
        vc,
        '<QueryVsanManagedDisks xmlns="urn:vsan"><_this type="VimClusterVsanVcDiskManagementSystem">vsan-disk-management-system'
        '</_this><host type="VirtualMachine">vm-1</host></QueryVsanManagedDisks>',
    )
    assert status == 500 and "ManagedObjectNotFound" in text, text
    for state in ("disconnected", "notResponding"):
        set_host_state(vc, "esx32.lab.local", state)
        try:
            with pytest.raises(vim.fault.VsanFault, match=f"not connected to vCenter server: esx32.lab.local is {state}"):
                managed_disks(vc, hosts["esx32.lab.local"], POOL)
        finally:
            set_host_state(vc, "esx32.lab.local", "connected")
    assert len(pool_disks(managed_disks(vc, hosts["esx32.lab.local"], POOL))) == 2  # connected again: answered


def test_a_filter_spec_is_an_unexpected_element_before_vsan_api_8_0_0_1(vsan7):
    """vSAN API 7.4 has QueryVsanManagedDisks without its filterSpec: a client that sends one gets
    the InvalidRequest a vmomi server gives for an element it does not know; pyVmomi under the
    version the server offers (vsan.version19) leaves the filter out and gets every disk."""
    hosts = {h.name: h for h in vsan7.view(vim.HostSystem)}
    with pytest.raises(vmodl.fault.InvalidRequest, match='Unexpected element tag "filterSpec"'):
        managed_disks(vsan7, hosts["esx21.lab.local"], POOL)
    offered = vsan7.vsan_stub(cookie=vsan7.si._stub.cookie)
    offered.version = "vsan.version.version19"  # what exporter.vsan.service.choose_version picks for 7.4
    assert VmomiSupport.versionIdMap[offered.version] == "7.4"
    info = managed_disks(vsan7, hosts["esx21.lab.local"], POOL, stub=offered)
    assert len(info.vSANDiskMapInfo) == 2 and info.storagePools == []  # unfiltered: the disk groups


def test_disk_query_switches_of_the_fixture(faulty):
    """faulty's vsan-esa: QueryDisksForVsan lists no pool disk in use (the feared behaviour), while
    QueryVsanManagedDisks still names them (but for esx31, for which it answers NotSupported), with
    esx32's second disk unmounted and carrying its error."""
    hosts = faulty.retrieve(vim.HostSystem, ["configManager.vsanSystem"])
    refs = {h.name: h for h in faulty.view(vim.HostSystem)}
    for name in ("esx31.lab.local", "esx32.lab.local"):
        results = hosts[name]["configManager.vsanSystem"].QueryDisksForVsan()
        assert [r for r in results if r.state == "inUse" or r.vsanUuid] == []
    with pytest.raises(vmodl.fault.NotSupported):
        managed_disks(faulty, refs["esx31.lab.local"], POOL)
    first, second = pool_disks(managed_disks(faulty, refs["esx32.lab.local"], POOL))
    assert (first.isMounted, first.error) == (True, None)
    assert second.isMounted is False and isinstance(second.error, vim.fault.VsanFault) and second.vsanUuid


def test_network_and_backend_entities_of_both_clusters(vc, fixture):
    """vsan-host-net per node uuid, vsan-pnic-net "<node>|vmnicN", vsan-vnic-net "<node>|<stack>|vmkN",
    vsan-tcpip-stats "<node>|<stack>"; host-domcompmgr and host-domowner per node, cluster-domcompmgr
    and cluster-domowner per cluster uuid."""
    start, end = window()
    hosts = vc.retrieve(vim.HostSystem, ["config.vsanHostConfig"])
    for cluster, uuid in (("vsan-osa", OSA_UUID), ("vsan-esa", ESA_UUID)):
        names = next(c for c in fixture["vsan"]["clusters"] if c["name"] == cluster)["hosts"]
        nodes = {hosts[n]["config.vsanHostConfig"].clusterInfo.nodeUuid: n for n in names}
        fx_hosts = {h["name"]: h for h in fixture["hosts"]}
        for name in names:
            assert [p.device for p in hosts[name]["config.vsanHostConfig"].networkInfo.port] == ["vmk1"]
        refs = {
            kind: sorted(m.entityRefId for m in vc.perf(cluster, spec(f"{kind}:*", start, end)))
            for kind in NET_TYPES + BACKEND_TYPES
        }
        assert refs["vsan-host-net"] == sorted(f"vsan-host-net:{node}" for node in nodes)
        assert refs["host-domcompmgr"] == sorted(f"host-domcompmgr:{node}" for node in nodes)
        assert refs["host-domowner"] == sorted(f"host-domowner:{node}" for node in nodes)
        assert refs["vsan-tcpip-stats"] == sorted(f"vsan-tcpip-stats:{node}|defaultTcpipStack" for node in nodes)
        assert refs["vsan-pnic-net"] == sorted(
            f"vsan-pnic-net:{node}|{nic}" for node, name in nodes.items() for nic in fx_hosts[name]["vsan"]["vmnics"]
        )
        assert refs["vsan-vnic-net"] == sorted(f"vsan-vnic-net:{node}|defaultTcpipStack|vmk1" for node in nodes)
        assert refs["cluster-domcompmgr"] == [f"cluster-domcompmgr:{uuid}"]
        assert refs["cluster-domowner"] == [f"cluster-domowner:{uuid}"]
    node = hosts["esx31.lab.local"]["config.vsanHostConfig"].clusterInfo.nodeUuid
    (nic,) = vc.perf("vsan-esa", spec(f"vsan-pnic-net:{node}|vmnic2", start, end, labels=["rxCrcErr", "pauseCountRaw"]))
    assert series(nic) == {"rxCrcErr": ["0"] * 12, "pauseCountRaw": ["224"] * 12}
    (owner,) = vc.perf("vsan-esa", spec(f"host-domowner:{node}", start, end, labels=["numRunningResyncJobs"]))
    assert series(owner) == {"numRunningResyncJobs": ["2"] * 12}


def test_host_net_lists_the_tcp_rates_but_only_tcpip_stats_returns_them(vc, fixture):
    """On a live vSAN 9 vsan-host-net lists tcpTxRexmitRate and tcpRxErrRate and returns no data for
    them, absent (not blank); vsan-tcpip-stats returns them, and more labels than it lists (32, 16)."""
    start, end = window()
    manager = vim.cluster.VsanPerformanceManager("vsan-performance-manager", vc.stub)
    listed = {t.name: {m.label for g in t.graphs for m in g.metrics} for t in manager.GetSupportedEntityTypes()}
    tcp = ["tcpTxRexmitRate", "tcpRxErrRate"]
    assert set(tcp) <= listed["vsan-host-net"] and set(tcp) <= listed["vsan-tcpip-stats"]
    for cluster in ("vsan-osa", "vsan-esa"):
        host_net = vc.perf(cluster, spec("vsan-host-net:*", start, end, labels=["rxThroughput", *tcp]))
        assert host_net and all([v.metricId.label for v in m.value] == ["rxThroughput"] for m in host_net)
        everything = vc.perf(cluster, spec("vsan-host-net:*", start, end))
        assert not {v.metricId.label for m in everything for v in m.value} & set(tcp)
        tcpip = vc.perf(cluster, spec("vsan-tcpip-stats:*", start, end, labels=tcp))
        assert tcpip and all([v.metricId.label for v in m.value] == tcp for m in tcpip)
    returned = {v.metricId.label for m in vc.perf("vsan-osa", spec("vsan-tcpip-stats:*", start, end)) for v in m.value}
    assert len(listed["vsan-tcpip-stats"]) == 16 and len(returned) == 32 and listed["vsan-tcpip-stats"] < returned
    assert listed["vsan-tcpip-stats"] == set(fixture["vsan"]["advertised"]["vsan-tcpip-stats"])


def test_supported_types_list_fewer_labels_than_are_returned(vc, fixture):
    """The real service understates (vsan-esa-disk-layer lists 6 labels and returns 38; the fixture
    serves 32 of those 38): a type the fixture's "advertised" names lists exactly those; the others
    list every label they serve."""
    start, end = window()
    manager = vim.cluster.VsanPerformanceManager("vsan-performance-manager", vc.stub)
    listed = {t.name: {m.label for g in t.graphs for m in g.metrics} for t in manager.GetSupportedEntityTypes()}
    assert set(listed) >= set(TYPES + ESA_TYPES + NET_TYPES + BACKEND_TYPES)
    assert listed["vsan-esa-disk-layer"] == set(fixture["vsan"]["advertised"]["vsan-esa-disk-layer"])
    returned = {v.metricId.label for m in vc.perf("vsan-esa", spec("vsan-esa-disk-layer:*", start, end)) for v in m.value}
    assert len(listed["vsan-esa-disk-layer"]) == 6 and len(returned) == 32 and listed["vsan-esa-disk-layer"] < returned
    assert "avgLatWritePerf" in returned - listed["vsan-esa-disk-layer"]  # the performance tier: returned, unlisted
    host = {v.metricId.label for m in vc.perf("vsan-osa", spec("host-domclient:*", start, end)) for v in m.value}
    assert listed["host-domclient"] == host


def test_no_sample_after_now_or_after_the_end_and_none_before_the_start(faulty):
    before = dt.datetime.now(UTC)
    (metric,) = faulty.perf(
        "vsan-osa", spec("cluster-domclient:*", before - dt.timedelta(seconds=30), before + dt.timedelta(minutes=10))
    )
    after = dt.datetime.now(UTC)
    times = stamps(metric)
    assert times and times[-1] <= after  # an interval's sample is served once it has ended
    assert times[-1] > before - dt.timedelta(seconds=4)  # and the newest ended one is served
    assert times[0] >= before - dt.timedelta(seconds=30)
    assert all(int(t.timestamp()) % 2 == 0 for t in times)
    assert all(b - a == dt.timedelta(seconds=2) for a, b in zip(times, times[1:]))
    assert {v.metricId.metricsCollectInterval for v in metric.value} == {2}
    end = before - dt.timedelta(seconds=11)
    (past,) = faulty.perf("vsan-osa", spec("cluster-domclient:*", end - dt.timedelta(seconds=20), end))
    assert stamps(past) == expected_stamps(end - dt.timedelta(seconds=20), end, sample=2)
    assert stamps(past)[-1] <= end
    (future,) = faulty.perf(
        "vsan-osa", spec("cluster-domclient:*", after + dt.timedelta(minutes=5), after + dt.timedelta(minutes=10))
    )
    assert stamps(future) == [] and all(v.values in (None, "") for v in future.value)
    on_sample = dt.datetime.fromtimestamp(int(end.timestamp()) // 2 * 2, UTC)  # a sample's own time
    (since,) = faulty.perf("vsan-osa", spec("cluster-domclient:*", on_sample, on_sample + dt.timedelta(seconds=4)))
    assert stamps(since) == [on_sample + dt.timedelta(seconds=2), on_sample + dt.timedelta(seconds=4)]  # not the one at startTime


# --- the reference's rules on querySpecs ---


def refused(session, cluster: str, *specs) -> str:
    """The invalidProperty of the InvalidArgument the call is refused with (fails if it answers)."""
    with pytest.raises(vmodl.fault.InvalidArgument) as error:
        session.perf(cluster, *specs)
    assert error.value.msg.startswith("A specified parameter was not correct: ")
    return error.value.invalidProperty or ""


def test_a_wildcard_or_multi_entity_spec_is_alone_in_its_call(vc, fixture):
    start, end = window()
    uuids = entity_uuids(vc, fixture)
    host = next(iter(uuids["host-domclient"].values()))
    vms = ",".join(uuids["virtual-machine"].values())
    # six wildcards in one call: what the exporter used to send, refused
    assert refused(vc, "vsan-osa", *(spec(f"{t}:*", start, end) for t in TYPES)) == ""
    assert refused(vc, "vsan-osa", spec("host-domclient:*", start, end), spec(f"host-domclient:{host}", start, end)) == ""
    assert refused(vc, "vsan-osa", spec(f"host-domclient:{host}", start, end), spec("cluster-domclient:*", start, end)) == ""
    assert refused(vc, "vsan-osa", spec(f"virtual-machine:{vms}", start, end), spec(f"host-domclient:{host}", start, end)) == ""
    assert refused(vc, "vsan-osa", spec(f"virtual-machine:{vms}", start, end), spec(f"virtual-machine:{vms}", start, end)) == ""
    # each alone answers
    assert len(vc.perf("vsan-osa", spec("host-domclient:*", start, end))) == 3
    multi = vc.perf("vsan-osa", spec(f"virtual-machine:{vms}", start, end))
    assert sorted(m.entityRefId for m in multi) == sorted(f"virtual-machine:{u}" for u in uuids["virtual-machine"].values())
    with open(vc.sim.log.name) as log:
        text = log.read()
    assert "vsan: VsanPerfQueryPerf refused (InvalidArgument ): a wildcard spec with 5 other specs in one call" in text
    assert "vsan: VsanPerfQueryPerf specs 1 spec: virtual-machine:<6 uuids>" in text


def test_start_and_end_times_are_required(vc):
    start, end = window()
    assert refused(vc, "vsan-osa", spec("cluster-domclient:*")) == "startTime"
    assert refused(vc, "vsan-osa", spec("cluster-domclient:*", end=end)) == "startTime"
    assert refused(vc, "vsan-osa", spec("cluster-domclient:*", start=start)) == "endTime"
    uuid = OSA_UUID
    assert (
        refused(vc, "vsan-osa", spec(f"cluster-domclient:{uuid}", start, end), spec(f"cluster-domclient:{uuid}", start))
        == "endTime"
    )
    # no spec at all (pyVmomi will not send it: written by hand)
    cluster = vc.clusters["vsan-osa"]._moId
    body = (
        '<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body>'
        '<VsanPerfQueryPerf xmlns="urn:vsan"><_this type="VsanPerformanceManager">vsan-performance-manager</_this>'
        f'<cluster type="ClusterComputeResource">{cluster}</cluster></VsanPerfQueryPerf></soapenv:Body></soapenv:Envelope>'
    )
    conn = http.client.HTTPSConnection("127.0.0.1", vc.sim.port, context=vc.ctx)
    conn.request("POST", "/vsanHealth", body, {"Cookie": vc.si._stub.cookie, "Content-Type": "text/xml"})
    answer = conn.getresponse()
    text = answer.read().decode()
    conn.close()
    assert answer.status == 500 and "InvalidArgument" in text and "querySpecs" in text, text


def test_at_most_100_plain_specs_a_call(vc, fixture):
    start, end = window()
    uuids = entity_uuids(vc, fixture)
    every = [spec(f"{t}:{u}", start, end) for t in TYPES[:-1] for u in uuids[t].values()]
    every += [spec(f"virtual-machine:{u}", start, end) for u in uuids["virtual-machine"].values()]
    assert len(every) == 34
    answer = vc.perf("vsan-osa", *every)  # several types and entities in one call: allowed
    assert len(answer) == 34
    unknown = [spec(f"virtual-machine:5000{n:04d}-0000-0000-0000-000000000000", start, end) for n in range(66)]
    assert len(vc.perf("vsan-osa", *every, *unknown)) == 34  # 100 specs: allowed; unknown uuids answer nothing
    assert refused(vc, "vsan-osa", *every, *unknown, spec(f"cluster-domclient:{OSA_UUID}", start, end)) == ""  # 101


def test_a_multi_entity_spec_holds_at_most_400_uuids(vc, fixture):
    start, end = window()
    vms = list(entity_uuids(vc, fixture)["virtual-machine"].values())
    fillers = [f"5000{n:04d}-0000-0000-0000-000000000000" for n in range(400)]
    answer = vc.perf("vsan-osa", spec("virtual-machine:" + ",".join(vms + fillers[: 400 - len(vms)]), start, end))
    assert sorted(m.entityRefId for m in answer) == sorted(f"virtual-machine:{u}" for u in vms)
    assert (
        refused(vc, "vsan-osa", spec("virtual-machine:" + ",".join(vms + fillers[: 401 - len(vms)]), start, end)) == "entityRefId"
    )
    assert refused(vc, "vsan-osa", spec(f"virtual-machine:{vms[0]},,{vms[1]}", start, end)) == "entityRefId"


def test_before_8_0u2_there_is_no_multi_entity_spec(older, fixture):
    """vSAN API 8.0.0.2 (8.0U1): vsanServiceVersions.xml says so, and "type:a,b" is one uuid that
    names nothing; plain specs still answer."""
    import urllib.request

    with urllib.request.urlopen(f"https://127.0.0.1:{older.sim.port}/sdk/vsanServiceVersions.xml", context=older.ctx) as answer:
        versions = answer.read().decode()
    assert "<version>8.0.0.2</version>" in versions and "8.0.0.3" not in versions and "8.0.0.4" not in versions
    start, end = window()
    vms = list(entity_uuids(older, fixture)["virtual-machine"].values())
    assert list(older.perf("vsan-osa", spec("virtual-machine:" + ",".join(vms), start, end))) == []
    assert len(older.perf("vsan-osa", *(spec(f"virtual-machine:{u}", start, end) for u in vms))) == len(vms)


def test_not_the_stats_master_answers_not_supported(older):
    start, end = window()
    with pytest.raises(vmodl.fault.NotSupported):
        older.perf("vsan-esa", spec("host-domclient:*", start, end))
    assert older.perf("vsan-osa", spec("host-domclient:*", start, end))  # the other cluster answers


def test_a_type_can_refuse_the_wildcard_and_answer_by_uuid(faulty, fixture):
    """vsan-osa of `faulty`: virtual-machine and capacity-disk refuse "type:*" (InvalidArgument
    entityRefId, as some types do on a real vSAN) and answer by uuid; disk-group answers
    NotSupported whatever it is asked; the other types answer."""
    start, end = window()
    uuids = entity_uuids(faulty, fixture)
    for kind in ("virtual-machine", "capacity-disk"):
        assert refused(faulty, "vsan-osa", spec(f"{kind}:*", start, end)) == "entityRefId"
        multi = faulty.perf("vsan-osa", spec(f"{kind}:" + ",".join(uuids[kind].values()), start, end))
        assert len(multi) == len(uuids[kind])
        plain = faulty.perf("vsan-osa", *(spec(f"{kind}:{u}", start, end) for u in uuids[kind].values()))
        assert len(plain) == len(uuids[kind])
    with pytest.raises(vmodl.fault.NotSupported):
        faulty.perf("vsan-osa", spec("disk-group:*", start, end))
    with pytest.raises(vmodl.fault.NotSupported):
        faulty.perf("vsan-osa", *(spec(f"disk-group:{u}", start, end) for u in uuids["disk-group"].values()))
    for kind in ("cluster-domclient", "host-domclient", "cache-disk"):
        assert len(faulty.perf("vsan-osa", spec(f"{kind}:*", start, end))) == len(uuids[kind])


# --- health, space, resync ---


def test_health_summary_space_and_resync(vc):
    summary = vc.health("vsan-osa", fetchFromCache=True)
    assert summary.overallHealth == "red"
    assert summary.overallHealthDescription == "vSAN object health: 1 inaccessible object"
    assert [(o.health, o.numObjects) for o in summary.objectHealth.objectHealthDetail] == [
        ("healthy", 412),
        ("inaccessible", 1),
        ("reducedavailabilitywithnorebuild", 3),
        ("reducedavailabilitywithactiverebuild", 2),
        ("datamove", 1),
        ("nonavailabilityrelatedincompliance", 0),
    ]
    only = vc.health("vsan-esa", fields=["overallHealth"], fetchFromCache=True)
    assert only.overallHealth == "green" and only.objectHealth is None
    space = vc.space("vsan-osa")
    assert (space.totalCapacityB, space.freeCapacityB) == (23040000000000, 3456000000000)
    osa = vc.resync("vsan-osa")
    assert (osa.totalObjectsToSync, osa.totalBytesToSync, osa.totalRecoveryETA) == (2, 53687091200, 1260)
    esa = vc.resync("vsan-esa")  # nothing to resync: the optional numbers arrive unset
    assert (esa.totalObjectsToSync or 0, esa.totalBytesToSync or 0) == (0, 0)


# --- faults and authentication ---


def test_performance_service_off_answers_not_found_and_hides_nothing_else(faulty):
    start, end = window()
    with pytest.raises(vim.fault.NotFound) as off:
        faulty.perf("vsan-esa", spec("cluster-domclient:*", start, end))
    assert off.value.msg == ""  # govmomi reads it as "ServerFaultCode: NotFound", like a real vCenter's
    assert faulty.health("vsan-esa").overallHealth == "green"
    assert faulty.space("vsan-esa").totalCapacityB == 15360000000000
    # vsan-osa: its health, space and resync fault, its performance service still answers
    assert faulty.perf("vsan-osa", spec("host-domclient:*", start, end))
    with pytest.raises(vim.fault.VsanFault):
        faulty.health("vsan-osa")
    with pytest.raises(vmodl.fault.NotSupported):
        faulty.space("vsan-osa")
    with pytest.raises(vim.fault.Timedout):
        faulty.resync("vsan-osa")
    with open(faulty.sim.log.name) as log:  # each vSAN call is logged with its cluster
        assert "vsan: VsanQuerySpaceUsage cluster vsan-osa" in log.read()


def test_an_unknown_entity_type_is_an_invalid_argument_and_a_cluster_without_vsan_not_found(vc):
    for bad in ("disk-foo:*", "host-domclient"):
        with pytest.raises(vmodl.fault.InvalidArgument) as error:
            vc.perf("vsan-osa", spec(bad))
        assert error.value.invalidProperty == "entityRefId"
    with pytest.raises(vim.fault.NotFound):
        vc.perf("DC0_C0", spec("cluster-domclient:*", *window()))
    with pytest.raises(vim.fault.NotFound):
        vc.space("DC0_C0")


def test_without_the_vcenter_session_a_call_is_not_authenticated(vc):
    for cookie in (None, 'vmware_soap_session="00000000-0000-0000-0000-000000000000"'):
        space = vim.cluster.VsanSpaceReportSystem("vsan-cluster-space-report-system", vc.vsan_stub(cookie))
        with pytest.raises(vim.fault.NotAuthenticated):
            space.QuerySpaceUsage(cluster=vc.clusters["vsan-osa"])
    assert vc.space("vsan-osa").totalCapacityB == 23040000000000  # the session's cookie does
    other = Session(vc.sim)  # a second vCenter session, then its logout: its cookie stops working here too
    assert other.space("vsan-osa").totalCapacityB == 23040000000000
    other.close()
    with pytest.raises(vim.fault.NotAuthenticated):
        other.space("vsan-osa")


# --- bad fixtures and the generated inventory ---


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda fx: fx["hosts"][0]["vsan"]["disk_groups"][0].update(cache="naa.nothere"),
            "naa.nothere is not one of the host's luns",
        ),
        (lambda fx: fx["vsan"]["clusters"][0].update(helth="red"), 'unknown field "helth"'),
        (
            lambda fx: fx["vsan"]["clusters"][0]["perf"]["vsan-tcpip-stats"].update({"esx21.lab.local|vmotion": {}}),
            "vsan-tcpip-stats.esx21.lab.local|vmotion: not HOST|defaultTcpipStack",
        ),
        (
            lambda fx: fx["vsan"]["clusters"][0]["perf"]["host-domclient"].update({"esx31.lab.local": {}}),
            "esx31.lab.local: not a host of the cluster",
        ),
        (
            lambda fx: fx["vsan"]["clusters"][0]["perf"]["cluster-domclient"].update(oio="8"),
            "a value is a number, null or a list",
        ),
        (lambda fx: fx["vsan"]["clusters"][1].update(faults={"perf": "Boom"}), '"Boom" is not one of'),
        (lambda fx: fx["hosts"][5].update(vsan={}), "hosts[esx41.lab.local].vsan: the host is in no cluster"),
        (lambda fx: fx["vsan"].update(api_version="8.0.5"), 'vsan.api_version: "8.0.5" is not one of 8.0.0.4, 8.0.0.3'),
        (
            lambda fx: fx["vsan"]["clusters"][0].update(wildcard_refused=["vscsi"]),
            "vsan.clusters[vsan-osa].wildcard_refused: vscsi is not an entity type this simulator serves",
        ),
        (
            lambda fx: fx["vsan"]["clusters"][0].update(perf_faults={"disk-group": "Boom"}),
            'vsan.clusters[vsan-osa].perf_faults.disk-group: "Boom" is not one of',
        ),
        (
            lambda fx: fx["vsan"]["clusters"][0].update(perf_faults={"vscsi": "NotFound"}),
            "vsan.clusters[vsan-osa].perf_faults.vscsi: not an entity type this simulator serves",
        ),
        (
            lambda fx: fx["vsan"]["clusters"][1].update(managed_disks_faults={"esx21.lab.local": "NotFound"}),
            "vsan.clusters[vsan-esa].managed_disks_faults.esx21.lab.local: not a host of the cluster",
        ),
        (
            lambda fx: fx["vsan"]["clusters"][1].update(managed_disks_faults={"esx31.lab.local": "Boom"}),
            'vsan.clusters[vsan-esa].managed_disks_faults.esx31.lab.local: "Boom" is not one of',
        ),
        (
            lambda fx: fx["hosts"][0]["vsan"]["disk_groups"][0]["capacity"][0].update(unmounted=True),
            "unmounted and fault are for storage-pool disks",
        ),
    ],
)
def test_a_bad_vsan_fixture_is_one_line_naming_the_field(tmp_path, fixture, change, message):
    data = json.loads(json.dumps(fixture))
    change(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    run = subprocess.run([str(storagesim_binary()), "-fixture", str(path)], capture_output=True, text=True, timeout=60)
    assert run.returncode != 0
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and str(path) in lines[0], run.stderr


def test_generated_inventory_splits_hosts_into_vsan_clusters(tmp_path):
    sim = StorageSim(tmp_path, "-hosts", "8", "-luns", "1", "-vms", "2", "-vsan-clusters", "2", fixture=None)
    try:
        session = Session(sim)
        clusters = session.retrieve(vim.ClusterComputeResource, ["configurationEx", "host"])
        assert sorted(clusters) == ["vsan000", "vsan001"]
        for props in clusters.values():
            assert props["configurationEx"].vsanConfigInfo.enabled is True and len(props["host"]) == 4
        hosts = session.retrieve(
            vim.HostSystem, ["config.vsanHostConfig.storageInfo.diskMapping", "config.storageDevice.scsiLun"]
        )
        for props in hosts.values():
            mapping = props["config.vsanHostConfig.storageInfo.diskMapping"]
            assert [len(m.nonSsd) for m in mapping] == [3, 3]
            local = {lun.canonicalName for lun in props["config.storageDevice.scsiLun"] if lun.localDisk}
            assert {m.ssd.canonicalName for m in mapping} | {d.canonicalName for m in mapping for d in m.nonSsd} == local
        start, end = window()
        first = [
            *session.perf("vsan000", spec("virtual-machine:*", start, end)),
            *session.perf("vsan000", spec("disk-group:*", start, end)),
        ]
        again = [
            *session.perf("vsan000", spec("virtual-machine:*", start, end)),
            *session.perf("vsan000", spec("disk-group:*", start, end)),
        ]
        assert [(m.entityRefId, m.value[0].values) for m in first] == [(m.entityRefId, m.value[0].values) for m in again]
        vms = [m for m in first if m.entityRefId.startswith("virtual-machine:")]
        assert len(vms) == 8 and len([m for m in first if m.entityRefId.startswith("disk-group:")]) == 8
        latency = [int(c) for m in vms for c in series(m)["latencyRead"]]  # µs, in the generator's range
        assert latency and all(300 <= v <= 5000 for v in latency)
        assert len(set(latency)) > 1
        session.close()
    finally:
        sim.stop()
