"""One host's storage configuration from esxcli, whichever way it is asked: `fetch(words)` runs
`esxcli <words>` and returns its records (see exporter.esxcli.parse) and problems."""

from __future__ import annotations

import logging
from collections.abc import Callable

from exporter.esxcli import storage, vaai
from exporter.store import model as m

log = logging.getLogger(__name__)

Fetch = Callable[[list[str]], "tuple[list[dict[str, str]], list[str]]"]

DEVICES = ["storage", "core", "device", "list"]
NMP = ["storage", "nmp", "device", "list"]
HPP = ["storage", "hpp", "device", "list"]  # ESXi 7.0+ only
ADAPTERS = ["storage", "core", "adapter", "list"]


class EsxcliError(Exception):
    """esxcli could not be run or answered with an error (one line, no secrets)."""


class AnswerTooLarge(EsxcliError):
    """esxcli's answer passed the cap on what one command may send: refused whole, unread."""


def read(host: str, fetch: Fetch) -> tuple[m.Inventory, list[tuple[str, str, str]]]:
    """The host's Inventory and its problems as (command, reason, message); a command that
    fails is a problem and the others are still read."""
    inv = m.Inventory(host=host, dsnro_source="none")
    problems: list[tuple[str, str, str]] = []

    def run(words: list[str], apply, reason_if_fails: str = "failed", *extra) -> None:
        command = " ".join(words)
        try:
            records, bad = fetch(words)
        except EsxcliError as err:
            if words == HPP or (words == vaai.LOCK_MODES and "unknown command or namespace" in str(err).lower()):
                # older hosts have no HPP namespace (before 7.0) and no lockmode one (vSphere 6.0's storage
                # guide is the first to list it): not an error
                log.debug("%s: esxcli %s: %s", host, command, err)
                return
            problems.append((command, reason_if_fails, str(err)))
            return
        lines: list[str] = [str(b) for b in bad]
        apply(inv, *extra, records, lines)
        problems.extend((command, "bad_value" if not str(p).startswith("line ") else "bad_line", str(p)) for p in lines)

    run(DEVICES, storage.devices)
    run(NMP, storage.nmp_devices)
    run(HPP, storage.hpp_devices)
    run(ADAPTERS, storage.adapters)
    for driver in sorted({a.driver for a in inv.adapters.values() if a.queue_depth_parameter}):
        run(["system", "module", "parameters", "list", "-m", driver], storage.module_parameters, "failed", driver)
    run(vaai.VAAI_STATUS, vaai.vaai_status)
    run(vaai.advanced(vaai.ATS_HEARTBEAT), vaai.ats_heartbeat)
    run(vaai.advanced(vaai.HARDWARE_LOCKING), vaai.hardware_locking)
    run(vaai.LOCK_MODES, vaai.lock_modes)
    return inv, problems
