"""SMART over SSH, for the esxtop-over-SSH hosts: esxcli through the same transport and target as
the host's esxtop stream and its storage configuration (exporter.esxcli.ssh), on its own interval
(default 1 h), named by the host as its esxtop stream reports it so the disks join the LUNs."""

from __future__ import annotations

import threading

from exporter.esxcli.ssh import MAX_OUTPUT, EsxcliOverSsh, every_interval
from exporter.smart import parse, plan
from exporter.smart.rounds import SmartRounds
from exporter.ssh.target import SshTarget


class SshEsxcli:
    """exporter.smart.reader.Esxcli over SSH: esxcli's default text, read by exporter.smart.parse
    within its limits."""

    def __init__(self, runner: EsxcliOverSsh, limits: parse.Limits = parse.LIMITS):
        self.runner, self.limits = runner, limits

    def records(self, words: list[str]):
        return self.runner.fetch(words)

    def smart_page(self, device: str, refused: list):
        return parse.smart_page_text(self.runner.text(plan.smart_get(device), self.limits.answer), device, refused, self.limits)

    def nvme_log(self, adapter: str, refused: list):
        return parse.nvme_log_text(self.runner.text(plan.nvme_log(adapter), self.limits.answer), adapter, refused)


class SmartOverSsh:
    def __init__(
        self,
        target: SshTarget,
        store,
        stop: threading.Event,
        host_name,
        interval: float = 3600.0,
        ssh: str = "ssh",
        limits: parse.Limits = parse.LIMITS,
        max_output: int = MAX_OUTPUT,
    ):
        """limits: a SMART answer's; max_output: the cap on the device lists (esxcli's other commands)."""
        self.target, self.stop, self.host_name, self.interval = target, stop, host_name, interval
        self.esxcli = SshEsxcli(EsxcliOverSsh(target, store, stop, host_name, interval, ssh, max_output), limits)
        self.rounds = SmartRounds(store)

    def run(self) -> None:
        every_interval(
            self.stop, self.host_name, self.interval, lambda host: self.rounds.refresh(host, self.esxcli, self.target.label),
            f"SMART on {self.target.label}",
        )  # fmt: skip
