"""Line sources for the esxtop reader (standard input, a growing file) and the pump that hands a
reader's Samples on, counting and skipping bad lines so a live stream goes on."""

from __future__ import annotations

import logging
import os
import sys
import threading

from exporter.esxtop.reader import EsxtopError, EsxtopReader

log = logging.getLogger(__name__)


def pump(lines, reader: EsxtopReader, on_sample, on_error, stop: threading.Event | None = None) -> None:
    """Feed lines to the reader until the lines end or stop is set: each Sample to on_sample, each
    rejected line to on_error(stream name, reason) after a warning, and go on."""
    for line in lines:
        if stop is not None and stop.is_set():
            return
        try:
            sample = reader.feed(line)
        except EsxtopError as err:
            on_error(reader.name, err.reason)
            log.warning("skipped a line: %s", err)
            continue
        if sample is not None:
            on_sample(sample)


def stdin_lines():
    # Line-buffered reads: a sample reaches the store as soon as esxtop writes it.
    stream = open(sys.stdin.fileno(), encoding="utf-8", errors="replace", newline=None, closefd=False)
    yield from iter(stream.readline, "")


def follow_lines(path: str, stop: threading.Event, poll: float = 0.5, from_start: bool = False):
    """Yield complete lines of a growing file, like `tail -F`.

    The header is always read from the top; then, unless from_start, reading continues at the
    end of the file (counters start when the exporter starts). A file that does not exist yet or
    has no complete header yet is read from its first data row once the header is there: every
    row in it arrived after the exporter started (an exporter started before resxtop writes its
    file must not skip the rows that land together with the header). Truncation, rotation (a new
    inode) and deletion followed by re-creation restart from the top of the new file, header
    first. A partial last line is held back until its newline arrives.
    """
    handle, inode, pending, position = None, None, b"", 0
    while not stop.is_set():
        if handle is None:
            try:
                handle = open(path, "rb")
                inode = os.fstat(handle.fileno()).st_ino
            except FileNotFoundError:
                from_start = True  # whatever it will hold arrives after we started
                stop.wait(poll)
                continue
            header = handle.readline()
            if not header.endswith((b"\n", b"\r")):
                handle.close()  # header not complete yet: its rows, when they come, are new
                handle = None
                from_start = True
                stop.wait(poll)
                continue
            yield _decode(header)
            pending = b""
            if not from_start:
                end = handle.seek(0, os.SEEK_END)
                if end > len(header):
                    handle.seek(end - 1)
                    if handle.read(1) not in (b"\n", b"\r"):
                        pending = None  # mid-row: drop bytes up to the next line end
            from_start = True  # after a rotation, read the new file whole
            position = handle.tell()
        chunk = handle.read(1 << 20)
        if chunk:
            position += len(chunk)
            if pending is None:
                cut = min((i for i in (chunk.find(b"\n"), chunk.find(b"\r")) if i >= 0), default=-1)
                if cut < 0:
                    continue
                chunk, pending = chunk[cut + 1 :], b""
            lines = (pending + chunk).replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
            pending = lines.pop()
            for line in lines:
                yield _decode(line + b"\n")
            continue
        try:
            stat = os.stat(path)
            rotated = stat.st_ino != inode or stat.st_size < position
        except FileNotFoundError:
            rotated = True
        if rotated:
            log.info("%s was truncated, rotated or deleted: reopening", path)
            handle.close()
            handle = None
            continue
        stop.wait(poll)
    if handle is not None:
        handle.close()


def _decode(line: bytes) -> str:
    return line.decode("utf-8", errors="replace")


def start_thread(name: str, target, *args) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, name=name, daemon=True)
    thread.start()
    return thread
