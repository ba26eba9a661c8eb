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
from exporter.serving import rounds as rounds_module
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


def test_a_render_ahead_waits_for_a_sources_round_to_end_then_renders_it_once(served, monkeypatch):
    """A vSphere collection stores host after host for seconds at 2,500 hosts: a render ahead
    started mid-round (after MAX_DELAY of changes) shared the interpreter with it and the
    collection took three times its own work. Now a change waits for the round under way when it
    was seen (up to ROUND_WAIT); once the round ends, one render shows it whole."""
    store, metrics, _, port = served
    get(port)
    wait_for(metrics.current, "the first body rendered")
    monkeypatch.setattr(exposition_module, "MAX_DELAY", 0.05)
    renders, real = [], exposition_module.render
    monkeypatch.setattr(exposition_module, "render", lambda families, **kw: renders.append(1) or real(families, **kw))
    with store.rounds.round():
        for step in range(1, 16):  # changes that never settle for 0.2 s, for about 1.5 s
            store.ingest(dataclasses.replace(SAMPLES[-1], timestamp=SAMPLES[-1].timestamp + 5 * step))
            time.sleep(0.1)
        assert renders == [] and not metrics.current()  # past MAX_DELAY, and nothing rendered
    wait_for(metrics.current, "the round rendered once it ended")
    assert len(renders) == 1
    assert rendered_version(get(port)[1].decode()) == store.version


def test_a_round_that_never_ends_holds_a_render_back_at_most_round_wait(served, monkeypatch):
    store, metrics, _, port = served
    get(port)
    wait_for(metrics.current, "the first body rendered")
    monkeypatch.setattr(rounds_module, "ROUND_WAIT", 0.5)
    with store.rounds.round():
        store.ingest(dataclasses.replace(SAMPLES[-1], timestamp=SAMPLES[-1].timestamp + 5))
        wait_for(metrics.current, "rendered although the round is still under way")
    assert not store.rounds.under_way()


def test_rounds_that_follow_each_other_do_not_starve_the_render(served, monkeypatch):
    """Three targets collecting every second: some round is always under way. A render waits for
    the rounds under way when it saw the change, not for those begun after (waiting for every
    round held each render back ROUND_WAIT, and a probe's body went older than 20 s)."""
    store, metrics, _, port = served
    get(port)
    wait_for(metrics.current, "the first body rendered")
    monkeypatch.setattr(rounds_module, "ROUND_WAIT", 60.0)  # were rounds waited for, no render for a minute
    stop, step = threading.Event(), iter(range(1, 10**6))

    def one_round() -> None:
        with store.rounds.round():
            store.ingest(dataclasses.replace(SAMPLES[-1], timestamp=SAMPLES[-1].timestamp + 5 * next(step)))
            time.sleep(0.3)

    def rounds() -> None:  # a round begins every 0.15 s and lasts 0.3 s: two under way at a time
        while not stop.is_set():
            threading.Thread(target=one_round).start()
            time.sleep(0.15)

    driver = threading.Thread(target=rounds)
    driver.start()
    try:
        time.sleep(0.5)
        assert store.rounds.under_way()
        shown = rendered_version(get(port)[1].decode())
        wait_for(lambda: rendered_version(get(port)[1].decode()) > shown, "a render while rounds follow each other")
    finally:
        stop.set()
        driver.join()


def test_a_render_ahead_pauses_between_collectors_for_a_round_begun_meanwhile(monkeypatch):
    """A render of seconds that a collection begins beside gives way to it between two collectors
    and goes on once the round has ended; a render a scrape waits for does not pause."""
    store, stop = Store(), threading.Event()
    store.ingest(SAMPLES[0])
    round_ended, second_ran, rounds_begun = [], [], []

    def first(view):
        if rounds_begun:  # the render ahead, not the first one (a scrape's)
            thread = threading.Thread(target=a_round)
            thread.start()
            wait_for(lambda: store.rounds.under_way(), "the round begun")
        yield from version_collector(view)

    def a_round():
        with store.rounds.round():
            time.sleep(0.5)
            store.ingest(dataclasses.replace(SAMPLES[0], timestamp=SAMPLES[0].timestamp + 10))
        round_ended.append(time.monotonic())

    def second(view):
        second_ran.append(time.monotonic())
        yield from ()

    metrics = Exposition(store, enabled=[], extra=[("first", first), ("second", second)])
    metrics.body(gzipped=True)  # no pause outside rendering ahead: "first" begins no round here
    assert len(second_ran) == 1 and not round_ended
    metrics.start(stop)
    try:
        metrics.parts(gzipped=True)  # asked for, and rendered by this scrape: rendered ahead from now on
        assert len(second_ran) == 2
        rounds_begun.append(True)
        store.ingest(dataclasses.replace(SAMPLES[0], timestamp=SAMPLES[0].timestamp + 5))
        wait_for(lambda: len(second_ran) >= 3, "the render ahead went on")
        assert round_ended and second_ran[2] >= round_ended[0]
    finally:
        stop.set()


def test_a_render_that_would_run_into_a_round_due_waits_for_that_round_to_end(monkeypatch):
    """At 2,500 hosts a render takes seconds: begun just before the next collection, it ran beside
    it. A render ahead that would still run when a round is due (Rounds.due) renders once
    that round has ended instead; with no round due it renders at once."""
    store, stop = Store(), threading.Event()
    store.ingest(SAMPLES[0])
    calls, round_ended = [], []

    def slow(view):  # a render of 0.4 s
        calls.append(time.monotonic())
        time.sleep(0.4)
        yield from version_collector(view)

    def a_round(at: float) -> None:
        time.sleep(max(0.0, at - time.monotonic()))
        with store.rounds.round():
            store.ingest(dataclasses.replace(SAMPLES[0], timestamp=SAMPLES[0].timestamp + 10))
            time.sleep(0.5)
        round_ended.append(time.monotonic())

    metrics = Exposition(store, enabled=[], extra=[("slow", slow)])
    metrics.start(stop)
    try:
        metrics.parts(gzipped=True)  # asked for, rendered by the scrape: 0.4 s, rendered ahead from now on
        due = time.monotonic() + 0.35  # after SETTLE (0.2 s), before a render of 0.4 s would end
        store.rounds.due("vc", due)
        driver = threading.Thread(target=a_round, args=(due,))
        driver.start()
        store.ingest(dataclasses.replace(SAMPLES[0], timestamp=SAMPLES[0].timestamp + 5))
        wait_for(metrics.current, "rendered after the round")
        driver.join()
        assert len(calls) == 2 and calls[1] >= round_ended[0]  # one render ahead, after the round
        store.rounds.due("vc", None)
        store.ingest(dataclasses.replace(SAMPLES[0], timestamp=SAMPLES[0].timestamp + 15))
        wait_for(metrics.current, "rendered with no round due (held, it would wait ROUND_WAIT: 30 s)")
        assert len(calls) == 3
    finally:
        stop.set()


def test_the_limit_on_waiting_for_rounds_counts_from_the_first_hold_not_from_the_change(monkeypatch):
    """A render resting after the one before (REST) comes to the rounds late: had the limit run from
    the change, it ran out while the round it waited for was still under way, and the render ran
    beside it."""
    monkeypatch.setattr(rounds_module, "ROUND_WAIT", 10.0)
    store = Store()
    gate = rounds_module.RoundGate(store.rounds)
    with store.rounds.round():
        gate.changed()  # at 0
        assert gate.hold(now=9.0, render_seconds=0.0)  # the first hold, after 9 s of REST
        assert gate.hold(now=18.0, render_seconds=0.0)  # 18 s after the change, 9 after the first hold
        assert not gate.hold(now=19.5, render_seconds=0.0)  # the limit, 10 s after the first hold
    gate.changed()
    assert not gate.hold(now=30.0, render_seconds=0.0)  # no round: no wait


def test_a_render_pauses_for_rounds_once_not_at_every_collector():
    """Rounds that follow each other would stretch a render by a round at every collector."""
    store = Store()
    gate = rounds_module.RoundGate(store.rounds)
    with store.rounds.round():  # under way before the render began: not paused for
        pause = gate.pause()
        pause()
        assert gate.paused == 0.0
    ended = threading.Event()

    def short_round():
        with store.rounds.round():
            began.set()
            ended.wait()

    began = threading.Event()
    thread = threading.Thread(target=short_round)
    thread.start()
    began.wait()
    threading.Timer(0.2, ended.set).start()
    pause()  # begun since the render began: waits for its end
    thread.join()
    assert gate.paused > 0.0 and not store.rounds.under_way()
    first = gate.paused
    with store.rounds.round():  # another: no second pause in this render
        pause()
    assert gate.paused == first
