"""The ssh processes the exporter starts end with it (exporter/ssh/process.py): the kill at exit
ends and reaps those running, and a source thread that asks for one after it starts none. A SMART
round's `esxcli ... smart get` started after the kill outlived a SIGTERM'd exporter, orphaned."""

from __future__ import annotations

import subprocess
import sys
import threading

from exporter.ssh import process
from exporter.ssh.target import SshTarget


def test_a_process_asked_for_after_the_kill_at_exit_is_never_started(monkeypatch):
    started = []
    monkeypatch.setattr(process.subprocess, "Popen", lambda *a, **k: started.append(a))
    monkeypatch.setattr(process, "_exiting", False)
    monkeypatch.setattr(process, "_running", set())
    process._kill_running()  # what atexit runs
    assert process._exiting
    target = SshTarget(host="127.0.0.1", user="root")
    asking = threading.Thread(target=process.run, args=(target, "esxcli storage core device list", 5.0), daemon=True)
    asking.start()
    asking.join(0.5)
    assert asking.is_alive() and started == []  # waits for the interpreter's end, started nothing


def test_the_kill_at_exit_ends_and_reaps_what_runs(monkeypatch):
    monkeypatch.setattr(process, "_exiting", False)
    monkeypatch.setattr(process, "_running", set())
    sleeper = process._popen([sys.executable, "-c", "import time; time.sleep(60)"], subprocess.DEVNULL, None)
    assert process._running == {sleeper}
    process._kill_running()
    assert sleeper.returncode == -9  # killed and reaped before the exporter goes
