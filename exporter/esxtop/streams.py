"""Line sources for the esxtop reader (standard input, a growing file) and the pump that hands a
reader's Samples on, counting and skipping bad lines so a live stream goes on."""

from __future__ import annotations

import logging
import os
import sys
import threading

from exporter.esxtop.lines import MAX_LINE, LongLine, bounded_lines, decode
from exporter.esxtop.reader import COLUMN_CONFLICT, EsxtopError, EsxtopReader

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
        if reader.rejected:
            for reason, _ in reader.rejected:
                on_error(reader.name, reason)
            reason, message = reader.rejected[0]
            more = f" (and {len(reader.rejected) - 1} more on this line)" if len(reader.rejected) > 1 else ""
            # A conflict keeps the first column's value: nothing of the row is left out.
            log.warning("%s%s%s", "" if reason == COLUMN_CONFLICT else "skipped a value: ", message, more)
        if sample is not None:
            on_sample(sample)


def stdin_lines(max_line: int = MAX_LINE):
    # Buffered binary reads return each line as soon as it is complete: a sample reaches the
    # store as soon as esxtop writes it.
    yield from bounded_lines(open(sys.stdin.fileno(), "rb", closefd=False), max_line)


def _line_end(chunk: bytes) -> int:
    return min((i for i in (chunk.find(b"\n"), chunk.find(b"\r")) if i >= 0), default=-1)


def follow_lines(path: str, stop: threading.Event, poll: float = 0.5, from_start: bool = False, max_line: int = MAX_LINE):
    """Yield complete lines of a growing file, like `tail -F`.

    The header is always read from the top; then, unless from_start, reading continues at the
    end of the file (counters start when the exporter starts). A file that does not exist yet or
    has no complete header yet is read from its first data row once the header is there: every
    row in it arrived after the exporter started (an exporter started before resxtop writes its
    file must not skip the rows that land together with the header). Truncation, rotation (a new
    inode) and deletion followed by re-creation restart from the top of the new file, header
    first. A partial last line is held back until its newline arrives; a line longer than
    max_line is not held: its bytes are counted until its end and it stands as one LongLine.
    Each byte is copied a bounded number of times, so a huge line costs linear time.
    """
    handle, inode, position = None, None, 0
    parts: list[bytes] = []  # the pieces of a partial line, joined once when it ends
    size = 0  # bytes in parts
    skipped: int | None = None  # bytes of an over-long line read past so far
    drop = False  # started mid-row: bytes up to the next line end are not a line
    while not stop.is_set():
        if handle is None:
            try:
                handle = open(path, "rb")
                inode = os.fstat(handle.fileno()).st_ino
            except FileNotFoundError:
                from_start = True  # whatever it will hold arrives after we started
                stop.wait(poll)
                continue
            header = handle.readline(max_line)
            cr = header.find(b"\r")
            if 0 <= cr < len(header) - 1 and header[cr + 1 : cr + 2] != b"\n":  # bare CR line ends
                header = header[: cr + 1]
                handle.seek(cr + 1)
            parts, size, skipped, drop = [], 0, None, False
            if len(header) >= max_line and not header.endswith((b"\n", b"\r")):
                skipped = len(header)  # a header past the cap: counted when its end comes
            elif not header.endswith((b"\n", b"\r")):
                handle.close()  # header not complete yet: its rows, when they come, are new
                handle = None
                from_start = True
                stop.wait(poll)
                continue
            else:
                yield decode(header)
                if not from_start:
                    end = handle.seek(0, os.SEEK_END)
                    if end > len(header):
                        handle.seek(end - 1)
                        drop = handle.read(1) not in (b"\n", b"\r")  # mid-row: drop bytes up to the next line end
            from_start = True  # after a rotation, read the new file whole
            position = handle.tell()
        chunk = handle.read(1 << 20)
        if chunk:
            position += len(chunk)
            cut = _line_end(chunk)
            if cut < 0:  # no line end in this piece
                if skipped is not None:
                    skipped += len(chunk)
                elif not drop:
                    parts.append(chunk)
                    size += len(chunk)
                    if size > max_line:
                        skipped, parts, size = size, [], 0
                continue
            if drop:
                drop = False
            elif skipped is not None:
                yield LongLine(skipped + cut + 1)
                skipped = None
            else:
                parts.append(chunk[:cut])
                yield _complete(b"".join(parts), max_line)
                parts, size = [], 0
            after = cut + 2 if chunk[cut : cut + 2] == b"\r\n" else cut + 1
            lines = chunk[after:].replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
            tail = lines.pop()
            for line in lines:
                yield _complete(line, max_line)
            if tail:
                parts, size = [tail], len(tail)
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


def _complete(line: bytes, max_line: int) -> str:
    """A whole line (without its end) as the reader takes it."""
    return LongLine(len(line) + 1) if len(line) >= max_line else decode(line + b"\n")


def start_thread(name: str, target, *args) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, name=name, daemon=True)
    thread.start()
    return thread
