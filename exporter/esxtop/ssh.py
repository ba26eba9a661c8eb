"""Live esxtop over SSH: one supervised `ssh HOST esxtop -b ...` per host, restarted with backoff.

The connection (target, askpass, process supervision, backoff) is exporter.ssh's, shared with the
esxcli runner; this module knows only the esxtop command and its stream.

Each session gets a fresh EsxtopReader, so the header esxtop prints after a restart is read anew
(the column set can change between runs). A stream that delivers no row for `stall_after` seconds
is killed and restarted; when a session ends, the host's gauges are dropped (counters stay) and
`esxi_esxtop_up{host}` reads 0 until rows flow again.
"""

from __future__ import annotations

import logging
import os
import selectors
import shlex
import subprocess
import threading
import time
from collections import deque

from exporter.esxtop.lines import MAX_LINE, LongLine
from exporter.esxtop.reader import EsxtopReader
from exporter.esxtop.streams import pump, start_thread
from exporter.ssh.process import Backoff, classify, release, spawn
from exporter.ssh.target import SshTarget
from exporter.store import model as m
from exporter.store.faultlog import FaultLog

log = logging.getLogger(__name__)

# Why a session ended: the `reason` label of esxi_esxtop_restarts_total.
REASONS = ("refused", "unreachable", "host_key", "auth", "dropped", "esxtop_exited", "stalled")
_SESSION = "session"  # the one cause of a stream: why its sessions end, until rows flow again


def esxtop_command(target: SshTarget) -> str:
    """The remote command line: batch mode, every counter unless an rc file chooses, forever."""
    args = ["esxtop", "-b"]
    if target.rc_file:
        args += ["-c", target.rc_file]
    else:
        args.append("-a")  # every counter: the reservation, abort and per-direction ones need it
    if target.import_entity:
        args += ["-import-entity", target.import_entity]
    args += ["-d", f"{target.interval:g}", "-n", "0"]
    return " ".join(shlex.quote(a) for a in args)


class SshStream:
    """Runs esxtop on one host over SSH until `stop` is set, restarting it when it ends."""

    def __init__(
        self,
        target: SshTarget,
        store,
        stop: threading.Event,
        per_world: bool = True,
        ssh: str = "ssh",
        backoff_initial: float = 1.0,
        max_line: int = MAX_LINE,
    ):
        self.target, self.store, self.stop, self.per_world = target, store, stop, per_world
        self.ssh, self.backoff_initial, self.max_line = ssh, backoff_initial, max_line
        self.up = 0
        self.restarts = dict.fromkeys(REASONS, 0)
        self.faults = FaultLog(log)  # a session that ends: said once per reason in a row (repeats at DEBUG), its end once
        self.lock = threading.Lock()
        self._sample_hosts: set[str] = set()  # host names esxtop used (the header's, not ours)
        self._last_row = 0.0
        self._delivered = 0  # samples this stream has read
        self._stalled = False
        self._announce = True
        self._stderr: deque[str] = deque(maxlen=40)

    # health: a SourceHealth record in the store after every change
    def _set_up(self, value: int) -> None:
        with self.lock:
            changed, self.up = self.up != value, value
        if changed:
            if value:
                self.faults.answered(_SESSION, f"esxtop ssh {self.target.label}: rows flow again")
            self.publish()

    def _count_restart(self, reason: str) -> None:
        with self.lock:
            self.restarts[reason] += 1
        self.publish()

    def publish(self) -> None:
        with self.lock:
            record = m.SourceHealth(kind="esxtop_ssh", name=self.target.label, up=self.up, restarts=dict(self.restarts))
        self.store.set_health(record)

    # the loop
    def run(self) -> None:
        backoff = Backoff(self.backoff_initial, self.target.backoff_max)
        while not self.stop.is_set():
            delivered, reason, message = self._session()
            self._announce = delivered
            if self.stop.is_set():
                break
            self._set_up(0)
            self._drop_gauges()
            self._count_restart(reason)
            delay = backoff.next(delivered)
            level = logging.ERROR if reason in ("host_key", "auth") else logging.WARNING
            line = f"esxtop ssh {self.target.label}: {message}; retrying in {delay:.1f}s"
            if not self.faults.failed(_SESSION, reason, line, level=level):
                log.debug("%s", line)  # the same failure again: said once, not on every retry
            self.stop.wait(backoff.jittered())

    def _session(self) -> tuple[bool, str, str]:
        """One ssh run: (delivered at least one sample, reason it ended, message)."""
        self._stderr.clear()
        self._stalled = False
        self._last_row = time.monotonic()
        delivered = False
        command = esxtop_command(self.target)
        try:
            proc = spawn(self.target, command, self.ssh)
        except OSError as err:
            return False, "unreachable", f"cannot start {self.ssh}: {err.strerror}"
        # Said at info level when a session starts after one that worked; retries while the host
        # stays unreachable are at debug level, so an outage costs one log line, not one a minute.
        log.log(
            logging.INFO if self._announce else logging.DEBUG,
            "esxtop ssh %s: started %s",
            self.target.label,
            command,
        )
        reader = EsxtopReader(f"ssh:{self.target.label}", per_world=self.per_world)
        delivered_before = self._delivered
        try:
            pump(self._lines(proc), reader, self._on_sample, self.store.count_parse_error, self.stop)
        finally:
            returncode = release(proc)
        delivered = self._delivered > delivered_before
        if self._stalled:
            return delivered, "stalled", f"no esxtop row for {self.target.stall_seconds:g}s: stream stalled, restarting it"
        reason, message = classify(returncode, "\n".join(self._stderr), delivered)
        return delivered, reason, message

    def _lines(self, proc: subprocess.Popen):
        """Complete lines of esxtop's output; ssh's stderr is kept for the error message.
        Ends when the process ends, when stop is set, or when the stream stalls (then kills ssh).
        A line past max_line is read past, not held, and stands as one LongLine (the reader
        counts it as line_too_long): the session goes on."""
        selector = selectors.DefaultSelector()
        selector.register(proc.stdout, selectors.EVENT_READ, "out")
        selector.register(proc.stderr, selectors.EVENT_READ, "err")
        pending = bytearray()
        skipped: int | None = None  # bytes of an over-long line read past so far
        errors = bytearray()
        open_pipes = 2
        try:
            while open_pipes and not self.stop.is_set():
                if time.monotonic() - self._last_row > self.target.stall_seconds:
                    self._stalled = True
                    return
                for key, _ in selector.select(timeout=0.25):
                    data = os.read(key.fd, 1 << 16)
                    if not data:
                        selector.unregister(key.fileobj)
                        open_pipes -= 1
                        continue
                    if key.data == "err":
                        errors += data
                        *done, rest = errors.split(b"\n")
                        self._stderr.extend(line.decode("utf-8", "replace")[:500] for line in done)
                        errors = bytearray(rest[-4096:])
                        continue
                    if skipped is not None:
                        cut = data.find(b"\n")
                        if cut < 0:
                            skipped += len(data)
                            continue
                        yield LongLine(skipped + cut + 1)
                        skipped, data = None, data[cut + 1 :]
                    pending += data
                    if b"\n" in data:
                        *done, rest = pending.split(b"\n")
                        pending = bytearray(rest)
                        for line in done:
                            yield (
                                LongLine(len(line) + 1) if len(line) >= self.max_line else line.decode("utf-8", "replace") + "\n"
                            )
                    if len(pending) >= self.max_line:
                        skipped, pending = len(pending), bytearray()
        finally:
            selector.close()
            if errors:
                self._stderr.append(errors.decode("utf-8", "replace")[:500])
            if not self.stop.is_set():
                # The connection died mid-row: the fragment is not a row. Counted once, not fed.
                if skipped is not None:
                    self.store.count_parse_error(f"ssh:{self.target.label}", "line_too_long")
                elif pending.strip():
                    self.store.count_parse_error(f"ssh:{self.target.label}", "partial_line")

    def _on_sample(self, sample) -> None:
        self._delivered += 1
        self._last_row = time.monotonic()
        self._sample_hosts.add(sample.host)
        self.store.ingest(sample)
        self._set_up(1)

    def host_name(self) -> str | None:
        """The host's name as esxtop reports it (its header), once a sample has arrived."""
        return next(iter(sorted(self._sample_hosts)), None)

    def _drop_gauges(self) -> None:
        for host in self._sample_hosts:
            self.store.drop_gauges(host)


class SshStreams:
    """All esxtop-over-SSH streams of the exporter."""

    def __init__(self, targets: list[SshTarget], store, stop: threading.Event, per_world: bool = True, **kwargs):
        self.streams = [SshStream(t, store, stop, per_world, **kwargs) for t in targets]

    def start(self) -> list[threading.Thread]:
        threads = []
        for stream in self.streams:
            stream.publish()  # down (0) until rows flow: visible from the first scrape
            threads.append(start_thread(f"esxtop-ssh:{stream.target.label}", stream.run))
        return threads
