"""What a vSphere client sends and receives, counted: a TCP relay in front of the server (bytes on
the wire each way, TLS included) and the HTTP requests of this process. Imports nothing of the
exporter, so a benchmark can run another checkout's code through it."""

from __future__ import annotations

import socket
import threading


class Relay:
    """A TCP relay on 127.0.0.1 in front of the simulator, counting the bytes each way: what
    vCenter would send and receive (TLS included). Connections through it are counted too."""

    def __init__(self, host: str, port: int):
        self.target = (host, port)
        self.lock = threading.Lock()
        self.sent = self.received = self.connections = 0  # sent: client -> server
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def counts(self) -> tuple[int, int, int]:
        with self.lock:
            return self.sent, self.received, self.connections

    def _accept(self):
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            with self.lock:
                self.connections += 1
            threading.Thread(target=self._pipe, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, False), daemon=True).start()

    def _pipe(self, source, sink, outbound: bool):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
                with self.lock:
                    if outbound:
                        self.sent += len(data)
                    else:
                        self.received += len(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        self.server.close()


class Requests:
    """HTTP requests this process sends (pyVmomi's and ours all go through http.client)."""

    count = 0

    @classmethod
    def install(cls):
        import http.client

        original = http.client.HTTPConnection.request

        def request(self, *args, **kwargs):
            cls.count += 1
            return original(self, *args, **kwargs)

        http.client.HTTPConnection.request = request
