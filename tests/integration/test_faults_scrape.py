"""100 concurrent scrapes while collection runs: every answer is one complete snapshot, and the
scrapers share renders instead of piling up one render each."""

from __future__ import annotations

import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from exporter.esxtop import EsxtopReader
from exporter.esxtop.streams import pump
from exporter.serving.exposition import Exposition
from exporter.serving.http import MetricsServer
from exporter.store.store import Store
from simulators import esxtop_csv
from tests.support.promtext import samples

DEVICES = [f"naa.6000000000000000000000000000{n:04d}" for n in range(50)]
SLOW_RENDER = 0.05  # seconds a render takes at least: long enough for scrapers to overlap


class RenderProbe:
    """An extra collector that counts renders, the most running at once, and slows each down."""

    def __init__(self):
        self.renders = self.running = self.most = 0
        self.lock = threading.Lock()

    def collect(self, store):
        with self.lock:
            self.renders += 1
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(SLOW_RENDER)
        with self.lock:
            self.running -= 1
        return []


def feed_forever(store: Store, stop: threading.Event) -> None:
    """Every row gives all LUNs the same ACTV, the row number: a mixed scrape would show two values."""
    columns = [col for device in DEVICES for col in esxtop_csv.device_columns(device)]
    reader = EsxtopReader("writer")
    pump([esxtop_csv.header("esx-load", columns)], reader, store.ingest, store.count_parse_error)
    n, ts = 0, 1_700_000_000
    while not stop.is_set():
        values = []
        for _ in DEVICES:
            values += [64, n, 0, 10, 0.1, 100, 50, 50, 1, 1, 2, 0.1, 2.1, 0.05]
        pump([esxtop_csv.row(ts, values)], reader, store.ingest, store.count_parse_error)
        n, ts = n + 1, ts + 5
        time.sleep(0.005)


def test_hundred_concurrent_scrapes_during_collection():
    store = Store()
    probe = RenderProbe()
    server = MetricsServer(Exposition(store, extra=[("probe", probe.collect)]), "127.0.0.1:0")
    server.serve_in_thread()
    stop = threading.Event()
    writer = threading.Thread(target=feed_forever, args=(store, stop), daemon=True)
    writer.start()
    url = f"http://127.0.0.1:{server.address[1]}/metrics"
    try:
        time.sleep(0.1)
        versions_before = store.version
        start = time.monotonic()
        with ThreadPoolExecutor(100) as pool:
            bodies = list(pool.map(lambda _: urllib.request.urlopen(url, timeout=30).read().decode(), range(100)))
        elapsed = time.monotonic() - start
        versions = store.version - versions_before
    finally:
        stop.set()
        server.shutdown()
    assert len(bodies) == 100
    for body in bodies:
        active = {lab["device"]: v for name, lab, v in samples(body) if name == "esxi_lun_active_commands"}
        assert set(active) == set(DEVICES)  # every LUN of the snapshot, none missing
        assert len(set(active.values())) == 1  # all from one row: no partial snapshot
    assert probe.most == 1  # renders never overlap
    # No pile-up: scrapers that waited share the render they waited for. Data changed all along
    # (every 5 ms, slower on a loaded machine: more often than renders ran, at least), yet far
    # fewer renders than scrapes were needed.
    assert versions > 2 * probe.renders, (versions, probe.renders)
    assert probe.renders <= 100 // 4, (probe.renders, elapsed)
