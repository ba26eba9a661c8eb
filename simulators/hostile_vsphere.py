"""A local HTTPS endpoint in front of a real vSphere simulator that answers chosen requests with
hostile XML (billion laughs, quadratic blowup, an external entity) or an oversized answer, and
passes every other request through unchanged (so a login can succeed before the attack).

    proxy = HostileProxy(sim.url, tmp)            # https://127.0.0.1:PORT/sdk
    proxy.attack("RetrieveServiceContent", billion_laughs("RetrieveServiceContentResponse"))

`on` is a SOAP method name (matched in the request body) or "vimServiceVersions.xml" (the GET
pyVim makes at login); `served` counts the hostile answers sent. `slow(on, seconds)` delays the
answers to one method, or to every request of an endpoint when `on` is a path ("/vsanHealth": a
vSAN health service that hangs), instead. `rewrite(on, fn)` passes the simulator's own answers to
one method through fn (bytes -> bytes): hostile values in an otherwise real answer.
"""

from __future__ import annotations

import gzip
import http.client
import http.server
import ssl
import subprocess
import threading
import time
import urllib.parse
from pathlib import Path

_ENVELOPE_OPEN = (
    '<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns="urn:vim25" '
    'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><soapenv:Body>'
)
_ENVELOPE_CLOSE = "</soapenv:Body></soapenv:Envelope>"


def _soap(doctype: str, response: str, content: str) -> bytes:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n{doctype}\n{_ENVELOPE_OPEN}<{response}><returnval>{content}'
        f"</returnval></{response}>{_ENVELOPE_CLOSE}"
    ).encode()


def billion_laughs(response: str) -> bytes:
    """Ten levels of ten references: 10**9 'lol's from under 1 KB."""
    entities = ['<!ENTITY lol0 "lol">'] + [f'<!ENTITY lol{n} "{f"&lol{n - 1};" * 10}">' for n in range(1, 10)]
    return _soap(f"<!DOCTYPE soapenv:Envelope [{''.join(entities)}]>", response, "&lol9;")


def quadratic_blowup(response: str, entity_bytes: int = 280, references: int = 60_000) -> bytes:
    """One entity referenced many times: no nesting for a depth limit to catch, and each 3-byte
    reference of a 280-byte entity expands 93 times, under expat's own amplification limit (100),
    so only a refused DOCTYPE stops it. With 1.3 million references (a 4 MB answer) it expands to
    364 MB: the shape that took the exporter to 1.07 GB of RSS before the guard."""
    return _soap(f'<!DOCTYPE soapenv:Envelope [<!ENTITY a "{"x" * entity_bytes}">]>', response, "&a;" * references)


def external_entity(response: str) -> bytes:
    return _soap('<!DOCTYPE soapenv:Envelope [<!ENTITY e SYSTEM "file:///etc/passwd">]>', response, "&e;")


def esxcli_answer(document: bytes) -> bytes:
    """An ExecuteSoap answer (esxcli through the API) whose result is `document`, escaped inside it
    as esxcli's own answers are: a document of its own, parsed after the answer."""
    from xml.sax.saxutils import escape

    return _soap("", "ExecuteSoapResponse", f"<response>{escape(document.decode())}</response>")


def oversized(response: str, size: int) -> bytes:
    """A well-formed answer of about `size` bytes (whitespace inside the result)."""
    return _soap("", response, " " * size)


def self_signed(folder: Path) -> tuple[Path, Path]:
    cert, key = folder / "proxy.crt", folder / "proxy.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        + ["-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=127.0.0.1"]
        + ["-addext", "subjectAltName=IP:127.0.0.1"],
        check=True,
        capture_output=True,
    )
    return cert, key


class _QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # the client hangs up on a refused answer mid-write: expected, not worth a traceback


class HostileProxy:
    def __init__(self, upstream_url: str, folder: Path):
        parts = urllib.parse.urlsplit(upstream_url)
        self.upstream = (parts.hostname, parts.port or 443)
        self.on: str | None = None
        self.payload, self.status, self.gzipped = b"", 200, False
        self.served = 0
        self.slow_on: str | None = None
        self.slow_by = 0.0
        self.rewrites: dict[str, object] = {}  # method -> fn(answer bytes) -> bytes
        self.lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802
                self._answer(b"")

            def do_POST(self):  # noqa: N802
                self._answer(self.rfile.read(int(self.headers.get("Content-Length", 0))))

            def _answer(self, body: bytes):
                hostile = proxy._hostile(self.path, body)
                if proxy._is_slow(self.path, body):
                    time.sleep(proxy.slow_by)  # a slow vCenter: the answer comes, late
                if hostile is not None:
                    status, payload, headers = hostile
                else:
                    status, payload, headers = proxy._forward(self.command, self.path, body, self.headers)
                    for on, fn in list(proxy.rewrites.items()):
                        if f"<{on} ".encode() in body and status == 200:
                            payload = fn(payload)
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        cert, key = self_signed(folder)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.server = _QuietServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.url = f"https://127.0.0.1:{self.port}/sdk"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def attack(self, on: str, payload: bytes, status: int = 200, gzipped: bool = False) -> None:
        with self.lock:
            self.on, self.payload, self.status, self.gzipped, self.served = on, payload, status, gzipped, 0

    def slow(self, on: str | None, seconds: float = 0.0) -> None:
        """Answer every `on` request (a SOAP method name, or a path such as "/vsanHealth")
        `seconds` late; None: on time again."""
        self.slow_on, self.slow_by = on, seconds

    def rewrite(self, on: str, fn) -> None:
        """Pass the upstream's answers to `on` (a SOAP method name) through fn(bytes) -> bytes."""
        self.rewrites[on] = fn

    def _is_slow(self, path: str, body: bytes) -> bool:
        on = self.slow_on
        if on is None:
            return False
        return path.split("?")[0] == on if on.startswith("/") else f"<{on} ".encode() in body

    def _hostile(self, path: str, body: bytes):
        with self.lock:
            on = self.on
            if on is None or not (path.endswith("/" + on) if on.endswith(".xml") else f"<{on} ".encode() in body):
                return None
            self.served += 1
            headers = [("Content-Type", "text/xml; charset=utf-8")]
            if self.gzipped:
                headers.append(("Content-Encoding", "gzip"))
            return self.status, self.payload, headers

    def _forward(self, method: str, path: str, body: bytes, headers):
        conn = http.client.HTTPSConnection(*self.upstream, context=ssl._create_unverified_context(), timeout=30)
        try:
            sent = {
                k: v for k, v in headers.items() if k.lower() in ("cookie", "soapaction", "content-type", "vmware-api-version")
            }
            conn.request(method, path, body if method == "POST" else None, sent)
            response = conn.getresponse()
            payload = response.read()
            kept = [(k, v) for k, v in response.getheaders() if k.lower() in ("set-cookie", "content-type")]
            return response.status, payload, kept
        finally:
            conn.close()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def gzip_bomb(response: str, size: int) -> bytes:
    """`size` bytes of a well-formed answer, gzipped (about a thousandth of that on the wire)."""
    return gzip.compress(oversized(response, size), compresslevel=9)
