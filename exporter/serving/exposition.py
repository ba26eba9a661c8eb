"""Renders the store into the Prometheus text exposition, once per change.

Every collector runs under the store lock (its families are one consistent snapshot), timed and
isolated: one that raises is reported by esxi_scrape_collector_success 0 and the rest of the body
still renders. The lock is let go between two collectors, so a source waiting to store a sample is
held up by one collector's part of a render at most, never by the whole body's (seconds at 2,500
hosts: the collection waited for them). The
rendered body is cached until the store's version changes, so any number of concurrent scrapers
cost one render; a scraper that arrives during a render waits for it instead of starting another.

`serve` renders ahead (start()): once an exposition has been asked for, a thread of its own renders
each change of the store when it has settled, and every scrape is answered at once with the newest
complete render. At 2,500 hosts a render takes seconds; rendered on the scrape, a loaded node let
it pass Prometheus' 10 s scrape timeout and the whole target was lost (#45).
"""

from __future__ import annotations

import gzip
import logging
import platform
import threading
import time
import zlib
from typing import NamedTuple

from exporter import __version__
from exporter.collectors import COLLECTORS, process
from exporter.collectors.textformat import gauge, label_string, render
from exporter.serving.rounds import RoundGate
from exporter.store.faultlog import FaultLog

log = logging.getLogger(__name__)

# Rendering ahead (start()). A change is rendered once the store has not changed for SETTLE
# seconds (a collection ingests host after host: one render for the round, not one per host),
# or after MAX_DELAY of changes that never settle (esxtop streams arrive all the time); and it
# keeps out of a source's round of writes, a vSphere collection (exporter.serving.rounds). After
# a render the next waits REST times as long as it took, so rendering takes at most a third of
# the process's time, whatever the size. An exposition not asked for in IDLE seconds (a probe
# target nobody scrapes) is not rendered ahead until it is asked for again.
SETTLE = 0.2
MAX_DELAY = 1.0
REST = 2.0
IDLE = 300.0
POLL = 0.1
CHUNK = 1 << 20  # compressed bytes inflated at a time for a plain scrape
HANDOVER = 0.001  # seconds a render waits between two collectors: a source waiting for the store lock takes it


class Rendered(NamedTuple):
    """One complete render: the store's version it shows and its gzip stream (one member)."""

    version: int
    packed: bytes


class Inflated:
    """The plain text of a render, inflated while it is written: a plain scrape never holds the
    whole text (300 MiB at 3 million series). Its length is the gzip trailer's ISIZE (RFC 1952:
    the input's size modulo 2**32; an exposition is far below 4 GiB)."""

    def __init__(self, packed: bytes):
        self.packed = packed

    def __len__(self) -> int:
        return int.from_bytes(self.packed[-4:], "little")

    def __iter__(self):
        inflate = zlib.decompressobj(31)
        view = memoryview(self.packed)
        for start in range(0, len(view), CHUNK):
            yield inflate.decompress(view[start : start + CHUNK])
        yield inflate.flush()


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
        self._ahead = False  # start() was called: rendered ahead, served from _served
        self._served: Rendered | None = None  # the newest complete render (rendered ahead)
        self._asked = 0.0  # monotonic time of the last scrape (rendered ahead)
        self.faults = FaultLog(log)  # a render ahead that fails: logged once per cause
        self._render_seconds = 0.0  # how long the last render took, pauses left out: the next takes as long
        self.rounds = RoundGate(store.rounds)

    def start(self, stop: threading.Event) -> threading.Thread:
        """Render ahead from now on, in a thread of its own, until stop is set (see the module's
        docstring). The first scrape, before any render, renders itself, and so does the first
        after IDLE seconds without one if the data changed meanwhile (it was not rendered ahead)."""
        self._ahead = True
        thread = threading.Thread(target=self._render_ahead, args=(stop,), name="render", daemon=True)
        thread.start()
        return thread

    def current(self) -> bool:
        """Rendered ahead: the newest complete render shows the store's present version."""
        served = self._served
        return served is not None and served.version == self.store.version

    def families(self, pause=None):
        """Every family of the body, in order, each built only when the render asks for it (a
        generator; each collector runs with the store lock held until its families are encoded).
        pause, if given, is called between two collectors, the lock let go (a render ahead gives
        way to a source's round there).

        Each collector's families are handed over as it yields them, and render() encodes and
        frees each before the next is built: at 2,500 hosts the lines of every family at once
        (1.8 million strings) held more memory than the store's state."""
        build = gauge("esxi_exporter_build_info", "Exporter build. Always 1.")
        build.add(label_string(("version", "python_version"), (__version__, platform.python_version())), 1.0)
        yield build
        duration = gauge("esxi_scrape_collector_duration_seconds", "Time a collector took to collect.")
        success = gauge("esxi_scrape_collector_success", "1 if the collector collected without error.")
        for name, collect in self.collectors:
            spent, ok = 0.0, 1.0
            with self.store.lock:  # a consistent snapshot of this collector: no sample lands halfway through
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
            time.sleep(HANDOVER)  # a thread waiting for the lock takes it before the next collector does
            if pause is not None:
                pause()
            labels = label_string(("collector",), (name,))
            duration.add(labels, spent)
            success.add(labels, ok)
        yield duration
        yield success

    def body(self, gzipped: bool = False) -> bytes:
        return b"".join(part if isinstance(part, bytes) else b"".join(part) for part in self.parts(gzipped))

    def parts(self, gzipped: bool = False) -> tuple:
        """The body in pieces written one after another: the cached render and, with process,
        the exporter's own metrics read now (a gzip stream may hold several members, RFC 1952).
        Joined, they would copy the render on every scrape (190 MiB plain at 2,500 hosts). A
        piece is bytes or, rendered ahead and asked plain, an Inflated render (len() and chunks)."""
        cached = self._ahead_form(gzipped) if self._ahead else self._cached(gzipped)
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

    # --- rendering ahead (serve) ------------------------------------------------------------
    def _ahead_form(self, gzipped: bool):
        now = time.monotonic()
        idle, self._asked = now - self._asked > IDLE, now
        served = self._served
        # Nothing rendered yet, or not rendered ahead while idle and the data changed since: this
        # scrape renders (others wait for it), as every scrape did before rendering ahead.
        if served is None or (idle and served.version != self.store.version):
            served = self._render_served(self._renders)
        return served.packed if gzipped else Inflated(served.packed)

    def _render_served(self, arrived: int, ahead: bool = False) -> Rendered:
        """Renders the gzip form into _served, unless a render finished while we waited for the
        lock (arrived: _renders when we came): that one is as new as our reason to render. A
        render ahead (nobody waits for it) pauses between collectors for rounds begun since."""
        with self._render_lock:
            if self._served is not None and self._renders != arrived:
                return self._served
            self._renders += 1
            version = self.store.version  # read first: a change mid-render renders again
            pause = self.rounds.pause() if ahead else None
            families = self.families(pause)
            start = time.monotonic()
            try:
                packed = render(families, gzipped=True)
            finally:
                families.close()  # a render that failed midway lets go of the store lock now
            self._render_seconds = time.monotonic() - start - (self.rounds.paused if ahead else 0.0)
            self._served = Rendered(version, packed)  # one assignment: a scraper sees old or new whole
            return self._served

    def _render_ahead(self, stop: threading.Event) -> None:
        seen, changed, first, rest_until = None, 0.0, None, 0.0
        while not stop.wait(POLL):
            now = time.monotonic()
            version = self.store.version
            if version != seen:
                seen, changed = version, now
            served = self._served
            if served is None or served.version == version or now - self._asked > IDLE:
                first = None  # nothing to render ahead (not yet asked for, current, or idle)
                continue
            if first is None:
                first = now
                self.rounds.changed()
            if now < rest_until or (now - changed < SETTLE and now - first < MAX_DELAY):
                continue
            if self.rounds.hold(now, self._render_seconds):
                continue
            try:
                self._render_served(self._renders, ahead=True)
            except Exception as err:  # tried again after MAX_DELAY; scrapes meanwhile get the last render
                self.faults.failed("render", f"rendering the exposition ahead failed: {err!r}")
                rest_until, first = time.monotonic() + MAX_DELAY, None
                continue
            self.faults.answered("render", "rendering the exposition ahead works again")
            rest_until, first = time.monotonic() + REST * self._render_seconds, None
