"""The container image (Dockerfile): lint, shape, and its own command run as a process.

The final stage's ENV, ENTRYPOINT, CMD and HEALTHCHECK are read from the Dockerfile and run
directly, without an engine; tests/deployment/test_deploy_image.py builds the image and runs it with podman.
"""

from __future__ import annotations

import json
import shlex
import shutil
import site
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests.support.deploy import Served, as_python, tool
from tests.support.servers import ROOT, exporter_env

DOCKERFILE = ROOT / "Dockerfile"


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, with continuation lines joined and comments dropped."""
    result, current = [], ""
    for line in text.splitlines():
        stripped = line.strip()
        if not current and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):
            continue  # a comment inside a continued instruction
        current += " " + stripped.removesuffix("\\") if current else stripped.removesuffix("\\")
        if not stripped.endswith("\\"):
            keyword, _, args = current.strip().partition(" ")
            result.append((keyword.upper(), args.strip()))
            current = ""
    return result


def final_stage(text: str) -> list[tuple[str, str]]:
    steps = instructions(text)
    last_from = max(i for i, (keyword, _) in enumerate(steps) if keyword == "FROM")
    return steps[last_from:]


def env_of(stage) -> dict[str, str]:
    env = {}
    for keyword, args in stage:
        if keyword == "ENV":
            for pair in shlex.split(args):
                key, _, value = pair.partition("=")
                env[key] = value
    return env


def exec_form(stage, keyword: str) -> list[str]:
    (args,) = [a for k, a in stage if k == keyword]
    value = json.loads(args)  # exec form only: no shell in between, signals reach the exporter
    assert isinstance(value, list) and all(isinstance(v, str) for v in value), f"{keyword} {args}"
    return value


@pytest.fixture(scope="module")
def stage():
    return final_stage(DOCKERFILE.read_text())


def test_dockerfile_passes_hadolint():
    hadolint = tool("hadolint")
    result = subprocess.run([hadolint, "--failure-threshold", "info", str(DOCKERFILE)], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_image_is_multi_stage_and_runs_as_a_non_root_user(stage):
    steps = instructions(DOCKERFILE.read_text())
    assert sum(1 for k, _ in steps if k == "FROM") >= 2
    # The final stage carries the virtualenv from the build stage, not the source tree or a compiler.
    copies = [a for k, a in stage if k == "COPY"]
    assert copies and all(a.startswith("--from=build ") for a in copies), copies
    (user,) = [a for k, a in stage if k == "USER"]
    uid = user.split(":")[0]
    assert uid.isdigit() and int(uid) != 0, f"USER {user}: numeric and not root, so runAsNonRoot can check it"
    assert [a for k, a in stage if k == "EXPOSE"] == ["10114"]


def test_dockerignore_lets_in_exactly_what_the_build_copies():
    ignore = [line for line in (ROOT / ".dockerignore").read_text().splitlines() if line and not line.startswith("#")]
    assert ignore[0] == "*", "deny everything, then allow what the build needs"
    allowed = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    copied = set()
    for keyword, args in instructions(DOCKERFILE.read_text()):
        if keyword == "COPY" and not args.startswith("--from"):
            *sources, _dest = args.split()
            copied.update(s.rstrip("/").removeprefix("./") for s in sources)
    assert copied == allowed, f"COPY sources {sorted(copied)} vs .dockerignore allows {sorted(allowed)}"
    for name in copied:
        assert (ROOT / name).exists(), name


@pytest.mark.integration
def test_image_command_serves_the_simulator_and_its_healthcheck_tells_up_from_down(stage):
    env = env_of(stage)
    env.pop("PATH")  # the image's virtualenv; here the package runs from the source tree
    argv = exec_form(stage, "ENTRYPOINT") + exec_form(stage, "CMD")
    healthcheck = [a for k, a in stage if k == "HEALTHCHECK"][0]
    probe = json.loads(healthcheck[healthcheck.index("CMD") + 3 :].strip())
    assert probe[0] == "python"
    with Served(argv, env) as exporter:
        status, _ = exporter.get("/-/healthy")
        assert status == 200
        body = exporter.wait_for_metric("esxi_lun_queue_depth")
        assert 'host="' in body and "esxi_scrape_collector_success" in body
        up = subprocess.run([sys.executable, *probe[1:]], env=exporter.env, capture_output=True, text=True, timeout=30)
        assert up.returncode == 0, up.stderr
    down = subprocess.run([sys.executable, *probe[1:]], env=exporter.env, capture_output=True, text=True, timeout=30)
    assert down.returncode != 0, "the health check must fail once the exporter is gone"


def test_entrypoint_is_the_installed_script(stage):
    # as_python() maps exactly this program; anything else would make the process test meaningless.
    assert as_python(exec_form(stage, "ENTRYPOINT"))[:3] == [sys.executable, "-m", "exporter"]
    help_text = subprocess.run(
        as_python(exec_form(stage, "ENTRYPOINT") + ["--help"]),
        env=exporter_env(),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert help_text.returncode == 0 and "serve" in help_text.stdout


def build_context(tmp_path: Path) -> Path:
    """The files the build's COPY takes from the context (what .dockerignore admits)."""
    context = tmp_path / "context"
    context.mkdir()
    for keyword, args in instructions(DOCKERFILE.read_text()):
        if keyword == "COPY" and not args.startswith("--from"):
            *sources, _dest = args.split()
            for source in sources:
                source = ROOT / source.removeprefix("./")
                copy = shutil.copytree if source.is_dir() else shutil.copy
                copy(source, context / source.name)
    return context


@pytest.mark.integration
def test_package_installed_as_the_image_installs_it_serves_outside_the_tree(stage, tmp_path):
    # What the build stage does (pip install . from the build context into a virtualenv), with
    # the dependencies taken from this machine instead of downloaded again; then the image's
    # command from that virtualenv, away from the source tree: the scenarios, the entry point
    # and every module must have been packaged.
    env_dir = tmp_path / "venv"
    venv.create(env_dir, system_site_packages=True, with_pip=True)
    # system_site_packages reaches the base interpreter's packages; where the suite itself runs
    # in a virtualenv (.venv, README.md), the dependencies are in this one's: a .pth names them.
    # Its own .pth files (the editable install of this tree) are not read from there.
    inner = subprocess.run(
        [str(env_dir / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    )
    (Path(inner.stdout.strip()) / "outer-site-packages.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    install = subprocess.run(
        [
            str(env_dir / "bin" / "pip"),
            "install",
            "--quiet",
            "--no-deps",
            "--disable-pip-version-check",
            str(build_context(tmp_path)),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    program = env_dir / "bin" / exec_form(stage, "ENTRYPOINT")[0]
    env = env_of(stage)
    env.pop("PATH")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    with Served([str(program), *exec_form(stage, "CMD")], env, cwd=outside, installed=True) as exporter:
        exporter.wait_for_metric("esxi_lun_queue_depth")
    where = subprocess.run(
        [str(env_dir / "bin" / "python"), "-c", "import exporter; print(exporter.__file__)"],
        capture_output=True,
        text=True,
        cwd=outside,
        env={k: v for k, v in exporter.env.items()},
    )
    assert where.stdout.startswith(str(env_dir)), f"ran {where.stdout.strip()}, not the installed package"
