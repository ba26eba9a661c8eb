"""SMART through the vSphere API, for sites without SSH: the same esxcli commands through each
host's managed method executer on the target's logged-in session (exporter.vsphere.esxcli), on
their own interval (default 1 h), after the target's discovery has found its hosts. Runs where
the target reads esxcli (`vsphere.esxcli`, on by default)."""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from exporter.esxcli.inventory import EsxcliError
from exporter.esxcli.retry import Retries
from exporter.smart import parse, plan
from exporter.smart.rounds import SmartRounds
from exporter.vsphere import esxcli
from exporter.vsphere.client import VsphereError

log = logging.getLogger(__name__)


class ApiEsxcli:
    """exporter.smart.reader.Esxcli through a host's managed method executer: records, read by
    exporter.smart.parse. The API names each argument by esxcli's long option without its dashes:
    `smart get -d` is `--device-name` there (devicename), `log smart get -A` is `--adapter`."""

    def __init__(self, stub, executer: str, limits: parse.Limits = parse.LIMITS):
        self.stub, self.executer, self.limits = stub, executer, limits

    def records(self, words: list[str]):
        return esxcli.run(self.stub, self.executer, words)

    def smart_page(self, device: str, refused: list):
        words = [*plan.SMART_GET, "--devicename", device]
        records, _ = esxcli.run(self.stub, self.executer, words, max_answer=self.limits.answer)
        return parse.smart_page_records(records, device, refused, self.limits)

    def nvme_log(self, adapter: str, refused: list):
        words = [*plan.NVME_LOG, "--adapter", adapter]
        records, _ = esxcli.run(self.stub, self.executer, words, max_answer=self.limits.answer)
        return parse.nvme_log_records(records, adapter, refused)


class SmartOverVsphere:
    def __init__(self, target, store, stop: threading.Event, interval: float = 3600.0, limits: parse.Limits = parse.LIMITS):
        """target: an exporter.vsphere.VsphereTarget that is started (its discovery finds the hosts)."""
        self.target, self.stop, self.interval, self.limits = target, stop, interval, limits
        self.rounds = SmartRounds(store, origin=target.name)
        # A host that leaves the target's inventory takes its disks with it at once, not at the
        # next SMART round (an hour later by default).
        target.forget_listeners.append(self.rounds.forget)
        self.retries = Retries(interval)  # a host whose round failed: tried again sooner

    def run(self) -> None:
        target = self.target
        while not self.stop.is_set() and not target.discovered.wait(1.0):
            pass
        # The first collection goes first: a SMART round is many small esxcli answers per host.
        target.collected.wait(target.config.interval)
        next_all = time.monotonic()
        while not self.stop.is_set():
            if time.monotonic() >= next_all:
                hosts, next_all = None, time.monotonic() + self.interval
            else:
                hosts = self.retries.due()
            if hosts is None or hosts:
                try:
                    self.round(hosts)
                except Exception:  # noqa: BLE001 - the loop must survive anything one round does
                    log.exception("SMART on vsphere target %s: round failed", target.name)
            self.stop.wait(self.retries.wait_until(next_all))

    def round(self, only: set[str] | None = None) -> None:
        """One round on every host of the target's topology (only: on these of them); a host whose
        round failed is tried again sooner (self.retries)."""
        # Each host's epoch before the topology: a host the target forgets after this (the topology
        # loses it first) has a newer epoch, and its result, whenever its turn in the pool comes,
        # is thrown away. Read at its turn, a host forgotten meanwhile published a failure of the
        # call that found it gone: series of a host no longer there, for good (#45's soak).
        epochs = self.rounds.epochs_now()
        target, topology = self.target, self.target.topology
        if topology is None:
            return
        hosts = [topo for topo in topology.hosts if only is None or topo.name in only]
        self.retries.keep_only(topo.name for topo in topology.hosts)
        try:
            target.client.content()
        except VsphereError as err:  # the server is away: its hosts are tried again a minute on
            log.warning("SMART on vsphere target %s: skipped: %s", target.name, err)
            for topo in hosts:
                self.retries.failed(topo.name)
            return

        def one(topo) -> None:
            label, epoch = f"{target.name}/{topo.name}", epochs.get(topo.name, 0)
            step = ["RetrieveManagedMethodExecuter"]

            def ask(content) -> bool:  # on the call's own session: one that expired is logged in again, once
                stub = content.propertyCollector._stub
                step[0] = "RetrieveManagedMethodExecuter"
                executer = esxcli.executer(stub, topo.ref._moId)
                step[0] = "esxcli"
                return self.rounds.refresh(topo.name, ApiEsxcli(stub, executer, self.limits), label, epoch)

            try:
                answered = target.client.call(ask)
            except (EsxcliError, VsphereError) as err:
                self.rounds.fail(topo.name, step[0], str(err), epoch, label)
                answered = False
            if answered:
                self.retries.succeeded(topo.name)
            elif self.rounds.epoch(topo.name) == epoch:  # failed, not left
                self.retries.failed(topo.name)

        with ThreadPoolExecutor(max_workers=max(1, target.config.max_parallel_queries)) as pool:
            list(pool.map(one, hosts))
