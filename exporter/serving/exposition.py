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
        self._body: bytes | None = b""  # the plain form; None until asked for
        self._gzipped: bytes | None = None
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
        return b"".join(self.parts(gzipped))

    def parts(self, gzipped: bool = False) -> tuple[bytes, ...]:
        """The body in pieces written one after another: the cached render and, with process,
        the exporter's own metrics read now (a gzip stream may hold several members, RFC 1952).
        Joined, they would copy the render on every scrape (190 MiB plain at 2,500 hosts)."""
        cached = self._cached(gzipped)
        if not self.process:
            return (cached,)
        live = process.body()
        return cached, (gzip.compress(live, compresslevel=1) if gzipped else live)

    def _cached(self, gzipped: bool) -> bytes:
        """The body in the form asked for. A change renders the asked form only, straight from the
        families: Prometheus asks for gzip, and the plain text of 1.8 million series (190 MiB) is
        then never built. The other form is made from it when someone asks."""
        arrived = self._renders
        with self._render_lock:
            # A render that finished while we waited is a complete snapshot at least as new as our
            # request: take it. Re-rendering for each waiter would pile scrapes up behind the lock.
            stale = self._version != self.store.version and self._renders == arrived
            if stale or (self._body is None and self._gzipped is None):  # or the last render failed
                self._renders += 1
                version = self.store.version  # read first: a change mid-render re-renders next time
                self._body = self._gzipped = None  # the old forms go before the new one is built
                families = self.families()
                try:
                    rendered = render(families, gzipped=gzipped)
                finally:
                    families.close()  # a render that failed midway lets go of the store lock now
                if gzipped:
                    self._gzipped = rendered
                else:
                    self._body = rendered
                self._version = version
            if gzipped:
                if self._gzipped is None:
                    self._gzipped = gzip.compress(self._body, compresslevel=1)
                return self._gzipped
            if self._body is None:
                self._body = gzip.decompress(self._gzipped)
            return self._body
