"""`dump`: read the sources to the end and print the exposition serve would show after the last sample."""

from __future__ import annotations

import sys

from exporter import config, sources
from exporter.commands.serve import enabled_collectors, lun_filter, options, resolve, vsphere_extra
from exporter.exposition import Exposition
from exporter.state import Store


def register(subparsers):
    from exporter.cli import add_option_flags

    parser = subparsers.add_parser("dump", help="Read captures to the end and print the metrics (textfile-collector friendly).")
    add_option_flags(parser, options())
    parser.add_argument("--esxtop-file", dest="esxtop__file", action="append", metavar="FILE", help="Same as --esxtop.file.")
    parser.add_argument(
        "--vsphere", dest="vsphere__url", metavar="URL", help="Same as --vsphere.url: one discovery and one collection."
    )
    parser.set_defaults(run=run)


def run(args) -> int:
    from exporter.cli import fail
    from exporter.esxtop import EsxtopError

    settings = resolve(args)
    store = Store(stale_after=settings["esxtop.stale_after"], lun_filter=lun_filter(settings))
    vsphere = sources.vsphere_targets(settings, store)
    if not settings["esxtop.file"] and not vsphere:
        raise config.ConfigError(["dump needs a source: --esxtop-file FILE or --vsphere URL"])
    try:
        sources.load_files(settings, store)
    except EsxtopError as err:
        return fail(err)
    except OSError as err:
        return fail(f"{err.filename}: {err.strerror}")
    failed = [t for t in vsphere if not t.run_once()]  # each failure is logged with its reason
    for target in vsphere:
        target.client.close()
    sys.stdout.buffer.write(Exposition(store, enabled_collectors(settings), extra=vsphere_extra(vsphere)).body())
    return 1 if failed else 0
