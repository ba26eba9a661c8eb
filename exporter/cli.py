"""Command line: `esxi-storage-exporter [COMMAND] [options]`; with no command it serves.

Each command is a module in exporter.commands with `register(subparsers)`; options that also
live in the config file are declared once in exporter.config.OPTIONS and become flags here.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import sys

from exporter import __version__, commands
from exporter.config import ConfigError, Option

PROG = "esxi-storage-exporter"
ANALYSIS_MODULES = {"pandas", "pyarrow", "numpy"}  # the `analysis` extra: compare, capacity, backfill


def add_option_flags(parser: argparse.ArgumentParser, options: list[Option]) -> None:
    """One flag per option, grouped by section; values stay None unless given (see config.load)."""
    groups: dict[str, argparse._ArgumentGroup] = {}
    for option in options:
        section = option.key.split(".", 1)[0]
        group = groups.get(section) or groups.setdefault(section, parser.add_argument_group(f"{section} options"))
        help_text = f"{option.help} (env {option.env}; default {option.default!r})"
        if option.parse.__name__ == "_bool":
            group.add_argument(option.flag, dest=option.dest, action=argparse.BooleanOptionalAction, default=None, help=help_text)
        elif isinstance(option.default, list):
            group.add_argument(option.flag, dest=option.dest, action="append", default=None, metavar="VALUE", help=help_text)
        else:
            group.add_argument(option.flag, dest=option.dest, default=None, metavar="VALUE", help=help_text)
    parser.add_argument(
        "--config.file", dest="config_file", metavar="FILE", help="YAML config file (sections as in the option names)."
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="Prometheus exporter for ESXi storage health (esxtop and vSphere).")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{commands.__name__}.{module_info.name}")
        module.register(subparsers)
    return parser


def fail(message: str, code: int = 1) -> int:
    for line in str(message).splitlines() or [""]:
        print(f"{PROG}: {line}", file=sys.stderr)
    return code


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
