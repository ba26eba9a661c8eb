"""Datastore space and VM snapshots: the property collector's values parsed (every datastore kind,
the system volumes left out, absurd values refused alone), snapshot trees and layoutEx files walked
without recursion (a chain 1,000 deep, 100,000 files), the mirror following them, and the
collector's families (one series per datastore whichever source saw it)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from exporter.collectors import space as collector
from exporter.esxcli import filesystem, parse
from exporter.store import model as m
from exporter.store.store import Store
from exporter.vsphere import space
from exporter.vsphere.mirror import DATASTORES, Mirror
from exporter.vsphere.updates import ObjectUpdate

NS = 'xmlns="urn:vim25" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"'
GIB = 1 << 30


def summary(
    name="ds1", kind="VMFS", url="ds:///vmfs/volumes/5f1d-aa/", capacity=100 * GIB, free=40 * GIB, uncommitted=None, **extra
):
    fields = {"name": name, "url": url, "capacity": capacity, "freeSpace": free, "type": kind, **extra}
    if uncommitted is not None:
        fields["uncommitted"] = uncommitted
    body = "".join(f"<{k}>{v}</{k}>" for k, v in fields.items() if v is not None)
    return ET.fromstring(f"<val {NS}>{body}</val>")


def read(element, updated="2026-11-28T01:00:00Z"):
    problems: list[str] = []
    return space.datastore_space("datastore-1", element, updated, problems), problems


@pytest.mark.parametrize(
    ("kind", "label"),
    [("VMFS", "vmfs"), ("NFS", "nfs"), ("NFS41", "nfs41"), ("VVOL", "vvol"), ("vsan", "vsan"), ("PMEM", "pmem")],
)
def test_every_datastore_kind(kind, label):
    found, problems = read(summary(kind=kind, uncommitted=10 * GIB, maintenanceMode="normal", accessible="true"))
    assert problems == []
    assert found == m.DatastoreSpace(
        name="ds1",
        url="ds:///vmfs/volumes/5f1d-aa/",
        type=label,
        capacity_bytes=100 * GIB,
        free_bytes=40 * GIB,
        uncommitted_bytes=10 * GIB,
        maintenance_mode="normal",
        updated=1795827600.0,
    )
    assert collector.provisioned(found) == 70 * GIB


@pytest.mark.parametrize("kind", ["vfat", "VMFSOS", "VMFS-L", "VFFS", "OTHER"])
def test_system_volumes_are_no_datastores(kind):
    assert read(summary(kind=kind)) == (None, [])


def test_a_nameless_volume_is_named_by_its_uuid():
    found, _ = read(summary(name=None, url="ds:///vmfs/volumes/61a4c3e2-9b1f0d22-6a3c-0050569f1a2b/"))
    assert found.name == "61a4c3e2-9b1f0d22-6a3c-0050569f1a2b"


def test_capacity_zero_and_inaccessible_have_no_figures():
    zero, problems = read(summary(capacity=0, free=0))
    assert problems == [] and zero.capacity_bytes is None and zero.free_bytes is None and zero.accessible
    lost, problems = read(summary(accessible="false", uncommitted=5))
    assert problems == [] and not lost.accessible
    assert (lost.capacity_bytes, lost.free_bytes, lost.uncommitted_bytes) == (None, None, None)
    assert collector.provisioned(zero) is None and collector.provisioned(lost) is None


def test_negative_uncommitted_counts_as_none():
    found, problems = read(summary(uncommitted=-3 * GIB))
    assert problems == [] and found.uncommitted_bytes == 0.0
    assert collector.provisioned(found) == 60 * GIB


@pytest.mark.parametrize(
    ("fields", "refused"),
    [
        ({"capacity": -1}, "capacity -1 is out of range"),
        ({"capacity": 9223372036854775807}, "capacity 9223372036854775807 is out of range"),
        ({"capacity": "NaN"}, "capacity NaN is out of range"),
        ({"free": "lots"}, "freeSpace 'lots' is not a number"),
        ({"free": 200 * GIB}, f"freeSpace {200 * GIB} is more than its capacity"),
        ({"uncommitted": "1e300"}, "uncommitted 1e300 is out of range"),
    ],
)
def test_absurd_values_are_refused_alone(fields, refused):
    found, problems = read(summary(**fields))
    assert len(problems) == 1 and refused in problems[0] and problems[0].startswith("datastore ds1: ")
    assert found is not None and found.name == "ds1" and found.accessible  # the rest kept


def tree_xml(depth: int, branches: int = 1) -> ET.Element:
    """A snapshot chain `depth` deep (each a day younger), and `branches` - 1 more roots."""
    node = ""
    for i in range(depth, 0, -1):
        node = f"<childSnapshotList><name>s{i}</name><createTime>2026-11-{1 + i % 27:02d}T00:00:00Z</createTime>{node}</childSnapshotList>"
    roots = node.replace("childSnapshotList", "rootSnapshotList", 1)
    roots = roots[: roots.rfind("</childSnapshotList>")] + "</rootSnapshotList>" if depth else roots
    extra = "".join(
        f"<rootSnapshotList><name>r{b}</name><createTime>2026-10-0{b}T00:00:00Z</createTime></rootSnapshotList>"
        for b in range(1, branches)
    )
    return ET.fromstring(f"<val {NS}><currentSnapshot>snapshot-1</currentSnapshot>{roots}{extra}</val>")


def test_a_chain_1000_deep_is_walked_without_recursion():
    count, oldest = space.snapshot_tree(tree_xml(1000))
    assert count == 1000
    assert oldest == 1793491200.0  # 2026-11-01, the oldest createTime in the chain


def test_a_tree_with_branches():
    count, oldest = space.snapshot_tree(tree_xml(3, branches=3))
    assert count == 5
    assert oldest == 1790812800.0  # r1: 2026-10-01
    assert space.snapshot_tree(None) == (0, None)


def layout_xml(
    files: list[tuple[int, str, str, int]], disks: list[list[list[int]]], snapshots: list[list[list[int]]] = ()
) -> ET.Element:
    body = "".join(f"<file><key>{k}</key><name>{n}</name><type>{t}</type><size>{s}</size></file>" for k, n, t, s in files)
    for chain in disks:
        units = "".join("<chain>" + "".join(f"<fileKey>{k}</fileKey>" for k in unit) + "</chain>" for unit in chain)
        body += f"<disk><key>2000</key>{units}</disk>"
    for chain in snapshots:
        units = "".join("<chain>" + "".join(f"<fileKey>{k}</fileKey>" for k in unit) + "</chain>" for unit in chain)
        body += f"<snapshot><key>snapshot-1</key><dataKey>9</dataKey><disk><key>2000</key>{units}</disk></snapshot>"
    return ET.fromstring(f"<val {NS}>{body}</val>")


FILES = [
    (0, "[ds-a] vm1/vm1.vmx", "config", 3000),
    (1, "[ds-a] vm1/vm1.vmdk", "diskDescriptor", 500),
    (2, "[ds-a] vm1/vm1-flat.vmdk", "diskExtent", 40 * GIB),
    (3, "[ds-a] vm1/vm1-000001.vmdk", "diskDescriptor", 512),
    (4, "[ds-a] vm1/vm1-000001-sesparse.vmdk", "diskExtent", 2 * GIB),
    (5, "[ds-b] vm1/vm1-000002.vmdk", "diskDescriptor", 512),
    (6, "[ds-b] vm1/vm1-000002-sesparse.vmdk", "diskExtent", 3 * GIB),
    (7, "[ds-a] vm1/vm1.vmsd", "snapshotList", 400),
    (8, "[ds-a] vm1/vm1-Snapshot1.vmem", "snapshotMemory", 4 * GIB),
    (9, "[ds-a] vm1/vm1-Snapshot1.vmsn", "snapshotData", 30000),
    (10, "[ds-a] vm1/vmware.log", "log", 99999),
]


def test_snapshot_files_and_delta_extents_by_datastore():
    layout = layout_xml(FILES, disks=[[[1, 2], [3, 4], [5, 6]]], snapshots=[[[1, 2], [3, 4]]])
    problems: list[str] = []
    found = space.snapshot_files(layout, "VM vm1", problems)
    assert problems == []
    # the base disk, the config, the .vmsd list and the log are not the snapshots'; each file once
    assert found == {"ds-a": 512 + 2 * GIB + 4 * GIB + 30000, "ds-b": 512 + 3 * GIB}


def test_delta_disks_without_a_snapshot_count():
    """A failed delete leaves deltas in the chain with no snapshot: consolidation needed, and their size."""
    found = space.snapshot_files(layout_xml(FILES[:5], disks=[[[1, 2], [3, 4]]]), "VM vm1", [])
    assert found == {"ds-a": 512 + 2 * GIB}


def test_an_absurd_file_size_is_refused_alone():
    files = [*FILES[:4], (4, "[ds-a] vm1/vm1-000001-sesparse.vmdk", "diskExtent", -5)]
    problems: list[str] = []
    found = space.snapshot_files(layout_xml(files, disks=[[[1, 2], [3, 4]]]), "VM vm1", problems)
    assert found == {"ds-a": 512}
    assert problems == ["VM vm1: file [ds-a] vm1/vm1-000001-sesparse.vmdk size -5 is out of range: refused"]


def test_100000_layout_files_are_read_in_one_pass():
    files = [(1, "[ds-a] vm1/vm1.vmdk", "diskDescriptor", 500), (2, "[ds-a] vm1/vm1-flat.vmdk", "diskExtent", GIB)]
    files += [(k, f"[ds-a] vm1/vm1-{k:06d}-sesparse.vmdk", "diskExtent", 1000) for k in range(3, 100_003)]
    layout = layout_xml(files, disks=[[[1, 2], *[[k] for k in range(3, 100_003)]]])
    assert space.snapshot_files(layout, "VM vm1", []) == {"ds-a": 100_000 * 1000}


def test_vm_snapshots_from_followed_properties():
    props = {
        "snapshot": tree_xml(2),
        "layoutEx": layout_xml(FILES, disks=[[[1, 2], [3, 4]]]),
        "runtime.consolidationNeeded": ET.fromstring(f"<val {NS}>false</val>"),
    }
    found = space.vm_snapshots("esx01", "vm1", props, [])
    assert (found.count, found.consolidation_needed, found.bytes) == (2, False, 512 + 2 * GIB + 4 * GIB + 30000)


# --- the mirror follows datastores -----------------------------------------------------------


def update(moid, kind="enter", **changes):
    return ObjectUpdate(DATASTORES, kind, "Datastore", moid, changes)


def test_the_mirror_follows_datastores_and_counts_refusals():
    mirror = Mirror(stub=None)
    stamp = ET.fromstring(f"<val {NS}>2026-11-28T01:00:00Z</val>")
    mirror.apply(
        [
            update("datastore-1", summary=summary(), **{"info.timestamp": stamp}),
            update("datastore-2", summary=summary(name="bad", url="ds:///vmfs/volumes/bad/", capacity=-4)),
            update("datastore-3", summary=summary(name="boot", kind="vfat", url="ds:///vmfs/volumes/boot/")),
        ]
    )
    delta, _ = mirror.settle()
    assert delta.space and [key for key, _ in delta.problems] == ["datastore datastore-2"]
    assert sorted(mirror.space_by_url()) == ["ds:///vmfs/volumes/5f1d-aa/", "ds:///vmfs/volumes/bad/"]
    assert mirror.space_by_url()["ds:///vmfs/volumes/bad/"].capacity_bytes is None
    mirror.apply([update("datastore-1", kind="modify", summary=summary(free=10 * GIB))])
    delta, _ = mirror.settle()
    assert delta.space and mirror.space_by_url()["ds:///vmfs/volumes/5f1d-aa/"].free_bytes == 10 * GIB
    assert mirror.space_by_url()["ds:///vmfs/volumes/5f1d-aa/"].updated == 1795827600.0  # kept from before
    delta, _ = mirror.settle()
    assert not delta.space  # nothing changed: nothing to publish
    mirror.apply([update("datastore-1", kind="leave")])
    delta, _ = mirror.settle()
    assert delta.space and list(mirror.space_by_url()) == ["ds:///vmfs/volumes/bad/"]


# --- the collector ---------------------------------------------------------------------------


def test_one_series_per_datastore_whichever_sources_see_it():
    store = Store()
    url = "ds:///vmfs/volumes/5f1d-aa/"
    api = m.DatastoreSpace("ds1", url, "vmfs", 100.0, 40.0, 10.0, True, "normal", 5.0, source="vsphere")
    ssh = m.DatastoreSpace("ds1", url, "vmfs", 100.0, 35.0, None, True, source="esxcli")
    store.set_space("esx01", {url: ssh})
    store.set_space("esx02", {url: ssh})
    store.set_space("vc1", {url: api}, origin="vc1")
    families = {f.name: f.lines for f in collector.collect(store)}
    assert families["esxi_datastore_free_bytes"] == [
        f'esxi_datastore_free_bytes{{datastore="ds1",type="vmfs",url="{url}"}} 40.0\n'
    ]
    assert len(families["esxi_datastore_capacity_bytes"]) == 1
    assert families["esxi_datastore_maintenance_mode"][0].endswith('mode="normal"} 1.0\n')
    store.set_space("vc1", {}, origin="vc1")  # vCenter gone: a host's answer is shown
    families = {f.name: f.lines for f in collector.collect(store)}
    assert len(families["esxi_datastore_free_bytes"]) == 1 and families["esxi_datastore_free_bytes"][0].endswith(" 35.0\n")
    assert families["esxi_datastore_uncommitted_bytes"] == []


# --- esxcli storage filesystem list ----------------------------------------------------------

FILESYSTEMS = Path(__file__).resolve().parents[1] / "fixtures" / "esxcli" / "filesystem-list.txt"


def test_esxcli_filesystem_table_of_an_esxi_8_host():
    records, bad = parse.table(FILESYSTEMS.read_text())
    problems: list[str] = []
    found = filesystem.spaces(records, problems)
    assert bad == [] and problems == []
    by_name = {s.name: s for s in found.values()}
    assert sorted(by_name) == sorted(
        [
            "ds-shared-01",
            "ds-vmfs5-old",
            "64b0a7f1-2e3c4d5a-7b8c-0050569f1a2b",
            "nfs-iso",
            "nfs41-backup",
            "vsanDatastore",
            "vvol-01",
            "ds-unmounted",
        ]
    )
    shared = by_name["ds-shared-01"]
    assert shared == m.DatastoreSpace(
        "ds-shared-01",
        "ds:///vmfs/volumes/61a4c3e2-9b1f0d22-6a3c-0050569f1a2b/",
        "vmfs",
        1099243192320.0,
        131941395456.0,
        source="esxcli",
    )
    assert [by_name[n].type for n in ("ds-vmfs5-old", "nfs-iso", "nfs41-backup", "vsanDatastore", "vvol-01")] == [
        "vmfs",
        "nfs",
        "nfs41",
        "vsan",
        "vvol",
    ]
    unmounted = by_name["ds-unmounted"]
    assert not unmounted.accessible and unmounted.capacity_bytes is None


def test_esxcli_filesystem_csv_reads_as_the_table():
    csv_text = (
        "Free,MountPoint,Mounted,Size,Type,UUID,VolumeName,\n"
        "131941395456,/vmfs/volumes/61a4c3e2-9b1f0d22-6a3c-0050569f1a2b,true,1099243192320,VMFS-6,61a4c3e2-9b1f0d22-6a3c-0050569f1a2b,ds-shared-01,\n"
        "268000935936,/vmfs/volumes/64b0a7f1-2e3c4d5a-7b8c-0050569f1a2b,true,268166709248,VMFS-6,64b0a7f1-2e3c4d5a-7b8c-0050569f1a2b,,\n"
        "125068148736,/vmfs/volumes/61a4c3d0-7e2a4b18,true,128580583424,VMFSOS,61a4c3d0-7e2a4b18,OSDATA-61a4c3d0-7e2a4b18,\n"
    )
    records, bad = parse.csv_records(csv_text)
    found = filesystem.spaces(records, [])
    table = filesystem.spaces(parse.table(FILESYSTEMS.read_text())[0], [])
    assert bad == [] and len(found) == 2
    for url, space_ in found.items():
        assert table[url] == space_


@pytest.mark.parametrize(
    ("size", "free", "refused"),
    [
        ("-1", "0", "Size -1 is out of range"),
        ("1e30", "5", "Size 1e30 is out of range"),
        ("100", "NaN", "Free NaN is out of range"),
        ("100", "x", "Free 'x' is not a number"),
        ("100", "200", "Free 200 is more than its Size 100"),
    ],
)
def test_esxcli_absurd_figures_are_refused_alone(size, free, refused):
    records = [
        {
            "mountpoint": "/vmfs/volumes/a",
            "volumename": "a",
            "uuid": "a",
            "mounted": "true",
            "type": "VMFS-6",
            "size": size,
            "free": free,
        },
        {
            "mountpoint": "/vmfs/volumes/b",
            "volumename": "b",
            "uuid": "b",
            "mounted": "true",
            "type": "NFS",
            "size": "10",
            "free": "4",
        },
    ]
    problems: list[str] = []
    found = filesystem.spaces(records, problems)
    assert len(problems) == 1 and refused in problems[0]
    assert found["ds:///vmfs/volumes/b/"].free_bytes == 4.0 and "ds:///vmfs/volumes/a/" in found


def test_esxcli_space_problems_are_counted_every_time_and_logged_once(caplog):
    from exporter.esxcli.ssh import EsxcliOverSsh
    from exporter.ssh.target import parse_target

    rows = [
        {
            "mountpoint": "/vmfs/volumes/a",
            "volumename": "a",
            "uuid": "a",
            "mounted": "true",
            "type": "VMFS-6",
            "size": "-1",
            "free": "0",
        }
    ]
    store = Store()
    runner = EsxcliOverSsh(parse_target("root@esx01"), store, stop=None, host_name=lambda: "esx01")
    runner.fetch = lambda words: (rows, [])
    with caplog.at_level("WARNING", logger="exporter.esxcli"):
        first, second = runner.space("esx01"), runner.space("esx01")
        for problems in (first, second):  # as refresh reports them, beside the other commands' problems
            runner.health.report("esx01", problems, "esxcli on esx01")
    assert runner.health.errors("esx01") == {"storage filesystem list/bad_value": 2}
    assert first == second == [("storage filesystem list", "bad_value", "datastore a: Size -1 is out of range: refused")]
    assert [r.getMessage() for r in caplog.records].count(
        "esxcli on esx01: storage filesystem list: datastore a: Size -1 is out of range: refused"
    ) == 1
    assert store.spaces["ds:///vmfs/volumes/a/"].capacity_bytes is None  # the datastore is kept, its figure refused


def test_a_datastore_read_fine_again_is_told_apart():
    """The mirror names the objects read without a refusal, so the source logs a recovery once."""
    mirror = Mirror(stub=None)
    mirror.apply([update("datastore-2", summary=summary(name="bad", url="ds:///vmfs/volumes/bad/", capacity=-4))])
    delta, _ = mirror.settle()
    assert [k for k, _ in delta.problems] == ["datastore datastore-2"] and delta.fine == []
    mirror.apply([update("datastore-2", kind="modify", summary=summary(name="bad", url="ds:///vmfs/volumes/bad/"))])
    delta, _ = mirror.settle()
    assert delta.problems == [] and delta.fine == ["datastore datastore-2"]
    assert mirror.space_by_url()["ds:///vmfs/volumes/bad/"].capacity_bytes == 100 * GIB


def test_a_targets_view_shows_its_own_datastores_through_the_collector():
    """/probe?target=NAME renders store.view(NAME): the space collector reads `spaces` and
    `snapshots` from it as from the store (both properties), and only that target's."""
    store = Store()
    a = m.DatastoreSpace(name="ds-a", url="ds:///vmfs/volumes/a/", type="vmfs", capacity_bytes=100.0, free_bytes=40.0)
    b = m.DatastoreSpace(name="ds-b", url="ds:///vmfs/volumes/b/", type="vmfs", capacity_bytes=100.0, free_bytes=90.0)
    store.set_space("vc1", {a.url: a}, origin="vc1")
    store.set_space("vc2", {b.url: b}, origin="vc2")
    view = store.view("vc1")
    assert set(view.spaces) == {a.url} and view.snapshots == {}
    text = "".join(line for family in collector.collect(view) for line in family.lines)
    assert "ds-a" in text and "ds-b" not in text
