"""The vSphere source's pure parts: settings, unit conversion, counter resolution by name,
chunking under maxQueryMetrics, CSV parsing, and ingesting each 20 s sample once."""

from __future__ import annotations

import datetime as dt
import http.client
import random
import ssl
import sys
import xml.etree.ElementTree as ET

import pytest
from pyVmomi import vim

from exporter.configuration.config import ConfigError
from exporter.store import model as m
from exporter.vsphere import discovery, mapping, perf, settings
from exporter.vsphere.source import VsphereTarget


def _settings(**overrides):
    base = {"vsphere.url": None, "vsphere.user": None, "vsphere.password_file": None, "vsphere.targets": None}
    base.update(overrides)
    return base


# --- settings --------------------------------------------------------------------------------
def test_one_url_target_is_named_after_its_host():
    [target] = settings.targets(
        _settings(**{"vsphere.url": "vc.example.com", "vsphere.user": "ro", "vsphere.password_file": "/run/secrets/vc"})
    )
    assert (target.name, target.url, target.host, target.port, target.path) == (
        "vc.example.com",
        "https://vc.example.com",
        "vc.example.com",
        443,
        "/sdk",
    )
    assert target.insecure is False  # TLS verification is on unless asked otherwise


def test_every_bad_target_entry_is_reported_at_once():
    section = {
        "good": {"url": "https://vc1:8443/sdk", "user": "ro", "password_file": "/p"},
        "nourl": {"user": "ro", "password_file": "/p"},
        "typo": {"url": "https://vc2", "usr": "ro", "password_file": "/p", "timeout": "soon"},
        "creds": {"url": "https://ro:secret@vc3", "user": "ro", "password_file": "/p"},
    }
    with pytest.raises(ConfigError) as err:
        settings.targets(_settings(**{"vsphere.targets": section}))
    problems = err.value.problems
    assert "vsphere.targets.nourl.url: missing" in problems
    assert any(p.startswith("vsphere.targets.typo.usr: unknown setting (known: ") for p in problems)
    assert any(p.startswith("vsphere.targets.typo.timeout: not a duration") for p in problems)
    assert "vsphere.targets.creds.url: credentials do not belong in the URL (use user and password_file)" in problems
    assert "vsphere target 'typo': no user (--vsphere.user or user:)" in problems
    assert not any("secret" in p for p in problems)  # the password in the bad URL is never echoed


def test_named_targets_inherit_the_top_level_defaults():
    section = {"esx": {"url": "https://esx01", "insecure": "true"}}
    [target] = settings.targets(
        _settings(**{"vsphere.targets": section, "vsphere.user": "ro", "vsphere.password_file": "/p", "vsphere.timeout": 5.0})
    )
    assert (target.name, target.user, target.password_file, target.insecure, target.timeout) == ("esx", "ro", "/p", True, 5.0)


# --- units -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, raw, interval, expected",
    [
        ("disk.deviceLatency.average", 62, 20, 0.062),  # ms -> s
        ("disk.read.average", 1000, 20, 1024000.0),  # KiB/s -> B/s
        ("disk.commandsAveraged.average", 1500, 20, 1500.0),  # already per second
        ("disk.scsiReservationConflicts.summation", 40, 20, 2.0),  # a count over 20 s -> per second
        ("cpu.usage.average", 2350, 20, 0.235),  # hundredths of a percent -> ratio
        ("cpu.usagemhz.average", 5640, 20, 5.64e9),  # MHz -> Hz
        ("storageAdapter.outstandingIOs.average", 12, 20, 12.0),
    ],
)
def test_units_are_converted_once_here(name, raw, interval, expected):
    assert mapping.convert(mapping.COUNTERS[name], raw, interval) == pytest.approx(expected)


SIOC_FIELDS = {
    m.SIOC_NORMALIZED_LATENCY,
    m.SIOC_QUEUE_DEPTH,
    m.SIOC_ACTIVE,
    m.VM_OBSERVED_LATENCY,
    m.SIOC_IOPS,
    m.SIOC_READ_IOPS,
    m.SIOC_WRITE_IOPS,
    m.SIOC_OUTSTANDING_READS,
    m.SIOC_OUTSTANDING_WRITES,
}


def test_every_counter_lands_on_a_model_field():
    fields = (
        set(m.RATE_FIELDS)
        | set(m.LATENCY_FIELDS)
        | set(m.DIRECTIONAL_LATENCY_WEIGHT)
        | {m.QUEUE_DEPTH, m.ACTIVE, m.QUEUED, m.CPU_UTIL, mapping.CPU_HERTZ, m.OUTSTANDING_READS, m.OUTSTANDING_WRITES}
        | SIOC_FIELDS
    )
    assert {c.field for c in mapping.COUNTERS.values()} <= fields
    assert {c.family for c in mapping.COUNTERS.values()} == {
        "luns",
        "adapters",
        "paths",
        "cpus",
        mapping.DATASTORES,
        mapping.HOST,
        mapping.VDISKS,
    }


# --- counter resolution -------------------------------------------------------------------------
def test_counters_are_resolved_by_name_whatever_their_keys():
    server = [
        (901, "disk.deviceLatency.average"),
        (7, "disk.deviceLatency.maximum"),
        (55, "cpu.usage.average"),
        (56, "cpu.usage.none"),
    ]
    resolved = perf.resolve(server)
    assert {k: n for k, (n, _) in resolved.by_key.items()} == {901: "disk.deviceLatency.average", 55: "cpu.usage.average"}
    assert "disk.scsiReservationConflicts.summation" in resolved.missing
    # An answer writes a key as text: read as the same counter however it is written, or as none.
    assert resolved.entry("901") == resolved.entry("0901") == resolved.by_key[901]
    assert [resolved.entry(key) for key in ("7", "-1", "--1", "x")] == [None] * 4


# --- chunking ------------------------------------------------------------------------------------
class _Host:
    def __init__(self, name):
        self.name = name
        self.ref = vim.HostSystem(name)


def test_queries_are_chunked_under_max_query_metrics():
    hosts = [_Host(f"host-{i}") for i in range(7)]
    specs = perf.query_specs(hosts, list(range(43)), {}, now=1e9)
    calls = perf.chunk(specs, 100)
    assert all(sum(len(s.counters) for s in call) <= 100 for call in calls)
    ids_per_host = {}
    for call in calls:
        for spec in call:
            ids_per_host[spec.entity._moId] = ids_per_host.get(spec.entity._moId, 0) + len(spec.counters)
    assert ids_per_host == {f"host-{i}": 43 for i in range(7)}  # a host split over calls loses nothing
    assert len(calls) == 4  # 301 ids in calls of at most 100
    assert perf.chunk(specs, 0) == [specs]  # no limit (standalone ESXi): one call


def test_queries_are_chunked_under_the_series_their_answers_hold():
    # Instance "*": a metric id answers one series per instance, so a host with many paths fills
    # an answer with few ids. 'big' expects 180 series, more than one call may hold.
    big = perf.QuerySpec(_Host("big").ref, tuple(range(6)), series=(30, 30, 30, 30, 30, 30))
    small = [perf.QuerySpec(_Host(f"small-{i}").ref, (0, 1), series=(5, 5)) for i in range(3)]
    huge = perf.QuerySpec(_Host("huge").ref, (7,), series=(150,))  # one counter over the limit
    calls = perf.chunk([big, *small, huge], 256, max_series=100)
    assert [[(s.entity._moId, s.counters) for s in call] for call in calls] == [
        [("big", (0, 1, 2))],
        [("big", (3, 4, 5)), ("small-0", (0, 1))],
        [("small-1", (0, 1)), ("small-2", (0, 1))],
        [("huge", (7,))],  # cannot be split below one counter: asked alone
    ]
    assert all(sum(sum(s.expected()) for s in call) <= 100 for call in calls[:3])
    assert [s.series for s in calls[1]] == [(30, 30, 30), (5, 5)]  # the expectations follow their counters
    # Both limits at once: 4 ids per call.
    assert [len(call) for call in perf.chunk(small, 4, max_series=100)] == [2, 1]


def test_each_spec_expects_the_hosts_discovered_instances():
    from exporter.store import model as m
    from exporter.vsphere import discovery

    inv = m.Inventory(
        host="esx01",
        luns={"naa.1": m.LunConfig(), "naa.2": m.LunConfig()},
        adapters={"vmhba1": m.AdapterConfig(type="fc"), "vmk1": m.AdapterConfig(type="nfs")},
        paths={f"vmhba1:C0:T{t}:L{lun}": m.PathConfig() for t in range(2) for lun in range(2)},
    )
    topo = discovery.HostTopology(
        ref=vim.HostSystem("host-1"), name="esx01", inventory=inv, datastores=["uuid-a"], cpu_threads=48
    )
    keys = [1, 2, 3, 4, 5, 6]
    families = {1: "luns", 2: "adapters", 3: "paths", 4: "datastores", 5: "cpus", 6: "host"}
    (spec,) = perf.query_specs([topo], keys, {}, now=1e9, families=families)
    # instances + the host aggregate; the NFS vmknic is no storageAdapter instance
    assert spec.series == (3, 2, 5, 2, 49, 1)


def test_a_known_host_asks_only_for_samples_after_its_newest():
    since = 1_700_000_000.0
    new, known, stale = perf.query_specs(
        [_Host("a"), _Host("b"), _Host("c")], [1], {"b": since, "c": since - 3600}, now=since + 20
    )
    assert (new.max_sample, new.start) == (1, None)
    assert (known.start, known.max_sample) == (since, None)
    assert (stale.max_sample, stale.start) == (1, None)  # too far behind: the newest sample only


def test_the_hand_written_query_perf_request_is_what_pyvmomi_would_send():
    """soap.query_perf_request splices the specs into pyVmomi's envelope as text; the document
    must be the one pyVmomi serializes from the equivalent data objects."""
    from pyVmomi import SoapStubAdapter

    from exporter.vsphere import soap

    stub = SoapStubAdapter(host="127.0.0.1", port=1, version="vim.version.version13")  # never connects
    manager = vim.PerformanceManager("PerfMgr", stub)
    hosts = [vim.HostSystem(f"host-{n}", stub) for n in (7, 9, 11, 12)]
    since = 1_700_000_000.25
    ours = [
        perf.QuerySpec(hosts[0], (2, 6, 131091), start=since),
        perf.QuerySpec(hosts[1], (2,), max_sample=1),
        perf.QuerySpec(hosts[2], (2, 6), start=since),  # the same start time: written once, used twice
        perf.QuerySpec(hosts[3], (2,), start=since + 20),
    ]
    theirs = [
        vim.PerformanceManager.QuerySpec(
            entity=spec.entity,
            intervalId=20,
            format="csv",
            maxSample=spec.max_sample,
            startTime=dt.datetime.fromtimestamp(spec.start, dt.timezone.utc) if spec.start else None,
            metricId=[vim.PerformanceManager.MetricId(counterId=k, instance="*") for k in spec.counters],
        )
        for spec in ours
    ]
    expected = stub.SerializeRequest(manager, soap._QUERY_PERF, [theirs])
    written = soap.query_perf_request(manager, ours, 20)
    assert ET.canonicalize(written.decode()) == ET.canonicalize(expected.decode())
    assert written.count(b"<startTime>2023-11-14T22:13:20.25Z</startTime>") == 2
    assert b"<startTime>2023-11-14T22:13:40.25Z</startTime>" in written


# --- CSV parsing -------------------------------------------------------------------------------
def test_csv_samples_are_put_oldest_first_and_gaps_kept_apart():
    result = perf.HostSeries()
    perf.merge_csv(
        result,
        "20,2026-01-01T00:00:40Z,20,2026-01-01T00:00:20Z",
        [("1", "naa.1", "5,3"), ("2", "naa.1", "-1,7"), ("3", "naa.1", ""), ("4", "naa.1", "9")],
    )
    t20 = dt.datetime(2026, 1, 1, 0, 0, 20, tzinfo=dt.timezone.utc).timestamp()
    assert result.stamps == [(t20, 20), (t20 + 20, 20)]
    assert result.table() == {("1", "naa.1"): [3.0, 5.0], ("2", "naa.1"): [7.0, None]}  # -1 is "no value"
    assert len(result) == 2
    assert result.dropped == {"length_mismatch": 1}  # a series shorter than its samples cannot be placed


# --- each sample once ---------------------------------------------------------------------------
def test_each_20s_sample_is_ingested_once():
    target = VsphereTarget(settings.TargetConfig(name="t", url="https://vc", user="u", password_file="/p"))
    topo = discovery.HostTopology(ref=vim.HostSystem("host-1"), name="esx01", inventory=m.Inventory("esx01"))
    resolved = perf.resolve([(10, "disk.commandsAveraged.average")])
    t0 = 1_700_000_000.0

    def answer(*stamps):
        return perf.HostSeries(
            stamps=[(t, 20) for t in stamps], keys=["10"], instances=["naa.1"], columns=[[100.0] for _ in stamps]
        )

    target._ingest_host(topo, answer(t0), resolved)
    target._ingest_host(topo, answer(t0, t0 + 20), resolved)  # overlaps: t0 again
    target._ingest_host(topo, answer(t0 + 20), resolved)  # nothing new
    counters = target.store.hosts["esx01"].objects["luns"]["naa.1"].counters
    assert counters[m.COMMANDS] == 100.0 * 20 * 2
    assert target.samples == {"esx01": 2}
    assert target.last_timestamp == {"esx01": t0 + 20}


def test_fc_speed_is_bits_per_second_and_small_values_are_gbit():
    assert discovery.link_speed_bytes("fc", "16000000000") == 2e9
    assert discovery.link_speed_bytes("fc", "8") == 1e9
    assert discovery.link_speed_bytes("block", "") is None


def test_query_perf_response_is_read_by_the_fast_parser():
    from exporter.vsphere import soap

    body = b"""<?xml version="1.0" encoding="UTF-8"?>
<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<soapenv:Body><QueryPerfResponse xmlns="urn:vim25"><returnval xsi:type="PerfEntityMetricCSV">
<entity type="HostSystem">host-10</entity><sampleInfoCSV>20,2026-01-01T00:00:20Z</sampleInfoCSV>
<value><id><counterId>2</counterId><instance/></id><value>2350</value></value>
<value><id><counterId>523</counterId><instance>fc.20:21-fc.50:51-naa.6&amp;1</instance></id><value>14400</value></value>
</returnval><returnval xsi:type="PerfEntityMetricCSV"><entity type="HostSystem">host-11</entity></returnval>
</QueryPerfResponse></soapenv:Body></soapenv:Envelope>"""
    first, second = soap.parse_response(ET.fromstring(body))
    assert (first.entity, first.sample_info) == ("host-10", "20,2026-01-01T00:00:20Z")
    assert first.series == [("2", "", "2350"), ("523", "fc.20:21-fc.50:51-naa.6&1", "14400")]  # keys as written
    assert (second.entity, second.sample_info, second.series) == ("host-11", "", [])  # nothing newer: no samples
    # The scan that reads answers without building a tree reads them the same, or not at all.
    scanned = soap.scan_response(body)
    assert [(e.entity, e.sample_info, e.series) for e in scanned] == [
        (e.entity, e.sample_info, e.series) for e in (first, second)
    ]
    other = body.replace(b"<value><id><counterId>2</counterId>", b"<value>\n<id><counterId>2</counterId>")
    assert soap.scan_response(other) is None  # a series in another form: the XML parser's job
    assert [e.series for e in soap.parse_response(ET.fromstring(other))][0][0] == ("2", "", "2350")


def test_the_servers_own_query_limit_wins_when_lower():
    assert perf.query_limit(256, 64) == 64
    assert perf.query_limit(256, None) == 256
    assert perf.query_limit(256, -1) == 256  # vCenter: -1 is no limit
    assert perf.query_limit(0, 100) == 100
    assert perf.query_limit(0, None) == 0


# --- virtual disks ---------------------------------------------------------------------------------
def test_virtual_disk_counters_convert_here():
    assert mapping.convert(mapping.COUNTERS["virtualDisk.read.average"], 12800, 20) == 12800 * 1024
    assert mapping.convert(mapping.COUNTERS["virtualDisk.totalWriteLatency.average"], 12, 20) == pytest.approx(0.012)
    assert mapping.convert(mapping.COUNTERS["virtualDisk.readOIO.latest"], 6, 20) == 6
    assert "virtualDisk.commandsAveraged.average" not in mapping.COUNTERS  # vSphere has none


def test_vm_totals_sum_rates_and_weigh_each_direction():
    disks = {
        ("db01", "scsi0:0"): {m.READS: 400.0, m.WRITES: 200.0, m.GAVG_READ: 0.008, m.GAVG_WRITE: 0.012, m.OUTSTANDING_READS: 6.0},
        ("db01", "scsi0:1"): {m.READS: 100.0, m.WRITES: 0.0, m.GAVG_READ: 0.003, m.GAVG_WRITE: 0.0, m.OUTSTANDING_READS: 1.0},
        ("idle", "scsi0:0"): {m.READS: 0.0, m.WRITES: 0.0, m.GAVG_READ: 0.002, m.GAVG_WRITE: 0.004},
        ("idle", "scsi0:1"): {m.READS: 0.0, m.WRITES: 0.0, m.GAVG_READ: 0.0, m.GAVG_WRITE: 0.0},
    }
    for stats in disks.values():
        mapping.finish_vdisk(stats)
    assert disks[("db01", "scsi0:0")][m.COMMANDS] == 600
    totals = mapping.vm_totals(disks)
    assert totals["db01"] == pytest.approx(
        {
            m.READS: 500,
            m.WRITES: 200,
            m.COMMANDS: 700,
            m.GAVG_READ: (0.008 * 400 + 0.003 * 100) / 500,
            m.GAVG_WRITE: 0.012,  # the disk with no writes weighs nothing
            m.OUTSTANDING_READS: 7,
        }
    )
    assert totals["idle"][m.GAVG_READ] == pytest.approx(0.001)  # no I/O that way: the plain mean
    assert m.OUTSTANDING_READS not in totals["idle"]  # a field a disk lacks is not made up


def test_vm_totals_are_each_field_summed_over_its_disks_in_order_to_the_last_bit():
    """The totals as the plain formula gives them, field by field and disk by disk, bit for bit
    and in the same field order (the exposition is byte-identical): random disks, some fields
    missing, some directions idle."""
    rng = random.Random(45)
    fields = [m.READS, m.WRITES, m.READ_BYTES, m.WRITTEN_BYTES, m.GAVG_READ, m.GAVG_WRITE, m.OUTSTANDING_READS]
    for _ in range(300):
        disks = {}
        for vm in ("a", "b", "c"):
            for disk in range(rng.randint(1, 4)):
                stats = {f: rng.choice([0.0, rng.uniform(0, 1e4), rng.uniform(0, 1e-3)]) for f in fields if rng.random() < 0.9}
                mapping.finish_vdisk(stats)
                disks[(vm, f"scsi0:{disk}")] = stats
        expected = {}
        for vm in ("a", "b", "c"):
            mine = [stats for (name, _), stats in disks.items() if name == vm]
            total = {f: sum(d[f] for d in mine) for f in mapping._SUMMED if all(f in d for d in mine)}
            for latency, weight in m.DIRECTIONAL_LATENCY_WEIGHT.items():
                if all(latency in d and weight in d for d in mine):
                    weights = sum(d[weight] for d in mine)
                    mean = sum(d[latency] * d[weight] for d in mine) / weights if weights > 0 else None
                    total[latency] = mean if mean is not None else sum(d[latency] for d in mine) / len(mine)
            expected[vm] = total
        totals = mapping.vm_totals(disks)
        assert totals == expected
        assert [list(t) for t in totals.values()] == [list(t) for t in expected.values()]


# --- the answer size cap (exporter/vsphere/xmlguard.py) ------------------------------------------
@pytest.mark.parametrize("text, expected", [("64MiB", 64 << 20), ("1GB", 10**9), ("4096", 4096), (1 << 20, 1 << 20)])
def test_the_answer_size_cap_takes_units(text, expected):
    from exporter.configuration import parsers

    assert parsers.size(text) == expected


@pytest.mark.parametrize("text", ["0", "-1MiB", "lots", "64Mb"])
def test_a_bad_answer_size_cap_is_refused(text):
    from exporter.configuration import parsers

    with pytest.raises(ValueError):
        parsers.size(text)


def test_the_answer_size_cap_reaches_every_target_and_the_guard():
    from exporter.vsphere import xmlguard
    from exporter.vsphere.client import Client

    section = {"a": {"url": "https://vc1"}, "b": {"url": "https://vc2"}}
    found = settings.targets(
        _settings(
            **{
                "vsphere.targets": section,
                "vsphere.user": "ro",
                "vsphere.password_file": "/p",
                "vsphere.max_answer_size": 1 << 20,
            }
        )
    )
    assert [t.max_answer_size for t in found] == [1 << 20, 1 << 20]
    try:
        Client(found[0])
        assert xmlguard._limit == 1 << 20
    finally:
        xmlguard.limit_answers(settings.TargetConfig(name="", url="").max_answer_size)
    assert xmlguard._limit == 256 << 20


def test_an_http_status_is_described_by_its_status():
    """vCenter answers 503 while vpxd restarts; pyVmomi raises HTTPException("503 Service
    Unavailable"): the status is the description (the soak logged "HTTP error: HTTPException")."""
    from exporter.vsphere.client import describe

    assert describe(http.client.HTTPException("503 Service Unavailable")) == "HTTP 503 Service Unavailable"
    assert describe(http.client.HTTPException("502  Bad\nGateway")) == "HTTP 502 Bad Gateway"  # one line
    assert describe(http.client.HTTPException("WaitForUpdatesEx answered HTTP 503")) == "WaitForUpdatesEx answered HTTP 503"
    assert describe(http.client.IncompleteRead(b"")) == "HTTP error: IncompleteRead"


@pytest.mark.parametrize(
    "error",
    [
        ConnectionResetError(104, "Connection reset by peer"),
        BrokenPipeError(32, "Broken pipe"),  # Python 3.13's failure on a kept-alive connection the server closed
        http.client.RemoteDisconnected("Remote end closed connection without response"),
        ssl.SSLEOFError(8, "EOF occurred in violation of protocol"),
    ],
)
def test_a_server_that_closed_the_connection_is_described_alike_on_every_python(error):
    from exporter.vsphere.client import describe

    assert describe(error) == "connection closed by the server"


def test_one_sample_answers_read_in_bulk_equal_the_series_by_series_reading():
    """The bulk reading of the common answer (one sample, every series one value) and the
    series-by-series one give the same series; an empty or longer series sends the whole answer
    the careful way."""
    info = "20,2026-01-01T00:00:20Z"
    plain = [("1", "naa.1", "5"), ("2", "naa.1", "-1"), ("1", "naa.2", "0.25")]
    bulk = perf.HostSeries()
    perf.merge_csv(bulk, info, plain)
    assert bulk.table() == {("1", "naa.1"): [5.0], ("2", "naa.1"): [None], ("1", "naa.2"): [0.25]}
    for odd in ([*plain, ("3", "naa.1", "")], [*plain, ("3", "naa.1", "1,2")]):
        careful = perf.HostSeries()
        perf.merge_csv(careful, info, odd)
        assert careful.table() == bulk.table()  # the odd series left out, the others as in bulk
    assert careful.dropped == {"length_mismatch": 1}
    again = perf.HostSeries()  # a split host's second piece adds to the first
    perf.merge_csv(again, info, plain[:1])
    perf.merge_csv(again, info, plain[1:])
    assert again.table() == bulk.table()
    assert bulk.keys[0] is sys.intern("1") and bulk.instances[2] is sys.intern("naa.2")  # held once


def test_a_vm_sample_newer_than_its_hosts_newest_is_read_next_time_not_counted_dropped():
    """A collection across a 20 s boundary: vCenter had t0+20 when the VMs were asked and not yet
    when their host was. That VM sample is not lost (the next collection asks the VM from the
    host's newest on), so it is not counted as time_mismatch; one inside the host's samples is."""
    from exporter.vsphere import vms

    target = VsphereTarget(settings.TargetConfig(name="t", url="https://vc", user="u", password_file="/p"))
    topo = discovery.HostTopology(ref=vim.HostSystem("host-1"), name="esx01", inventory=m.Inventory("esx01"))
    vm = vms.VmTopology(ref=vim.VirtualMachine("vm-1"), name="web01", path="/dc/vm/web01", host="host-1")
    resolved = perf.resolve([(10, "disk.commandsAveraged.average"), (20, "virtualDisk.readOIO.latest")])
    t0 = 1_700_000_000.0

    def answer(key, instance, *stamps):
        return perf.HostSeries(
            stamps=[(t, 20) for t in stamps], keys=[key], instances=[instance], columns=[[3.0] for _ in stamps]
        )

    target._ingest_host(topo, answer("10", "naa.1", t0), resolved, [(vm, answer("20", "scsi0:0", t0, t0 + 20))])
    assert target.dropped.get("time_mismatch", 0) == 0
    assert target.store.hosts["esx01"].objects["vdisks"][("web01", "scsi0:0")].gauges[m.OUTSTANDING_READS] == 3.0
    # the next collection: host and VM both from t0 on; then a VM sample between two host samples
    target._ingest_host(topo, answer("10", "naa.1", t0 + 20), resolved, [(vm, answer("20", "scsi0:0", t0 + 20))])
    assert target.dropped.get("time_mismatch", 0) == 0
    target._ingest_host(topo, answer("10", "naa.1", t0 + 40, t0 + 80), resolved, [(vm, answer("20", "scsi0:0", t0 + 60))])
    assert target.dropped["time_mismatch"] == 1
