"""Hostile vSAN answers (issue 37): every value checked where it is converted, labels bounded,
memory bounded by what is kept, one deadline per cluster round.

Unit tests pin each refusal of the readers (perfcsv, health). The integration tests put a local
HTTPS endpoint (simulators/hostile_vsphere.py) in front of the project's vSphere storage
simulator with its vSAN fixture, and rewrite its real answers with hostile values, answer
VsanPerfQueryPerf with thousands of entities nobody asked about, or answer /vsanHealth late; the
exposition stays finite, in range and bounded, the refusals are counted by reason and logged once
per cluster, field and reason, and a hanging endpoint shows the cluster down within one call
timeout. A child process reads 100,000 unknown entities under 300 MiB of peak RSS
(bench/vsan_memory.py measures the same beside the code before).
"""

from __future__ import annotations

import logging
import math
import re
import time
from types import SimpleNamespace

import pytest

from bench import vsan_memory
from exporter.collectors import vsan as vsan_collector
from exporter.collectors.textformat import render
from exporter.store import model as m
from exporter.store.store import Store
from exporter.vsan import health, perf, perfcsv, refused
from exporter.vsphere import xmlguard
from simulators import hostile_vsphere as hostile
from simulators.storagesim.sims import HERE, PASSWORD, USER, StorageSim

T0 = perfcsv.parse_time("2026-11-25 15:20:00")
MIB = 1 << 20


def _entity(ref: str, values: list[tuple[str, str, object]], times=(T0,)):
    dropped = refused.Dropped()
    row = perfcsv.parse_entity(ref, ",".join(perfcsv.format_time(t) for t in times), values, dropped)
    return row, dropped


# --- the readers, value by value --------------------------------------------------------------
@pytest.mark.parametrize("interval", ["1e-320", "0", "-300", "0.5", "86401", "1e400", "nan", "abc"])
def test_an_interval_outside_1s_to_a_day_is_refused_and_only_the_counts_over_it_go(interval):
    """Today 1e-320 made +Inf congestion per second: the counts over that interval are refused,
    the series that need no interval are read with it ignored, and the sample's interval is not it."""
    row, dropped = _entity(
        "host-domclient:n1", [("congestion", "60", interval), ("oio", "12", interval), ("iopsRead", "5", "300")]
    )
    assert "congestion" not in row.series and row.series["oio"] == [12.0] and row.series["iopsRead"] == [5.0]
    assert row.intervals == {"iopsRead": 300.0}
    assert dropped == {"bad_interval": 2}
    assert set(dropped.refusals) == {
        ("congestion.metricsCollectInterval", "bad_interval"),
        ("oio.metricsCollectInterval", "bad_interval"),
    }
    sample = perfcsv.sample_at([row], T0, perfcsv.Names(hosts={"n1": "esx1"}), dropped)
    assert sample.hosts["esx1"] == {m.VSAN_OUTSTANDING_IO: 12.0, m.READS: 5.0}
    assert sample.interval == 300.0


@pytest.mark.parametrize("interval", ["1", "300", "86400", 300.0, None, ""])
def test_an_interval_within_bounds_or_absent_is_taken(interval):
    row, dropped = _entity("cluster-domclient:c", [("congestion", "60", interval)])
    assert row.series["congestion"] == [60.0] and dropped == {}


def test_cells_negative_too_large_or_no_number_are_refused_each_on_its_own():
    row, dropped = _entity(
        "host-domclient:n1",
        [("iopsRead", "1e400,-4294967296,inf,nan,7,", "300"), ("iopsWrite", "1,2,3,4,5,6", "300")],
        times=[T0 + 300 * i for i in range(6)],
    )
    assert row.series["iopsRead"] == [None, None, None, None, 7.0, None]  # the blank cell is no value, not refused
    assert row.series["iopsWrite"] == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert dropped == {"too_large": 1, "negative": 1, "bad_value": 2}


def test_a_ratio_over_1_is_refused_and_the_other_values_are_read():
    row, dropped = _entity(
        "disk-group:cache-u", [("wbFreePct", "150", "300"), ("rcHitRate", "100", "300"), ("oioWrite", "150", "300")]
    )
    sample = perfcsv.sample_at([row], T0, perfcsv.Names(disk_groups={"cache-u": ("esx1", "naa.c")}), dropped)
    assert sample.disk_groups[("esx1", "naa.c")] == {m.VSAN_READ_CACHE_HIT: 1.0, m.OUTSTANDING_WRITES: 150.0}
    assert dropped == {"out_of_range": 1}
    note = dropped.refusals[("wbFreePct", "out_of_range")]
    assert (note.entity, note.value) == ("disk-group:cache-u", "150.0")
    assert (
        perfcsv.describe(note.entity, perfcsv.Names(disk_groups={"cache-u": ("esx1", "naa.c")}))
        == "disk group esx1 naa.c (disk-group)"
    )


def test_an_entity_id_over_128_characters_is_refused():
    row, dropped = _entity("virtual-machine:" + "x" * 700, [("iopsRead", "1", "300")])
    assert row is None and dropped == {"label_too_long": 1}
    assert len(dropped.refusals[("entityRefId", "label_too_long")].entity) < 200  # cut in the log too


def _summary(overall="green", details=()):
    return SimpleNamespace(
        overallHealth=overall,
        timestamp=None,
        objectHealth=SimpleNamespace(objectHealthDetail=[SimpleNamespace(health=h, numObjects=n) for h, n in details]),
    )


def test_health_counts_negative_or_too_large_and_long_states_are_refused_each_alone():
    """Today: esxi_vsan_objects{state="healthy"} -4294967296 and a label 700 characters long."""
    cluster, dropped = m.VsanCluster(name="c"), refused.Dropped()
    details = [
        ("healthy", -4294967296),
        ("inaccessible", 10**400),
        ("a" * 700, 5),
        ("datamove", 3),
        ("datamove", 4),
        ("reducedavailabilitywithnorebuild", 2**1023),
        ("reducedavailabilitywithnorebuild", 2**1023),  # each fits a float, their sum does not
    ]
    health.apply_summary(cluster, _summary("green", details), dropped)
    assert cluster.objects == {"data_move": 7}
    assert cluster.objects_refused == {"healthy", "inaccessible", "reduced_availability_with_no_rebuild"}
    store = Store()
    store.set_vsan(cluster, origin="vc")
    objects = [
        line for line in render(vsan_collector.collect(store)).decode().splitlines() if line.startswith("esxi_vsan_objects{")
    ]
    assert 'esxi_vsan_objects{cluster="c",state="data_move"} 7.0' in objects
    assert [line for line in objects if any(f'"{s}"' in line for s in cluster.objects_refused)] == []  # not even 0
    assert 'esxi_vsan_objects{cluster="c",state="reduced_availability_with_active_rebuild"} 0.0' in objects
    assert cluster.health == "green"
    assert dropped == {"negative": 1, "too_large": 2, "label_too_long": 1}
    snake = m.VsanCluster(name="c")
    health.apply_summary(snake, _summary("green", [("aB" * 60, 1)]), dropped)  # 120 sent, 179 in snake_case
    assert snake.objects == {} and dropped["label_too_long"] == 2
    long_state = m.VsanCluster(name="c")
    health.apply_summary(long_state, _summary("r" * 700), dropped)
    assert long_state.health == "" and dropped["label_too_long"] == 3
    assert ("overallHealth", "label_too_long") in dropped.refusals


def test_space_and_resync_refuse_negative_and_too_large_on_that_value_only():
    cluster, dropped = m.VsanCluster(name="c"), refused.Dropped()
    health.apply_space(cluster, SimpleNamespace(totalCapacityB=10**400, freeCapacityB=1e12), dropped)
    assert (cluster.capacity_bytes, cluster.free_bytes) == (None, 1e12)
    health.apply_space(cluster, SimpleNamespace(totalCapacityB=2e12, freeCapacityB=-5), dropped)
    assert (cluster.capacity_bytes, cluster.free_bytes) == (2e12, None)
    health.apply_resync(cluster, SimpleNamespace(totalBytesToSync=-1, totalObjectsToSync=3, totalRecoveryETA=-1), dropped)
    assert (cluster.resync_bytes, cluster.resync_objects, cluster.resync_eta_seconds) == (None, 3.0, None)  # ETA -1: unknown
    health.apply_resync(
        cluster, SimpleNamespace(totalBytesToSync=None, totalObjectsToSync=None, totalRecoveryETA=10**400), dropped
    )
    assert (cluster.resync_bytes, cluster.resync_objects, cluster.resync_eta_seconds) == (0.0, 0.0, None)
    assert dropped == {"too_large": 2, "negative": 2}


def test_the_answer_cap_follows_the_entities_asked():
    assert perf.answer_cap(0, 6) == 64 * (2048 + 6 * 1024)
    assert perf.answer_cap(1000, 17) == 2064 * (2048 + 17 * 1024)
    size = len(vsan_memory.entity("52aa0000-0000-4000-8000-000000000000", 1).encode())
    assert size < (2048 + 6 * 1024) / 2, size  # a real entity (3 samples) fits twice and more


def test_an_answer_is_read_as_it_arrives_and_unknown_entities_are_dropped_as_they_come(tmp_path):
    path = tmp_path / "answer.xml"
    vsan_memory.write_answer(path, known=3, unknown=500)
    names = perfcsv.Names(vms={u: f"vm{i}" for i, u in enumerate(vsan_memory.known_uuids(3))})
    dropped = refused.Dropped()
    with open(path, "rb") as stream:
        rows = perf.read_answer(xmlguard.iter_answer(stream), names, dropped)
    assert [row.uuid for row in rows] == vsan_memory.known_uuids(3)
    assert dropped == {"unknown_entity": 500}
    # 500 entities not asked for are past the cap sized to the 3 asked for: they cost nothing kept
    assert path.stat().st_size > perf.answer_cap(3, 6)
    dropped = refused.Dropped()
    with open(path, "rb") as stream:
        pieces = xmlguard.iter_answer(stream, capped=False)
        rows = perf.read_answer(pieces, names, dropped, cap=perf.answer_cap(3, 6), asked=("virtual-machine", known_uuids(3)))
    assert [row.uuid for row in rows] == vsan_memory.known_uuids(3) and dropped == {"unknown_entity": 500}


def known_uuids(n: int) -> list[str]:
    return vsan_memory.known_uuids(n)


def test_entities_asked_for_past_the_cap_keep_those_read_and_the_rest_is_counted_not_read(tmp_path):
    """Today an answer past its cap was refused whole: every entity of that type lost for the round.
    Now the entities read before the cap are kept, the answer is not read further, and each entity
    asked for and not read is counted (answer_too_large), noted for one log line."""
    path = tmp_path / "answer.xml"
    size = vsan_memory.write_answer(path, known=4000, unknown=0)
    cap = perf.answer_cap(3, 6)  # sized for 3 entities: 4,000 of them pass it
    names = perfcsv.Names(vms={u: f"vm{i}" for i, u in enumerate(known_uuids(4000))})
    dropped = refused.Dropped()
    with open(path, "rb") as stream:
        rows = perf.read_answer(
            xmlguard.iter_answer(stream, capped=False), names, dropped, cap=cap, asked=("virtual-machine", known_uuids(4000))
        )
        read_to = stream.tell()
    assert 0 < len(rows) < 4000
    assert [row.uuid for row in rows] == known_uuids(len(rows))  # the first ones, whole
    assert all(row.series["iopsRead"] for row in rows)
    assert dropped == {"answer_too_large": 4000 - len(rows)}
    assert set(dropped.refusals) == {("size", "answer_too_large")}
    assert read_to < size  # the rest was never read
    # one entity in progress past the cap (a single endless element) stops the read too
    endless = tmp_path / "endless.xml"
    opening = vsan_memory.entity(known_uuids(1)[0], 0).split("<values>")[0] + "<values>"
    endless.write_text(vsan_memory._OPEN + opening + "9," * cap)
    dropped = refused.Dropped()
    with open(endless, "rb") as stream:
        rows = perf.read_answer(
            xmlguard.iter_answer(stream, capped=False), names, dropped, cap=cap, asked=("virtual-machine", known_uuids(1))
        )
    assert rows == [] and dropped == {"answer_too_large": 1}


def test_100000_unknown_entities_peak_under_300_mib(tmp_path):
    """Today 1,148 MiB against 44 MiB normally: measured in a child (its VmHWM), read as the
    exporter reads it, without the cluster's cap (which would refuse it long before the end)."""
    path = tmp_path / "hostile.xml"
    size = vsan_memory.write_answer(path, known=40, unknown=100_000)
    got = vsan_memory.measure(path, "streamed", 40)
    print(f"\n{size / MIB:.0f} MiB answer, 100,000 unknown entities: peak RSS {got['peak'] / MIB:.0f} MiB")
    assert got["dropped"] == {"unknown_entity": 100_000}
    assert got["vms"] == 40 and got["first"] == {
        m.READS: 2.0,
        m.WRITES: 9.0,
        m.READ_BYTES: 16.0,
        m.WRITTEN_BYTES: 23.0,
        m.GAVG_READ: 30e-6,
        m.GAVG_WRITE: 37e-6,
    }
    assert got["peak"] < 300 * MIB


# --- through the wire ---------------------------------------------------------------------------
pytest_integration = pytest.mark.integration


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    sim = StorageSim(tmp_path_factory.mktemp("vsan-sim"), fixture=HERE / "vsan.json")
    yield sim
    sim.stop()


@pytest.fixture()
def proxy(upstream, tmp_path):
    endpoint = hostile.HostileProxy(upstream.url, tmp_path)
    yield endpoint
    endpoint.stop()


def _vsan_source(proxy, tmp_path, timeout=3.0, **options):
    """A vSAN source of a target through the proxy, discovered; timeout: the call timeout, which is
    also the round's deadline; options: VsanSource's (max_label)."""
    from exporter.vsan.source import VsanSource
    from exporter.vsphere import TargetConfig, VsphereTarget

    password = tmp_path / "password"
    password.write_text(PASSWORD + "\n")
    password.chmod(0o600)
    target = VsphereTarget(
        TargetConfig(name="vc", url=proxy.url, user=USER, password_file=str(password), insecure=True, timeout=timeout)
    )
    vsan = VsanSource(target, target.store, **options)
    assert vsan.discover()
    return vsan


@pytest.fixture()
def source(proxy, tmp_path):
    vsan = _vsan_source(proxy, tmp_path)
    yield vsan
    vsan.client.close()


def _cells(pattern: str, new: str):
    """Rewrite the values of the series whose label matches, keeping their number of cells."""
    series = re.compile(rf"(<label>(?:{pattern})</label>.*?<values>)([^<]*)(</values>)")
    return lambda body: series.sub(lambda v: v.group(1) + ",".join([new] * (v.group(2).count(",") + 1)) + v.group(3), body)


def _hostile_answers(proxy) -> None:
    interval = re.compile(rb"(<label>(?:congestion|oio)</label><metricsCollectInterval>)300(<)")
    ratio, big, negative = _cells("wbFreePct", "150"), _cells("iopsRead", "1e400"), _cells("latencyAvgRead", "-4294967296")
    long_entity = f"<returnval><entityRefId>virtual-machine:{'x' * 700}</entityRefId><sampleInfo></sampleInfo></returnval>"

    def perf_answer(body: bytes) -> bytes:
        text = interval.sub(rb"\g<1>1e-320\g<2>", body).decode()
        text = negative(ratio(big(text)))
        return text.replace("</VsanPerfQueryPerfResponse>", long_entity + "</VsanPerfQueryPerfResponse>").encode()

    def health_answer(body: bytes) -> bytes:
        text = re.sub(r"<numObjects>\d+</numObjects>", "<numObjects>-4294967296</numObjects>", body.decode(), count=1)
        extra = f"<objectHealthDetail><numObjects>5</numObjects><health>{'a' * 700}</health></objectHealthDetail>"
        return text.replace("<objectHealth>", "<objectHealth>" + extra).encode()

    def space_answer(body: bytes) -> bytes:
        text = re.sub(r"<totalCapacityB>\d+<", f"<totalCapacityB>1{'0' * 400}<", body.decode())
        return re.sub(r"<freeCapacityB>\d+<", "<freeCapacityB>-5<", text).encode()

    proxy.rewrite("VsanPerfQueryPerf", perf_answer)
    proxy.rewrite("VsanQueryVcClusterHealthSummary", health_answer)
    proxy.rewrite("VsanQuerySpaceUsage", space_answer)


def _exposition(store) -> list[tuple[str, dict[str, str], float]]:
    out = []
    for line in render(vsan_collector.collect(store)).decode().splitlines():
        if line.startswith("#"):
            continue
        head, _, number = line.rpartition(" ")
        out.append((head.split("{")[0], dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', head)), float(number)))
    return out


@pytest_integration
def test_hostile_values_in_real_answers_are_refused_counted_logged_once_and_the_rest_is_read(source, proxy, caplog):
    _hostile_answers(proxy)
    with caplog.at_level(logging.WARNING, logger="exporter.vsan.source"):
        source.collect()
        first = [r.getMessage() for r in caplog.records]
        once = dict(source.store.health[("vsan", "vsan-osa")].dropped)
        series = _exposition(source.store)
        source.taken.clear()  # the same sample again, as the next would come
        source.collect()
        second = [r.getMessage() for r in caplog.records][len(first) :]
    assert series and all(math.isfinite(v) and v >= 0 for _, _, v in series), [
        s for s in series if not (math.isfinite(s[2]) and s[2] >= 0)
    ]
    assert all(len(value) <= 128 for _, labels, _ in series for value in labels.values())
    names = {name for name, _, _ in series}
    osa = [(n, labels) for n, labels, _ in series if labels.get("cluster") == "vsan-osa"]
    # The refused values are absent; the others of the same answers are read.
    assert not names & {"esxi_vsan_cluster_congestion_per_second", "esxi_vsan_host_congestion_per_second"}
    assert not names & {
        "esxi_vsan_disk_group_write_buffer_free_ratio",
        "esxi_vsan_host_reads_per_second",
        "esxi_vsan_vm_reads_per_second",
    }
    assert not names & {"esxi_vsan_host_read_latency_mean_seconds", "esxi_vsan_capacity_bytes", "esxi_vsan_free_bytes"}
    assert {"esxi_vsan_cluster_outstanding_io", "esxi_vsan_host_writes_per_second", "esxi_vsan_vm_writes_per_second"} <= {
        n for n, _ in osa
    }
    assert {
        "esxi_vsan_disk_group_congestion_per_second",
        "esxi_vsan_disk_group_read_cache_hit_ratio",
        "esxi_vsan_resync_bytes",
    } <= names
    assert [labels for n, labels in osa if n == "esxi_vsan_objects" and labels["state"] == "healthy"] == []  # refused: not 0
    assert ("esxi_vsan_objects", {"cluster": "vsan-osa", "state": "inaccessible"}) in osa  # still shown
    record = source.store.health[("vsan", "vsan-osa")]
    assert record.up == 1 and record.errors == {}
    assert {"bad_interval", "out_of_range", "too_large", "negative", "label_too_long"} <= set(record.dropped)
    # One line per field and reason of a cluster, naming cluster, entity and field; none the second round.
    osa_lines = [line for line in first if "vSAN cluster vsan-osa:" in line]
    fields = {(line.split(", ", 1)[1].split(" ", 1)[0], line.rsplit("(", 1)[1].split(";")[0]) for line in osa_lines}
    assert len(osa_lines) == len(fields), osa_lines
    assert any(
        "the cluster (cluster-domclient), congestion.metricsCollectInterval '1e-320' refused" in line for line in osa_lines
    ), osa_lines
    assert any("disk group esx" in line and "wbFreePct" in line and "a ratio over 1" in line for line in osa_lines), osa_lines
    assert any("objectHealthDetail healthy, numObjects '-4294967296' refused: negative" in line for line in osa_lines), osa_lines
    assert any("space usage, totalCapacityB" in line and "too large for a float" in line for line in osa_lines), osa_lines
    assert all(len(line) < 600 and "\n" not in line for line in first)
    assert second == []  # logged once
    assert source.store.health[("vsan", "vsan-osa")].dropped == {
        reason: 2 * n for reason, n in once.items()
    }  # counted every time


def _entities(body: bytes) -> tuple[bytes, bytes, bytes]:
    """An answer as (what comes before its first entity, its entities, what follows the last)."""
    first, last = body.find(b"<returnval"), body.rfind(b"</returnval>") + len(b"</returnval>")
    return body[:first], body[first:last], body[last:]


def _vsan_series(store) -> dict:
    return {(name, tuple(sorted(labels.items()))): value for name, labels, value in _exposition(store) if "cluster" in labels}


@pytest_integration
def test_entities_not_asked_for_sent_beside_those_asked_cost_none_of_them(proxy, tmp_path):
    """Every perf answer carries 1,200 entities nobody asked about (1.6 MB), before and after the
    real ones: past the cap of the VMs' answer and others, which today refused each whole. Every
    entity asked for is read: the round's vSAN series are those of a round without them."""
    unknown = "".join(vsan_memory.entity(f"7e570000-dead-4bad-8000-{n:012d}", n) for n in range(600)).encode()
    assert 2 * len(unknown) > perf.answer_cap(len(vsan_memory.known_uuids(8)), 6)

    def crowded(body: bytes) -> bytes:
        head, entities, tail = _entities(body)
        return head + unknown + entities + unknown + tail if entities else body

    (tmp_path / "clean").mkdir()
    (tmp_path / "crowd").mkdir()
    clean, crowd = _vsan_source(proxy, tmp_path / "clean", timeout=60.0), None
    try:
        clean.collect()
        expected = _vsan_series(clean.store)
        proxy.rewrite("VsanPerfQueryPerf", crowded)
        crowd = _vsan_source(proxy, tmp_path / "crowd", timeout=60.0)
        crowd.collect()
        record = crowd.store.health[("vsan", "vsan-osa")]
        assert record.up == 1 and record.errors == {}, record.errors
        assert record.dropped.get("unknown_entity", 0) >= 1200 and "answer_too_large" not in record.dropped
        own = ("esxi_vsan_dropped", "esxi_vsan_coll", "esxi_vsan_health_timestamp")  # the source's own, and a clock
        got = {key: value for key, value in _vsan_series(crowd.store).items() if not key[0].startswith(own)}
        assert got == {key: value for key, value in expected.items() if not key[0].startswith(own)}
        assert sum(1 for name, _ in got if name.startswith("esxi_vsan_vm_")) > 0
    finally:
        clean.client.close()
        if crowd is not None:
            crowd.client.close()


@pytest_integration
def test_an_answer_past_its_cap_keeps_what_it_read_counts_the_rest_and_the_next_calls_are_read(proxy, tmp_path, caplog):
    """The VMs' answer repeats its entities past its cap (sized to the cluster's VMs): those read
    are kept, the rest is counted (answer_too_large) and logged once a cluster; the connection the answer was
    left unread on is closed, and every other call of the round is read."""

    def swollen(body: bytes) -> bytes:
        head, entities, tail = _entities(body)
        return head + entities * 2000 + tail if b"virtual-machine:" in entities else body

    proxy.rewrite("VsanPerfQueryPerf", swollen)
    source = _vsan_source(proxy, tmp_path, timeout=60.0)
    try:
        with caplog.at_level(logging.WARNING, logger="exporter.vsan.source"):
            source.collect()
            source.collect()
        record = source.store.health[("vsan", "vsan-osa")]
        assert record.up == 1 and record.errors == {}, record.errors
        assert record.dropped.get("answer_too_large", 0) >= 2  # each round: at least one per cut answer
        vms = {
            labels["vm"]
            for name, labels, _ in _exposition(source.store)
            if labels.get("cluster") == "vsan-osa" and "vm" in labels
        }
        assert vms  # the VMs read before the cap are there
        assert source.store.vsan["vsan-osa"].capacity_bytes and source.store.vsan["vsan-osa"].health  # health and space read
        lines = [r.getMessage() for r in caplog.records if "answer_too_large" in r.getMessage()]
        assert len(lines) == 2 and {"vsan-osa", "vsan-esa"} == {line.split("cluster ")[1].split(":")[0] for line in lines}, lines
    finally:
        source.client.close()


@pytest_integration
def test_a_hanging_vsan_endpoint_shows_the_cluster_down_within_one_call_timeout(source, proxy, caplog):
    """Today ~60 s of nothing: six calls timed out one after the other. One deadline covers the
    round: at 3 s (the call timeout) every cluster is down, every call not answered failed once."""
    proxy.slow("/vsanHealth", 30.0)
    timeout = source.config.timeout
    with caplog.at_level(logging.WARNING, logger="exporter.vsan.source"):
        started = time.monotonic()
        source.collect()
        took = time.monotonic() - started
    proxy.slow(None)
    assert took < timeout + 1.0, f"{took:.1f}s for a {timeout:g}s call timeout"
    for name, esa in (("vsan-osa", False), ("vsan-esa", True)):
        record = source.store.health[("vsan", name)]
        calls = {f"perf:{kind}" for kind in perf.entity_types(esa)} | {"health", "space", "resync"}
        assert record.up == 0 and record.errors == dict.fromkeys(calls, 1), record.errors
        assert record.durations["collection"] < timeout + 1.0
    lines = [r.getMessage() for r in caplog.records if "vsan-osa failed" in r.getMessage()]
    assert 1 <= len(lines) <= 2 and any("deadline" in line for line in lines), lines
    text = render(vsan_collector.collect(source.store)).decode()
    assert 'esxi_vsan_up{cluster="vsan-osa"} 0.0' in text


@pytest_integration
def test_a_hanging_vsan_endpoint_costs_a_discovery_one_call_timeout(source, proxy):
    """The ESA disks' QueryVsanManagedDisks goes to /vsanHealth: when it hangs, the first ESA host's
    call times out (counted, managed_disks) and the other ESA hosts do not wait for it again; every
    ESA disk is named by QueryDisksForVsan on /sdk all the same."""
    before = {key: disk.uuid for c in source.clusters if c.esa for key, disk in c.disks.items()}
    assert len(before) == 4
    proxy.slow("/vsanHealth", 30.0)
    timeout = source.config.timeout
    try:
        started = time.monotonic()
        assert source.discover()
        took = time.monotonic() - started
    finally:
        proxy.slow(None)
    assert timeout <= took < timeout + 1.5, f"{took:.1f}s for a {timeout:g}s call timeout and two ESA hosts"
    (esa,) = [c for c in source.clusters if c.esa]
    assert {key: disk.uuid for key, disk in esa.disks.items()} == before
    ((call, host),) = esa.join_faults  # the first ESA host asked, whichever the answer listed first
    assert call == "managed_disks" and host in {"esx31.lab.local", "esx32.lab.local"}
    assert source.cluster_errors("vsan-esa") == {"managed_disks": 1}


@pytest_integration
def test_the_label_length_given_bounds_entity_ids_and_states_through_the_wire(proxy, tmp_path, caplog):
    """--limits.max-label-length (VsanSource's max_label, as exporter.app passes it): an entity id and
    a health state of 110 characters are refused at 100 and taken at the default 128."""
    entity = f"<returnval><entityRefId>virtual-machine:{'x' * 95}</entityRefId><sampleInfo></sampleInfo></returnval>"
    state = "a" * 110
    proxy.rewrite(
        "VsanPerfQueryPerf",
        lambda body: body.replace(b"</VsanPerfQueryPerfResponse>", entity.encode() + b"</VsanPerfQueryPerfResponse>"),
    )
    extra = f"<objectHealthDetail><numObjects>5</numObjects><health>{state}</health></objectHealthDetail>".encode()
    proxy.rewrite("VsanQueryVcClusterHealthSummary", lambda body: body.replace(b"<objectHealth>", b"<objectHealth>" + extra))
    seen = {}
    for max_label in (100, refused.MAX_LABEL):
        (tmp_path / str(max_label)).mkdir()
        vsan = _vsan_source(proxy, tmp_path / str(max_label), max_label=max_label)
        try:
            with caplog.at_level(logging.WARNING, logger="exporter.vsan.source"):
                caplog.clear()
                vsan.collect()
            record = vsan.store.health[("vsan", "vsan-osa")]
            seen[max_label] = (dict(record.dropped), record.up, [r.getMessage() for r in caplog.records], _exposition(vsan.store))
        finally:
            vsan.client.close()
    calls = seen[refused.MAX_LABEL][0].get("unknown_entity", 0)  # the entity rides on every perf answer
    dropped, up, lines, series = seen[100]
    assert calls >= 1 and up == 1 and dropped == {"label_too_long": calls + 1}, (calls, dropped)  # + the state
    assert any("entityRefId" in line and "over 100 characters (label_too_long" in line for line in lines), lines
    assert any("objectHealthDetail, health" in line and "over 100 characters" in line for line in lines), lines
    assert all(len(value) <= 100 for _, labels, _ in series for value in labels.values())
    assert any(name == "esxi_vsan_host_writes_per_second" for name, _, _ in series)  # the real entities are read
    dropped, up, lines, series = seen[refused.MAX_LABEL]
    assert up == 1 and dropped == {"unknown_entity": calls}, dropped  # within the bound: only not asked for
    assert ("esxi_vsan_objects", {"cluster": "vsan-osa", "state": state}) in [(n, labels) for n, labels, _ in series]
