"""Fuzzing the vSAN readers with hypothesis (issue 37): VsanPerfQueryPerf answers (CSV values,
sampleInfo, metricsCollectInterval, entity ids) through the streaming reader, and the health,
space and resync answers through theirs. Whatever comes, the only exceptions are the reader's own
(an answer refused, XML that does not parse), every value reaching the exposition is finite and
in range (not negative, a ratio at most 1, the sample interval 1 s to a day), and every label is
at most 128 characters.

The corpus in tests/fuzz/vsan/ is replayed first: inputs that made each refusal reason appear
(written by `python3 -m tests.unit.test_vsan_fuzz N`: N inputs per target tried) and every input that ever failed here
(written by the fuzz test itself, as `crash-<hash>.xml|json`, before it reports the failure).
FUZZ_EXAMPLES sets the inputs per target (default 100).
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace
from xml.sax.saxutils import escape

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exporter.collectors import vsan as vsan_collector
from exporter.collectors.textformat import render
from exporter.store import model as m
from exporter.store.store import Store
from exporter.vsan import health, perf, perfcsv, refused
from exporter.vsan import metrics as vm
from exporter.vsphere import xmlguard

CORPUS = Path(__file__).resolve().parents[1] / "fuzz" / "vsan"
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "100"))
FUZZ = settings(
    max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
RATIOS = {metric.field for metrics in vm.METRICS.values() for metric in metrics if metric.ratio}
NAMES = perfcsv.Names(
    hosts={"n1": "esx1", "n2": "esx2"},
    disk_groups={"c1": ("esx1", "naa.c1")},
    disks={"c1": ("esx1", "naa.c1"), "d1": ("esx1", "naa.d1")},
    vms={"v1": "db01", "v2": "web01"},
)
UUIDS = {
    vm.CLUSTER: ["52aa"],
    vm.HOST: ["n1", "n2"],
    vm.DISK_GROUP: ["c1"],
    vm.CACHE_DISK: ["c1"],
    vm.CAPACITY_DISK: ["d1"],
    vm.VM: ["v1", "v2"],
}
T0 = perfcsv.parse_time("2026-11-25 15:20:00")


# --- what must hold ------------------------------------------------------------------------
def _exposition_is_sound(store: Store) -> None:
    for line in render(vsan_collector.collect(store)).decode().split("\n"):  # only \n ends a line (not \x85)
        if not line or line.startswith("#"):
            continue
        head, _, number = line.rpartition(" ")
        value = float(number)
        assert math.isfinite(value), line
        assert value >= 0 or head.startswith("esxi_vsan_health_timestamp"), line
        for label in head.split('="')[1:]:
            assert len(label.split('"')[0]) <= refused.MAX_LABEL, line[:300]


def check_perf(answer: bytes) -> dict[str, int]:
    """Read one VsanPerfQueryPerf answer as the source does; the reasons counted."""
    dropped = refused.Dropped()
    try:
        rows = perf.read_answer(xmlguard.iter_answer(io.BytesIO(answer)), NAMES, dropped)
    except (xmlguard.AnswerRefused, ET.ParseError):
        return {"refused_answer": 1}
    times = sorted({t for row in rows for t in row.times if t is not None})
    for stamp in times[-3:]:
        sample = perfcsv.sample_at(rows, stamp, NAMES, dropped)
        assert refused.INTERVAL_MIN <= sample.interval <= refused.INTERVAL_MAX, sample.interval
        for stats in (
            sample.cluster,
            *sample.hosts.values(),
            *sample.disk_groups.values(),
            *sample.disks.values(),
            *sample.vms.values(),
        ):
            for field, value in stats.items():
                assert isinstance(value, float) and math.isfinite(value) and value >= 0, (field, value)
                assert field not in RATIOS or value <= 1, (field, value)
        store = Store()
        store.set_vsan(m.VsanCluster(name="c", sample=sample), origin="vc")
        _exposition_is_sound(store)
    for reason, count in dropped.items():
        assert isinstance(count, int) and count > 0, (reason, count)
    assert perfcsv.newest_complete(rows, T0 - 1, T0 + 86400 * 365) is None or rows
    return dict(dropped)


def check_summaries(doc: dict) -> dict[str, int]:
    """Apply one health summary, space report and resync summary as the source does."""
    cluster, dropped = m.VsanCluster(name="c"), refused.Dropped()
    summary = SimpleNamespace(
        overallHealth=doc.get("overallHealth"),
        timestamp=None,
        objectHealth=SimpleNamespace(
            objectHealthDetail=[SimpleNamespace(health=h, numObjects=n) for h, n in doc.get("objects", [])]
        ),
    )
    health.apply_summary(cluster, summary, dropped)
    health.apply_space(cluster, SimpleNamespace(**doc.get("space", {"totalCapacityB": None, "freeCapacityB": None})), dropped)
    resync = {"totalBytesToSync": None, "totalObjectsToSync": None, "totalRecoveryETA": None} | doc.get("resync", {})
    health.apply_resync(cluster, SimpleNamespace(**resync), dropped)
    assert len(cluster.health) <= refused.MAX_LABEL
    for state, count in cluster.objects.items():
        assert len(state) <= refused.MAX_LABEL and count >= 0 and math.isfinite(float(count)), (state, count)
    for value in (
        cluster.capacity_bytes,
        cluster.free_bytes,
        cluster.resync_bytes,
        cluster.resync_objects,
        cluster.resync_eta_seconds,
    ):
        assert value is None or (isinstance(value, float) and math.isfinite(value) and value >= 0), value
    store = Store()
    store.set_vsan(cluster, origin="vc")
    _exposition_is_sound(store)
    return dict(dropped)


# --- inputs --------------------------------------------------------------------------------
_NUMBER_TEXT = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(10**420), max_value=10**420).map(str),
    st.sampled_from(
        ["", " ", "1e400", "-1e400", "1e-320", "inf", "-inf", "nan", "NaN", "0x10", "1_000", "١٢", "-0", "+5", "1e308"]
    ),
    st.text(max_size=12),
)
_TIME_TEXT = st.one_of(
    st.integers(min_value=-3, max_value=3).map(lambda n: perfcsv.format_time(T0 + 300 * n)),
    st.sampled_from(["", "2026-13-45 99:99:99", "yesterday", "2026-11-25T15:20:00Z", "9999-12-31 23:59:59"]),
    st.text(max_size=20),
)


@st.composite
def _entity(draw) -> str:
    kind = draw(st.one_of(st.sampled_from(sorted(vm.METRICS)), st.text(max_size=20)))
    uuid = draw(st.one_of(st.sampled_from(UUIDS.get(kind, ["x"])), st.text(max_size=8), st.just("u" * 300)))
    times = draw(st.lists(_TIME_TEXT, max_size=5))
    labels = sorted(vm.BY_LABEL.get(kind, {})) or ["iopsRead"]
    series = []
    for _ in range(draw(st.integers(min_value=0, max_value=4))):
        label = draw(st.one_of(st.sampled_from(labels), st.text(max_size=10)))
        cells = draw(st.lists(_NUMBER_TEXT, min_size=max(0, len(times) - 1), max_size=len(times) + 1))
        interval = draw(st.one_of(st.none(), st.just("300"), _NUMBER_TEXT))
        metric = f"<label>{escape(label)}</label>" + (
            "" if interval is None else f"<metricsCollectInterval>{escape(interval)}</metricsCollectInterval>"
        )
        series.append(f"<value><metricId>{metric}</metricId><values>{escape(','.join(cells))}</values></value>")
    return f"<returnval><entityRefId>{escape(kind)}:{escape(uuid)}</entityRefId><sampleInfo>{escape(','.join(times))}</sampleInfo>{''.join(series)}</returnval>"


_ANSWERS = st.lists(_entity(), max_size=6).map(
    lambda entities: (
        '<?xml version="1.0" encoding="UTF-8"?><soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/">'
        f'<soapenv:Body><VsanPerfQueryPerfResponse xmlns="urn:vsan">{"".join(entities)}</VsanPerfQueryPerfResponse></soapenv:Body></soapenv:Envelope>'
    ).encode("utf-8", "surrogatepass")
)
_COUNT = st.one_of(st.integers(min_value=-(10**400), max_value=10**400), st.integers(min_value=-5, max_value=10**6), st.none())
_AMOUNT = st.one_of(_COUNT, st.floats(allow_nan=True, allow_infinity=True))
_SUMMARIES = st.fixed_dictionaries(
    {
        "overallHealth": st.one_of(st.none(), st.sampled_from(["green", "yellow", "red", "r" * 700]), st.text(max_size=200)),
        "objects": st.lists(
            st.tuples(st.one_of(st.sampled_from(["healthy", "datamove", "a" * 700]), st.text(max_size=200)), _COUNT), max_size=6
        ),
        "space": st.fixed_dictionaries({"totalCapacityB": _AMOUNT, "freeCapacityB": _AMOUNT}),
        "resync": st.fixed_dictionaries(
            {"totalBytesToSync": _AMOUNT, "totalObjectsToSync": _AMOUNT, "totalRecoveryETA": _AMOUNT}
        ),
    }
)


# --- the corpus, replayed ------------------------------------------------------------------
def _corpus(suffix: str) -> list[Path]:
    return sorted(CORPUS.glob(f"*.{suffix}"))


def _load(path: Path) -> dict:
    """A summaries file: JSON, with numbers too large for JSON's readers as {"int": "digits"}."""
    return json.loads(path.read_text(), object_hook=lambda d: int(d["int"]) if set(d) == {"int"} else d)


def _dump(doc: dict) -> str:
    def big(value):
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2**63:
            return {"int": str(value)}
        if isinstance(value, float) and not math.isfinite(value):
            return {"float": repr(value)}
        if isinstance(value, dict):
            return {k: big(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [big(v) for v in value]
        return value

    return json.dumps(big(doc), sort_keys=True, ensure_ascii=True)


def _floats(doc):
    if isinstance(doc, dict):
        return float(doc["float"]) if set(doc) == {"float"} else {k: _floats(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_floats(v) for v in doc]
    return doc


@pytest.mark.parametrize("path", _corpus("xml"), ids=lambda p: p.name)
def test_the_perf_corpus_reads_within_bounds(path):
    check_perf(path.read_bytes())


@pytest.mark.parametrize("path", _corpus("json"), ids=lambda p: p.name)
def test_the_summaries_corpus_reads_within_bounds(path):
    check_summaries(_floats(_load(path)))


def test_the_corpus_covers_every_refusal_reason():
    seen: set[str] = set()
    for path in _corpus("xml"):
        seen |= set(check_perf(path.read_bytes()))
    for path in _corpus("json"):
        seen |= set(check_summaries(_floats(_load(path))))
    expected = {"bad_value", "negative", "too_large", "out_of_range", "bad_interval", "label_too_long", "length_mismatch"}
    expected |= {"bad_timestamp", "bad_entity", "unknown_entity", "refused_answer"}
    assert expected <= seen, sorted(expected - seen)


# --- fuzzing, every failure kept -----------------------------------------------------------
def _kept(data, suffix: str, check):
    """Run check(data); on a failure write the input to the corpus first."""
    try:
        return check(data)
    except BaseException:
        text = data if isinstance(data, bytes) else _dump(data).encode()
        (CORPUS / f"crash-{hashlib.sha256(text).hexdigest()[:12]}.{suffix}").write_bytes(text)
        raise


@FUZZ
@given(_ANSWERS)
def test_fuzzed_perf_answers_stay_within_bounds(answer):
    _kept(answer, "xml", check_perf)


@FUZZ
@given(_SUMMARIES)
def test_fuzzed_summaries_stay_within_bounds(doc):
    _kept(doc, "json", check_summaries)


def grow(examples: int) -> int:
    """Add to the corpus the inputs that make a set of reasons not seen in it yet."""
    seen = {frozenset(check_perf(p.read_bytes())) for p in _corpus("xml")}
    seen |= {frozenset(check_summaries(_floats(_load(p)))) for p in _corpus("json")}
    added = 0

    def keep(data, suffix, check):
        nonlocal added
        reasons = frozenset(check(data))
        if reasons not in seen:
            seen.add(reasons)
            text = data if isinstance(data, bytes) else _dump(data).encode()
            (CORPUS / f"{suffix}-{hashlib.sha256(text).hexdigest()[:12]}.{suffix}").write_bytes(text)
            added += 1

    grown = settings(FUZZ, max_examples=examples)
    grown(given(_ANSWERS)(lambda answer: keep(answer, "xml", check_perf)))()
    grown(given(_SUMMARIES)(lambda doc: keep(doc, "json", check_summaries)))()
    return added


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    CORPUS.mkdir(parents=True, exist_ok=True)
    print(f"{grow(count)} input(s) added to {CORPUS}")
