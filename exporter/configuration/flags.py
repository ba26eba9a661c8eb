"""Command-line flags from the option table (exporter.configuration.config.OPTIONS and the collector registry),
each declared once with its aliases, and the one-line error every command ends with."""

from __future__ import annotations

import argparse
import sys

from exporter.collectors import COLLECTORS
from exporter.configuration.config import OPTIONS, Option, collector_options
from exporter.configuration.parsers import boolean

PROG = "esxi-storage-exporter"


def exporter_options() -> list[Option]:
    """Every option of the exporting commands (serve, dump): sources, web, and one
    --[no-]collector.NAME per registered collector."""
    collectors = {name: default for name, (_, default) in COLLECTORS.items()}
    return OPTIONS + collector_options({**collectors, "process": True})  # process: serve's own (collectors/process.py)


def add_option_flags(parser: argparse.ArgumentParser, options: list[Option]) -> None:
    """One flag (and its aliases) per option, grouped by section; values stay None unless given (see config.load)."""
    groups: dict[str, argparse._ArgumentGroup] = {}
    for option in options:
        section = option.key.split(".", 1)[0]
        group = groups.get(section) or groups.setdefault(section, parser.add_argument_group(f"{section} options"))
        help_text = f"{option.help} (env {option.env}; default {option.default!r})"
        names = (option.flag, *option.aliases)
        if option.parse is boolean:
            group.add_argument(*names, dest=option.dest, action=argparse.BooleanOptionalAction, default=None, help=help_text)
        elif isinstance(option.default, list):
            group.add_argument(*names, dest=option.dest, action="append", default=None, metavar="VALUE", help=help_text)
        else:
            group.add_argument(*names, dest=option.dest, default=None, metavar="VALUE", help=help_text)
    parser.add_argument(
        "--config.file", dest="config_file", metavar="FILE", help="YAML config file (sections as in the option names)."
    )


def fail(message: str, code: int = 1) -> int:
    """Print the message (one line per line of it) prefixed with the program's name; return code."""
    for line in str(message).splitlines() or [""]:
        print(f"{PROG}: {line}", file=sys.stderr)
    return code
