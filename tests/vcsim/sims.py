"""Start the vSphere simulators on 127.0.0.1 and stop them by PID.

- `StorageSim`: this directory's Go program (govmomi simulator + storage fixture). Built once
  into a cache directory keyed by the hash of its sources, so tests start in well under a second.
- `Vcsim`: stock vcsim (`go install github.com/vmware/govmomi/vcsim@v0.46.0`, by .ci/install).

`python3 tests/vcsim/sims.py` builds the storage simulator (used by .ci/install) and prints its path.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURE = HERE / "fixture.json"
USER, PASSWORD = "monitor", "Zq7-sim-secret"  # distinctive, so a leak into a log is found


def _cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "esxi-storage-exporter"


def _go() -> str:
    go = shutil.which("go") or "/usr/local/go/bin/go"
    if not Path(go).exists():
        raise RuntimeError("go is not installed: run .ci/install")
    return go


def storagesim_binary() -> Path:
    """The compiled simulator, built if its sources changed (same path as .ci/install builds)."""
    sources = [HERE / "go.mod", HERE / "go.sum", *sorted(HERE.glob("*.go"))]
    digest = hashlib.sha256(b"".join(path.read_bytes() for path in sources)).hexdigest()[:16]
    binary = _cache_dir() / f"storagesim-{digest}"
    if not binary.exists():
        binary.parent.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, GOFLAGS="-mod=mod")
        tmp = binary.with_suffix(f".tmp{os.getpid()}")
        subprocess.run([_go(), "build", "-o", str(tmp), "."], cwd=HERE, env=env, check=True)
        tmp.rename(binary)  # atomic: parallel builders never see half a binary
    return binary


class StorageSim:
    """The storage simulator; `url`, `cert` (its CA for TLS verification), `hosts`."""

    def __init__(self, tmp: Path, *args: str, fixture: Path | None = FIXTURE, esx: bool = False):
        tmp.mkdir(parents=True, exist_ok=True)
        self.cert = tmp / "storagesim.pem"
        cmd = [str(storagesim_binary()), "-cert-out", str(self.cert), "-username", USER, "-password", PASSWORD, *args]
        if fixture is not None:
            cmd += ["-fixture", str(fixture)]
        if esx:
            cmd.append("-esx")
        self.log = open(tmp / "storagesim.log", "wb")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log)
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait(10)
            raise RuntimeError(f"storagesim exited with {self.proc.returncode}: {(tmp / 'storagesim.log').read_text()[-2000:]}")
        info = json.loads(line)
        self.url, self.hosts = info["url"], info["hosts"]
        self.port = int(self.url.rsplit(":", 1)[1].split("/")[0])

    def stop(self):
        _stop(self.proc)
        self.log.close()


class Vcsim:
    """Stock vcsim in vCenter mode (default) or standalone ESXi mode (esx=True)."""

    def __init__(self, tmp: Path, port: int, esx: bool = False, *args: str):
        binary = Path(os.environ.get("GOBIN") or Path.home() / "go" / "bin") / "vcsim"
        if not binary.exists():
            raise RuntimeError("vcsim is not installed: run .ci/install")
        tmp.mkdir(parents=True, exist_ok=True)
        self.port = port
        self.url = f"https://127.0.0.1:{port}/sdk"
        self.log = open(tmp / "vcsim.log", "wb")
        cmd = [str(binary), "-l", f"127.0.0.1:{port}", "-username", USER, "-password", PASSWORD, *args]
        if esx:
            cmd.append("-esx")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        _wait_port(port, self.proc)

    def stop(self):
        _stop(self.proc)
        self.log.close()


def _wait_port(port: int, proc: subprocess.Popen, timeout: float = 20.0) -> None:
    import socket

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"vcsim exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"vcsim did not listen on {port} within {timeout}s")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    print(storagesim_binary())
    sys.exit(0)
