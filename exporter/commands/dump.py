"""`dump`: read the sources to the end and print the exposition serve would show after the last sample."""
from __future__ import annotations

import sys

from exporter import config, sources
from exporter.commands.serve import enabled_collectors, options, resolve
from exporter.exposition import Exposition
from exporter.state import Store


def register(subparsers):
    from exporter.cli import add_option_flags
    parser = subparsers.add_parser("dump", help="Read captures to the end and print the metrics (textfile-collector friendly).")
    add_option_flags(parser, options())
    parser.add_argument("--esxtop-file", dest="esxtop__file", action="append", metavar="FILE", help="Same as --esxtop.file.")
    parser.set_defaults(run=run)


def run(args) -> int:
    from exporter.cli import fail
    from exporter.esxtop import EsxtopError
    settings = resolve(args)
    if not settings["esxtop.file"]:
        raise config.ConfigError(["dump needs a source: --esxtop-file FILE"])
    store = Store(stale_after=settings["esxtop.stale_after"])
    try:
        sources.load_files(settings, store)
    except EsxtopError as err:
        return fail(err)
    except OSError as err:
        return fail(f"{err.filename}: {err.strerror}")
    sys.stdout.buffer.write(Exposition(store, enabled_collectors(settings)).body())
    return 0
