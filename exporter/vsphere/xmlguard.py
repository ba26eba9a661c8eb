"""Hostile XML from a vSphere endpoint is refused before it is parsed, on every parse path.

vCenter and ESXi never send a DOCTYPE; an answer with one can only be an attack (billion laughs,
quadratic blowup, external entities: gigabytes of memory from a few megabytes of answer). Every
answer is also capped in size (decompressed), a process-wide limit (`--vsphere.max-answer-size`).

The parse paths, and where each is guarded:
- pyVmomi's own expat deserializer (login, RetrieveContent, faults, every pyVmomi call, through
  any SoapStubAdapter the process creates, a second one on /vsanHealth included): `install()`
  replaces the parser factory pyVmomi's SoapAdapter calls, once, at import of this module; each
  parser it hands out refuses a DOCTYPE and counts the bytes it is fed.
- pyVim's read of vimServiceVersions.xml at login (ElementTree): the same, through the tree class
  pyVim.connect builds.
- our ElementTree readers (exporter/vsphere/soap.py, esxcli.py): `read_answer()` reads the body
  up to the cap and has the prolog checked by a guarded expat parser as it arrives; `parse()`
  checks again before ElementTree reads it, and checks esxcli's documents inside an answer.
"""

from __future__ import annotations

import io
import time
import zlib
from xml.etree import ElementTree as ET
from xml.parsers import expat

import pyVim.connect
import pyVmomi.SoapAdapter

from exporter.configuration.config import default

_READ = 1 << 16  # bytes read from the socket at a time while the prolog is checked
_REST = 1 << 20  # and after it
# The largest answer the exporter reads, decompressed (its default's reasoning: docs/vsphere.md).
_limit = default("vsphere.max_answer_size")


class AnswerRefused(ValueError):
    """An answer the exporter will not parse; str() is one line."""


class AnswerTooLarge(AnswerRefused):
    """An answer past a call's own cap (read_answer's limit), below the process-wide one."""


def limit_answers(max_bytes: int) -> None:
    """Set the process-wide cap on one answer's size (decompressed), in bytes."""
    global _limit
    _limit = int(max_bytes)


def _too_large(cap: int | None = None) -> AnswerRefused:
    """cap: a smaller cap the caller gave this answer (sized to what it asked for): AnswerTooLarge."""
    if cap is not None:
        return AnswerTooLarge(f"answer larger than {cap} bytes (the cap sized to what was asked): refused")
    return AnswerRefused(f"answer larger than {_limit} bytes (--vsphere.max-answer-size): refused")


def _refuse_doctype(*_args) -> None:
    raise AnswerRefused("answer carries a DOCTYPE (entity declarations), which vSphere never sends: refused")


def harden(parser):
    """An expat parser that stops at a DOCTYPE (before its internal subset, so no entity is ever
    declared or expanded) and never reads an external entity."""
    parser.StartDoctypeDeclHandler = _refuse_doctype
    parser.EntityDeclHandler = _refuse_doctype
    parser.ExternalEntityRefHandler = _refuse_doctype
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    return parser


class _GuardedParser:
    """What pyVmomi gets from ParserCreate: a hardened expat parser that also counts the bytes
    it is fed and stops at the cap (pyVmomi parses straight from the socket). Handlers and
    options set on it reach the real parser."""

    __slots__ = ("_parser", "_fed")

    def __init__(self, parser):
        object.__setattr__(self, "_parser", harden(parser))
        object.__setattr__(self, "_fed", 0)

    def __getattr__(self, name):
        return getattr(self._parser, name)

    def __setattr__(self, name, value):
        setattr(self._parser, name, value)

    def _count(self, data) -> None:
        fed = self._fed + len(data)
        object.__setattr__(self, "_fed", fed)
        if fed > _limit:
            raise _too_large()

    def Parse(self, data, isfinal=False):  # noqa: N802 - expat's name
        self._count(data)
        return self._parser.Parse(data, isfinal)

    def ParseFile(self, file):  # noqa: N802 - expat's name
        while True:
            data = file.read(_READ)
            if not data:
                return self._parser.Parse(b"", True)
            self._count(data)
            self._parser.Parse(data, False)


def _guarded_parser_create(*args, **kwargs):
    return _GuardedParser(expat.ParserCreate(*args, **kwargs))


class _GuardedTree(ET.ElementTree):
    """pyVim.connect's tree for vimServiceVersions.xml, read through read_answer()."""

    def parse(self, source, parser=None):
        return super().parse(io.BytesIO(b"".join(read_answer(source))), parser)


class _Prolog:
    """Checks the start of a document, up to its root element, with a hardened parser."""

    def __init__(self):
        self.done = False
        self._parser = harden(expat.ParserCreate())
        self._parser.StartElementHandler = self._root

    def _root(self, *_args) -> None:
        raise _RootReached

    def feed(self, data: bytes, final: bool = False) -> None:
        if self.done:
            return
        try:
            self._parser.Parse(data, final)
        except _RootReached:
            self.done = True
        except expat.ExpatError:  # not XML before its root: the parser that follows says so, as before
            self.done = True


class _RootReached(Exception):
    pass


def read_answer(stream, gzipped: bool = False, xml: bool = True, limit: int | None = None) -> list[bytes]:
    """The body of an answer, as the pieces read from `stream` (decompressed when gzipped), up to
    the cap, its prolog checked as it arrives (xml): a DOCTYPE is refused after the first piece
    that holds it, an answer over the cap as soon as it passes it (AnswerRefused). The pieces are
    not joined: parse() feeds them to ElementTree one by one, so the body is copied no more often
    than by one plain read(). limit: a smaller cap of this call's own (AnswerTooLarge past it)."""
    return list(iter_answer(stream, gzipped, xml, limit=limit))


def answer_limit() -> int:
    """The process-wide cap on one answer (--vsphere.max-answer-size), in bytes."""
    return _limit


def iter_answer(
    stream,
    gzipped: bool = False,
    xml: bool = True,
    limit: int | None = None,
    deadline: float | None = None,
    capped: bool = True,
):
    """read_answer's pieces one by one, as they arrive, for a reader that keeps less than the
    whole answer (a piece is yielded only after its prolog check passed). limit: a smaller cap for
    this answer (AnswerTooLarge past it); deadline: a time.monotonic() past which an answer
    still arriving is cut (AnswerRefused). capped=False: no cap on the answer at all, for a reader
    that caps what it keeps itself and drops the rest as it comes (exporter.vsan.perf.read_answer:
    what was not asked for must not push out what was); the deadline still bounds it."""
    cap = float("inf") if not capped else _limit if limit is None else min(int(limit), _limit)
    prolog, size = _Prolog() if xml else None, 0
    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS) if gzipped else None
    while True:
        # Small reads while the prolog is being checked: the rest of a hostile answer is never read.
        raw = stream.read(_READ if prolog is not None and not prolog.done else _REST)
        if not raw:
            break
        if deadline is not None and time.monotonic() > deadline:
            raise AnswerRefused(f"answer still arriving after the deadline, {size} bytes read: cut")
        for data in _inflated(inflate, raw) if inflate else (raw,):
            size += len(data)
            if size > cap:
                raise _too_large(cap if cap < _limit else None)
            if prolog is not None:
                prolog.feed(data)
            yield data
    if prolog is not None:
        prolog.feed(b"", final=True)


def _inflated(inflate, raw: bytes):
    """Decompressed pieces of one read, each at most 1 MiB (a gzip bomb is stopped by the cap
    before it is inflated whole)."""
    try:
        yield inflate.decompress(raw, 1 << 20)
        while inflate.unconsumed_tail:
            yield inflate.decompress(inflate.unconsumed_tail, 1 << 20)
    except zlib.error as err:
        raise AnswerRefused(f"answer is not valid gzip ({err})") from None


def check(document) -> None:
    """Refuse a document with a DOCTYPE (AnswerRefused): bytes, text, or the pieces of an answer;
    it is read only up to its root element."""
    prolog = _Prolog()
    for piece in [document] if isinstance(document, (bytes, str)) else document:
        prolog.feed(piece)
        if prolog.done:
            return
    prolog.feed(b"" if not isinstance(document, str) else "", final=True)


def parse(document) -> ET.Element:
    """ElementTree's parse of an answer (the pieces read_answer() returned), or of a document inside
    one (esxcli's), its prolog checked first (again, for an answer: it stops at the root)."""
    check(document)
    parser = ET.XMLParser()
    for piece in [document] if isinstance(document, (bytes, str)) else document:
        parser.feed(piece)
    return parser.close()


def install() -> None:
    """Guard pyVmomi's and pyVim's parsers; once per process (idempotent)."""
    pyVmomi.SoapAdapter.ParserCreate = _guarded_parser_create
    pyVim.connect.ElementTree = _GuardedTree


install()
