"""A collection's own cost with vCenter's answer time taken out: the target walks the storage
simulator and collects from it as `serve` does, then collects again with every QueryPerf answer
served by a replay server: a process of its own that sends the simulator's recorded answers
(their sample times moved on 20 s a round), gzip-compressed as vCenter sends them, over TLS, at
once. What is left is the exporter's own work: writing the requests, TLS, inflating, scanning,
merging and building the samples, the store, the query threads.

  python3 bench/collection_replay.py [--hosts 500] [--luns 8] [--vms 16] [--rounds 5]

On this project's 2-core machine the simulator answering QueryPerf takes about as much CPU as the
exporter reading the answers (docs/scale.md), so a collection against it measures both; a real
vCenter answers on its own hardware. Prints, for N hosts: the collection against the simulator
and the same collection replayed (medians of --rounds each, every host's and VM's newest sample,
as every 20 s): wall, this process's CPU (every thread), the replay server's CPU, and the host
samples each stored.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import hashlib
import http.client
import http.server
import json
import re
import ssl
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # runnable as a script or with -m
from vsphere_common import StorageSim, Timer, cpu_seconds, following, median, password_file, target  # noqa: E402

from exporter.vsphere import soap  # noqa: E402

_ENTITY = re.compile(rb'<entity type="[^"]*">([^<]*)</entity>')
_STAMP = re.compile(rb"<sampleInfoCSV>([^<]*)</sampleInfoCSV>")
_TIME = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def key_of(request: bytes) -> str:
    """A QueryPerf call's key: the entities it asks for, in order (not its start times)."""
    return hashlib.sha1(b"|".join(_ENTITY.findall(request))).hexdigest()


FORMAT = "%Y-%m-%dT%H:%M:%SZ"  # a CSV answer's sample times


def moved_on(body: bytes, seconds: float) -> bytes:
    """An answer with every sample time `seconds` later."""

    def later(stamp: re.Match) -> bytes:
        when = dt.datetime.strptime(stamp.group(0).decode(), FORMAT) + dt.timedelta(seconds=seconds)
        return when.strftime(FORMAT).encode()

    return _STAMP.sub(lambda m: b"<sampleInfoCSV>" + _TIME.sub(later, m.group(1)) + b"</sampleInfoCSV>", body)


def serve(directory: Path) -> None:
    """The replay server (a process of its own): round R's answer to a call is DIR/R/KEY.gz, sent
    as it is (gzip); GET /round/R switches to round R. Prints its port, then serves until killed."""
    answers = {
        (int(path.parent.name), path.stem): path.read_bytes() for path in directory.glob("*/*.gz") if path.parent.name.isdigit()
    }
    state = {"round": 0}

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed ACK between

        def do_GET(self):
            state["round"] = int(self.path.rsplit("/", 1)[1])
            self._send(b"ok", gzipped=False)

        def do_POST(self):
            request = self.rfile.read(int(self.headers["Content-Length"]))
            self._send(answers[(state["round"], key_of(request))], gzipped=True)

        def _send(self, body: bytes, gzipped: bool) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/xml; charset=utf-8")
            if gzipped:
                self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(directory / "cert.pem", directory / "key.pem")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)
    server.serve_forever()


class Replay:
    """soap.post for QueryPerf requests: passed to the simulator and kept (recording), or sent to
    the replay server on a connection of each query thread's own; every other call goes to the
    simulator."""

    def __init__(self):
        self.real = soap.post
        self.answers: dict[str, bytes] = {}
        self.port: int | None = None
        self.local = threading.local()
        self.context = ssl.create_default_context()
        self.context.check_hostname, self.context.verify_mode = False, ssl.CERT_NONE  # the bench's own self-signed server

    def __call__(self, stub, request: bytes, *args, **kwargs):
        if b"<QueryPerf" not in request[:2000]:
            return self.real(stub, request, *args, **kwargs)
        if self.port is None:
            status, pieces = self.real(stub, request, *args, **kwargs)
            if status == 200:
                self.answers[key_of(request)] = b"".join(pieces)
            return status, pieces
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context, timeout=300)
        return self.real(stub, request, conn=conn)


def write_rounds(answers: dict[str, bytes], directory: Path, rounds: int) -> None:
    for turn in range(1, rounds + 1):
        (directory / str(turn)).mkdir()
        for key, body in answers.items():
            (directory / str(turn) / f"{key}.gz").write_bytes(gzip.compress(moved_on(body, 20 * turn), compresslevel=6))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=500)
    parser.add_argument("--luns", type=int, default=8)
    parser.add_argument("--vms", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)  # the replay server's own process
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="bench-collection-replay-"))
    sim = StorageSim(tmp, "-hosts", str(args.hosts), "-luns", str(args.luns), "-vms", str(args.vms), fixture=None)
    replay, server = Replay(), None
    soap.post = replay
    live, replayed, samples = [], [], {}
    try:
        t, stop = target(sim, password_file(tmp)), threading.Event()
        following(t, stop, timeout=3600.0)
        counts = t.topology.counts()
        for _ in range(args.rounds):
            t.last_timestamp.clear()  # every host and VM answers with its newest sample, as every 20 s
            before = sum(t.samples.values())
            with Timer() as timer:
                assert t.collect(), t.error
            live.append((timer.wall, timer.cpu, 0.0))
            samples["live"] = sum(t.samples.values()) - before
        answers = tmp / "answers"
        answers.mkdir()
        write_rounds(replay.answers, answers, args.rounds)
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
             "-keyout", str(answers / "key.pem"), "-out", str(answers / "cert.pem")],
            check=True, capture_output=True,
        )  # fmt: skip
        server = subprocess.Popen([sys.executable, __file__, "--serve", str(answers)], stdout=subprocess.PIPE, text=True)
        replay.port = int(server.stdout.readline())
        for turn in range(1, args.rounds + 1):
            conn = http.client.HTTPSConnection("127.0.0.1", replay.port, context=replay.context)
            conn.request("GET", f"/round/{turn}")
            conn.getresponse().read()
            conn.close()
            before, served_cpu = sum(t.samples.values()), cpu_seconds(server.pid)
            with Timer() as timer:
                assert t.collect(), t.error
            replayed.append((timer.wall, timer.cpu, cpu_seconds(server.pid) - served_cpu))
            samples["replayed"] = sum(t.samples.values()) - before
        stop.set()
    finally:
        soap.post = replay.real
        if server is not None:
            server.kill()
            server.wait()
        sim.stop()
    size = sum(len(body) for body in replay.answers.values()) / 2**20
    report = {
        "hosts": counts["host"], "vms": counts["vm"], "calls": len(replay.answers), "answers_mib": round(size, 1),
        "live": live, "replayed": replayed, "samples": samples,
    }  # fmt: skip
    print(
        f"# One collection of {counts['host']} hosts and {counts['vm']} VMs ({counts['vdisk']} disks): "
        f"{len(replay.answers)} QueryPerf calls, {size:.0f} MiB of answers; medians of {args.rounds}"
    )
    print("| collection | wall s | CPU s (exporter, every thread) | CPU s (replay server) | host samples stored |")
    print("|---|---:|---:|---:|---:|")
    for name, runs, key in (("against the simulator", live, "live"), ("answers replayed", replayed, "replayed")):
        walls, cpus, served = zip(*runs)
        print(f"| {name} | {median(walls):.3f} | {median(cpus):.3f} | {median(served):.3f} | {samples[key]:,} |")
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
