"""vSphere VMs against the project's storage simulator (simulators/storagesim): each powered-on VM's virtual
disks with what backs them, their virtualDisk.* counters per instance, the VM selection, and VMs
that change between discovery and collection.

The fixture's VMs (simulators/storagesim/fixture.json): on esx01, db01 (folder prod) with scsi0:0 thick
eager on ds-shared-01 and scsi0:1 a physical RDM of N5 on pvscsi, and web01 (folder prod) thin on
ds-shared-02 behind an LSI Logic controller with an IOPS limit of 500; on esx02, app01 on
ds-shared-01 (pvscsi) and on the NFS datastore nfs-vm-01 (AHCI), and old01, powered off; on
esx03, batch01 on ds-local-03 through NVMe. Expected values are the fixture's raw counters
(KiB/s, ms) converted by hand.
"""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET

import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter.store import model as m
from exporter.store.store import Store
from exporter.vsphere import TargetConfig, VsphereTarget, perf, vms
from exporter.vsphere.selection import HostSelection
from simulators.storagesim.sims import PASSWORD, USER, StorageSim
from tests.support.vsphere_api import connect, named, wait
from tests.support.vsphere_api import dump as vsphere_dump

pytestmark = pytest.mark.integration

N1 = "naa.600a098038303053453f463045727a61"  # ds-shared-01
N2 = "naa.600a098038303053453f463045727a62"  # ds-shared-02
N3 = "naa.624a9370b9d3a7c25e7a40e200011b3c"  # ds-local-03
N5 = "naa.600a098038303053453f463045727a70"  # db01's RDM, no datastore
KIB, MS = 1024, 0.001


class RecordingStore(Store):
    """The real store, keeping every Sample it is given (the VM families' collectors are elsewhere)."""

    def __init__(self):
        super().__init__()
        self.given: list[m.Sample] = []

    def ingest(self, sample, origin=""):
        self.given.append(sample)
        super().ingest(sample, origin)

    def newest(self, host: str) -> m.Sample:
        return [s for s in self.given if s.host == host][-1]


@pytest.fixture(scope="module")
def password_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("secrets") / "vsphere"
    path.write_text(PASSWORD + "\n")
    return path


@pytest.fixture(scope="module")
def vc(tmp_path_factory):
    sim = StorageSim(tmp_path_factory.mktemp("vc"))
    yield sim
    sim.stop()


def target_of(sim, password_file, **settings) -> VsphereTarget:
    config = TargetConfig(name="vc", url=sim.url, user=USER, password_file=str(password_file), ca_file=str(sim.cert), **settings)
    return VsphereTarget(config, RecordingStore())


@pytest.fixture(scope="module")
def collected(vc, password_file):
    target = target_of(vc, password_file)
    try:
        assert target.run_once(), target.error
        yield target
    finally:
        target.client.close()


def api(sim):
    return connect(sim).RetrieveContent()


def vm_named(content, name):
    from pyVmomi import vim

    return named(content, vim.VirtualMachine, name)


# --- discovery: what backs each disk --------------------------------------------------------
def test_each_disk_is_joined_to_its_datastore_lun_controller_and_allocation(collected):
    vdisks = {
        (topo.name, vm, disk): config
        for topo in collected.topology.hosts
        for (vm, disk), config in collected.store.inventories[topo.name].vdisks.items()
    }
    vd = m.VirtualDiskConfig
    assert vdisks == {
        ("esx01.lab.local", "db01", "scsi0:0"): vd(
            "ds-shared-01", "vmfs", (N1,), "flat", "", "pvscsi", "thick_eager", None, 2000
        ),
        # The RDM: its mapping file's datastore, and the LUN it maps (lunUuid -> the host's ScsiLun).
        ("esx01.lab.local", "db01", "scsi0:1"): vd("ds-shared-01", "vmfs", (N5,), "rdm", "physical", "pvscsi", "", None, 1000),
        ("esx01.lab.local", "web01", "scsi0:0"): vd("ds-shared-02", "vmfs", (N2,), "flat", "", "lsilogic", "thin", 500, 1000),
        ("esx02.lab.local", "app01", "scsi0:0"): vd(
            "ds-shared-01", "vmfs", (N1,), "flat", "", "pvscsi", "thick_lazy", None, 1000
        ),
        ("esx02.lab.local", "app01", "sata0:0"): vd("nfs-vm-01", "nfs", (), "flat", "", "ahci", "thin", None, 1000),
        ("esx03.lab.local", "batch01", "nvme0:0"): vd("ds-local-03", "vmfs", (N3,), "flat", "", "nvme", "thick_lazy", None, 1000),
    }


def test_only_powered_on_vms_are_collected_and_counted(collected):
    names = {vm.name: vm.path for topo in collected.topology.hosts for vm in topo.vms}
    assert names == {
        "db01": "/DC0/vm/prod/db01",
        "web01": "/DC0/vm/prod/web01",
        "app01": "/DC0/vm/app01",
        "batch01": "/DC0/vm/batch01",
    }  # old01 is powered off
    health = collected.store.health[("vsphere", "vc")]
    assert (health.objects["vm"], health.objects["vdisk"]) == (4, 6)


# --- collection: each disk's counters -------------------------------------------------------
def test_each_disk_reports_its_io_latency_and_outstanding_io_exactly(collected):
    sample = collected.store.newest("esx01.lab.local")
    assert sample.vdisks[("db01", "scsi0:0")] == pytest.approx(
        {
            m.READS: 400,
            m.WRITES: 200,
            m.COMMANDS: 600,  # reads + writes: virtualDisk has no commands counter
            m.READ_BYTES: 12800 * KIB,
            m.WRITTEN_BYTES: 6400 * KIB,
            m.GAVG_READ: 8 * MS,
            m.GAVG_WRITE: 12 * MS,
            m.OUTSTANDING_READS: 6,
            m.OUTSTANDING_WRITES: 4,
        }
    )
    assert sample.vdisks[("web01", "scsi0:0")][m.GAVG_READ] == pytest.approx(0.055)
    assert sample.vdisks[("web01", "scsi0:0")][m.OUTSTANDING_READS] == 16
    assert sample.vdisks[("web01", "scsi0:0")][m.OUTSTANDING_WRITES] == 0  # a zero is a value, not an absence
    assert set(sample.vdisks) == {("db01", "scsi0:0"), ("db01", "scsi0:1"), ("web01", "scsi0:0")}
    # the host's own families come in the same sample
    assert sample.luns[N1][m.DAVG] == pytest.approx(0.004)
    assert collected.store.newest("esx03.lab.local").vdisks[("batch01", "nvme0:0")][m.OUTSTANDING_WRITES] == 7
    assert set(collected.store.newest("esx02.lab.local").vdisks) == {("app01", "scsi0:0"), ("app01", "sata0:0")}


def test_vm_totals_add_up_its_disks_and_weigh_latency_by_its_direction(collected):
    db01 = collected.store.newest("esx01.lab.local").vms["db01"]
    assert db01 == pytest.approx(
        {
            m.READS: 500,
            m.WRITES: 500,
            m.COMMANDS: 1000,
            m.READ_BYTES: 16000 * KIB,
            m.WRITTEN_BYTES: 16000 * KIB,
            m.GAVG_READ: (8 * 400 + 3 * 100) / 500 * MS,  # 7 ms
            m.GAVG_WRITE: (12 * 200 + 5 * 300) / 500 * MS,  # 7.8 ms
            m.OUTSTANDING_READS: 7,
            m.OUTSTANDING_WRITES: 6,
        }
    )
    assert set(collected.store.newest("esx01.lab.local").vms) == {"db01", "web01"}


def test_vm_queries_are_chunked_like_host_queries(vc, password_file):
    """Five metric ids per call: each VM's eight virtualDisk counters are split over two calls of
    the same VM, whose answers are joined again."""
    target = target_of(vc, password_file, max_query_metrics=5)
    try:
        assert target.discover(), target.error
        keys = target.resolved.vm_keys
        assert len(keys) == 8
        pairs = [(vm, topo.name) for topo in target.topology.hosts for vm in topo.vms]
        calls = perf.chunk(perf.vm_specs(pairs, keys, {}, 0), target.max_query_metrics)
        assert max(sum(len(s.counters) for s in call) for call in calls) <= 5
        assert sum(len(call) for call in calls) == 2 * len(pairs)
        assert target.collect(), target.error
        assert target.errors["collection"] == 0 and not target.dropped
        full = target.store.newest("esx01.lab.local").vdisks[("db01", "scsi0:1")]
        assert (full[m.READS], full[m.OUTSTANDING_WRITES]) == (100, 2)
        assert len(full) == 9
    finally:
        target.client.close()


# --- selection and the switch ---------------------------------------------------------------
def test_vm_include_and_exclude_by_inventory_path(vc, password_file):
    def chosen(selection):
        target = target_of(vc, password_file, vm_selection=selection)
        try:
            assert target.discover(), target.error
            return sorted(vm.name for topo in target.topology.hosts for vm in topo.vms)
        finally:
            target.client.close()

    assert chosen(HostSelection(include=("/*/vm/prod/**",))) == ["db01", "web01"]
    assert chosen(HostSelection(exclude=("/**/web*", "/DC0/vm/batch01"))) == ["app01", "db01"]
    # hosts are chosen first: a VM follows its host's selection
    target = target_of(vc, password_file, selection=HostSelection(include=("/**/esx02*",)))
    try:
        assert target.discover(), target.error
        assert [vm.name for topo in target.topology.hosts for vm in topo.vms] == ["app01"]
    finally:
        target.client.close()


def test_no_vms_means_no_vm_query(vc, password_file):
    target = target_of(vc, password_file, vms=False)
    try:
        assert target.run_once(), target.error
        assert target.topology.counts()["vm"] == 0
        assert not any(sample.vdisks or sample.vms for sample in target.store.given)
        assert not any(inv.vdisks for inv in target.store.inventories.values())
        assert target.store.newest("esx01.lab.local").luns  # the hosts are collected as ever
    finally:
        target.client.close()


def run_dump(sim, password_file, *extra):
    return vsphere_dump(sim, password_file, *extra, timeout=60)


def objects(done: subprocess.CompletedProcess) -> dict[str, float]:
    assert done.returncode == 0, done.stderr
    assert PASSWORD not in done.stderr and "Traceback" not in done.stderr
    return {
        s.labels["kind"]: s.value
        for family in text_string_to_metric_families(done.stdout)
        for s in family.samples
        if s.name == "esxi_vsphere_objects"
    }


def test_dump_counts_the_vms_the_flags_choose(vc, password_file):
    everything = objects(run_dump(vc, password_file))
    assert (everything["vm"], everything["vdisk"], everything["host"]) == (4, 6, 3)
    prod = objects(run_dump(vc, password_file, "--vsphere.vm-include", "/*/vm/prod/**", "--vsphere.vm-exclude", "/**/web01"))
    assert (prod["vm"], prod["vdisk"]) == (1, 2)  # db01
    none = objects(run_dump(vc, password_file, "--no-vsphere.vms"))
    assert (none["vm"], none["vdisk"], none["lun"]) == (0, 0, 8)


def test_the_flags_reach_the_target():
    from exporter.configuration.config import ConfigError, load
    from exporter.configuration.flags import exporter_options
    from exporter.vsphere import targets

    flags = {
        "vsphere__url": "https://vc.example.com",
        "vsphere__user": "ro",
        "vsphere__password_file": "/run/secrets/vc",
        "vsphere__vms": False,
        "vsphere__vm_include": ["/DC1/vm/prod/**"],
        "vsphere__vm_exclude": ["/**/test-*"],
    }
    (target,) = targets(load(exporter_options(), flags, environ={}))
    assert target.vms is False
    assert target.vm_selection == HostSelection(include=("/DC1/vm/prod/**",), exclude=("/**/test-*",))
    (default,) = targets(load(exporter_options(), {k: flags[k] for k in list(flags)[:3]}, environ={}))
    assert default.vms is True and default.vm_selection.everything
    with pytest.raises(ConfigError) as bad:
        targets(load(exporter_options(), {**flags, "vsphere__vm_include": ["/DC1/[vm"]}, environ={}))
    assert bad.value.problems == ["vsphere: vm_include/vm_exclude: '/DC1/[vm': '[' without ']'"]


def test_a_bad_vm_pattern_is_one_line_and_exit_2(vc, password_file):
    done = run_dump(vc, password_file, "--vsphere.vm-exclude", "/DC0/vm/[prod")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "esxi-storage-exporter: vsphere: vm_include/vm_exclude: '/DC0/vm/[prod': '[' without ']'"
    ]


def test_per_target_vm_settings_in_the_config_file(tmp_path):
    from exporter.configuration.config import load
    from exporter.configuration.flags import exporter_options
    from exporter.vsphere import targets

    config = tmp_path / "exporter.yml"
    config.write_text("""
vsphere:
  user: ro
  password_file: /run/secrets/vc
  vm_exclude: ["/**/test-*"]
  targets:
    prod: {url: "https://vc-prod.example.com"}
    lab: {url: "https://vc-lab.example.com", vms: false}
    dr: {url: "https://vc-dr.example.com", vm_include: ["/DR/vm/**"]}
""")
    found = {t.name: t for t in targets(load(exporter_options(), {}, environ={}, config_file=str(config)))}
    assert (found["prod"].vms, found["prod"].vm_selection.exclude) == (True, ("/**/test-*",))
    assert found["lab"].vms is False
    assert found["dr"].vm_selection == HostSelection(include=("/DR/vm/**",), exclude=("/**/test-*",))


# --- VMs that change between discovery and collection ---------------------------------------
def test_a_vm_powered_off_moved_or_removed_after_discovery_is_dropped_and_counted(password_file, tmp_path):
    from pyVmomi import vim

    sim = StorageSim(tmp_path / "sim")
    target = target_of(sim, password_file)
    try:
        assert target.discover(), target.error
        content = api(sim)
        wait(vm_named(content, "web01").PowerOffVM_Task())
        app01 = vm_named(content, "app01")
        esx03 = next(h for h in target.topology.hosts if h.name == "esx03.lab.local")
        wait(app01.RelocateVM_Task(spec=vim.vm.RelocateSpec(host=vim.HostSystem(esx03.ref._moId, app01._stub))))  # vMotion
        batch01 = vm_named(content, "batch01")
        wait(batch01.PowerOffVM_Task())
        wait(batch01.Destroy_Task())

        assert target.collect(), target.error
        assert target.up == 1 and target.errors["collection"] == 0
        assert target.dropped == {"vm_powered_off": 1, "vm_moved": 1, "vm_gone": 1}
        assert set(target.store.newest("esx01.lab.local").vdisks) == {("db01", "scsi0:0"), ("db01", "scsi0:1")}
        assert not target.store.newest("esx02.lab.local").vdisks  # app01 now runs on esx03...
        assert not target.store.newest("esx03.lab.local").vdisks  # ...which the next discovery will say

        assert target.discover(), target.error
        placed = {topo.name: sorted(vm.name for vm in topo.vms) for topo in target.topology.hosts}
        assert placed == {"esx01.lab.local": ["db01"], "esx02.lab.local": [], "esx03.lab.local": ["app01"]}
        assert ("app01", "scsi0:0") in target.store.inventories["esx03.lab.local"].vdisks
        assert not target.store.inventories["esx02.lab.local"].vdisks
    finally:
        target.client.close()
        sim.stop()


def test_a_vm_the_server_no_longer_knows_at_query_time_is_gone_not_an_error(vc, password_file):
    """The state check passed, then the VM went: the server faults the call that names it, the
    call is asked again entity by entity, and the VM is returned as gone."""
    from pyVmomi import vim

    target = target_of(vc, password_file)
    try:
        assert target.discover(), target.error
        db01 = next(vm for topo in target.topology.hosts for vm in topo.vms if vm.name == "db01")
        ghost = vms.VmTopology(ref=vim.VirtualMachine("vm-gone", db01.ref._stub), name="ghost", path="", host=db01.host)
        specs = perf.vm_specs([(db01, "esx01.lab.local"), (ghost, "esx01.lab.local")], target.resolved.vm_keys, {}, 0)
        gone: list[str] = []
        results, errors = perf.query(target.client, [specs], 2, gone)
        assert (gone, errors) == (["vm-gone"], [])
        assert len(results[db01.ref._moId]) == 8 * 2  # every counter of both its disks
    finally:
        target.client.close()


def test_a_disk_added_to_a_running_vm_appears_at_the_next_discovery(password_file, tmp_path):
    """On a VM of the test's own, with its disks on the simulator's LocalDS_0 (its reconfiguration
    re-reads every disk's file, which the fixture's disks on host-only datastores do not have)."""
    from pyVmomi import vim

    sim = StorageSim(tmp_path / "sim")
    target = target_of(sim, password_file)
    try:
        content = api(sim)
        datacenter = content.rootFolder.childEntity[0]
        host = next(
            h
            for h in content.viewManager.CreateContainerView(content.rootFolder, [vim.HostSystem], True).view
            if h.name == "esx03.lab.local"
        )

        def disk(unit, key):
            backing = vim.vm.device.VirtualDisk.FlatVer2BackingInfo(
                fileName=f"[LocalDS_0] lab01/lab01_{unit}.vmdk", diskMode="persistent", thinProvisioned=True
            )
            device = vim.vm.device.VirtualDisk(
                key=key, controllerKey=-100, unitNumber=unit, capacityInKB=1 << 20, backing=backing
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
        lab01 = vm_named(content, "lab01")
        wait(lab01.PowerOnVM_Task())
        assert target.discover(), target.error
        assert {d for (vm, d) in target.store.inventories["esx03.lab.local"].vdisks if vm == "lab01"} == {"scsi0:0"}

        added = disk(1, -2)
        added.device.controllerKey = next(
            d.key for d in lab01.config.hardware.device if isinstance(d, vim.vm.device.ParaVirtualSCSIController)
        )
        wait(lab01.ReconfigVM_Task(spec=vim.vm.ConfigSpec(deviceChange=[added])))
        assert lab01.runtime.powerState == "poweredOn"

        assert target.discover(), target.error
        found = target.store.inventories["esx03.lab.local"].vdisks
        assert {d for (vm, d) in found if vm == "lab01"} == {"scsi0:0", "scsi0:1"}
        new = found[("lab01", "scsi0:1")]
        assert (new.datastore, new.controller, new.provisioning) == ("LocalDS_0", "pvscsi", "thin")
        assert (new.datastore_type, new.devices) == ("", ())  # a datastore the host's mounts do not list
        assert target.collect() and target.errors["collection"] == 0  # a VM with no counters is no error
    finally:
        target.client.close()
        sim.stop()


# --- the device list, for what the simulator does not build ----------------------------------
DEVICES = """<val xmlns="urn:vim25" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="ArrayOfVirtualDevice">
<VirtualDevice xsi:type="VirtualLsiLogicSASController"><key>1000</key><busNumber>1</busNumber></VirtualDevice>
<VirtualDevice xsi:type="VirtualBusLogicController"><key>1001</key><busNumber>2</busNumber></VirtualDevice>
<VirtualDevice xsi:type="VirtualIDEController"><key>200</key><busNumber>0</busNumber></VirtualDevice>
<VirtualDevice xsi:type="VirtualDisk"><key>2000</key><backing xsi:type="VirtualDiskSeSparseBackingInfo">
  <fileName>[vsanDatastore] 1b2c/db02.vmdk</fileName></backing><controllerKey>1000</controllerKey><unitNumber>3</unitNumber>
  <storageIOAllocation><limit>-1</limit><shares><shares>500</shares><level>low</level></shares></storageIOAllocation></VirtualDevice>
<VirtualDevice xsi:type="VirtualDisk"><key>2001</key><backing xsi:type="VirtualDiskRawDiskMappingVer1BackingInfo">
  <fileName>[vmfs-a] db02/db02_1.vmdk</fileName><compatibilityMode>virtualMode</compatibilityMode>
  <deviceName>/vmfs/devices/disks/naa.6000000000000000000000000000000b</deviceName><lunUuid>unknown-uuid</lunUuid></backing>
  <controllerKey>1001</controllerKey><unitNumber>0</unitNumber>
  <storageIOAllocation><limit>0</limit></storageIOAllocation></VirtualDevice>
<VirtualDevice xsi:type="VirtualDisk"><key>3000</key><backing xsi:type="VirtualDiskFlatVer2BackingInfo">
  <fileName>[vvol-ds] rfc4122.1/db02.vmdk</fileName><thinProvisioned>false</thinProvisioned></backing>
  <controllerKey>200</controllerKey><unitNumber>1</unitNumber></VirtualDevice>
<VirtualDevice xsi:type="VirtualDisk"><key>3001</key><backing xsi:type="VirtualDiskFlatVer2BackingInfo">
  <fileName>[vmfs-a] db02/db02_3.vmdk</fileName></backing><controllerKey>999</controllerKey><unitNumber>0</unitNumber></VirtualDevice>
</val>"""


def test_controllers_backings_and_datastore_kinds_from_a_device_list():
    storage = vms.HostStorage(
        datastore_types={"vsanDatastore": "vsan", "vmfs-a": "vmfs", "vvol-ds": "vvol"},
        extents={"vmfs-a": ("naa.6000000000000000000000000000000a",)},
        lun_uuids={"0200b": "naa.6000000000000000000000000000000b"},
    )
    vd = m.VirtualDiskConfig
    assert vms.disks_of(ET.fromstring(DEVICES), storage) == {
        "scsi1:3": vd("vsanDatastore", "vsan", (), "sparse", "", "lsilogic-sas", "thin", None, 500),
        # an RDM found by its device path when its uuid is not the host's; a limit of 0 is a limit
        "scsi2:0": vd("vmfs-a", "vmfs", ("naa.6000000000000000000000000000000b",), "rdm", "virtual", "buslogic", "", 0, None),
        "ide0:1": vd("vvol-ds", "vvol", (), "flat", "", "ide", "thick_lazy", None, None),
    }  # the disk on controller 999, which the list does not describe, has no instance name


def test_bad_vm_settings_are_one_line_each(tmp_path):
    from exporter.configuration.config import ConfigError, load
    from exporter.configuration.flags import exporter_options
    from exporter.vsphere import targets

    config = tmp_path / "exporter.yml"
    config.write_text("""
vsphere:
  user: ro
  password_file: /run/secrets/vc
  targets:
    lab: {url: "https://vc-lab.example.com", vms: maybe, vm_include: 3}
    dr: {url: "https://vc-dr.example.com", vm_exclude: ["/DR/[vm"]}
""")
    with pytest.raises(ConfigError) as bad:
        targets(load(exporter_options(), {}, environ={}, config_file=str(config)))
    assert bad.value.problems == [
        "vsphere.targets.lab.vms: not a boolean: 'maybe' (use true or false)",
        "vsphere.targets.lab.vm_include: not a list of strings: 3",
        "vsphere.targets.dr: vm_include/vm_exclude: '/DR/[vm': '[' without ']'",
    ]
    with pytest.raises(ConfigError) as env:
        load(exporter_options(), {}, environ={"ESXI_EXPORTER_VSPHERE_VMS": "sometimes"})
    assert env.value.problems == ["environment ESXI_EXPORTER_VSPHERE_VMS: not a boolean: 'sometimes' (use true or false)"]


def test_dump_shows_each_disks_outstanding_io_latency_and_lun(vc, password_file):
    """The issue's bar: `dump --vsphere` shows per disk its outstanding I/O, its latency and, through
    esxi_vm_disk_info, the LUN under it (a VMFS extent or an RDM), as exposition a parser accepts."""
    done = run_dump(vc, password_file)
    assert done.returncode == 0, done.stderr
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(done.stdout)
        for s in family.samples
        if s.name.startswith("esxi_vm")
    }

    def value(name, **labels):
        return samples[(name, tuple(sorted(labels.items())))]

    web = dict(host="esx01.lab.local", vm="web01", disk="scsi0:0")
    assert value("esxi_vm_disk_outstanding_reads", **web) == 16
    assert value("esxi_vm_disk_read_latency_mean_seconds", **web) == pytest.approx(55 * MS)
    assert value("esxi_vm_disk_iops_limit", **web) == 500
    info = {
        (dict(labels)["vm"], dict(labels)["disk"]): dict(labels)
        for (name, labels), _ in samples.items()
        if name == "esxi_vm_disk_info"
    }
    assert info[("web01", "scsi0:0")]["device"] == N2 and info[("web01", "scsi0:0")]["controller"] == "lsilogic"
    assert info[("db01", "scsi0:1")]["device"] == N5 and info[("db01", "scsi0:1")]["compatibility_mode"] == "physical"
    assert info[("app01", "sata0:0")]["datastore_type"] == "nfs" and info[("app01", "sata0:0")]["device"] == ""
    # Per-VM totals are a family of their own: no VM is in the per-disk family's sum twice.
    assert ("esxi_vm_reads_total", (("host", "esx01.lab.local"), ("vm", "web01"))) in samples
    checked = subprocess.run(["promtool", "check", "metrics"], input=done.stdout, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
