"""The exposition is rendered once per change and shared by every scraper; a failing collector
is isolated and reported."""

from __future__ import annotations

import threading
import urllib.request

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
    monkeypatch.setattr(exposition_module, "render", lambda families: renders.append(1) or real_render(families))
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
