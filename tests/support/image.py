"""Build and run the container image (Dockerfile) with podman, where no container registry can be
reached: a Debian bookworm base made by mmdebstrap and loaded with `podman import` goes in through
the Dockerfile's PYTHON_IMAGE build argument.

What this machine needs, and the Dockerfile must not know, lives here:
- the runtime is runc: crun refuses this kernel's hybrid (v1 + v2) cgroups;
- `default_ulimits` is emptied, so a container keeps this process's limits: podman's own default
  raises nofile and nproc, which this process may not do (runc: "error setting rlimits");
- the host's CA bundle is mounted over the base's during the build, so pip trusts whatever
  TLS proxy stands between this machine and the package index (Debian's pip reads that bundle).

Each session gets its own podman storage in a temporary directory: parallel sessions share no
image or container, and nothing is left behind. Only the base tarball is kept, in the cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from itertools import count
from pathlib import Path

from tests.support.deploy import Scraped, tool
from tests.support.servers import ROOT, free_port

SUITE = "bookworm"  # the image's base; tests/deployment/test_readme_commands.py also asks for trixie and noble
UBUNTU = {"noble": "Ubuntu 24.04"}
# usr-is-merged, not the usrmerge conversion tool, which pulls in perl (47 MB).
MERGED_USR = (
    "--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr"  # the Ubuntu suites a base can be made of; the others are Debian's
)


def mirrors(suite: str) -> tuple[str, ...]:
    if suite in UBUNTU:  # universe: prometheus, podman, nodejs and the other packages .ci/install takes
        return (
            f"deb http://archive.ubuntu.com/ubuntu {suite} main universe",
            f"deb http://archive.ubuntu.com/ubuntu {suite}-updates main universe",
            f"deb http://security.ubuntu.com/ubuntu {suite}-security main universe",
        )
    return (
        f"deb http://deb.debian.org/debian {suite} main",
        f"deb http://deb.debian.org/debian {suite}-updates main",
        f"deb http://deb.debian.org/debian-security {suite}-security main",
    )


def suite_options(suite: str, scratch: str) -> tuple[str, ...]:
    """mmdebstrap's options of a suite beside BASE_OPTIONS. Ubuntu's: its archive keyring, which
    Debian ships (ubuntu-keyring, from trixie; bookworm has none), and no merged-usr hook (Ubuntu's
    base is merged already, and the hook fails on it)."""
    if suite in UBUNTU:
        return (f"--keyring={readable_by_apt(ubuntu_keyring(), scratch)}",)
    return (MERGED_USR,)


def readable_by_apt(keyring: Path, scratch: str) -> Path:
    """A copy of `keyring` that apt's unprivileged _apt user can read (it checks the signatures as
    that user; the cache under /root is not readable to it)."""
    os.chmod(scratch, 0o755)
    copy = Path(scratch) / keyring.name
    shutil.copyfile(keyring, copy)
    copy.chmod(0o644)
    return copy


def ubuntu_keyring() -> Path:
    """Ubuntu's archive keyring out of Debian's ubuntu-keyring package: mmdebstrap fetches it from
    Debian's archive, checked against Debian's own keys, and extracts that one package."""
    keyring = cache_dir() / "ubuntu-archive-keyring.gpg"
    if keyring.exists():
        return keyring
    keyring.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        tarball = Path(scratch) / "keyring.tar"
        member = "./usr/share/keyrings/ubuntu-archive-keyring.gpg"
        made = subprocess.run(
            [
                tool("mmdebstrap"),
                "--quiet",
                "--variant=extract",
                "--include=ubuntu-keyring",
                "trixie",
                str(tarball),
                *mirrors("trixie"),
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if made.returncode != 0:
            raise AssertionError(f"mmdebstrap (ubuntu-keyring) failed ({made.returncode}):\n{made.stderr[-3000:]}")
        subprocess.run(["tar", "-xf", str(tarball), "-C", scratch, member], check=True)
        partial = keyring.with_name(f"{keyring.name}.{os.getpid()}.partial")
        shutil.copyfile(Path(scratch) / member, partial)
        partial.rename(keyring)  # atomic, as the base tarball
    return keyring


# What the Dockerfile needs of its base (python3 with venv), like the python image's Debian.
BASE_OPTIONS = (
    "--variant=apt",
    "--include=python3,python3-venv,ca-certificates",
    # What Debian's -slim images leave out: documentation (but its copyright files), man and info
    # pages, translations. dpkg keeps these rules in the base, so the Dockerfile's packages follow them.
    *(
        f"--dpkgopt=path-exclude={path}"
        for path in ("/usr/share/doc/*", "/usr/share/man/*", "/usr/share/info/*", "/usr/share/locale/*")
    ),
    "--dpkgopt=path-include=/usr/share/doc/*/copyright",
)
HOST_CA_BUNDLES = (os.environ.get("SSL_CERT_FILE", ""), "/etc/ssl/certs/ca-certificates.crt")
# The base's own bundle (ca-certificates is in it): mounting over a file that exists leaves no
# empty mount point behind in the image.
BASE_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
CONTAINERS_CONF = '[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = "runc"\n'


def host_ca_bundle() -> tuple[str, ...]:
    """podman's option that mounts this host's CA bundle over the base's, for a build or a run
    that reaches the package index; none where the host has no bundle."""
    bundle = next((path for path in HOST_CA_BUNDLES if path and Path(path).is_file()), None)
    return ("--volume", f"{bundle}:{BASE_CA_BUNDLE}:ro") if bundle else ()


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "esxi-storage-exporter"


def base_tarball(suite: str = SUITE) -> Path:
    """The Debian (or Ubuntu) base as a tarball, made once per recipe: the cache key is a hash of mmdebstrap's
    options, suite and mirrors."""
    recipe = [*BASE_OPTIONS, "ubuntu-keyring" if suite in UBUNTU else MERGED_USR, suite, *mirrors(suite)]
    digest = hashlib.sha256("\0".join(recipe).encode()).hexdigest()[:16]
    distribution = "ubuntu" if suite in UBUNTU else "debian"
    tarball = cache_dir() / f"{distribution}-{suite}-python3-{digest}.tar"
    if tarball.exists():
        return tarball
    tarball.parent.mkdir(parents=True, exist_ok=True)
    partial = tarball.with_name(f"{tarball.stem}.{os.getpid()}.partial.tar")  # .tar: no compression
    scratch = tempfile.mkdtemp(prefix="mmdebstrap-")
    try:
        made = subprocess.run(
            [tool("mmdebstrap"), "--quiet", *BASE_OPTIONS, *suite_options(suite, scratch), suite, str(partial), *mirrors(suite)],
            capture_output=True,
            text=True,
            timeout=900,
        )
        if made.returncode != 0:
            raise AssertionError(f"mmdebstrap failed ({made.returncode}):\n{made.stderr[-3000:]}")
        partial.rename(tarball)  # atomic: a parallel session never reads half a tarball
    finally:
        partial.unlink(missing_ok=True)
        shutil.rmtree(scratch, ignore_errors=True)
    return tarball


class Podman:
    """podman with its storage, run directory and containers.conf in `workdir`."""

    def __init__(self, workdir: Path):
        podman = tool("podman")
        tool("runc", Path("/usr/sbin"), Path("/sbin"))
        self.workdir = workdir
        conf = workdir / "containers.conf"
        conf.write_text(CONTAINERS_CONF)
        self.env = {**os.environ, "CONTAINERS_CONF": str(conf)}
        # podman refuses a run root longer than 50 characters, which a pytest-xdist worker's tmp_path is
        self.runroot = Path(tempfile.mkdtemp(prefix="podman-run-"))
        self.argv = [podman, "--root", str(workdir / "storage"), "--runroot", str(self.runroot)]
        self.names = (f"esxi-exporter-test-{n}" for n in count())

    def __call__(self, *args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run([*self.argv, *args], env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise AssertionError(f"podman {' '.join(args)} exited with {result.returncode}:\n{result.stderr[-3000:]}")
        return result

    def import_base(self, tarball: Path, ref: str) -> str:
        self("import", str(tarball), ref, timeout=300)
        return ref

    def build(self, tag: str, base: str, context: Path = ROOT) -> str:
        """The image from the Dockerfile on `base`. Docker's image format: OCI has no HEALTHCHECK,
        and podman drops it from an OCI image."""
        args = ["build", "--format", "docker", "--tag", tag, "--build-arg", f"PYTHON_IMAGE={base}"]
        self(*args, *host_ca_bundle(), str(context), timeout=900)
        return tag

    def size(self, image: str) -> int:
        return json.loads(self("image", "inspect", image).stdout)[0]["Size"]

    def run(self, image: str, *args: str, options: tuple[str, ...] = ()) -> Container:
        return Container(self, image, args, options)

    def remove_everything(self) -> None:
        self("rm", "--all", "--force", "--time", "0", check=False)
        self("rmi", "--all", "--force", check=False)
        shutil.rmtree(self.workdir)
        shutil.rmtree(self.runroot, ignore_errors=True)


class Container(Scraped):
    """A container of the image with its port 10114 published on a free loopback port."""

    def __init__(self, podman: Podman, image: str, args: tuple[str, ...], options: tuple[str, ...]):
        self.podman, self.name, self.port = podman, next(podman.names), free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        podman("run", "--detach", "--name", self.name, "--publish", f"127.0.0.1:{self.port}:10114", *options, image, *args)

    def wait_healthy(self, timeout: float = 60.0) -> Container:
        """Until /-/healthy answers; the container's log in the failure if it never does."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if self.get("/-/healthy")[0] == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"{self.name} did not answer /-/healthy within {timeout}s:\n{self.logs()}")

    def exec(self, *argv: str, user: str | None = None) -> subprocess.CompletedProcess:
        return self.podman("exec", *(["--user", user] if user else []), self.name, *argv, check=False)

    def healthcheck(self) -> tuple[int, str]:
        """`podman healthcheck run`: the image's HEALTHCHECK command, run in the container now (its
        timer needs systemd, which this machine does not run); its exit code, and the status
        podman recorded."""
        ran = self.podman("healthcheck", "run", self.name, check=False)
        status = self.podman("inspect", "--format", "{{.State.Health.Status}}", self.name).stdout.strip()
        return ran.returncode, status

    def logs(self) -> str:
        result = self.podman("logs", self.name, check=False)
        return (result.stdout + result.stderr)[-3000:]

    def stop(self) -> None:
        self.podman("rm", "--force", self.name, check=False)  # SIGTERM, SIGKILL after its stop timeout

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
