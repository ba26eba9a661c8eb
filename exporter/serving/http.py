"""The HTTP endpoint: the cached exposition on the telemetry path, a landing page, a health check."""

from __future__ import annotations

import logging
import socket
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client.exposition import CONTENT_TYPE_LATEST

log = logging.getLogger(__name__)

# A whole request (its headers read, its answer written) must end within this: the socket
# timeout alone is per read, so a client sending one byte a minute would hold a thread forever.
REQUEST_TIMEOUT = 60.0

LANDING = """<html><head><title>ESXi storage exporter</title></head><body>
<h1>ESXi storage exporter</h1><p><a href="{path}">Metrics</a></p></body></html>"""


def make_handler(exposition, telemetry_path: str, probes=None, web=None):
    """probes: target name -> Exposition of that target alone, served at /probe?target=NAME.
    web: the web config (basic auth, headers); TLS is the server's."""
    probes = probes or {}
    landing = LANDING.format(path=telemetry_path).encode()
    extra_headers = web.headers if web else {}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = REQUEST_TIMEOUT  # a client that stops talking frees its thread
        head = False

        def handle_one_request(self):
            # Past the deadline the socket is shut: the blocked read or write returns and the
            # connection ends (an idle keep-alive connection too).
            deadline = threading.Timer(REQUEST_TIMEOUT, self._expire)
            deadline.daemon = True
            deadline.start()
            try:
                super().handle_one_request()
            finally:
                deadline.cancel()

        def _expire(self):
            log.debug("%s: request not done within %gs, connection closed", self.address_string(), REQUEST_TIMEOUT)
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

        def do_HEAD(self):  # noqa: N802
            self.head = True
            try:
                self.do_GET()
            finally:
                self.head = False

        def do_GET(self):  # noqa: N802 (http.server's naming)
            path, _, query = self.path.partition("?")
            if web is not None and not web.authorized(self.headers.get("Authorization")):
                self._send(
                    401,
                    "text/plain; charset=utf-8",
                    b"Unauthorized\n",
                    {"WWW-Authenticate": 'Basic realm="esxi-storage-exporter", charset="UTF-8"'},
                )
            elif path == telemetry_path:
                self._metrics(exposition)
            elif path == "/probe" and probes:
                target = urllib.parse.parse_qs(query).get("target", [""])[0]
                if target in probes:
                    self._metrics(probes[target])
                else:  # any client reaches this: echo nothing it sent and name no configured target
                    self._send(
                        400, "text/plain; charset=utf-8", b"unknown or missing target (the exporter's configuration names them)\n"
                    )
            elif path == "/":
                self._send(200, "text/html; charset=utf-8", landing)
            elif path in ("/-/healthy", "/-/ready"):
                self._send(200, "text/plain; charset=utf-8", b"OK\n")
            else:
                self._send(404, "text/plain; charset=utf-8", b"Not found\n")

        def _metrics(self, source):
            gzipped = accepts_gzip(self.headers.get("Accept-Encoding", ""))
            parts = source.parts(gzipped=gzipped)
            self._send(200, CONTENT_TYPE_LATEST, parts, {"Content-Encoding": "gzip"} if gzipped else {})

        def _send(self, code, content_type, body, headers=None):
            """body: bytes, or a tuple of pieces written in turn (never joined into a copy): bytes,
            or an iterable of bytes with a len() (exposition.Inflated)."""
            parts = body if isinstance(body, tuple) else (body,)
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(sum(len(part) for part in parts)))
            for name, value in {**extra_headers, **(headers or {})}.items():
                self.send_header(name, value)
            self.end_headers()
            if not self.head:
                for part in parts:
                    if isinstance(part, bytes):
                        self.wfile.write(part)
                    else:
                        for chunk in part:
                            self.wfile.write(chunk)

        def log_message(self, fmt, *args):  # access logs only at debug level
            log.debug("%s %s", self.address_string(), fmt % args)

    return Handler


def accepts_gzip(header: str) -> bool:
    """Whether an Accept-Encoding header (RFC 9110 12.5.3) takes gzip: named (or x-gzip) with a
    q-value above 0. `gzip;q=0` refuses it, and so does a header that does not name it."""
    for coding in header.split(","):
        name, *params = (part.strip() for part in coding.split(";"))
        if name.lower() not in ("gzip", "x-gzip"):
            continue
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    return float(value) > 0
                except ValueError:
                    return False
        return True
    return False


def parse_listen_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host.strip("[]") or "0.0.0.0", int(port)


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a hung client never blocks shutdown
    tls = None  # ssl.SSLContext from the web config

    def handle_error(self, request, client_address):
        # A client that hangs up mid-answer is its own business: one debug line, not a traceback
        # on stderr (socketserver's default). Anything else is ours and is logged whole.
        err = sys.exc_info()[1]
        if isinstance(err, (ConnectionError, TimeoutError)):
            log.debug("client %s went away: %s", client_address[0], err)
        else:
            log.exception("request from %s failed", client_address[0])

    def finish_request(self, request, client_address):
        if self.tls is None:
            return super().finish_request(request, client_address)
        # The TLS handshake runs here, in the connection's own thread: a slow or silent client
        # never holds up accept() for the others.
        request.settimeout(30)
        try:
            if request.recv(1, socket.MSG_PEEK)[:1].isalpha():  # plain HTTP sent to the TLS port
                request.sendall(
                    b"HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"
                    b"Client sent an HTTP request to an HTTPS server.\n"
                )
                return
            conn = self.tls.wrap_socket(request, server_side=True)
        except (OSError, ValueError) as err:
            log.debug("TLS handshake with %s failed: %s", client_address[0], err)
            return
        try:
            super().finish_request(conn, client_address)
        finally:
            conn.close()


class MetricsServer:
    def __init__(self, exposition, listen_address: str, telemetry_path: str = "/metrics", probes=None, web=None):
        host, port = parse_listen_address(listen_address)
        self.httpd = _Server((host, port), make_handler(exposition, telemetry_path, probes, web))
        self.httpd.tls = web.tls if web else None
        self.address = self.httpd.server_address

    def serve_in_thread(self) -> threading.Thread:
        thread = threading.Thread(target=self.httpd.serve_forever, name="http", daemon=True)
        thread.start()
        return thread

    def shutdown(self):
        self.httpd.shutdown()
        self.httpd.server_close()
