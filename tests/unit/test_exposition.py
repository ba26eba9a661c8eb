"""The exposition is rendered once per change and shared by every scraper; a failing collector
is isolated and reported."""

from __future__ import annotations

import gzip
import threading
import urllib.request

import pytest

from exporter.esxtop import read_file
from exporter.serving import exposition as exposition_module
from exporter.serving.exposition import Exposition
from exporter.serving.http import MetricsServer
from exporter.store.store import Store
from tests.support.servers import CAPTURES


def loaded_store() -> Store:
    store = Store()
    for sample in read_file(CAPTURES / "esxi65-default-3samples.csv"):
        store.ingest(sample)
    return store


def test_one_render_per_change_shared_by_concurrent_scrapers(monkeypatch):
    store = loaded_store()
    renders = []
    real_render = exposition_module.render
    monkeypatch.setattr(exposition_module, "render", lambda families, **kw: renders.append(1) or real_render(families, **kw))
    exposition = Exposition(store)
    server = MetricsServer(exposition, "127.0.0.1:0")
    server.serve_in_thread()
    url = f"http://127.0.0.1:{server.address[1]}/metrics"
    bodies = []

    def scrape():
        with urllib.request.urlopen(url, timeout=10) as response:
            bodies.append(response.read())

    try:
        threads = [threading.Thread(target=scrape) for _ in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(bodies) == 20 and len(set(bodies)) == 1
        assert len(renders) == 1
        store.touch()  # a new sample arrives
        scrape()
        assert len(renders) == 2
    finally:
        server.shutdown()


def test_gzip_is_served_when_asked():
    import gzip

    exposition = Exposition(loaded_store())
    server = MetricsServer(exposition, "127.0.0.1:0")
    server.serve_in_thread()
    try:
        request = urllib.request.Request(f"http://127.0.0.1:{server.address[1]}/metrics", headers={"Accept-Encoding": "gzip"})
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.headers["Content-Encoding"] == "gzip"
            assert gzip.decompress(response.read()) == exposition.body()
    finally:
        server.shutdown()


def test_a_failing_collector_is_isolated():
    def broken(store):
        raise RuntimeError("boom")

    text = Exposition(loaded_store(), ["lun"], extra=[("broken", broken)]).body().decode()
    assert 'esxi_scrape_collector_success{collector="broken"} 0.0' in text
    assert 'esxi_scrape_collector_success{collector="lun"} 1.0' in text
    assert "esxi_lun_queue_depth{" in text


def test_head_is_answered_like_get_without_a_body():
    import http.client

    exposition = Exposition(loaded_store())
    server = MetricsServer(exposition, "127.0.0.1:0")
    server.serve_in_thread()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", server.address[1], timeout=10)
        conn.request("HEAD", "/metrics")
        response = conn.getresponse()
        assert response.status == 200 and response.read() == b""
        assert int(response.headers["Content-Length"]) == len(exposition.body())
        conn.request("GET", "/-/healthy")  # the same connection goes on: no stray body in it
        assert conn.getresponse().read() == b"OK\n"
        conn.close()
    finally:
        server.shutdown()


def test_a_slow_client_cannot_hold_a_thread_past_the_request_timeout(monkeypatch):
    """A client that sends its headers one byte every 0.2 s (each read well inside the socket
    timeout) is cut off when the whole request has taken REQUEST_TIMEOUT."""
    import socket
    import time

    from exporter.serving import http as http_module

    monkeypatch.setattr(http_module, "REQUEST_TIMEOUT", 1.0, raising=False)
    server = MetricsServer(Exposition(loaded_store()), "127.0.0.1:0")
    server.serve_in_thread()
    try:
        sock = socket.create_connection(("127.0.0.1", server.address[1]), timeout=5)
        start = time.monotonic()
        closed_after = None
        for byte in b"GET /metrics HTTP/1.1\r\nX-Slow: " + b"a" * 40:
            try:
                sock.sendall(bytes([byte]))
                sock.settimeout(0.2)
                if sock.recv(1) == b"":  # the server closed the connection
                    closed_after = time.monotonic() - start
                    break
            except TimeoutError:
                continue  # nothing from the server yet: send the next byte
            except OSError:
                closed_after = time.monotonic() - start
                break
        sock.close()
        assert closed_after is not None and 0.9 <= closed_after <= 3.0, closed_after
    finally:
        server.shutdown()


def test_a_bad_probe_answers_400_without_echoing_the_input_or_naming_a_target():
    """/probe is open to every client that reaches the port: its error echoes nothing a client
    sent (up to 8 KB of it before) and names no configured target."""
    import urllib.error
    import urllib.parse

    store = Store()
    probes = {"vc-prod.internal.example": Exposition(store), "esx-lab-07": Exposition(store)}
    server = MetricsServer(Exposition(store), "127.0.0.1:0", probes=probes)
    server.serve_in_thread()
    hostile = "<script>alert(1)</script>" + "A" * 4000
    try:
        for query in ("target=" + urllib.parse.quote(hostile), "target=", "", "target=esx-lab"):
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(f"http://127.0.0.1:{server.address[1]}/probe?{query}", timeout=10)
            body = refused.value.read().decode()
            assert refused.value.code == 400
            assert body == "unknown or missing target (the exporter's configuration names them)\n", body
        with urllib.request.urlopen(f"http://127.0.0.1:{server.address[1]}/probe?target=esx-lab-07", timeout=10) as ok:
            assert ok.status == 200
    finally:
        server.shutdown()


def test_each_collector_is_rendered_before_the_next_one_collects():
    """The body is rendered collector by collector: a family is encoded and its lines let go
    before the next collector builds its own, so at most one collector's lines exist at once
    (at 2,500 hosts every line at once held more than the store's state)."""
    from exporter.collectors.textformat import gauge

    first = gauge("esxi_test_first", "First.")
    seen = {}

    def one(store):
        for i in range(3):
            first.add(f'{{i="{i}"}}', float(i))
        return [first]

    def two(store):
        seen["first's lines when the second collects"] = list(first.lines)
        family = gauge("esxi_test_second", "Second.")
        family.add("", 1.0)
        yield family

    text = Exposition(loaded_store(), [], extra=[("one", one), ("two", two)]).body().decode()
    assert seen == {"first's lines when the second collects": []}
    assert 'esxi_test_first{i="2"} 2.0\n' in text and "esxi_test_second 1.0\n" in text
    assert text.index("esxi_test_first") < text.index("esxi_test_second") < text.index("esxi_scrape_collector_duration")


def test_a_collectors_duration_is_its_own_time_not_the_encoding_of_its_families(monkeypatch):
    """Families are encoded between two of a collector's yields; that time is the render's."""
    import time

    from exporter.collectors.textformat import gauge

    real_render = exposition_module.render

    def slow_render(families, **kw):
        def slowly():
            for family in families:
                if family.name == "esxi_test_slow_to_encode":
                    time.sleep(0.5)
                yield family

        return real_render(slowly(), **kw)

    monkeypatch.setattr(exposition_module, "render", slow_render)

    def quick(store):
        family = gauge("esxi_test_slow_to_encode", "Encoded slowly.")
        family.add("", 1.0)
        yield family

    text = Exposition(loaded_store(), [], extra=[("quick", quick)]).body().decode()
    line = next(
        line for line in text.splitlines() if line.startswith('esxi_scrape_collector_duration_seconds{collector="quick"}')
    )
    assert float(line.split()[-1]) < 0.25, line


def test_a_collector_that_fails_midway_keeps_what_it_yielded_and_releases_the_lock():
    from exporter.collectors.textformat import gauge

    def halfway(store):
        family = gauge("esxi_test_half", "Half.")
        family.add("", 1.0)
        yield family
        raise RuntimeError("boom")

    store = loaded_store()
    text = Exposition(store, ["lun"], extra=[("halfway", halfway)]).body().decode()
    assert "esxi_test_half 1.0\n" in text
    assert 'esxi_scrape_collector_success{collector="halfway"} 0.0' in text
    assert 'esxi_scrape_collector_success{collector="lun"} 1.0' in text
    assert store.lock.acquire(timeout=1)
    store.lock.release()


def _without_durations(text: str) -> str:
    return "".join(line for line in text.splitlines(True) if not line.startswith("esxi_scrape_collector_duration_seconds{"))


def test_a_gzip_scrape_renders_the_gzip_stream_alone_and_a_plain_one_gets_the_same_text(monkeypatch):
    """Prometheus asks for gzip: the render compresses family by family and the plain text (190 MiB
    at 2,500 hosts) is never built; a plain scrape of the same version gets that text back."""
    import gzip

    calls = []
    real_render = exposition_module.render
    monkeypatch.setattr(exposition_module, "render", lambda families, **kw: calls.append(kw) or real_render(families, **kw))
    store = loaded_store()
    exposition = Exposition(store)
    packed = exposition.body(gzipped=True)
    assert calls == [{"gzipped": True}]
    assert exposition._body is None  # no plain text held beside the gzip stream
    text = gzip.decompress(packed).decode()
    assert exposition.body().decode() == text and len(calls) == 1  # the same version: no render
    fresh = Exposition(store).body().decode()  # rendered plain, by another exposition
    assert _without_durations(text) == _without_durations(fresh)
    assert text.count("\nesxi_lun_reads_total{") > 0
    store.touch()
    exposition.body()
    assert calls[-1] == {"gzipped": False} and exposition._gzipped is None  # the old stream went


def test_a_render_that_raised_is_done_again_for_the_scraper_that_waited():
    """Two scrapers arrive together; the render of the one that takes the lock first raises. The
    other, which counted renders before that one started, renders itself: it is not handed the
    body of no render (empty, or None since a render builds only the form asked for)."""
    store = loaded_store()
    exposition = Exposition(store, ["lun"])
    real_families = exposition.families
    first = []

    def families():
        if not first:
            first.append(1)
            raise RuntimeError("broken")
        yield from real_families()

    exposition.families = families

    class Lock:  # the exposition's render lock: the first scraper enters once the second has come
        def __init__(self):
            self.lock, self.entered, self.second = threading.Lock(), 0, threading.Event()

        def __enter__(self):
            self.entered += 1
            if self.entered == 1:
                assert self.second.wait(10)
            else:
                self.second.set()
            self.lock.acquire()

        def __exit__(self, *exc):
            self.lock.release()

    exposition._render_lock = Lock()
    errors, bodies = [], []

    def scrape(gzipped):
        try:
            bodies.append(exposition.body(gzipped=gzipped))
        except RuntimeError as error:
            errors.append(error)

    scrapers = [threading.Thread(target=scrape, args=(gzipped,)) for gzipped in (True, False)]
    for scraper in scrapers:
        scraper.start()
    for scraper in scrapers:
        scraper.join(10)
    assert len(errors) == 1 and len(bodies) == 1, (errors, bodies)
    body = bodies[0]
    text = (gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body).decode()
    assert "esxi_lun_reads_total{" in text
    assert store.lock.acquire(timeout=1)
    store.lock.release()
