"""A pyVmomi session of a test's own against the storage simulator, to change the inventory
behind the exporter's back: log in, find an object by name, wait for a task."""

from __future__ import annotations

import ssl
import time
from contextlib import contextmanager


def connect(sim):
    """The service instance of a session on the simulator (pyVim.connect.Disconnect ends it)."""
    from pyVim.connect import SmartConnect

    from simulators.storagesim.sims import PASSWORD, USER

    context = ssl.create_default_context(cafile=str(sim.cert))
    return SmartConnect(host="127.0.0.1", port=sim.port, user=USER, pwd=PASSWORD, sslContext=context)


@contextmanager
def session(sim):
    """The service content of a session of the test's own, ended (Disconnect) on leaving."""
    from pyVim.connect import Disconnect

    si = connect(sim)
    try:
        yield si.RetrieveContent()
    finally:
        Disconnect(si)


def end_other_sessions(content) -> list[str]:
    """vCenter ends every session but this one (an expiry, an administrator): TerminateSession of
    the others, whose keys are returned (none asked if there are none: the call refuses an empty list)."""
    manager = content.sessionManager
    others = [s.key for s in manager.sessionList if s.key != manager.currentSession.key]
    if others:
        manager.TerminateSession(sessionId=others)
    return others


def named(content, kind, name: str):
    """The object of this managed type (vim.VirtualMachine, vim.HostSystem, ...) with this name."""
    view = content.viewManager.CreateContainerView(content.rootFolder, [kind], True)
    try:
        return next(obj for obj in view.view if obj.name == name)
    finally:
        view.DestroyView()


def wait(task, timeout: float = 30.0) -> None:
    """Until the task ends, successfully (pyVim's WaitForTask trips over the simulator's Destroy
    task name)."""
    deadline = time.monotonic() + timeout
    while task.info.state not in ("success", "error"):
        assert time.monotonic() < deadline, f"{task} still {task.info.state}"
        time.sleep(0.05)
    assert task.info.state == "success", task.info.error


def dump(sim, password_file, *extra: str, timeout: float = 120):
    """`dump --vsphere` against the simulator, run as a user runs it: the finished process."""
    import subprocess
    import sys

    from simulators.storagesim.sims import USER
    from tests.support.servers import ROOT, exporter_env

    return subprocess.run(
        [sys.executable, "-m", "exporter", "dump", "--vsphere", sim.url, "--vsphere.user", USER]
        + ["--vsphere.password-file", str(password_file), "--vsphere.ca-file", str(sim.cert), *extra],
        capture_output=True,
        text=True,
        env=exporter_env(),
        cwd=ROOT,
        timeout=timeout,
    )


def serve_vsphere(sim, tmp, *args: str):
    """`serve` on the simulator as a user runs it (the password in a file only its owner reads),
    with these further arguments; its log in tmp/exporter.log."""
    from simulators.storagesim.sims import PASSWORD, USER
    from tests.support.servers import Exporter

    password = tmp / "password"
    password.write_text(PASSWORD + "\n")
    password.chmod(0o600)
    return Exporter(
        "--vsphere", sim.url, "--vsphere.user", USER, "--vsphere.password-file", str(password),
        "--vsphere.ca-file", str(sim.cert), *args, log_path=tmp / "exporter.log",
    )  # fmt: skip
