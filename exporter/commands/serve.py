"""`serve`: run the sources in the background and serve their metrics over HTTP."""

from __future__ import annotations

import logging
import signal
import threading

from exporter import config, sources, webconfig
from exporter.collectors import COLLECTORS
from exporter.exposition import Exposition
from exporter.filters import LunFilter
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
    parser.add_argument(
        "--esxtop-follow", dest="esxtop__follow", action="append", metavar="FILE", help="Same as --esxtop.follow."
    )
    parser.add_argument("--esxtop-file", dest="esxtop__file", action="append", metavar="FILE", help="Same as --esxtop.file.")
    parser.add_argument("--esxtop-ssh", dest="esxtop__ssh", action="append", metavar="USER@HOST", help="Same as --esxtop.ssh.")
    parser.add_argument("--web.config.file", dest="web__config_file", metavar="FILE", help="Same as --web.config-file.")
    parser.add_argument("--simulate", dest="simulate__scenario", metavar="SCENARIO", help="Same as --simulate.scenario.")
    parser.add_argument("--vsphere", dest="vsphere__url", metavar="URL", help="Same as --vsphere.url.")
    parser.set_defaults(run=run)


def resolve(args):
    settings = config.load(options(), vars(args), config_file=args.config_file)
    logging.getLogger().setLevel(settings["log.level"].upper())
    return settings


def lun_filter(settings) -> LunFilter:
    return LunFilter(settings["lun.include"], settings["lun.exclude"])


def enabled_collectors(settings):
    return [name for name in COLLECTORS if settings[f"collector.{name}"]]


def vsphere_extra(targets) -> list:
    """The vSphere self-metrics collector over these targets, as an Exposition `extra`."""
    from exporter.collectors.vsphere import make_collect

    return [("vsphere", make_collect(targets))] if targets else []


def run(args) -> int:
    from exporter.cli import fail
    from exporter.esxtop import EsxtopError

    settings = resolve(args)
    if not sources.has_live_source(settings):
        settings["simulate.scenario"] = "demo"  # the embedded default: no ESXi host needed
    store = Store(stale_after=settings["esxtop.stale_after"], lun_filter=lun_filter(settings))
    vsphere = sources.vsphere_targets(settings, store)
    try:
        sources.load_files(settings, store)
    except EsxtopError as err:
        return fail(err)
    stop = threading.Event()
    ssh = sources.ssh_streams(settings, store, stop)
    enabled = enabled_collectors(settings)
    extra = vsphere_extra(vsphere) + ([("esxtop_ssh", ssh.collect)] if ssh else [])
    exposition = Exposition(store, enabled, extra=extra)
    probes = {t.name: Exposition(t.store, enabled, extra=vsphere_extra([t])) for t in vsphere}  # /probe?target=NAME
    try:
        web = webconfig.load(settings["web.config_file"]) if settings["web.config_file"] else None
        server = MetricsServer(exposition, settings["web.listen_address"], settings["web.telemetry_path"], probes=probes, web=web)
    except OSError as err:
        return fail(f"cannot listen on {settings['web.listen_address']}: {err.strerror}")
    sources.start_live(settings, store, stop, vsphere=vsphere)
    if ssh:
        ssh.start()
    host, port = server.address[:2]
    log.info(
        "serving metrics on %s://%s:%d%s", "https" if web and web.tls else "http", host, port, settings["web.telemetry_path"]
    )
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
