"""One `serve` process reading SMART over SSH from a host whose page for one disk is --flood-mb
megabytes (issue 37): its peak memory and its scrape times while the page is refused.

  python3 bench/smart_flood.py [--flood-mb 100] [--rounds 3] [--interval 2] [--base DIR ...]

A real sshd on 127.0.0.1 (simulators/esxi_ssh/sshd.py) whose esxcli is simulators/esxi_ssh/esxcli.py:
the SMART host of tests/fixtures/smart/, its HDD's page streamed as --flood-mb MB of well-formed
vendor rows. `python -m exporter serve --esxtop-ssh ... --smart.interval=--interval` of each code
(each --base DIR, then this checkout) in turn: a first good round, then the flood on, then
/metrics scraped back to back until --rounds SMART rounds have refused the page (the counter
esxi_disk_smart_errors_total{reason="too_large"}) or, for a code without the cap, until
--rounds rounds have read it (esxi_disk_smart_last_read_timestamp_seconds moved). Reported: the
peak resident set (VmHWM in /proc/PID/status) at the end, the scrapes' median and slowest time,
the disk series in the last body and its size. A code without the cap holds the whole page: give
it a --flood-mb the machine has memory for.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from simulators.esxi_ssh.esxcli import HDD, NVME, SSD  # noqa: E402
from simulators.esxi_ssh.sshd import Sshd  # noqa: E402
from tests.support.servers import free_port, wait_http  # noqa: E402

HOST = "esx-sim"
GET = "storage core device smart get"
MIB = 1024 * 1024


def peak_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM")


def value(body: str, name: str, **labels) -> float | None:
    """One sample by a scan of the lines (a code without the cap exports hundreds of thousands of
    series: a full parse of each body would take longer than the scrape)."""
    wanted = [f'{k}="{v}"' for k, v in labels.items()]
    for line in body.splitlines():
        if line.startswith(name + "{") and all(w in line for w in wanted):
            return float(line.rsplit(" ", 1)[1])
    return None


def disk_series(body: str) -> int:
    return sum(1 for line in body.splitlines() if line.startswith("esxi_disk_"))


def scrape(url: str) -> tuple[float, str]:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=600) as response:
        body = response.read().decode()
    return time.perf_counter() - start, body


def run(code: Path, sshd: Sshd, flood_mb: int, rounds: int, interval: float) -> dict:
    sshd.set_control(devices=[HDD, SSD, NVME], smart="healthy")
    port = free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    args = [sys.executable, "-m", "exporter", "serve", f"--web.listen-address=127.0.0.1:{port}"]
    args += ["--esxtop-ssh", sshd.target, f"--esxtop.ssh-identity-file={sshd.tmp / 'client_key'}"]
    args += [f"--esxtop.ssh-known-hosts={sshd.known_hosts}", "--esxtop.ssh-interval=1s", f"--smart.interval={interval}s"]
    log = open(sshd.tmp / f"exporter-{code.name}.log", "wb")
    proc = subprocess.Popen(args, cwd=code, env=dict(os.environ, PYTHONPATH=str(code)), stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_http(f"http://127.0.0.1:{port}/-/healthy", proc=proc)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            _, body = scrape(url)
            if value(body, "esxi_disk_smart_up", host=HOST) == 1:
                break
            time.sleep(0.5)
        else:
            raise RuntimeError("no first SMART round within 120 s")
        first_read = value(body, "esxi_disk_smart_last_read_timestamp_seconds", host=HOST, device=HDD)
        sshd.set_control(devices=[HDD, SSD, NVME], smart="healthy", smart_flood={HDD: flood_mb})
        times, refused, read, deadline = [], 0, 0, time.monotonic() + 600
        while time.monotonic() < deadline and max(refused, read) < rounds:
            took, body = scrape(url)
            times.append(took)
            refused = value(body, "esxi_disk_smart_errors_total", host=HOST, command=GET, reason="too_large") or 0
            last = value(body, "esxi_disk_smart_last_read_timestamp_seconds", host=HOST, device=HDD)
            if last != first_read:  # a code without the cap read the flood whole
                read, first_read = read + 1, last
        return {
            "code": code.name,
            "peak_mib": peak_rss(proc.pid) / MIB,
            "scrapes": len(times),
            "median_s": statistics.median(times),
            "slowest_s": max(times),
            "disk_series": disk_series(body),
            "body_kib": len(body.encode()) / 1024,
            "refused": refused,
            "read_whole": read,
        }
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--flood-mb", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--interval", type=float, default=2.0)
    parser.add_argument("--base", action="append", default=[], type=Path, help="a checkout of the code before")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # a timeout's TERM still stops the servers below
    with tempfile.TemporaryDirectory() as tmp:
        sshd = Sshd(Path(tmp))
        try:
            for code in [*args.base, ROOT]:
                r = run(code.resolve(), sshd, args.flood_mb, args.rounds, args.interval)
                print(
                    f"{r['code']}: {args.flood_mb} MB SMART page, {r['refused']} round(s) refused, {r['read_whole']} read whole; "
                    f"peak {r['peak_mib']:.0f} MiB; {r['scrapes']} scrapes, median {r['median_s'] * 1000:.0f} ms, "
                    f"slowest {r['slowest_s'] * 1000:.0f} ms; {r['disk_series']} disk series, /metrics {r['body_kib']:.0f} KiB",
                    flush=True,
                )
        finally:
            sshd.stop()


if __name__ == "__main__":
    main()
