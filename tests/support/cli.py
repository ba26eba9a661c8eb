"""The command line run as a user runs it: a fresh `python -m exporter` process on local files."""

from __future__ import annotations

import subprocess
import sys

from tests.support.servers import CAPTURES, ROOT, exporter_env

REAL = CAPTURES / "esxi65-default-3samples.csv"  # the real ESXi 6.5 capture


def run_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "exporter", *map(str, args)], capture_output=True, text=True, env=exporter_env(), cwd=ROOT
    )
