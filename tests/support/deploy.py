"""Helpers for the deployment tests: find the tools, and run a deployment's own exporter command
line (the image's ENTRYPOINT + CMD, the unit's ExecStart, the Deployment's args) as a real process."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from tests.support.servers import ROOT, exporter_env, free_port, stop, wait_http

DEPLOY = ROOT / "deploy"
PROGRAM = "esxi-storage-exporter"


def tool(name: str, *extra_dirs: Path) -> str:
    """Path of a command-line tool that .ci/install provides. Missing: a skip on a developer's
    machine, a failure in CI (CI=true), where a skipped check would pass unseen."""
    found = shutil.which(name, path=os.pathsep.join([*map(str, extra_dirs), os.environ.get("PATH", "")]))
    if found:
        return found
    message = f"{name} is not installed: run .ci/install"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def owned_elsewhere(path: Path, work: Path, what: str) -> None:
    """Skip until another part of the project (alerts, dashboards) has landed `work`, the folder
    `path` belongs to; once it has, a missing `path` is drift and fails."""
    if path.exists():
        return
    if work.exists():
        pytest.fail(f"{path.relative_to(ROOT)} is missing although {work.relative_to(ROOT)}/ is there: {what}")
    pytest.skip(f"{work.relative_to(ROOT)}/ not in this tree yet ({what})")


def as_python(argv: list[str]) -> list[str]:
    """A deployment's command with the installed `esxi-storage-exporter` script replaced by this
    interpreter running the package from the source tree (the tests use no installed entry point)."""
    program, *args = argv
    if Path(program).name != PROGRAM:
        raise AssertionError(f"the command runs {program!r}, not {PROGRAM}")
    return [sys.executable, "-m", "exporter", *args]


class Scraped:
    """An exporter answering at `self.url`: its endpoints, and its exposition once a metric is in."""

    url: str

    def get(self, path: str) -> tuple[int, str]:
        with urllib.request.urlopen(self.url + path, timeout=10) as response:
            return response.status, response.read().decode()

    def wait_for_metric(self, name: str, timeout: float = 20.0) -> str:
        """The exposition once it carries `name` (the simulator's first sample takes an interval)."""
        deadline = time.monotonic() + timeout
        body = ""
        while time.monotonic() < deadline:
            body = self.get("/metrics")[1]
            if any(line.startswith(name + "{") or line.startswith(name + " ") for line in body.splitlines()):
                return body
            time.sleep(0.25)
        raise AssertionError(f"{name} never appeared in /metrics within {timeout}s; last body:\n{body[:2000]}")


class Served(Scraped):
    """The exporter started from a deployment's command line and environment, on 127.0.0.1."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path = ROOT, installed: bool = False):
        """installed: argv[0] is an installed program, run as is and without the source tree on
        PYTHONPATH; otherwise the package runs from the source tree (as_python)."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        if installed:
            full_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            command = argv
        else:
            full_env, command = exporter_env(), as_python(argv)
        full_env.update(env)
        # The deployments listen on :10114 on their own network; here, on a free loopback port.
        full_env["ESXI_EXPORTER_WEB_LISTEN_ADDRESS"] = f"127.0.0.1:{self.port}"
        self.env = full_env
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(command, env=full_env, cwd=cwd, stdout=self.log, stderr=subprocess.STDOUT)
        try:
            wait_http(self.url + "/-/healthy", timeout=30, proc=self.proc)
        except (RuntimeError, TimeoutError):
            stop(self.proc)
            output = self.output()
            self.log.close()
            raise AssertionError(f"exporter did not start: {output}") from None

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def stop(self) -> None:
        stop(self.proc)
        self.log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
