"""The README's two commands, copied from its text (tests/support/readme.py), run as a user runs them
on a fresh Debian 12, Debian 13 and Ubuntu 24.04: the mmdebstrap base of the image test (python3, python3-venv and
ca-certificates, nothing else), a copy of the repository's files, and the host's CA bundle so pip
can reach the package index. Its externally managed python3 (PEP 668) is why the commands use a
virtualenv. The first command serves the demo; of the second, the install part runs here (the
whole suite in a container would double CI's time) and `.ci/run` runs the command itself."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import readme
from tests.support.image import UBUNTU, Podman, base_tarball, host_ca_bundle
from tests.support.promtext import samples
from tests.support.servers import ROOT

pytestmark = pytest.mark.integration

WITHIN = 120.0  # seconds from `podman run` to esxi_* series on /metrics: venv, pip install ., serve
CHECKOUT = "/root/esxi-storage-exporter"
# The first command on Debian 12 and 13 and Ubuntu 24.04 (a new machine makes each base once, in
# about a minute, and keeps it); the second command's install part, about 8 minutes a suite, on
# Debian 12 (README_INSTALL_SUITES=bookworm,trixie,noble for all three).
SUITES = os.environ.get("README_SUITES", "bookworm,trixie,noble").split(",")
INSTALL_SUITES = os.environ.get("README_INSTALL_SUITES", "bookworm").split(",")


@pytest.fixture(scope="module")
def podman(tmp_path_factory):
    engine = Podman(tmp_path_factory.mktemp("podman"))
    yield engine
    engine.remove_everything()


def fresh(podman, suite: str) -> str:
    distribution = "ubuntu" if suite in UBUNTU else "debian"
    return podman.import_base(base_tarball(suite), f"localhost/{distribution}-{suite}-python3:readme")


@pytest.fixture(scope="module", params=SUITES)
def fresh_base(podman, request) -> str:
    """A fresh Debian or Ubuntu base of each suite asked for."""
    return fresh(podman, request.param)


@pytest.fixture(scope="module", params=INSTALL_SUITES)
def install_base(podman, request) -> str:
    return fresh(podman, request.param)


def checkout(destination: Path) -> Path:
    """The repository's tracked files as this tree has them: what a clone holds, with this tree's
    changes, and nothing built or installed here (no .venv, egg-info, node_modules)."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = ROOT / name
        if source.is_file():  # not a file deleted in this tree
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    return destination


def test_first_command_serves_the_demo_on_a_fresh_system_within_two_minutes(podman, fresh_base, tmp_path):
    command = readme.command("run")
    source = checkout(tmp_path / "esxi-storage-exporter")
    mounts = ("--volume", f"{source}:{CHECKOUT}", "--workdir", CHECKOUT, *host_ca_bundle())
    marker = podman("run", "--rm", fresh_base, "sh", "-c", "ls /usr/lib/python3*/EXTERNALLY-MANAGED", check=False)
    assert marker.returncode == 0, f"the base's python3 is externally managed, as a fresh Debian's is: {marker.stderr}"
    started = time.monotonic()
    with podman.run(fresh_base, "bash", "-c", command, options=mounts) as container:
        body = ""
        while time.monotonic() - started < WITHIN:
            state = podman("inspect", "--format", "{{.State.Status}}", container.name).stdout.strip()
            assert state == "running", f"`{command}` ended ({state}):\n{container.logs()}"
            try:
                body = container.get("/metrics")[1]
            except OSError:  # pip is still installing; nothing listens yet
                body = ""
            if any(name.startswith("esxi_lun_") for name, _, _ in samples(body)):
                break
            time.sleep(1)
        took = time.monotonic() - started
        series = [(name, labels) for name, labels, _ in samples(body) if name.startswith("esxi_")]
        assert any(name == "esxi_lun_queue_depth" for name, _ in series), (
            f"no esxi_lun_queue_depth within {WITHIN:.0f}s of `{command}`:\n{container.logs()}"
        )
    hosts = {labels["host"] for name, labels in series if name == "esxi_host_info"}
    assert hosts == {"esx01.lab.local", "esx02.lab.local"}, "the demo scenario's two hosts"
    print(f"`{command}` served {len(series)} esxi_* series {took:.0f}s after podman run")


def test_the_two_commands_are_the_shell_block_of_their_section():
    text = "# x\n\n## Two commands\n\n```sh\n# 1. run\nrun it\n\n# 2. test\ntest it\n```\n\n## Why\n"
    assert readme.commands(text) == {"run": "run it", "test": "test it"}
    with pytest.raises(ValueError, match="holds 3 commands"):
        readme.commands(text.replace("test it", "test it\nand more"))
    with pytest.raises(ValueError, match="no '## Two commands' section"):
        readme.commands(text.replace("## Two commands", "## Three commands"))
    assert set(readme.commands(readme.README.read_text())) == {"run", "test"}


def test_the_docs_repeat_the_readme_commands_as_they_are():
    both = readme.commands(readme.README.read_text()).values()
    index = (ROOT / "docs" / "index.md").read_text()
    assert [command for command in both if command not in index] == [], "docs/index.md"
    assert readme.command("test") in (ROOT / "docs" / "development.md").read_text(), "docs/development.md"


def install_part(command: str) -> tuple[str, str]:
    """The second command split where its tests start: (what installs, what runs the suite)."""
    install, found, tests = command.partition(" && ")
    assert found and "pytest" in tests and "pytest" not in install, command
    return install, tests


def test_second_command_installs_everything_the_suite_needs_on_a_fresh_system(podman, install_base, tmp_path):
    """The install part as the README prints it, as root on the fresh base. Then, in that container,
    the suite's interpreter collects every test (each module's imports resolve), the servers the
    integration tests start are there, and two integration tests run against them: a real
    Prometheus scrape, and the storage simulator that `.ci/install` compiled (through the vSphere API)."""
    install, tests = install_part(readme.command("test"))
    python = tests.split(" -m pytest", 1)[0]
    source = checkout(tmp_path / "esxi-storage-exporter")
    mounts = ("--volume", f"{source}:{CHECKOUT}", "--workdir", CHECKOUT, *host_ca_bundle())
    checks = " && ".join(
        (
            "set -o pipefail",  # a failing pytest fails the check, though `tail` follows it
            install,
            "command -v prometheus && command -v promtool && PATH=.venv/bin:$PATH command -v go",
            "{ command -v prometheus-alertmanager || command -v alertmanager; }",
            "test -x /usr/sbin/sshd && test -x ~/go/bin/vcsim",
            f"{python} -m pytest -q --collect-only -p no:cacheprovider | tail -1",
            f"{python} -m pytest -q -p no:cacheprovider {' '.join(SMOKE)} 2>&1 | tail -3",
        )
    )
    started = time.monotonic()
    ran = podman("run", "--rm", *mounts, install_base, "bash", "-c", checks, timeout=1800, check=False)
    took = time.monotonic() - started
    output = ran.stdout + ran.stderr
    assert ran.returncode == 0, f"`{install}` and the checks after it exited with {ran.returncode}:\n{output[-4000:]}"
    here = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider"],
        cwd=source,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("README_")},  # as in the container
    )
    collected = here.stdout.strip().splitlines()[-1]  # "1600 tests collected in 9.1s"
    assert collected.split(" tests collected")[0] + " tests collected" in ran.stdout, (collected, ran.stdout[-2000:])
    assert " passed" in ran.stdout and " failed" not in ran.stdout, ran.stdout[-2000:]
    print(f"`{install}` and the checks after it: {took:.0f}s on a fresh {install_base}; {collected}")


# Integration tests the fresh install must run: Prometheus scraping the exporter, and the storage
# simulator `.ci/install` compiled, through the vSphere API.
SMOKE = ("tests/integration/test_prometheus_scrape.py", "tests/integration/test_vsphere_storagesim.py")
