"""The fuzz targets of tests/fuzz/ and the contract each answer must keep (issue 37).

Each target takes the bytes of one corpus file, as a host or vCenter would send them, and runs
them through the exporter's own reader:

- smart_table, smart_json: `esxcli storage core device smart get` over SSH (the bytes decoded as
  exporter.ssh.process decodes them), its page made a disk, the disk exported;
- smart_records, nvme_records: the vSphere API's records (a JSON list of string-valued objects);
- nvme_log, nvme_json: `esxcli nvme device log smart get` over SSH;
- update_set: a WaitForUpdatesEx answer (exporter.vsphere.updates.parse_update_set, read through
  xmlguard as the answer is), its property changes applied to an inventory mirror and settled.

The contract (`check`): an answer within SECONDS, no exception but the reader's own one-line error (SmartFormatError; for
update_set, xmlguard's AnswerRefused or the XML parser's ParseError); every value in the model
and on /metrics finite and in its field's range; label values from the host at most MAX_LABEL
characters; at most MAX_ATTRIBUTES attributes; every refusal one line with a known reason.
`outcome` names what an input did, so the generator (tests/fuzz/generate.py) keeps one input per
kind of outcome.
"""

from __future__ import annotations

import json
import math
import re
import signal
import xml.etree.ElementTree as ET
from contextlib import contextmanager
from pathlib import Path

from exporter.serving.exposition import Exposition
from exporter.smart import disks, parse
from exporter.ssh.process import decode
from exporter.store import model as m
from exporter.store.store import Store
from exporter.vsphere import xmlguard
from exporter.vsphere.mirror import LUNS, PATHS, Mirror
from exporter.vsphere.updates import parse_update_set

CORPUS = Path(__file__).resolve().parents[1] / "fuzz"
HOST, DEVICE, ADAPTER = "esx-fuzz.lab.local", "t10.ATA_____FUZZ_DISK", "vmhba2"
REASONS = {"out_of_range", "label_too_long", "too_many_attributes"}
SMART_TARGETS = ("smart_table", "smart_json", "smart_records")
NVME_TARGETS = ("nvme_log", "nvme_json", "nvme_records")
TARGETS = (*SMART_TARGETS, *NVME_TARGETS, "update_set")
# (the update stream's filters by role, as exporter.vsphere.follow names them)
ROLES = {"f-tree": "tree", "f-vms": "vms", "f-luns": LUNS, "f-paths": PATHS, "f-devices": "devices"}


class ContractBroken(AssertionError):
    pass


def run(target: str, data: bytes):
    """The target's reading of `data`: (what it read, the refusals); raises what the reader raises."""
    refused: list[parse.Refusal] = []
    if target == "update_set":
        return _update_set(data), refused
    text = decode(data)
    if target in ("smart_table", "smart_json"):
        return parse.smart_page_text(text, DEVICE, refused), refused
    if target in ("nvme_log", "nvme_json"):
        return parse.nvme_log_text(text, ADAPTER, refused), refused
    records = _records(text)
    if target == "smart_records":
        return parse.smart_page_records(records, DEVICE, refused), refused
    return parse.nvme_log_records(records, ADAPTER, refused), refused


def _records(text: str) -> list[dict[str, str]]:
    """The API's records as exporter.vsphere.esxcli.run hands them over: field -> stripped text."""
    doc = json.loads(text)
    return [{str(k): str(v).strip() for k, v in item.items()} for item in doc]


def _update_set(data: bytes):
    found = parse_update_set(xmlguard.parse([data]), {"session[1]" + k: v for k, v in ROLES.items()})
    if found is None:
        return None
    mirror = Mirror(None, with_vms=True)
    mirror.apply(found.updates)
    chosen = mirror.chosen_hosts()
    mirror.list_hosts(LUNS, chosen)
    mirror.list_hosts(PATHS, chosen)
    mirror.list_vms(list(mirror.vms))
    mirror.apply(found.updates)  # the same changes again, now that the hosts are in the list views
    mirror.start_following()
    mirror.settle()
    return found


def expected_errors(target: str) -> tuple[type[BaseException], ...]:
    if target == "update_set":
        return (xmlguard.AnswerRefused, ET.ParseError)
    if target in ("smart_records", "nvme_records"):
        return (parse.SmartFormatError, _NotRecords)
    return (parse.SmartFormatError,)


class _NotRecords(Exception):
    """A records file that is not a list of objects: the API never answers so (not the parser's input)."""


# An input gets this long: a hang (a parent cycle once looped for ever, growing) breaks the contract.
SECONDS = 10.0


@contextmanager
def time_limit(seconds: float = SECONDS):
    def expired(*_):
        raise ContractBroken(f"no answer within {seconds:g} s: a hang")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def check(target: str, data: bytes) -> str:
    """Run `data` through `target` and assert the contract, within SECONDS; returns the outcome
    (see outcome())."""
    with time_limit():
        return _check(target, data)


def _check(target: str, data: bytes) -> str:
    try:
        if target in ("smart_records", "nvme_records"):
            try:
                doc = json.loads(decode(data))
            except ValueError:
                raise _NotRecords() from None
            if not isinstance(doc, list) or not all(isinstance(i, dict) for i in doc):
                raise _NotRecords()
        read, refused = run(target, data)
    except expected_errors(target) as err:
        message = str(err)
        if isinstance(err, parse.SmartFormatError):
            subject = DEVICE if target in SMART_TARGETS else ADAPTER
            _require(
                "\n" not in message and message.startswith(f"{subject}: "), f"error not one line naming {subject}: {message!r}"
            )
        return outcome(target, error=err)
    if target in SMART_TARGETS:
        _check_page(read)
        _check_exposition(m.DiskHealth(page="ata", smart_status="ok"), read, None)
        _check_exposition(m.DiskHealth(page="nvme", smart_status="ok"), read, None)
    elif target in NVME_TARGETS:
        _check_log(read)
        _check_exposition(m.DiskHealth(page="nvme", adapter=ADAPTER, smart_status="failed", nvme_status="ok"), None, read)
    for refusal in refused:
        _require(refusal.reason in REASONS, f"unknown reason {refusal.reason!r}")
        _require("\n" not in refusal.message and len(refusal.message) < 400, f"refusal not one short line: {refusal.message!r}")
    return outcome(target, read=read, refused=refused)


def _require(condition: bool, what: str) -> None:
    if not condition:
        raise ContractBroken(what)


def _in(value, low: float, high: float, what: str) -> None:
    if value is None:
        return
    _require(
        isinstance(value, float) and math.isfinite(value) and low <= value <= high, f"{what} = {value!r}, not in [{low}, {high}]"
    )


def _check_page(page: m.SmartPage) -> None:
    _require(len(page.attributes) <= parse.MAX_ATTRIBUTES, f"{len(page.attributes)} attributes")
    _require(len(page.health) <= parse.MAX_LABEL, f"health status of {len(page.health)} characters")
    for name, row in page.attributes.items():
        _require(0 < len(name) <= parse.MAX_LABEL and re.fullmatch(r"[a-z0-9_]+", name) is not None, f"parameter {name!r}")
        for column in ("value", "threshold", "worst", "raw"):
            _in(getattr(row, column), 0, float(2**parse.SMART_FIGURE_BITS), f"{name} {column}")


def _check_log(log: m.NvmeHealthLog) -> None:
    _require(set(log.warnings) <= set(m.NVME_WARNINGS) and set(log.counters) <= set(m.NVME_COUNTERS), "unknown field")
    _require(set(log.sensors_celsius) <= {str(i) for i in range(1, 9)}, f"sensors {sorted(log.sensors_celsius)}")
    for celsius in [log.temperature_celsius, *log.sensors_celsius.values()]:
        _in(celsius, -273, parse.NVME_MAX_CELSIUS, "temperature")
    _in(log.available_spare_ratio, 0, 1, "available spare")
    _in(log.available_spare_threshold_ratio, 0, 1, "available spare threshold")
    _in(log.percentage_used_ratio, 0, 2.55, "percentage used")
    for name, count in log.counters.items():
        _in(count, 0, 2.0**128 * 512_000, name)


def _check_exposition(disk: m.DiskHealth, page, log) -> None:
    """The reading made a disk as exporter.smart.disks makes it, in a store, on /metrics."""
    built = disks.disk_health(
        disk.page,
        disks.Reading(disk.smart_status, page),
        1000.0,
        adapter=disk.adapter,
        nvme=disks.Reading(disk.nvme_status, log) if disk.nvme_status else None,
    )
    store = Store()
    store.set_disk_health(m.DiskHealthReport(host=HOST, timestamp=1000.0, disks={DEVICE: built}))
    body = Exposition(store, ["smart"]).body().decode()
    for line in body.splitlines():
        if line.startswith("#"):
            continue
        series, _, number = line.rpartition(" ")
        _require(math.isfinite(float(number)), f"non-finite sample {line[:120]!r}")
        for label_value in re.findall(r'="((?:[^"\\]|\\.)*)"', series):
            _require(len(label_value) <= parse.MAX_LABEL, f"label of {len(label_value)} characters on {series[:80]!r}")


# What each of the readers' refusals says, as outcome() names them (the first that a message holds).
ERRORS = (
    "empty answer",
    "dashed line",
    "text before the first column",
    "spills out of its column",
    "header",
    "nested too deep",
    "not JSON",
    "expected a list of objects",
    "JSON:",
    "is not a whole number",
    "no parameter name",
    "has no letters or digits",
    "appears twice",
    "no parameters",
    "(esxcli prints N/A",
    "expected one object",
    "not 'Key: Value'",
    "expected one record",
    "not true or false",
    "not a number",
    "no NVMe health fields",
    "DOCTYPE",
)


def outcome(target: str, read=None, refused=(), error: BaseException | None = None) -> str:
    """A short name for what an input did: which refusal (ERRORS), or what was read and refused."""
    if error is not None:
        message = str(error)
        return f"error {type(error).__name__} {next((e for e in ERRORS if e in message), '')}".rstrip()
    reasons = ",".join(sorted({r.reason for r in refused})) or "-"
    if target in SMART_TARGETS:
        size = "max" if len(read.attributes) >= parse.MAX_ATTRIBUTES else "some" if read.attributes else "none"
        return f"page attributes={size} health={bool(read.health)} refused={reasons}"
    if target in NVME_TARGETS:
        return f"log counters={bool(read.counters)} warnings={bool(read.warnings)} refused={reasons}"
    if read is None:
        return "updates none"
    kinds = ",".join(sorted({u.kind or "?" for u in read.updates})) or "-"
    return f"updates kinds={kinds} truncated={read.truncated}"


def corpus(target: str) -> list[Path]:
    return sorted(p for p in (CORPUS / target).iterdir() if p.is_file())
