"""`serve`: run the sources in the background and serve their metrics over HTTP."""
from __future__ import annotations

import logging
import signal
import threading

from exporter import config, sources, webconfig
from exporter.collectors import COLLECTORS
from exporter.exposition import Exposition
from exporter.http import MetricsServer
from exporter.state import Store

log = logging.getLogger("exporter")


def options():
    return config.OPTIONS + config.collector_options({n: d for n, (_, d) in COLLECTORS.items()})


def register(subparsers):
    from exporter.cli import add_option_flags
    parser = subparsers.add_parser("serve", help="Serve metrics over HTTP (the default command).")
    add_option_flags(parser, options())
    parser.add_argument("--esxtop-stdin", dest="esxtop__stdin", action="store_const", const=True, help="Same as --esxtop.stdin.")
    parser.add_argument("--esxtop-follow", dest="esxtop__follow", action="append", metavar="FILE", help="Same as --esxtop.follow.")
    parser.add_argument("--esxtop-file", dest="esxtop__file", action="append", metavar="FILE", help="Same as --esxtop.file.")
    parser.add_argument("--esxtop-ssh", dest="esxtop__ssh", action="append", metavar="USER@HOST", help="Same as --esxtop.ssh.")
    parser.add_argument("--web.config.file", dest="web__config_file", metavar="FILE", help="Same as --web.config-file.")
    parser.add_argument("--simulate", dest="simulate__scenario", metavar="SCENARIO", help="Same as --simulate.scenario.")
    parser.set_defaults(run=run)


def resolve(args):
    settings = config.load(options(), vars(args), config_file=args.config_file)
    logging.getLogger().setLevel(settings["log.level"].upper())
    return settings


def enabled_collectors(settings):
    return [name for name in COLLECTORS if settings[f"collector.{name}"]]


def run(args) -> int:
    from exporter.cli import fail
    from exporter.esxtop import EsxtopError
    settings = resolve(args)
    if not sources.has_live_source(settings):
        settings["simulate.scenario"] = "demo"  # the embedded default: no ESXi host needed
    store = Store(stale_after=settings["esxtop.stale_after"])
    try:
        sources.load_files(settings, store)
    except EsxtopError as err:
        return fail(err)
    stop = threading.Event()
    ssh = sources.ssh_streams(settings, store, stop)
    exposition = Exposition(store, enabled_collectors(settings), [("esxtop_ssh", ssh.collect)] if ssh else [])
    try:
        web = webconfig.load(settings["web.config_file"]) if settings["web.config_file"] else None
        server = MetricsServer(exposition, settings["web.listen_address"], settings["web.telemetry_path"], web)
    except OSError as err:
        return fail(f"cannot listen on {settings['web.listen_address']}: {err.strerror}")
    sources.start_live(settings, store, stop)
    if ssh:
        ssh.start()
    host, port = server.address[:2]
    log.info("serving metrics on %s://%s:%d%s", "https" if web and web.tls else "http", host, port, settings["web.telemetry_path"])
    webconfig.warn_if_exposed(host, web)
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    server.serve_in_thread()
    try:
        while not stop.wait(1.0):
            pass
    except KeyboardInterrupt:
        pass
    stop.set()
    server.shutdown()
    return 0
