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

from exporter import __version__
from exporter.collectors import COLLECTORS, process
from exporter.collectors.textformat import gauge, label_string, render

log = logging.getLogger(__name__)


class Exposition:
    """Cached text exposition of a store (or of one target's view of it).

    enabled: names of registered collectors (exporter.collectors.COLLECTORS); extra: more
    (name, collect function) pairs, for tests that need a collector of their own.
    """

    def __init__(self, store, enabled=None, extra=(), process: bool = False):
        enabled = [n for n, (_, default) in COLLECTORS.items() if default] if enabled is None else list(enabled)
        self.store = store
        self.collectors = [(name, COLLECTORS[name][0]) for name in enabled] + list(extra)
        self._render_lock = threading.Lock()
        self._version = None
        self._renders = 0
        self._body = b""
        self._gzipped = None
        self.process = process  # the exporter's own process metrics, fresh on every body()

    def families(self):
        """Every family of the body, in order, each built only when the render asks for it (a
        generator, run with the store lock held until it is exhausted).

        Each collector's families are handed over as it yields them, and render() encodes and
        frees each before the next is built: at 2,500 hosts the lines of every family at once
        (1.8 million strings) held more memory than the store's state."""
        build = gauge("esxi_exporter_build_info", "Exporter build. Always 1.")
        build.add(label_string(("version", "python_version"), (__version__, platform.python_version())), 1.0)
        yield build
        duration = gauge("esxi_scrape_collector_duration_seconds", "Time a collector took to collect.")
        success = gauge("esxi_scrape_collector_success", "1 if the collector collected without error.")
        with self.store.lock:  # a consistent snapshot: no sample lands halfway through
            for name, collect in self.collectors:
                spent, ok = 0.0, 1.0
                start = time.perf_counter()
                try:
                    for family in collect(self.store):
                        spent += time.perf_counter() - start
                        yield family  # encoded by render() meanwhile: not the collector's time
                        start = time.perf_counter()
                except Exception:  # one broken collector must not blank the scrape
                    log.exception("collector %s failed", name)
                    ok = 0.0
                spent += time.perf_counter() - start
                labels = label_string(("collector",), (name,))
                duration.add(labels, spent)
                success.add(labels, ok)
        yield duration
        yield success

    def body(self, gzipped: bool = False) -> bytes:
        cached = self._cached(gzipped)
        if not self.process:
            return cached
        # Read now, not at the last change: a gzip stream may hold several members (RFC 1952).
        live = process.body()
        return cached + (gzip.compress(live, compresslevel=1) if gzipped else live)

    def _cached(self, gzipped: bool) -> bytes:
        arrived = self._renders
        with self._render_lock:
            # A render that finished while we waited is a complete snapshot at least as new as our
            # request: take it. Re-rendering for each waiter would pile scrapes up behind the lock.
            if self._version != self.store.version and self._renders == arrived:
                self._renders += 1
                version = self.store.version  # read first: a change mid-render re-renders next time
                families = self.families()
                try:
                    self._body = render(families)
                finally:
                    families.close()  # a render that failed midway lets go of the store lock now
                self._gzipped = None
                self._version = version
            if not gzipped:
                return self._body
            if self._gzipped is None:
                self._gzipped = gzip.compress(self._body, compresslevel=1)
            return self._gzipped
