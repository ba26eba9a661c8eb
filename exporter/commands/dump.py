"""`dump`: read the sources to the end and print the exposition serve would show after the last sample."""

from __future__ import annotations

import sys

from exporter.app import App
from exporter.commands.serve import resolve
from exporter.configuration import config
from exporter.configuration.flags import add_option_flags, exporter_options, fail
from exporter.esxtop import EsxtopError


def register(subparsers):
    parser = subparsers.add_parser(
        "dump", help="Read captures to the end (or collect vSphere once) and print the metrics (textfile-collector friendly)."
    )
    add_option_flags(parser, exporter_options())
    parser.set_defaults(run=run)


def run(args) -> int:
    settings = resolve(args)
    app = App(settings)
    if not settings["esxtop.file"] and not app.vsphere:
        raise config.ConfigError(["dump needs a source: --esxtop-file FILE or --vsphere URL"])
    try:
        app.load_files()
    except EsxtopError as err:
        return fail(err)
    except OSError as err:
        return fail(f"{err.filename}: {err.strerror}")
    failed = app.collect_vsphere_once()
    sys.stdout.buffer.write(app.exposition().body())
    return 1 if failed else 0
