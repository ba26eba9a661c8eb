"""Renders the store into the Prometheus text exposition, once per change.

Every collector runs under the store lock (a consistent snapshot), timed and isolated: one that
raises is reported by esxi_scrape_collector_success 0 and the rest of the body still renders. The
rendered body is cached until the store's version changes, so any number of concurrent scrapers
cost one render; a scraper that arrives during a render waits for it instead of starting another.
"""
from __future__ import annotations

import gzip
import logging
import platform
import threading
import time

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector, CollectorRegistry

from exporter import __version__
from exporter.collectors import COLLECTORS

log = logging.getLogger(__name__)


class _Snapshot(Collector):
    def __init__(self, store, enabled, extra):
        self.store, self.enabled, self.extra = store, enabled, extra

    def collect(self):
        duration = GaugeMetricFamily("esxi_scrape_collector_duration_seconds", "Time a collector took to render.", labels=["collector"])
        success = GaugeMetricFamily("esxi_scrape_collector_success", "1 if the collector rendered without error.", labels=["collector"])
        build = GaugeMetricFamily("esxi_exporter_build_info", "Exporter build. Always 1.", labels=["version", "python_version"])
        build.add_metric([__version__, platform.python_version()], 1)
        yield build
        collectors = [(name, COLLECTORS[name][0]) for name in self.enabled] + list(self.extra)
        rendered = []
        with self.store.lock:  # collect a consistent snapshot; format it after releasing the lock
            for name, collect in collectors:
                start = time.perf_counter()
                try:
                    families = list(collect(self.store))
                    ok = 1
                except Exception:  # one broken collector must not blank the scrape
                    log.exception("collector %s failed", name)
                    families, ok = [], 0
                duration.add_metric([name], time.perf_counter() - start)
                success.add_metric([name], ok)
                rendered.extend(families)
        yield from rendered
        yield duration
        yield success


class Exposition:
    """Cached text exposition of a store.

    extra: (name, collect function) pairs from other sources (vSphere, SSH streams) that keep
    their own state; their collect() receives the store, under its lock.
    """

    def __init__(self, store, enabled=None, extra=()):
        enabled = [n for n, (_, default) in COLLECTORS.items() if default] if enabled is None else list(enabled)
        self.store = store
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(_Snapshot(store, enabled, extra))
        self._render_lock = threading.Lock()
        self._version = None
        self._renders = 0
        self._body = b""
        self._gzipped = None

    def body(self, gzipped: bool = False) -> bytes:
        arrived = self._renders
        with self._render_lock:
            # A render that finished while we waited is a complete snapshot at least as new as our
            # request: take it. Re-rendering for each waiter would pile scrapes up behind the lock.
            if self._version != self.store.version and self._renders == arrived:
                self._renders += 1
                version = self.store.version  # read before rendering: a change mid-render re-renders next time
                self._body = generate_latest(self.registry)
                self._gzipped = None
                self._version = version
            if not gzipped:
                return self._body
            if self._gzipped is None:
                self._gzipped = gzip.compress(self._body, compresslevel=1)
            return self._gzipped
