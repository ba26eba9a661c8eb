"""The systemd unit (deploy/systemd/): `systemd-analyze verify` and `security` on it, inside a
scratch root that has the unit, the systemd units it depends on and its ExecStart program; and
its ExecStart with the shipped environment file, run directly, serves the simulator."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.deploy import DEPLOY, Served, tool

UNIT = DEPLOY / "systemd" / "esxi-storage-exporter.service"
ENV_FILE = DEPLOY / "systemd" / "esxi-storage-exporter.env"
MAX_EXPOSURE = 2.0  # systemd-analyze security: below 2 is its best band, "OK"


def directives(section: str) -> list[tuple[str, str]]:
    pairs, current = [], None
    for line in UNIT.read_text().splitlines():
        line = line.strip()
        if line.startswith("["):
            current = line.strip("[]")
        elif line and not line.startswith(("#", ";")) and current == section:
            key, _, value = line.partition("=")
            pairs.append((key, value))
    return pairs


def exec_start() -> list[str]:
    (value,) = [v for k, v in directives("Service") if k == "ExecStart"]
    return shlex.split(value)


@pytest.fixture
def root(tmp_path) -> Path:
    """A scratch root: the unit, the distribution's own units (targets it is ordered against), and
    an executable at the ExecStart path (verify checks that it exists and is executable)."""
    root = tmp_path / "root"
    units = Path("/usr/lib/systemd/system")
    if not units.is_dir():
        units = Path("/lib/systemd/system")
    shutil.copytree(units, root / "usr/lib/systemd/system", symlinks=True)
    (root / "etc/systemd/system").mkdir(parents=True)
    shutil.copy(UNIT, root / "etc/systemd/system" / UNIT.name)
    program = root / exec_start()[0].lstrip("/")
    program.parent.mkdir(parents=True)
    program.write_text('#!/bin/sh\nexec python3 -m exporter "$@"\n')
    program.chmod(0o755)
    return root


def analyze(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [tool("systemd-analyze"), *args, f"--root={root}", UNIT.name], capture_output=True, text=True, timeout=120
    )


def test_unit_passes_systemd_analyze_verify(root):
    result = analyze(root, "verify")
    assert result.returncode == 0 and not result.stderr.strip(), result.stdout + result.stderr


def test_verify_fails_without_the_program(root):
    # The check above means something only if verify looks at the unit in the scratch root.
    (root / exec_start()[0].lstrip("/")).unlink()
    result = analyze(root, "verify")
    assert result.returncode != 0 and "is not executable" in result.stderr


def test_unit_hardening_exposure_is_low(root):
    result = analyze(root, "security", "--offline=yes", "--no-pager")
    match = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", result.stdout + result.stderr)
    assert match, result.stdout + result.stderr
    assert float(match.group(1)) <= MAX_EXPOSURE, result.stdout


def test_unit_reads_settings_from_an_environment_file_and_no_secrets_inline():
    service = dict(directives("Service"))
    assert service["EnvironmentFile"].lstrip("-") == "/etc/default/esxi-storage-exporter"
    assert service["DynamicUser"] == "yes" and service["NoNewPrivileges"] == "yes"
    assert not any(k == "Environment" for k, _ in directives("Service")), "settings belong in the environment file"
    for line in ENV_FILE.read_text().splitlines():
        assert not re.match(r"\s*[A-Z_]*(PASSWORD|SECRET|TOKEN)[A-Z_]*\s*=", line) or "_FILE=" in line, line


def environment_file() -> dict[str, str]:
    env = {}
    for line in ENV_FILE.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            env[key] = value
    return env


@pytest.mark.integration
def test_exec_start_with_the_environment_file_serves(tmp_path):
    argv = exec_start()
    config = tmp_path / "config.yml"
    shutil.copy(DEPLOY / "config" / "simulator.yml", config)
    argv = [a.replace("/etc/esxi-storage-exporter/config.yml", str(config)) for a in argv]
    env = environment_file()
    assert env["ESXI_EXPORTER_WEB_LISTEN_ADDRESS"] == ":10114"
    with Served(argv, env) as served:
        served.wait_for_metric("esxi_lun_queue_depth")
