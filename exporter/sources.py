"""Starts the configured sources, each feeding the shared store: live ones in threads (serve),
or read to the end (dump)."""

from __future__ import annotations

import logging
import threading

from exporter.esxtop import EsxtopReader, read_file
from exporter.esxtop.streams import follow_lines, pump, start_thread, stdin_lines

log = logging.getLogger(__name__)


def has_live_source(settings) -> bool:
    return bool(
        settings["esxtop.stdin"]
        or settings["esxtop.follow"]
        or settings["esxtop.file"]
        or settings["esxtop.ssh"]
        or settings.get("esxtop.ssh_targets")
        or settings["simulate.scenario"]
        or settings["vsphere.url"]
        or settings["vsphere.targets"]
    )


def ssh_streams(settings, store, stop: threading.Event):
    """The esxtop-over-SSH streams (not started yet), or None; raises ConfigError for bad targets."""
    from exporter.esxtop.ssh import SshStreams, targets_from_settings

    targets = targets_from_settings(settings)
    return SshStreams(targets, store, stop, per_world=settings["collector.world"]) if targets else None


def vsphere_targets(settings, store) -> list:
    """The configured vSphere targets, each feeding `store` and its own (ConfigError if bad)."""
    if not (settings["vsphere.url"] or settings["vsphere.targets"]):
        return []
    from exporter.vsphere import VsphereTarget, targets

    return [VsphereTarget(config, store, settings["esxtop.stale_after"]) for config in targets(settings)]


def load_files(settings, store) -> None:
    """Read saved captures to the end; the first bad line is fatal (EsxtopError)."""
    per_world = settings["collector.world"]
    for path in settings["esxtop.file"]:
        for sample in read_file(path, per_world=per_world):
            store.ingest(sample)


def start_live(settings, store, stop: threading.Event, vsphere=()) -> list[threading.Thread]:
    per_world = settings["collector.world"]
    threads = [thread for target in vsphere for thread in target.start(stop)]
    if settings["esxtop.stdin"]:
        reader = EsxtopReader("stdin", per_world=per_world)
        threads.append(start_thread("esxtop-stdin", pump, stdin_lines(), reader, store, stop))
    for path in settings["esxtop.follow"]:
        reader = EsxtopReader(path, per_world=per_world)
        threads.append(start_thread(f"esxtop-follow:{path}", pump, follow_lines(path, stop), reader, store, stop))
    if settings["simulate.scenario"]:
        from exporter.simulated import run_simulation

        threads.append(start_thread("simulator", run_simulation, settings, store, stop))
    return threads
