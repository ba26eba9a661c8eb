"""Stand-in `esxtop -b` run by the test sshd: prints a header and one row per `-d` seconds.

Behaviour comes from the JSON file named by FAKE_ESXTOP_CONTROL, read at start (so a test can
change what the next session does): which devices (the column set), and a fault to inject after
a number of rows: exit with a status, stall (stay silent), cut a row in half and stall, or write
one over-long line and go on.
Each run appends its pid and argv to files beside the control file, for the test to act on.
Output comes from the simulator (exporter.simulator) when `source` is "simulator", from a saved
capture replayed row after row (stamped with the time they are written) when `source` is
"capture", else from the synthetic capture writer in simulators/esxtop_csv.py, whose column set
the test chooses.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from simulators import esxtop_csv


def main(argv: list[str]) -> int:
    control_path = Path(os.environ["FAKE_ESXTOP_CONTROL"])
    control = json.loads(control_path.read_text())
    with open(control_path.with_name("runs.jsonl"), "a") as runs:
        runs.write(json.dumps({"pid": os.getpid(), "argv": argv}) + "\n")
    interval = float(argv[argv.index("-d") + 1]) if "-d" in argv else 5.0
    header, rows = _source(control, interval)
    out = sys.stdout
    out.write(header + "\n")
    out.flush()
    count = 0
    for line in rows:
        if count == control.get("stall_after_rows"):
            time.sleep(3600)
        if count == control.get("cut_after_rows"):
            out.write(line[: len(line) // 2])
            out.flush()
            time.sleep(3600)
        if count == control.get("long_line_after_rows"):  # one line of `long_line_bytes`, then rows again
            out.write("9" * int(control.get("long_line_bytes", 1 << 20)) + "\n")
            out.flush()
        if count == control.get("exit_after_rows"):
            return int(control.get("exit_code", 1))
        out.write(line + "\n")
        out.flush()
        count += 1
        time.sleep(interval)
    return 0


def _source(control: dict, interval: float):
    if control.get("source") == "simulator":
        from exporter.simulator import Simulation, load_scenario

        sim = Simulation(load_scenario(control.get("scenario", "queue-ok")), seed=0, interval=interval, start=time.time())
        host = sim.hosts[0]

        def sim_rows():
            while True:
                yield sim.step()[host].rstrip("\r\n")

        return sim.header(host).rstrip("\r\n"), sim_rows()
    if control.get("source") == "capture":  # a saved capture's header, then its rows again and again, stamped now
        lines = Path(control["capture"]).read_text().splitlines()

        def capture_rows():
            n = 0
            while True:
                stamp, sep, rest = lines[1 + n % (len(lines) - 1)].partition(",")
                yield f'"{esxtop_csv.stamp(time.time())}"{sep}{rest}'
                n += 1

        return lines[0], capture_rows()
    devices = control.get("devices", ["naa.600000000000000000000000000000a1"])
    columns = [col for device in devices for col in esxtop_csv.device_columns(device)]
    header = esxtop_csv.header(control.get("host", "esx-sim"), columns)

    def rows():
        n = 0
        while True:
            values = []
            for _ in devices:
                # DQLEN ACTV QUED %USD LOAD CMDS/s READS/s WRITES/s MBREAD/s MBWRTN/s DAVG KAVG GAVG QAVG
                values += [32, 8 + n % 4, 0, 25, 0.25, 100 + n, 60, 40 + n, 1.5, 1.0, 2.0, 0.1, 2.1, 0.05]
            yield esxtop_csv.row(time.time(), values)
            n += 1

    return header, rows()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
