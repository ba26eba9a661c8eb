"""One direction of flow, checked by import-linter (contracts in pyproject.toml): the model imports
only units; sources import nothing that renders or wires; collectors never reach into a source;
nothing imports the command line back."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.servers import ROOT

LINT = [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"]


def lint(root: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(root))
    return subprocess.run(LINT, cwd=root, env=env, capture_output=True, text=True, timeout=120)


def test_every_import_runs_the_right_way():
    done = lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 kept, 0 broken" in done.stdout


def test_a_source_that_imports_the_text_format_breaks_a_contract(tmp_path):
    """The check can fail: a copy of the package whose file follower renders metrics itself."""
    shutil.copytree(ROOT / "exporter", tmp_path / "exporter", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    streams = tmp_path / "exporter" / "esxtop" / "streams.py"
    streams.write_text(streams.read_text() + "\nfrom exporter.collectors.textformat import gauge  # noqa: E402\n")
    done = lint(tmp_path)
    assert done.returncode != 0
    assert "Sources produce model objects: they import nothing that renders or wires BROKEN" in done.stdout
    assert "exporter.esxtop.streams -> exporter.collectors.textformat" in done.stdout
