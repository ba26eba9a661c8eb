"""Wires the program, and only here: resolved settings -> the one Store, the sources that feed it
(saved captures, stdin, followed files, SSH streams, vSphere targets, the simulator, the config
file's inventory), the registered collectors that render it, and the HTTP server.

    sources  --(Sample, Inventory, SourceHealth)-->  Store  -->  collectors  -->  Exposition / HTTP

`serve` and `dump` are thin commands over this module.
"""

from __future__ import annotations

import logging
import threading

from exporter.collectors import COLLECTORS
from exporter.configuration import static_inventory
from exporter.configuration.config import ConfigError, default
from exporter.configuration.filters import LunFilter
from exporter.esxtop import EsxtopReader, read_file
from exporter.esxtop.streams import follow_lines, pump, start_thread, stdin_lines
from exporter.serving.exposition import Exposition
from exporter.store.store import Store

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


class App:
    """One exporter process: its store, its sources and what renders them. Raises ConfigError
    (every bad entry at once) for a bad target or inventory section."""

    def __init__(self, settings, stop: threading.Event | None = None):
        self.settings = settings
        self.stop = stop or threading.Event()
        self.store = Store(
            stale_after=settings["esxtop.stale_after"], lun_filter=LunFilter(settings["lun.include"], settings["lun.exclude"])
        )
        self.enabled = [name for name in COLLECTORS if settings[f"collector.{name}"]]
        self.per_world = settings["collector.world"]
        # Every section's bad entries at once, named as the options' are (FILE: section.key: reason).
        problems: list[str] = []
        self.vsphere = _collecting(self._vsphere_targets, problems, [])
        self.vsan = self._vsan_sources()
        self.ssh = _collecting(self._ssh_streams, problems, None)
        _collecting(self._load_inventory, problems, None)
        if problems:
            file_problems = getattr(settings, "file_problems", None)
            raise ConfigError(file_problems(problems) if file_problems else problems)

    # --- sources -------------------------------------------------------------------------
    def _vsphere_targets(self) -> list:
        if not (self.settings["vsphere.url"] or self.settings["vsphere.targets"]):
            return []
        from exporter.vsphere import VsphereTarget, targets

        return [VsphereTarget(config, self.store) for config in targets(self.settings)]

    def _vsan_sources(self) -> list:
        """The vSAN clusters of each vSphere target that reads them, over the target's own session."""
        if not any(target.config.vsan for target in self.vsphere):
            return []
        from exporter.vsan.source import VsanSource

        max_label = self._setting("limits.max_label_length")
        return [VsanSource(t, self.store, max_label=max_label) for t in self.vsphere if t.config.vsan]

    def _setting(self, key: str):
        """A resolved setting, or its one default where the settings were built by hand."""
        value = self.settings.get(key)
        return default(key) if value is None else value

    def _smart_limits(self):
        """What one host's SMART answers may make the exporter read and keep (docs/operations.md#limits)."""
        from exporter.smart.parse import Limits

        return Limits(
            answer=self._setting("smart.max_answer_size"),
            attributes=self._setting("smart.max_attributes"),
            label=self._setting("limits.max_label_length"),
        )

    def _ssh_streams(self):
        from exporter.esxtop.ssh import SshStreams
        from exporter.ssh.target import targets_from_settings

        targets = targets_from_settings(self.settings)
        if not targets:
            return None
        return SshStreams(targets, self.store, self.stop, per_world=self.per_world)

    def _start_esxcli_over_ssh(self, streams) -> list[threading.Thread]:
        """esxcli on each esxtop-over-SSH host, through the same SSH target, every inventory
        interval (unless --no-esxtop.ssh-esxcli). Named by the host as its esxtop stream reports it,
        so the storage configuration joins the samples: the two sources share the transport, not
        each other."""
        interval = self.settings["esxtop.ssh_inventory_interval"]
        if not self.settings.get("esxtop.ssh_esxcli", True):
            return []
        from exporter.esxcli.ssh import EsxcliOverSsh

        max_output = self._setting("esxtop.ssh_esxcli_max_answer_size")
        return [
            start_thread(
                f"esxcli-ssh:{stream.target.label}",
                EsxcliOverSsh(stream.target, self.store, self.stop, stream.host_name, interval, stream.ssh, max_output).run,
            )
            for stream in streams
        ]

    def _start_smart(self) -> list[threading.Thread]:
        """The local disks' SMART pages and NVMe logs on their own interval (smart.interval; off with
        --no-smart.read): over each esxtop-over-SSH host's SSH target, and through each vSphere
        target that reads esxcli (vsphere.esxcli)."""
        if not self.settings["smart.read"]:
            return []
        interval, limits = self.settings["smart.interval"], self._smart_limits()
        from exporter.smart.ssh import SmartOverSsh
        from exporter.smart.vsphere import SmartOverVsphere

        threads = [
            start_thread(f"smart-vsphere:{t.name}", SmartOverVsphere(t, self.store, self.stop, interval, limits).run)
            for t in self.vsphere
            if t.config.esxcli
        ]
        max_output = self._setting("esxtop.ssh_esxcli_max_answer_size")
        for stream in self.ssh.streams if self.ssh else ():
            ssh = stream.target, self.store, self.stop, stream.host_name, interval, stream.ssh
            runner = SmartOverSsh(*ssh, limits=limits, max_output=max_output)
            threads.append(start_thread(f"smart-ssh:{stream.target.label}", runner.run))
        return threads

    def _load_inventory(self) -> None:
        """The config file's hand-written inventory (hosts no vSphere target covers)."""
        try:
            inventories = static_inventory.parse(self.settings.get("inventory"))
        except static_inventory.InventoryError as err:
            raise ConfigError(err.problems) from None
        for inventory in inventories:
            self.store.set_inventory(inventory)

    def load_files(self) -> None:
        """Read saved captures to the end; the first bad line is fatal (EsxtopError)."""
        for path in self.settings["esxtop.file"]:
            for sample in read_file(path, per_world=self.per_world, on_error=self.store.count_parse_error):
                self.store.ingest(sample)

    def start_live(self) -> list[threading.Thread]:
        """Start every live source in its own thread(s)."""
        store, stop = self.store, self.stop
        threads = [thread for target in self.vsphere for thread in target.start(stop)]
        threads += [thread for source in self.vsan for thread in source.start(stop)]
        if self.settings["esxtop.stdin"]:
            reader = EsxtopReader("stdin", per_world=self.per_world)
            threads.append(start_thread("esxtop-stdin", pump, stdin_lines(), reader, store.ingest, store.count_parse_error, stop))
        for path in self.settings["esxtop.follow"]:
            reader = EsxtopReader(path, per_world=self.per_world)
            lines = follow_lines(path, stop)
            threads.append(
                start_thread(f"esxtop-follow:{path}", pump, lines, reader, store.ingest, store.count_parse_error, stop)
            )
        if self.settings["simulate.scenario"]:
            from exporter.simulator.live import run_simulation

            threads.append(start_thread("simulator", run_simulation, self.settings, store, stop))
        if self.ssh:
            threads += self.ssh.start()
            threads += self._start_esxcli_over_ssh(self.ssh.streams)
        threads += self._start_smart()
        threads += self._start_events()
        return threads

    def _start_events(self) -> list[threading.Thread]:
        """ESXi's storage events: each vSphere target's event stream (vsphere.events), and each
        esxtop-over-SSH host's vobd.log over its SSH target (esxtop.ssh_vobd)."""
        max_label = self._setting("limits.max_label_length")
        threads = []
        if any(t.config.events for t in self.vsphere):
            from exporter.events.vsphere import EventFollower

            for t in self.vsphere:
                if t.config.events:
                    follower = EventFollower(t, self.store, t.config.events_interval, max_label)
                    threads.append(start_thread(f"events-vsphere:{t.name}", follower.run, self.stop))
        if self.ssh and self._setting("esxtop.ssh_vobd"):
            from exporter.events.ssh import VobdOverSsh

            path = self._setting("esxtop.ssh_vobd_path")
            for stream in self.ssh.streams:
                follower = VobdOverSsh(stream.target, self.store, self.stop, stream.host_name, stream.ssh, path, max_label)
                threads.append(start_thread(f"events-vobd:{stream.target.label}", follower.run))
        return threads

    def collect_vsphere_once(self) -> list:
        """One discovery and one collection of every vSphere target (dump), every source it has: its
        vSAN clusters and (smart.read) one SMART round of its hosts' local disks through esxcli,
        as serve runs them; the targets that failed."""
        failed = [t for t in self.vsphere if not t.run_once()]  # each failure is logged with its reason
        for source in self.vsan:
            source.run_once()
        if self.settings["smart.read"]:
            from exporter.smart.vsphere import SmartOverVsphere

            for target in self.vsphere:
                if target.config.esxcli and target.topology is not None:
                    SmartOverVsphere(target, self.store, self.stop, limits=self._smart_limits()).round()
        for target in self.vsphere:
            target.client.close()
        return failed

    # --- rendering -----------------------------------------------------------------------
    def exposition(self, target: str | None = None, process: bool = False) -> Exposition:
        """The whole store, or what one vSphere target reported (/probe?target=NAME); process:
        with this process's own metrics (serve's /metrics, where --collector.process allows)."""
        source = self.store if target is None else self.store.view(target)
        return Exposition(source, self.enabled, process=process and self.settings["collector.process"])

    def probes(self) -> dict[str, Exposition]:
        return {t.name: self.exposition(t.name) for t in self.vsphere}


def _collecting(build, problems: list[str], failed):
    """build()'s result; on ConfigError its problems are added and `failed` stands in."""
    try:
        return build()
    except ConfigError as err:
        problems.extend(err.problems)
        return failed
