"""The inventory follows vCenter's changes (#30): each change, made through the API behind the
exporter's back, reaches `serve`'s /metrics within one collection interval with the default
settings, its stale series gone with it, and without a second walk of the inventory (the safety
net's is an hour away): a VM created, destroyed, powered on or off, moved or given a disk; a host
added, disconnected, reconnected or removed; an NFS datastore mounted and unmounted; a path
disabled and enabled. Against the project's storage simulator (simulators/storagesim), whose property
collector reports these changes as vCenter does (simulators/storagesim/changes.go).

The fixture's VMs: db01 and web01 on esx01, app01 and old01 (powered off) on esx02, batch01 on
esx03. One exporter follows them through the whole module, in order.
"""

from __future__ import annotations

import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from simulators.storagesim.sims import PASSWORD, USER, StorageSim
from tests.support.servers import Exporter
from tests.support.vsphere_api import connect, end_other_sessions, named, session, wait

pytestmark = pytest.mark.integration

INTERVAL = 20.0  # --vsphere.interval's default: each change is in /metrics within one of these
SLACK = 5.0  # the collection's own time and the test's polling on a shared 2-core machine


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    sim = StorageSim(tmp_path_factory.mktemp("sim"))
    yield sim
    sim.stop()


@pytest.fixture(scope="module")
def api(sim):
    """A pyVmomi session of the test's own, to change the inventory behind the exporter's back."""
    with session(sim) as content:
        yield content


@pytest.fixture(scope="module")
def exporter(sim, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("exporter")
    secret = tmp / "password"
    secret.write_text(PASSWORD + "\n")
    log = tmp / "exporter.log"
    args = ["--vsphere", sim.url, "--vsphere.user", USER, "--vsphere.password-file", str(secret)]
    exporter = Exporter(*args, "--vsphere.ca-file", str(sim.cert), log_path=log)  # every other setting its default
    exporter.log = log
    try:
        scrape = Scrape(exporter)
        scrape.until(lambda s: s.value("esxi_vm_reads_total", host="esx03.lab.local", vm="batch01"), "the first collection")
        yield scrape
    finally:
        exporter.stop()
    assert PASSWORD not in log.read_text()


class Scrape:
    """/metrics, parsed, and waited on."""

    def __init__(self, exporter):
        self.exporter = exporter
        self.samples: dict = {}

    def get(self) -> Scrape:
        self.samples = {
            (s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(self.exporter.metrics())
            for s in family.samples
        }
        return self

    def value(self, name: str, **labels) -> float | None:
        return self.samples.get((name, frozenset(labels.items())))

    def series(self, prefix: str, **labels) -> list:
        """(name, labels) of every series whose name starts with prefix and has these labels."""
        want = set(labels.items())
        return [(name, dict(pairs)) for name, pairs in self.samples if name.startswith(prefix) and want <= pairs]

    def until(self, check, what: str, within: float = INTERVAL + SLACK) -> float:
        """Scrape until check(self) is true; returns the seconds it took (fails after `within`)."""
        start = time.monotonic()
        while True:
            self.get()
            if check(self):
                return time.monotonic() - start
            if time.monotonic() - start > within:
                log = self.exporter.log.read_text()[-3000:]
                pytest.fail(f"{what}: not in /metrics within {within:.0f}s\n--- exporter log ---\n{log}")
            time.sleep(0.25)


def vm_named(content, name):
    from pyVmomi import vim

    return named(content, vim.VirtualMachine, name)


def host_named(content, name):
    from pyVmomi import vim

    return named(content, vim.HostSystem, name)


def vm_series(scrape: Scrape, host: str, vm: str) -> list:
    """Every series of one VM on one host: its disks' and its own families, and its disks' info."""
    return scrape.series("esxi_vm", host=host, vm=vm)


# A host's health series (esxcli's, and the source's samples counter and newest timestamp per host)
# outlive it today: issue #27 removes them when the host leaves; here, every other series.
HEALTH = ("esxi_esxcli_", "esxi_vsphere_samples_total", "esxi_vsphere_last_sample_timestamp_seconds")


# What vCenter says of a host it still lists, whether or not it can be read (issue 36).
STATE = ("esxi_host_connection_state", "esxi_host_maintenance_mode")


def host_series(scrape: Scrape, host: str, but: tuple[str, ...] = ()) -> list:
    """Every series of a host: its LUNs, adapters, paths, datastores, CPUs, VMs and configuration,
    and its state (but: families left out)."""
    return [(name, labels) for name, labels in scrape.series("esxi_", host=host) if not name.startswith(HEALTH + but)]


def walked_once(scrape: Scrape) -> None:
    """No walk of the inventory but the first: every change came through the update stream."""
    walks = {labels["reason"]: v for (name, labels), v in _labelled(scrape, "esxi_vsphere_walks_total")}
    assert walks == {"start": 1.0}, walks
    assert not scrape.value("esxi_vsphere_errors_total", target="127.0.0.1", phase="updates")


def changes(scrape: Scrape) -> dict:
    return {labels["kind"]: v for (name, labels), v in _labelled(scrape, "esxi_vsphere_inventory_changes_total")}


def _labelled(scrape: Scrape, name: str):
    return [((n, dict(pairs)), v) for (n, pairs), v in scrape.samples.items() if n == name]


# --- VMs -----------------------------------------------------------------------------------------
def test_vms_powered_off_and_on_moved_and_destroyed(exporter, api):
    """Four VM changes at once: web01 powered off, old01 powered on, app01 moved (vMotion) from
    esx02 to esx03, batch01 destroyed. Each VM's series leave the host it left within one interval;
    the VMs that start running on a host there have their disks' backing and their samples."""
    from pyVmomi import vim

    assert exporter.get().value("esxi_vm_reads_total", host="esx02.lab.local", vm="app01")
    assert vm_series(exporter, "esx01.lab.local", "web01") and not vm_series(exporter, "esx02.lab.local", "old01")
    esx03 = host_named(api, "esx03.lab.local")
    wait(vm_named(api, "web01").PowerOffVM_Task())
    wait(vm_named(api, "old01").PowerOnVM_Task())
    app01 = vm_named(api, "app01")
    wait(app01.RelocateVM_Task(spec=vim.vm.RelocateSpec(host=esx03)))
    batch01 = vm_named(api, "batch01")
    wait(batch01.PowerOffVM_Task())
    wait(batch01.Destroy_Task())

    took = exporter.until(
        lambda s: (
            not vm_series(s, "esx01.lab.local", "web01")
            and not vm_series(s, "esx02.lab.local", "app01")
            and not vm_series(s, "esx03.lab.local", "batch01")
            and s.value("esxi_vm_reads_total", host="esx02.lab.local", vm="old01")
            and s.value("esxi_vm_reads_total", host="esx03.lab.local", vm="app01")
        ),
        "web01 off, old01 on, app01 on esx03, batch01 gone",
    )
    s = exporter
    # app01's disks joined again against esx03's mounts: the same datastores, esx03's view of them
    info = {d["disk"]: d for _, d in s.series("esxi_vm_disk_info", host="esx03.lab.local", vm="app01")}
    assert set(info) == {"scsi0:0", "sata0:0"}
    assert (info["scsi0:0"]["datastore"], info["sata0:0"]["datastore_type"]) == ("ds-shared-01", "nfs")
    assert s.value("esxi_vm_disk_outstanding_reads", host="esx02.lab.local", vm="old01", disk="scsi0:0") is not None
    kinds = changes(s)
    assert kinds["vm_removed"] >= 2 and kinds["vm_moved"] == 1 and kinds["vm_added"] >= 1, kinds
    walked_once(s)
    print(f"VM changes in /metrics after {took:.1f}s")


def test_a_vm_powered_on_again_comes_back(exporter, api):
    """web01, powered off above, powered on again: back on esx01 with its disk and samples."""
    wait(vm_named(api, "web01").PowerOnVM_Task())
    exporter.until(lambda s: s.value("esxi_vm_reads_total", host="esx01.lab.local", vm="web01"), "web01 on again")
    info = exporter.series("esxi_vm_disk_info", host="esx01.lab.local", vm="web01")
    assert [(d["disk"], d["datastore"]) for _, d in info] == [("scsi0:0", "ds-shared-02")]
    walked_once(exporter)


def test_a_vm_created_and_given_a_disk(exporter, api):
    """lab01 is created on esx03 with one disk and powered on: its disk and samples come; a second
    disk added to it while it runs comes too."""
    from pyVmomi import vim

    datacenter = api.rootFolder.childEntity[0]
    host = host_named(api, "esx03.lab.local")

    def disk(unit, key, controller=-100):
        backing = vim.vm.device.VirtualDisk.FlatVer2BackingInfo(
            fileName=f"[LocalDS_0] lab01/lab01_{unit}.vmdk", diskMode="persistent", thinProvisioned=True
        )
        device = vim.vm.device.VirtualDisk(
            key=key, controllerKey=controller, unitNumber=unit, capacityInKB=1 << 20, backing=backing
        )
        return vim.vm.device.VirtualDeviceSpec(operation="add", fileOperation="create", device=device)

    controller = vim.vm.device.VirtualDeviceSpec(
        operation="add", device=vim.vm.device.ParaVirtualSCSIController(key=-100, busNumber=0, sharedBus="noSharing")
    )
    spec = vim.vm.ConfigSpec(
        name="lab01",
        guestId="otherGuest",
        files=vim.vm.FileInfo(vmPathName="[LocalDS_0]"),
        deviceChange=[controller, disk(0, -1)],
    )
    wait(datacenter.vmFolder.CreateVM_Task(config=spec, pool=host.parent.resourcePool, host=host))
    lab01 = vm_named(api, "lab01")
    wait(lab01.PowerOnVM_Task())
    exporter.until(
        lambda s: s.value("esxi_vm_disk_reads_total", host="esx03.lab.local", vm="lab01", disk="scsi0:0"), "lab01 created"
    )
    info = exporter.series("esxi_vm_disk_info", host="esx03.lab.local", vm="lab01")
    assert [(d["disk"], d["controller"], d["provisioning"]) for _, d in info] == [("scsi0:0", "pvscsi", "thin")]

    pvscsi = next(d.key for d in lab01.config.hardware.device if isinstance(d, vim.vm.device.ParaVirtualSCSIController))
    wait(lab01.ReconfigVM_Task(spec=vim.vm.ConfigSpec(deviceChange=[disk(1, -2, pvscsi)])))
    exporter.until(
        lambda s: s.value("esxi_vm_disk_reads_total", host="esx03.lab.local", vm="lab01", disk="scsi0:1"), "lab01's new disk"
    )
    assert changes(exporter)["vm_disks_changed"] == 1
    walked_once(exporter)


# --- hosts ---------------------------------------------------------------------------------------
def test_a_host_added_disconnected_reconnected_and_removed(exporter, api):
    """esx04 joins the cluster (a copy of esx03's configuration): its LUNs, paths and samples
    come; disconnected, every series of it goes but its state; reconnected, they come back;
    removed, they go, its state too."""
    from pyVmomi import vim

    cluster = host_named(api, "esx03.lab.local").parent
    connect = vim.host.ConnectSpec(
        hostName="esx04.lab.local", userName="esx03.lab.local", force=True
    )  # the simulator copies esx03
    wait(cluster.AddHost_Task(spec=connect, asConnected=True))
    host = "esx04.lab.local"
    exporter.until(
        lambda s: s.value("esxi_lun_reads_total", host=host, device="naa.624a9370b9d3a7c25e7a40e200011b3c"), "esx04 added"
    )
    assert exporter.series("esxi_path_state", host=host) and exporter.value(
        "esxi_host_info", host=host, datacenter="DC0", cluster="DC0_C0"
    )

    esx04 = host_named(api, host)
    wait(esx04.DisconnectHost_Task())
    exporter.until(
        lambda s: not host_series(s, host, but=STATE) and s.value("esxi_host_connection_state", host=host, state="disconnected"),
        "esx04 disconnected: every series of it gone but its state",
    )
    wait(esx04.ReconnectHost_Task())
    exporter.until(
        lambda s: s.value("esxi_lun_reads_total", host=host, device="naa.624a9370b9d3a7c25e7a40e200011b3c"), "esx04 back"
    )
    wait(esx04.Destroy_Task())
    exporter.until(lambda s: not host_series(s, host), "esx04 removed: every series of it gone, its state too")
    kinds = changes(exporter)
    assert (kinds["host_added"], kinds["host_removed"]) == (2, 2), kinds  # added and reconnected; disconnected and removed
    assert exporter.value("esxi_vsphere_objects", target="127.0.0.1", kind="host") == 3
    walked_once(exporter)


# --- storage -------------------------------------------------------------------------------------
def test_an_nfs_datastore_mounted_and_unmounted(exporter, api):
    """A new NFS datastore on esx01: its configuration (over esx01's default vmknic) and its
    samples come; unmounted, they go, samples included."""
    from pyVmomi import vim

    esx01 = host_named(api, "esx01.lab.local")
    system = esx01.configManager.datastoreSystem
    spec = vim.host.NasVolume.Specification(
        remoteHost="192.0.2.50", remotePath="/export/new", localPath="nfs-new", accessMode="readWrite"
    )
    datastore = system.CreateNasDatastore(spec=spec)
    where = {"host": "esx01.lab.local", "datastore": "nfs-new"}
    exporter.until(lambda s: s.value("esxi_datastore_reads_total", **where), "nfs-new mounted")
    (_, info), *_ = exporter.series("esxi_datastore_info", **where)
    assert (info["type"], info["remote_host"]) == ("nfs", "192.0.2.50")
    assert exporter.value("esxi_datastore_hosts", datastore="nfs-new") == 1

    system.RemoveDatastore(datastore=datastore)
    exporter.until(lambda s: not s.series("esxi_datastore", **where), "nfs-new unmounted")
    walked_once(exporter)


def test_a_path_disabled_and_enabled(exporter, api):
    """A path of esx01 disabled through its storage system: its state, and its LUN's active path
    count, change within one interval; enabled again, they come back."""
    host = "esx01.lab.local"
    exporter.get()
    (_, path), *_ = [
        (n, labels)
        for n, labels in exporter.series("esxi_path_state", host=host, state="active")
        if exporter.value(n, **labels) == 1
    ]
    device, name = path["device"], path["path"]
    active = exporter.value("esxi_lun_active_paths", host=host, device=device)
    storage = host_named(api, host).configManager.storageSystem
    storage.DisableMultipathPath(pathName=name)
    exporter.until(
        lambda s: (
            s.value("esxi_path_state", **{**path, "state": "disabled"}) == 1
            and s.value("esxi_lun_active_paths", host=host, device=device) == active - 1
        ),
        f"{name} disabled",
    )
    assert exporter.value("esxi_path_state", **path) == 0
    storage.EnableMultipathPath(pathName=name)
    exporter.until(lambda s: s.value("esxi_path_state", **path) == 1, f"{name} enabled")
    assert changes(exporter)["host_storage_changed"] >= 2
    walked_once(exporter)


# --- errors, stop, and without updates ------------------------------------------------------------
def test_a_session_lost_under_the_stream_is_walked_again_then_followed(exporter, api, sim):
    """vCenter ends the exporter's session (an administrator, an expiry): the update stream fails,
    the inventory is walked again (once, counted) on a new session, and changes are followed again."""
    assert end_other_sessions(api)
    exporter.until(
        lambda s: s.value("esxi_vsphere_walks_total", target="127.0.0.1", reason="error") == 1,
        "a walk after the stream failed",
        within=2 * INTERVAL,
    )
    assert exporter.value("esxi_vsphere_errors_total", target="127.0.0.1", phase="updates") == 1
    before = changes(exporter).get("vm_removed", 0)
    wait(vm_named(api, "db01").PowerOffVM_Task())
    exporter.until(lambda s: not vm_series(s, "esx01.lab.local", "db01"), "db01 off, after the new walk")
    assert changes(exporter)["vm_removed"] == before + 1  # through the stream, not a walk
    assert exporter.value("esxi_vsphere_walks_total", target="127.0.0.1", reason="error") == 1
    assert exporter.value("esxi_vsphere_up", target="127.0.0.1") == 1


def _target(sim, tmp_path, **settings):
    from exporter.vsphere import TargetConfig, VsphereTarget

    secret = tmp_path / "password"
    secret.write_text(PASSWORD + "\n")
    config = TargetConfig(name="vc", url=sim.url, user=USER, password_file=str(secret), ca_file=str(sim.cert), **settings)
    return VsphereTarget(config)


def test_a_stop_ends_a_waiting_stream_at_once(tmp_path):
    """The update stream blocks on the server up to 20 s at the default timeout; a stop ends it and
    every thread of the target at once."""
    import threading

    sim = StorageSim(tmp_path / "sim")
    target = _target(sim, tmp_path, vms=True)
    stop = threading.Event()
    try:
        threads = target.start(stop)
        assert target.collected.wait(60)
        deadline = time.monotonic() + 30
        while target.follower is None or target.follower.vms is None or not target.follower.mirror.following:
            assert time.monotonic() < deadline, "never following"
            time.sleep(0.05)
        time.sleep(1.0)  # both streams waiting on the server now
        assert target.follower.max_wait == 20
        stopped = time.monotonic()
        stop.set()
        for thread in threads:
            thread.join(10)
        took = time.monotonic() - stopped
        assert not [t.name for t in threads if t.is_alive()]
        assert not [t.name for t in threading.enumerate() if t.name.startswith("vsphere-vms:")]
        assert took < 3.0, f"stopping took {took:.1f}s"
    finally:
        stop.set()
        sim.stop()


def test_without_updates_the_inventory_is_walked_on_the_interval(tmp_path):
    """--no-vsphere.updates: no stream; a change comes with the next walk, and the VMs' state is
    checked before each collection as before."""
    import threading

    sim = StorageSim(tmp_path / "sim")
    target = _target(sim, tmp_path, updates=False, discovery_interval=2.0, interval=3.0)
    stop = threading.Event()
    try:
        threads = target.start(stop)
        deadline = time.monotonic() + 60
        while not target.walks:  # the first walk, VMs and all
            assert time.monotonic() < deadline, "never walked"
            time.sleep(0.05)
        assert target.follower is None
        assert any(vm.name == "web01" for topo in target.topology.hosts for vm in topo.vms)
        content = _api_content(sim)
        wait(vm_named(content, "web01").PowerOffVM_Task())
        deadline = time.monotonic() + 30
        while any(vm.name == "web01" for topo in target.topology.hosts for vm in topo.vms):
            assert time.monotonic() < deadline, "web01 still in the topology"
            time.sleep(0.1)
        assert target.walks.get("scheduled", 0) >= 1 and not target.changes
    finally:
        stop.set()
        for thread in threads:
            thread.join(10)
        sim.stop()


def _api_content(sim):
    return connect(sim).RetrieveContent()


def test_a_cold_start_publishes_luns_then_paths_then_vms_collecting_after_the_first(tmp_path, monkeypatch):
    """The first walk publishes in stages: every host's LUNs, adapters and CPUs (collection starts:
    the first complete /metrics), then paths, mounts and each host's configuration series, then the
    VMs with their disks."""
    import threading

    from exporter.vsphere import discovery, source

    events = []
    apply, collect = source.VsphereTarget._apply, source.VsphereTarget._collect

    def recorded_apply(self, topology, changed, removed):
        families = {len(t.families) for t in topology.hosts}
        stage = "luns" if families == {len(discovery.LUN_FAMILIES)} else "vms" if topology.counts()["vm"] else "paths"
        events.append((stage, len(self.store.inventories)))
        return apply(self, topology, changed, removed)

    def recorded_collect(self, now):
        events.append(("collect", None))
        return collect(self, now)

    monkeypatch.setattr(source.VsphereTarget, "_apply", recorded_apply)
    monkeypatch.setattr(source.VsphereTarget, "_collect", recorded_collect)
    sim = StorageSim(tmp_path / "sim")
    target = _target(sim, tmp_path)
    stop = threading.Event()
    threads = target.start(stop)
    try:
        deadline = time.monotonic() + 60
        while not target.walks:
            assert time.monotonic() < deadline, "never walked"
            time.sleep(0.05)
        stages = [stage for stage, _ in events]
        first = [stages.index(s) for s in ("luns", "collect", "paths", "vms")]
        assert first == sorted(first), events  # LUNs, the first collection, paths, VMs
        assert events[0] == ("luns", 0)  # no configuration series yet: they go out whole with the paths
        assert target.samples and all(t.families == discovery.ALL_FAMILIES for t in target.topology.hosts)
        assert target.topology.counts()["vm"] == 4
    finally:
        stop.set()
        for thread in threads:
            thread.join(10)
        sim.stop()


def test_a_walk_that_starts_on_an_expired_session_logs_in_once_and_completes(sim, api, tmp_path, caplog):
    """The update stream is the first to see an expired session: the walk that follows starts on
    the session the client still holds. It must log in again once and walk on the new session
    (in the churn soak it built its objects on the dead one, logged in twice and failed)."""
    import logging

    from exporter.vsphere.client import Client
    from exporter.vsphere.follow import Follower

    target = _target(sim, tmp_path, vms=True)
    client = Client(target.config)
    published = []
    first = Follower(client, target.config, lambda delta, mirror: published.append(delta))
    try:
        first.walk()
    finally:
        first.close()
    assert end_other_sessions(api)
    caplog.set_level(logging.INFO, logger="exporter.vsphere.client")
    caplog.clear()
    second = Follower(client, target.config, lambda delta, mirror: published.append(delta))
    try:
        topology = second.walk()  # raised VsphereError("session not authenticated") before the fix
    finally:
        second.close()
        client.close()
    assert {t.name for t in topology.hosts} >= {"esx01.lab.local", "esx02.lab.local", "esx03.lab.local"}
    assert [r.getMessage() for r in caplog.records if "session expired" in r.getMessage()] == [
        "vsphere target vc: session expired, logging in again"
    ]


def test_a_walk_again_reads_esxcli_only_of_the_hosts_it_finds_stale(tmp_path, monkeypatch):
    """vCenter ends the session (as a restart does): the walk again reads no host's esxcli, since
    nothing esxcli reports changed with vCenter; the old code read every host's again (7 calls a
    host: 17,500 at 2,500 hosts, sent to a vCenter just back). A host whose last esxcli failed, or
    whose configuration changed meanwhile, is read at once."""
    import threading

    from exporter.vsphere import esxcli

    read, original = [], esxcli.read
    monkeypatch.setattr(esxcli, "read", lambda stub, moid, name: read.append(name) or original(stub, moid, name))
    sim = StorageSim(tmp_path / "sim")
    target = _target(sim, tmp_path)
    stop = threading.Event()
    try:
        threads = target.start(stop)
        hosts = {"esx01.lab.local", "esx02.lab.local", "esx03.lab.local"}
        deadline = time.monotonic() + 60
        while set(target.esxcli_found) != hosts:
            assert time.monotonic() < deadline, "esxcli never read"
            time.sleep(0.05)
        assert sorted(read) == sorted(hosts)  # the first walk: every host
        read.clear()
        # its last refresh failed
        target.esxcli_health.report("esx02.lab.local", [("storage core device list", "failed", "timed out")])
        content = _api_content(sim)
        assert end_other_sessions(content)
        deadline = time.monotonic() + 60
        while target.walks.get("error", 0) < 1:
            assert time.monotonic() < deadline, "never walked again"
            time.sleep(0.05)
        time.sleep(3.0)  # the esxcli thread has long run what the walk asked of it
        assert read == ["esx02.lab.local"]
        assert target._esxcli_stale(target.topology, dict(target.published)) == set()
        # a host whose configuration the walk finds changed is stale too
        before = dict(target.published)
        before["esx03.lab.local"] = type(before["esx03.lab.local"])(host="esx03.lab.local")
        assert target._esxcli_stale(target.topology, before) == {"esx03.lab.local"}
        # and one never read, with nothing published before the walk
        del target.esxcli_found["esx01.lab.local"]
        assert target._esxcli_stale(target.topology, dict(target.published)) == {"esx01.lab.local"}
    finally:
        stop.set()
        for thread in threads:
            thread.join(10)
        sim.stop()
