"""`serve`: run the sources in the background and serve their metrics over HTTP."""

from __future__ import annotations

import logging
import signal

from exporter.app import App, has_live_source
from exporter.configuration import config
from exporter.configuration.flags import add_option_flags, exporter_options, fail
from exporter.esxtop import EsxtopError
from exporter.serving import allocator, webconfig
from exporter.serving.http import MetricsServer

log = logging.getLogger("exporter")


def register(subparsers):
    parser = subparsers.add_parser("serve", help="Serve metrics over HTTP (the default command).")
    add_option_flags(parser, exporter_options())
    parser.set_defaults(run=run)


def resolve(args):
    settings = config.load(exporter_options(), vars(args), config_file=args.config_file)
    logging.getLogger().setLevel(settings["log.level"].upper())
    return settings


def run(args) -> int:
    settings = resolve(args)
    if not has_live_source(settings):
        settings["simulate.scenario"] = "demo"  # the embedded default: no ESXi host needed
    app = App(settings)
    try:
        app.load_files()
    except EsxtopError as err:
        return fail(err)
    metrics, probes = app.exposition(process=True), app.probes()
    try:
        web = webconfig.load(settings["web.config_file"]) if settings["web.config_file"] else None
        server = MetricsServer(metrics, settings["web.listen_address"], settings["web.telemetry_path"], probes=probes, web=web)
    except OSError as err:
        return fail(f"cannot listen on {settings['web.listen_address']}: {err.strerror}")
    log.debug("malloc settings: %s", allocator.tune() or "left as they are")
    allocator.release_every(app.stop)  # freed memory back to the system, not only from the heap's top
    app.start_live()
    for exposition in (metrics, *probes.values()):  # each rendered ahead once it is scraped
        exposition.start(app.stop)
    host, port = server.address[:2]
    scheme = "https" if web and web.tls else "http"
    log.info("serving metrics on %s://%s:%d%s", scheme, host, port, settings["web.telemetry_path"])
    webconfig.warn_if_exposed(host, web)
    signal.signal(signal.SIGTERM, lambda *_: app.stop.set())
    server.serve_in_thread()
    try:
        while not app.stop.wait(1.0):
            pass
    except KeyboardInterrupt:
        pass
    app.stop.set()
    server.shutdown()
    return 0
