"""A vCenter front that answers QueryPerf from memory: an HTTPS proxy (simulators/hostile_vsphere.py's)
in front of the storage simulator, in a process of its own, for bench/vcenter_max.py --replay.

Every request goes to the simulator, and each QueryPerf answer is kept, by the entities the call
asks for (bench/collection_replay.py's key). Once told `replay` (a line on its standard input), a
QueryPerf call it has an answer for is answered at once from memory, the answer's sample times
moved so that its newest is the latest 20 s boundary (a new sample every 20 s, as vCenter's
real-time samples come); a call it has none for still goes to the simulator. Every answer of one
collection (calls with less than BURST_GAP between them) gets the same sample time, the boundary
when it began: the recorded answers have one sample and ignore startTime, so a collection that
went past a boundary got the hosts' answers at one time and their VMs' at the next (every VM's
samples dropped as `time_mismatch`), where vCenter would answer both from startTime on. So `serve` collects
as from a vCenter that answers on hardware of its own, while everything else (the walk, the
update stream, esxcli) stays the simulator's.

  python3 bench/replay_proxy.py UPSTREAM_URL FOLDER     # prints its port; stdin: replay | counts
"""

from __future__ import annotations

import datetime as dt
import http.client
import ssl
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(1, str(Path(__file__).resolve().parent))

from collection_replay import _STAMP, _TIME, FORMAT, key_of, moved_on  # noqa: E402

from simulators.hostile_vsphere import HostileProxy  # noqa: E402

BURST_GAP = 5.0  # seconds without a QueryPerf call that end a collection's burst of calls


def stamped_at(answer: bytes, at: float) -> bytes:
    """The answer with its sample times moved so that the newest is `at` (epoch seconds)."""
    times = [dt.datetime.strptime(t.decode(), FORMAT) for info in _STAMP.findall(answer) for t in _TIME.findall(info)]
    if not times:
        return answer
    newest = dt.datetime.fromtimestamp(at, dt.timezone.utc).replace(tzinfo=None)
    return moved_on(answer, (newest - max(times)).total_seconds())


class Bursts:
    """The sample time of each collection's calls: the 20 s boundary when its first call came
    (two collections begun within one 20 s step get the same sample, as from vCenter: nothing new)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.stamp: float | None = None
        self.last_call = float("-inf")

    def at(self, now: float) -> float:
        with self.lock:
            if now - self.last_call > BURST_GAP or self.stamp is None:
                self.stamp = now // 20 * 20
            self.last_call = now
            return self.stamp


class ReplayProxy(HostileProxy):
    def __init__(self, upstream_url: str, folder: Path):
        folder.mkdir(parents=True, exist_ok=True)
        super().__init__(upstream_url, folder)
        # headers and body are two writes: without this each answer waits for the client's delayed ACK (40 ms)
        self.server.RequestHandlerClass.disable_nagle_algorithm = True
        self.cert = folder / "proxy.crt"
        self.local = threading.local()  # each handler thread's own connection to the simulator
        self.answers: dict[str, bytes] = {}
        self.replaying = False
        self.counts = {"replayed": 0, "forwarded": 0}
        self.bursts = Bursts()

    def _forward(self, method: str, path: str, body: bytes, headers):
        query_perf = method == "POST" and b"<QueryPerf" in body[:2000]
        if query_perf and self.replaying:
            answer = self.answers.get(key_of(body))
            if answer is not None:
                self.counts["replayed"] += 1
                return 200, stamped_at(answer, self.bursts.at(time.time())), [("Content-Type", "text/xml; charset=utf-8")]
        self.counts["forwarded"] += 1
        status, payload, kept = self._upstream(method, path, body, headers)
        if query_perf and status == 200:
            self.answers[key_of(body)] = payload
        return status, payload, kept

    def _upstream(self, method: str, path: str, body: bytes, headers):
        """As HostileProxy's, on a kept-alive connection, waiting as long as the walk's answers take."""
        sent = {k: v for k, v in headers.items() if k.lower() in ("cookie", "soapaction", "content-type", "vmware-api-version")}
        for attempt in (1, 2):  # a kept connection the simulator closed meanwhile: once more on a new one
            conn = getattr(self.local, "conn", None)
            if conn is None:
                conn = self.local.conn = http.client.HTTPSConnection(
                    *self.upstream, context=ssl._create_unverified_context(), timeout=600
                )
            try:
                conn.request(method, path, body if method == "POST" else None, sent)
                response = conn.getresponse()
                payload = response.read()
            except (OSError, http.client.HTTPException):
                conn.close()
                self.local.conn = None
                if attempt == 2:
                    raise
                continue
            kept = [(k, v) for k, v in response.getheaders() if k.lower() in ("set-cookie", "content-type")]
            return response.status, payload, kept
        raise AssertionError("unreachable")


def main() -> int:
    proxy = ReplayProxy(sys.argv[1], Path(sys.argv[2]))
    print(proxy.port, flush=True)
    for line in sys.stdin:
        if line.strip() == "replay":
            proxy.replaying = True
            print(f"replaying {len(proxy.answers)} answers", flush=True)
        elif line.strip() == "counts":
            print(proxy.counts, flush=True)
    proxy.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
