"""One checkout's vSphere target, driven line by line from stdin (side_by_side.py --vms).

  python3 bench/vsphere_worker.py CODE URL CA_FILE PASSWORD_FILE

The code is imported from CODE (a checkout, or `git archive REV` unpacked), not from the checkout
this file is in, so one driver runs the code before and the code after alike. It walks the storage
simulator at URL and follows its changes as `serve` does (bench/vsphere_common.following, CODE's
own), prints {"ready": ...} and then answers each line with one JSON line:
  collect      one collection of every host's and VM's newest sample: wall and CPU seconds (this
               process, every thread: the QueryPerf pool's too)
  render FILE  the exposition written to FILE; this process's peak RSS so far (VmHWM, MiB)
  quit         ends
"""

from __future__ import annotations

import json
import sys
import threading
import types
from pathlib import Path

CODE = Path(sys.argv[1]).resolve()
sys.path[:0] = [str(CODE / "bench"), str(CODE)]  # CODE's own vsphere_common puts CODE first on the path

from vsphere_common import Timer, following, render, status_mib, target  # noqa: E402


def main() -> int:
    url, ca_file, secret = sys.argv[2:5]
    t = target(types.SimpleNamespace(url=url, cert=ca_file), Path(secret))
    stop = threading.Event()
    following(t, stop)
    print(json.dumps({"ready": True, "hosts": t.topology.counts()["host"]}), flush=True)
    for line in sys.stdin:
        command, _, argument = line.strip().partition(" ")
        if command == "collect":
            t.last_timestamp.clear()  # every host and VM answers with its newest sample, as every 20 s
            with Timer() as timer:
                ok = t.collect()
            print(json.dumps({"ok": ok, "error": t.error, "wall": timer.wall, "cpu": timer.cpu}), flush=True)
        elif command == "render":
            Path(argument).write_bytes(render(t))
            print(json.dumps({"peak_mib": status_mib("VmHWM")}), flush=True)
        elif command == "quit":
            break
    stop.set()
    return 0


if __name__ == "__main__":
    sys.exit(main())
