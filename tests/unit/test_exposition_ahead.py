"""serve renders ahead: each change is rendered once in the background and every scrape gets the
newest complete render at once. These tests check what that cache may and may not serve: a new
body after a change (never the old one again once the new one is there), gzip and plain forms
of the same render, each /probe target its own body, and a scrape that never waits for a render
in progress. Nothing here is timed: waits poll for a state with a generous deadline."""

from __future__ import annotations

import dataclasses
import gzip
import threading
import time
import urllib.request

import pytest

from exporter.collectors.textformat import gauge
from exporter.esxtop import read_file
from exporter.serving import exposition as exposition_module
from exporter.serving.exposition import Exposition
from exporter.serving.http import MetricsServer
from exporter.store.store import Store
from tests.support.servers import CAPTURES

SAMPLES = list(read_file(CAPTURES / "esxi65-default-3samples.csv"))


def version_collector(store):
    """A family that shows the store version its body was rendered from."""
    family = gauge("esxi_test_store_version", "The store's version when rendered.")
    family.add("", float(store.version))
    yield family


def wait_for(condition, what: str, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g} s: {what}")
        time.sleep(0.02)


def get(port: int, path: str = "/metrics", gzipped: bool = False, method: str = "GET"):
    headers = {"Accept-Encoding": "gzip"} if gzipped else {}
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers, method=method)
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.headers, response.read()


def rendered_version(text: str) -> int:
    line = next(line for line in text.splitlines() if line.startswith("esxi_test_store_version "))
    return int(float(line.split()[1]))


def series(text: str) -> set[str]:
    """The sample lines, but the collectors' own durations (they differ from render to render)."""
    return {
        line
        for line in text.splitlines()
        if line and not line.startswith("#") and not line.startswith("esxi_scrape_collector_duration_seconds")
    }


@pytest.fixture
def served():
    """A store, its /metrics rendered ahead and two /probe targets on one store, served."""
    store, stop = Store(), threading.Event()
    for sample in SAMPLES:
        store.ingest(sample)
        for origin in ("vc-a", "vc-b"):
            store.ingest(dataclasses.replace(sample, host=f"{origin}-host"), origin=origin)
    extra = [("version", version_collector)]
    metrics = Exposition(store, extra=extra)
    probes = {origin: Exposition(store.view(origin), extra=extra) for origin in ("vc-a", "vc-b")}
    server = MetricsServer(metrics, "127.0.0.1:0", probes=probes)
    for exposition in (metrics, *probes.values()):
        exposition.start(stop)
    server.serve_in_thread()
    try:
        yield store, metrics, probes, server.address[1]
    finally:
        stop.set()
        server.shutdown()


def test_a_change_is_served_once_rendered_and_the_old_body_never_again(served):
    store, metrics, _, port = served
    before = get(port)[1].decode()
    assert rendered_version(before) == store.version
    store.ingest(dataclasses.replace(SAMPLES[-1], timestamp=SAMPLES[-1].timestamp + 5))
    wait_for(metrics.current, "the change rendered ahead")
    for gzipped in (True, False, True):  # no scrape after the render gets the old body, in either form
        headers, body = get(port, gzipped=gzipped)
        text = (gzip.decompress(body) if gzipped else body).decode()
        assert rendered_version(text) == store.version > rendered_version(before)


def test_gzip_and_plain_are_the_same_render_and_each_says_what_it_is(served):
    store, metrics, _, port = served
    get(port)
    wait_for(metrics.current, "rendered")
    headers, packed = get(port, gzipped=True)
    assert headers["Content-Encoding"] == "gzip" and int(headers["Content-Length"]) == len(packed)
    plain_headers, plain = get(port)
    assert plain_headers.get("Content-Encoding") is None and int(plain_headers["Content-Length"]) == len(plain)
    assert plain.startswith(b"# HELP")
    # /metrics appends the process's own metrics, read per scrape; the render before them is one
    unpacked = gzip.decompress(packed).decode()
    assert rendered_version(unpacked) == rendered_version(plain.decode())
    assert series(unpacked) - {line for line in series(unpacked) if line.startswith("process_")} == series(plain.decode()) - {
        line for line in series(plain.decode()) if line.startswith("process_")
    }
    head_headers, empty = get(port, method="HEAD")
    assert empty == b"" and int(head_headers["Content-Length"]) == len(plain)


def test_the_body_rendered_ahead_has_the_series_of_one_rendered_on_the_scrape(served):
    store, metrics, _, port = served
    get(port)
    wait_for(metrics.current, "rendered")
    ahead = get(port)[1].decode()
    on_the_scrape = Exposition(store, extra=[("version", version_collector)]).body().decode()
    assert series(ahead) == series(on_the_scrape)
    assert sum(1 for line in series(ahead) if line.startswith("esxi_lun_reads_total{")) > 0


def test_each_probe_target_gets_its_own_body_and_its_own_changes(served):
    store, _, probes, port = served
    first = {origin: get(port, f"/probe?target={origin}")[1].decode() for origin in probes}
    for origin, text in first.items():
        hosts = {line.split('host="')[1].split('"')[0] for line in series(text) if 'host="' in line}
        assert hosts == {f"{origin}-host"}, (origin, hosts)
    sample = dataclasses.replace(SAMPLES[-1], host="vc-a-host", timestamp=SAMPLES[-1].timestamp + 5)
    store.ingest(sample, origin="vc-a")
    wait_for(lambda: all(p.current() for p in probes.values()), "both probes rendered ahead")
    for origin in probes:
        text = get(port, f"/probe?target={origin}", gzipped=True)[1]
        text = gzip.decompress(text).decode()
        assert rendered_version(text) == store.version
        assert {line.split('host="')[1].split('"')[0] for line in series(text) if 'host="' in line} == {f"{origin}-host"}
    a_reads = [line for line in series(text) if line.startswith("esxi_lun_reads_total{")]
    assert a_reads  # vc-b's counters did not move; vc-a's did (checked through the version above)


def test_a_scrape_never_waits_for_a_render_in_progress(served):
    """The renderer is held inside a collector (the store lock with it) while a scrape comes: the
    scrape is answered with the last complete render; once let go, the next scrape gets the new."""
    store, metrics, _, port = served
    entered, release = threading.Event(), threading.Event()

    def held(_store):
        if hold:
            entered.set()
            assert release.wait(20)
        return []

    hold = False
    metrics.collectors.append(("held", held))
    old = get(port)[1].decode()  # asked for: rendered ahead from now on
    wait_for(metrics.current, "rendered")
    old = get(port)[1].decode()
    hold = True
    store.touch()
    assert entered.wait(20), "the renderer never started"
    text = get(port)[1].decode()  # answered while the render waits in `held`
    assert rendered_version(text) == rendered_version(old) < store.version
    hold = False
    release.set()
    wait_for(metrics.current, "the held render finished")
    assert rendered_version(get(port)[1].decode()) == store.version


def test_many_scrapes_of_one_version_cost_one_render_and_no_scrape_no_render(served, monkeypatch):
    store, metrics, probes, port = served
    renders = []
    real = exposition_module.render
    monkeypatch.setattr(exposition_module, "render", lambda families, **kw: renders.append(1) or real(families, **kw))
    get(port)
    wait_for(metrics.current, "rendered")
    count = len(renders)
    for _ in range(10):
        get(port, gzipped=True)
        get(port)
    assert len(renders) == count  # the probes, never asked for, rendered nothing either
    assert all(p._served is None for p in probes.values())


def test_a_source_waiting_to_store_a_sample_gets_the_lock_between_two_collectors_of_a_render():
    """A render of 2,500 hosts takes seconds; the collection that waited for the store lock all that
    time took 10-15 s of its 20 s. The lock is let go between collectors: a sample that waits for it
    while one collector renders is stored before the render's last collector runs (with the lock
    held over the whole render, only after the render)."""
    store = Store()
    started, stored, seen = threading.Event(), threading.Event(), []

    def first(_store):
        started.set()
        family = gauge("esxi_test_first", "First.")
        family.add("", 1.0)
        yield family

    def later(_store):
        seen.append(stored.is_set())
        return []

    def ingest():
        assert started.wait(10)
        store.touch()  # takes the store lock
        stored.set()

    writer = threading.Thread(target=ingest)
    writer.start()
    Exposition(store, [], extra=[("first", first)] + [(f"later{i}", later) for i in range(50)]).body()
    writer.join(10)
    assert stored.is_set() and any(seen), seen


@pytest.mark.parametrize(
    ("header", "gzipped"),
    [
        ("gzip", True),
        ("deflate, gzip;q=1.0, *;q=0.5", True),
        ("x-gzip", True),
        ("GZIP", True),
        ("gzip;q=0", False),
        ("gzip;q=0.0, identity", False),
        ("identity", False),
        ("", False),
        ("br, deflate", False),
        ("gzipped", False),
    ],
)
def test_gzip_is_served_only_to_a_request_that_takes_it(header, gzipped):
    from exporter.serving.http import accepts_gzip

    assert accepts_gzip(header) is gzipped


def test_a_request_that_refuses_gzip_gets_the_plain_text(served):
    _, _, _, port = served
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers={"Accept-Encoding": "gzip;q=0, identity"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.headers.get("Content-Encoding") is None
        assert response.read().startswith(b"# HELP")


def test_a_render_ahead_that_fails_is_logged_once_and_the_last_render_is_served_meanwhile(served, monkeypatch, caplog):
    import logging

    store, metrics, _, port = served
    get(port)
    wait_for(metrics.current, "rendered")
    before = get(port)[1]
    real, failures = exposition_module.render, []

    def broken(families, **kw):
        failures.append(1)
        raise MemoryError("no room for the body")

    monkeypatch.setattr(exposition_module, "MAX_DELAY", 0.05)
    with caplog.at_level(logging.WARNING, logger="exporter.serving.exposition"):
        monkeypatch.setattr(exposition_module, "render", broken)
        store.touch()
        wait_for(lambda: len(failures) >= 3, "three failed renders")
        assert rendered_version(get(port)[1].decode()) == rendered_version(before.decode())
        monkeypatch.setattr(exposition_module, "render", real)
        wait_for(metrics.current, "rendered again")
    lines = [r.getMessage() for r in caplog.records if "rendering the exposition ahead failed" in r.getMessage()]
    assert len(lines) == 1, lines


def test_the_first_scrape_after_a_long_idle_gets_the_present_data_not_the_body_before_it(served, monkeypatch):
    """An exposition nobody asked for in IDLE seconds is not rendered ahead (a probe target scraped
    rarely): its next scrape renders the present data rather than get the body of long ago."""
    store, _, probes, port = served
    probe = probes["vc-a"]
    monkeypatch.setattr(exposition_module, "IDLE", 0.2)
    get(port, "/probe?target=vc-a")
    wait_for(probe.current, "rendered")
    wait_for(lambda: time.monotonic() - probe._asked > 0.5, "idle")
    store.touch()
    text = get(port, "/probe?target=vc-a")[1].decode()
    assert rendered_version(text) == store.version
