"""esxcli over SSH, through the same transport and target as the host's esxtop stream (key,
known_hosts, askpass for a password, never an argument): the storage configuration of each
esxtop-over-SSH host, refreshed on the inventory interval and pushed into the store as the host's
Inventory."""

from __future__ import annotations

import logging
import shlex
import subprocess
import threading

from exporter.configuration.config import default
from exporter.esxcli import filesystem, parse
from exporter.esxcli.health import EsxcliHealth
from exporter.esxcli.inventory import AnswerTooLarge, EsxcliError, read
from exporter.esxcli.retry import Retries
from exporter.ssh import process
from exporter.ssh.target import SshTarget

log = logging.getLogger(__name__)
# The most one esxcli command may print over SSH by default, 16 MiB: a host's path list at ESXi's
# maximum of 4,096 paths is about 4 MiB. More is refused unread (what the exporter keeps is bounded
# by this, not by what a host sends); --esxtop.ssh-esxcli-max-answer-size sets it. A SMART page
# has a cap of its own (exporter.smart.parse.Limits).
MAX_OUTPUT = default("esxtop.ssh_esxcli_max_answer_size")

# How each command prints by default: blocks of `Key: Value`, or a dashed table.
SHAPES = {
    "storage core device list": parse.blocks,
    "storage nmp device list": parse.blocks,
    "storage hpp device list": parse.blocks,
    "storage core adapter list": parse.table,
    "system module parameters list": parse.table,
    "nvme device list": parse.table,
    "storage core path list": parse.blocks,
    "storage core device vaai status get": parse.blocks,
    "system settings advanced list": parse.settings,
    "storage vmfs lockmode list": parse.table,
    "storage filesystem list": parse.table,
}


class EsxcliOverSsh:
    def __init__(
        self,
        target: SshTarget,
        store,
        stop: threading.Event,
        host_name,
        interval: float = 300.0,
        ssh: str = "ssh",
        max_output: int = MAX_OUTPUT,
    ):
        """host_name(): the host's name as its esxtop stream reports it (None until known), so
        the Inventory joins the samples. max_output: the most one command may print (bytes)."""
        self.target, self.store, self.stop, self.host_name = target, store, stop, host_name
        self.interval, self.ssh, self.max_output = interval, ssh, max_output
        self.health = EsxcliHealth(store, log=log)

    def fetch(self, words: list[str]):
        command = " ".join(w for w in words if not w.startswith("-"))
        shape = next((f for prefix, f in SHAPES.items() if command.startswith(prefix)), parse.blocks)
        return shape(self.text(words))

    def text(self, words: list[str], max_output: int | None = None) -> str:
        """What `esxcli <words>` prints; EsxcliError (its last line) when it exits non-zero,
        AnswerTooLarge when it prints more than max_output bytes (default: the runner's own)."""
        max_output = self.max_output if max_output is None else max_output
        try:
            done = process.run(self.target, "esxcli " + shlex.join(words), timeout=60, ssh=self.ssh, max_output=max_output)
        except subprocess.TimeoutExpired:
            raise EsxcliError("no answer within 60 s") from None
        except process.OutputTooLarge as err:
            raise AnswerTooLarge(str(err)) from None
        if done.returncode != 0:
            last = (done.stderr.strip() or done.stdout.strip() or f"exit status {done.returncode}").splitlines()[-1]
            raise EsxcliError(last[:200])
        return done.stdout

    def refresh(self, host: str) -> bool:
        inventory, problems = read(host, self.fetch)
        space = self.space(host)
        self.store.set_inventory(inventory)
        return not self.health.report(host, problems + space, f"esxcli on {self.target.label}")  # logged once per cause

    def space(self, host: str) -> list[tuple[str, str, str]]:
        """The host's datastores' space (one series per datastore: the store keeps one of the
        hosts, or vCenter's, per url); the command's problems as read's, counted and logged once
        per cause with the others."""
        command = " ".join(filesystem.COMMAND)
        try:
            records, bad = self.fetch(filesystem.COMMAND)
        except EsxcliError as err:
            return [(command, "failed", str(err))]
        lines: list[str] = []
        self.store.set_space(host, filesystem.spaces(records, lines))
        return [(command, "bad_line", str(b)) for b in bad] + [(command, "bad_value", line) for line in lines]

    def run(self) -> None:
        every_interval(self.stop, self.host_name, self.interval, self.refresh, f"esxcli on {self.target.label}")


def every_interval(stop: threading.Event, host_name, interval: float, refresh, what: str) -> None:
    """Once the host's esxtop stream has named the host (host_name() no longer None), refresh(host)
    every interval until stop. A refresh that failed (returned False, or raised: logged) is tried
    again sooner, as exporter.esxcli.retry says."""
    host = None
    while not stop.is_set() and host is None:
        host = host_name()
        if host is None:
            stop.wait(1.0)
    retries = Retries(interval)
    while not stop.is_set():
        try:
            answered = refresh(host) is not False
        except Exception:  # noqa: BLE001 - the loop must survive anything one refresh does
            log.exception("%s: refresh failed", what)
            answered = False
        if answered:
            retries.succeeded(host)
            stop.wait(interval)
        else:
            stop.wait(retries.failed(host))
