"""Lines of a byte stream with one length cap for every esxtop source (stdin, saved files, the
follow source and the SSH stream use it): a line past the cap is never held whole."""

from __future__ import annotations

MAX_LINE = 64 << 20  # one cap for every line source: a very large host's header is a few MB


class LongLine(str):
    """What a line source yields in place of a line longer than MAX_LINE (its text is its length
    in bytes): the reader counts it as line_too_long and the stream goes on."""


def bounded_lines(raw, max_line: int = MAX_LINE):
    """Decoded lines of a binary stream, LF, CRLF or bare CR ended. A line longer than max_line
    is never held whole: it is read past in 1 MiB pieces and stands as one LongLine."""
    while True:
        # The cap counts the line's text, as every source does: one more byte leaves a CRLF's
        # LF in reach, so a CRLF line just under the cap is not taken for an over-long one.
        line = raw.readline(max_line + 1)
        if not line:
            return
        if len(line) >= max_line and len(line.rstrip(b"\r\n")) >= max_line:  # no copy of a short line
            size = len(line)
            while not line.endswith(b"\n"):
                line = raw.readline(1 << 20)
                size += len(line)
                if not line:
                    break
            yield LongLine(size)
            continue
        text = decode(line)
        cr = text.find("\r")
        if 0 <= cr < len(text) - 2:  # bare CR line ends (a spreadsheet re-save)
            yield from text.replace("\r\n", "\n").replace("\r", "\n").splitlines(True)
        else:
            yield text


def decode(line: bytes) -> str:
    return line.decode("utf-8", errors="replace")
