"""Start the vSphere simulators on 127.0.0.1 and stop them by PID.

- `StorageSim`: this directory's Go program (govmomi simulator + storage fixture). Built once
  into a cache directory keyed by the hash of its sources, so tests start in well under a second.
  The build makes one change to govmomi's simulator package (`testdata/simulator/`): waiting
  collectors are answered from what changed, as vCenter answers them (see `_patched_govmomi`).
- `Vcsim`: stock vcsim (`go install github.com/vmware/govmomi/vcsim@v0.46.0`, by .ci/install).

`python3 simulators/storagesim/sims.py` builds the storage simulator (used by .ci/install) and prints its path.
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


SIMULATOR_PATCH = HERE / "testdata" / "simulator"

# WaitForUpdatesEx's loop over its filters (govmomi v0.52.0, simulator/property_collector.go),
# replaced by a call to followUpdates (testdata/simulator/wait_updates.go).
_WAIT_LOOP_START = (
    "\t\t\tfor _, f := range pc.Filter {\n\t\t\t\tfilter := ctx.Session.Get(f).(*PropertyFilter)\n\t\t\t\tfilter.update(ctx)\n"
)
_WAIT_LOOP_END = "\t\t\t\tif len(fu.ObjectSet) != 0 {\n\t\t\t\t\tset.FilterSet = append(set.FilterSet, fu)\n\t\t\t\t}\n\t\t\t}\n"
_WAIT_LOOP_NEW = """\t\t\tif fault := pc.followUpdates(ctx, updates, set); fault != nil {
\t\t\t\tbody.Fault_ = Fault("", fault)
\t\t\t\tbody.Res = nil
\t\t\t\treturn body
\t\t\t}
"""


def _sources() -> list[Path]:
    """What the build reads: go.mod, go.sum, every Go file of the directory and of the simulator patch,
    in a fixed order."""
    return [HERE / "go.mod", HERE / "go.sum", *sorted(HERE.glob("*.go")), *sorted(SIMULATOR_PATCH.glob("*.go"))]


def _patched_govmomi(go: str, env: dict, workdir: Path) -> Path:
    """A go.mod for the build that replaces govmomi by a copy of it in workdir, with
    property_collector.go's wait loop replaced and wait_updates.go added to the simulator
    package. (go build -overlay cannot replace files in the module cache.) Fails loudly if
    govmomi's text is not the one this was written for."""
    subprocess.run([go, "mod", "download", "github.com/vmware/govmomi"], cwd=HERE, env=env, check=True)
    module = subprocess.run(
        [go, "list", "-m", "-f", "{{.Dir}}", "github.com/vmware/govmomi"], cwd=HERE, env=env, check=True,
        capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    if not module:
        raise RuntimeError("go list found no source directory for github.com/vmware/govmomi")
    copy = workdir / "govmomi"
    shutil.copytree(module, copy, copy_function=shutil.copyfile)
    for directory, _, _ in os.walk(copy):
        os.chmod(directory, 0o755)  # the module cache's directories are read-only
    target = copy / "simulator" / "property_collector.go"
    text = target.read_text()
    if text.count(_WAIT_LOOP_START) != 1:
        raise RuntimeError(f"{module}: WaitForUpdatesEx's filter loop not found; update simulators/storagesim/sims.py")
    start = text.index(_WAIT_LOOP_START)
    end = text.index(_WAIT_LOOP_END, start) + len(_WAIT_LOOP_END)
    target.write_text(text[:start] + _WAIT_LOOP_NEW + text[end:])
    for added in sorted(SIMULATOR_PATCH.glob("*.go")):
        shutil.copyfile(added, copy / "simulator" / added.name)
    gomod = workdir / "go.mod"
    gomod.write_text((HERE / "go.mod").read_text() + f"\nreplace github.com/vmware/govmomi => {copy}\n")
    shutil.copyfile(HERE / "go.sum", workdir / "go.sum")
    return gomod


def _source_bytes(path: Path) -> bytes:
    """A source's name and contents: a file renamed or moved between two others changes the hash."""
    data = path.read_bytes()
    return path.name.encode() + b"\0" + str(len(data)).encode() + b"\0" + data


def storagesim_binary() -> Path:
    """The compiled simulator, built if its sources changed (same path as .ci/install builds)."""
    sources = b"".join(_source_bytes(p) for p in _sources()) + _WAIT_LOOP_NEW.encode()
    digest = hashlib.sha256(sources).hexdigest()[:16]
    binary = _cache_dir() / f"storagesim-{digest}"
    if not binary.exists():
        binary.parent.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, GOFLAGS="-mod=mod")
        tmp = binary.with_suffix(f".tmp{os.getpid()}")
        workdir = binary.with_suffix(f".build{os.getpid()}")
        workdir.mkdir()
        try:
            gomod = _patched_govmomi(_go(), env, workdir)
            subprocess.run([_go(), "build", f"-modfile={gomod}", "-o", str(tmp), "."], cwd=HERE, env=env, check=True)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
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
