"""Command line: `esxi-storage-exporter [COMMAND] [options]`; with no command it serves.

Each command is a module in exporter.commands with `register(subparsers)`; options that also
live in the config file are declared once in exporter.configuration.config.OPTIONS and become flags in
exporter.configuration.flags. Commands import nothing from here: the imports run one way.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import pkgutil
import sys

from exporter import __version__, commands
from exporter.configuration.config import ConfigError
from exporter.configuration.flags import PROG, fail

ANALYSIS_MODULES = {"pandas", "pyarrow", "numpy"}  # the `analysis` extra: compare, capacity, backfill


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="Prometheus exporter for ESXi storage health (esxtop and vSphere).")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{commands.__name__}.{module_info.name}")
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    if not argv or argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version"):
        argv = ["serve", *argv]  # no command: serve (the built-in simulator if no source is given)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return args.run(args) or 0
    except ConfigError as err:
        return fail(err, 2)
    except ModuleNotFoundError as err:
        if err.name not in ANALYSIS_MODULES:
            raise
        return fail(
            f"{args.command} needs the analysis extra ({err.name} is not installed): "
            "pip install 'esxi-storage-exporter[analysis]'"
        )
    except KeyboardInterrupt:
        return 130


def run() -> None:
    """The console script and `python -m exporter`: main(), then the process ends.

    A command that loaded pyarrow (compare, capacity, backfill) ends with os._exit once its output
    is flushed: Arrow's native thread pools, torn down during the interpreter's finalization, can
    abort a run that has finished ("terminate called without an active exception", exit -6:
    apache/arrow#34314; seen here in about 1 of 100 runs under load). There is nothing left to
    finalize: every file a command writes is closed before main returns."""
    try:
        code = main()
    except BrokenPipeError:  # the reader went away (`| head`): no traceback, nothing more to write
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    if "pyarrow" in sys.modules:
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed pipe: nothing more can be written anyway
                pass
        os._exit(code)
    raise SystemExit(code)
