"""The command line run as a user runs it: a fresh `python -m exporter` process on local files."""

from __future__ import annotations

import argparse
import subprocess
import sys

from exporter.cli import build_parser
from tests.support.servers import CAPTURES, ROOT, exporter_env

REAL = CAPTURES / "esxi65-default-3samples.csv"  # the real ESXi 6.5 capture


def run_cli(*args, stdin: str | None = None, timeout: float | None = None):
    return subprocess.run(
        [sys.executable, "-m", "exporter", *map(str, args)],
        capture_output=True,
        text=True,
        env=exporter_env(),
        cwd=ROOT,
        input=stdin,
        timeout=timeout,
    )


def run(*args, stdin: str | None = None):
    """run_cli killed after a minute: a command that hangs fails its test instead of the run."""
    return run_cli(*args, stdin=stdin, timeout=60)


def exporter_flags() -> set[str]:
    """Every flag of every command of `python -m exporter`."""
    parser = build_parser()
    [commands] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {flag for sub in commands.choices.values() for flag in sub._option_string_actions}
