"""What esxcli prints about a disk's health, read into the model, strictly (docs/smart.md):

- `storage core device smart get -d DEV`: a dashed table (ESXi 8.0.3: Parameter, Value,
  Threshold, Worst, Raw; older builds: no Raw), its `--formatter=json` list of objects, or the
  vSphere API's records of the same fields;
- `nvme device log smart get -A vmhbaN`: `Key: Value` lines under a title, temperatures in
  Kelvin, counters in hexadecimal, percentages with ` %`; or its records.

A wrong reading is worse than none: an answer that does not read exactly is refused whole, with
one line naming the device (or adapter) and the line, and nothing of it enters the model. `N/A`
is no value, never zero. Units are converted here, once (exporter.store.units).

A value that reads but cannot be true is refused alone, the rest of the answer read: a number
past what its field can hold (a SMART figure of 64 bits, the NVMe log's fields as the NVMe
specification sizes them) or negative, a parameter name or status over MAX_LABEL characters, the
rows past MAX_ATTRIBUTES (each bound a flag: Limits). Each is a Refusal handed to the caller's
list, to be counted and logged.

This module imports only the model and the options' defaults: the simulator writes SMART text for
it (no esxcli, no SSH).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from exporter.configuration.config import default
from exporter.store import model as m
from exporter.store import units

# A Raw of 2^32 - 1 is esxcli's "not provided" (seen in --formatter=json; treated so everywhere).
RAW_NOT_PROVIDED = 4294967295
COLUMNS = ("parameter", "value", "threshold", "worst", "raw")
REQUIRED = COLUMNS[:4]
HEALTH = "health_status"
# An ATA Drive Temperature raw holds °C in its lowest byte on the drives that use it so; a byte
# outside this range is some other packing, and no temperature is read from it.
ATA_RAW_CELSIUS = (1, 100)
# Bounds on what a host may make the exporter keep and export (docs/smart.md, "Hostile answers").
MAX_LABEL = default("limits.max_label_length")  # characters of a parameter name or a Health Status (label values): 128
MAX_ATTRIBUTES = default("smart.max_attributes")  # rows of one device's page (ATA defines 255 attributes): 256
SMART_FIGURE_BITS = 64  # esxcli's Value, Threshold, Worst and Raw are at most 64-bit counters
# Kelvin is a 16-bit field of the NVMe log: °C above this is no temperature ESXi can report.
NVME_MAX_CELSIUS = (1 << 16) - 1 - units.KELVIN_AT_ZERO_CELSIUS


@dataclass(frozen=True)
class Limits:
    """What one host may make the exporter read and keep, set by --smart.max-answer-size,
    --smart.max-attributes and --limits.max-label-length (docs/operations.md#limits)."""

    answer: int = default("smart.max_answer_size")  # bytes of one SMART page or NVMe log (plan.MAX_ANSWER)
    attributes: int = MAX_ATTRIBUTES
    label: int = MAX_LABEL


LIMITS = Limits()


class SmartFormatError(ValueError):
    """An answer that does not read as the format; str() is one line naming the device and line."""


@dataclass(frozen=True)
class Refusal:
    """One value left out, the rest of the answer read. subject: the device or adapter; field: the
    parameter (and column) or log field; reason: out_of_range | label_too_long |
    too_many_attributes (exporter.smart.reader adds too_large for an answer past its cap);
    message: one line naming the subject, where, and why."""

    subject: str
    field: str
    reason: str
    message: str


class _OutOfRange(ValueError):
    """A number that reads but that its field cannot hold (negative, or too large)."""


def snake_case(name: str) -> str:
    """esxcli's parameter name as a label value: 'Power-on Hours' -> 'power_on_hours'."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def _key(name: str) -> str:
    """A column or field name as the text, JSON and API forms all spell it: 'Available Spare' and
    'AvailableSpare' -> 'availablespare' (as exporter.esxcli.parse.key)."""
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


# --- storage core device smart get ------------------------------------------------------------
def smart_page_text(text: str, device: str, refused: list[Refusal] | None = None, limits: Limits = LIMITS) -> m.SmartPage:
    """The default table (4 or 5 columns) or the --formatter=json form. refused: where the values
    left out go (see Refusal); None drops them (the simulator, whose pages are its own)."""
    body = text.strip()
    if not body:
        raise SmartFormatError(f"{device}: empty answer")
    if body[0] in "[{":
        return _page(_json_rows(body, device), device, refused, limits)
    return _page(_table_rows(text, device), device, refused, limits)


def smart_page_records(
    records: list[dict[str, str]], device: str, refused: list[Refusal] | None = None, limits: Limits = LIMITS
) -> m.SmartPage:
    """The vSphere API's answer: one record per row, keys as exporter.esxcli.parse.key spells them."""
    rows = [(f"record {i}", {_key(k): v for k, v in r.items()}) for i, r in enumerate(records, 1)]
    return _page(rows, device, refused, limits)


def _table_rows(text: str, device: str) -> list[tuple[str, dict[str, str]]]:
    """Rows of the dashed table, cut where the dashes under each header name start. A cell that
    spills into the space between two columns means the columns do not line up: refused."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip())
    header, rule = lines[start], (lines[start + 1] if start + 1 < len(lines) else "")
    where = f"{device}: line {start + 2}"
    if not rule.strip() or set(rule.strip()) - {"-", " "}:
        raise SmartFormatError(f"{where}: expected the dashed line under the header, got {rule.strip()[:60]!r}")
    spans = [(r.start(), r.end()) for r in re.finditer(r"-+", rule)]
    # Column i's cell sits in [start_i, end_i); the spaces up to start_{i+1} are the gap between
    # columns; the last column runs to the end of the line.
    bounds = [(a, b, spans[i + 1][0] if i + 1 < len(spans) else None) for i, (a, b) in enumerate(spans)]
    names = [_key(header[a:]) if nxt is None else _key(header[a:b]) for a, b, nxt in bounds]
    misplaced = header[: spans[0][0]].strip() or any(nxt is not None and header[b:nxt].strip() for _, b, nxt in bounds)
    if (
        misplaced
        or names[0] != "parameter"
        or set(REQUIRED) - set(names)
        or set(names) - set(COLUMNS)
        or len(set(names)) < len(names)
    ):
        raise SmartFormatError(
            f"{device}: line {start + 1}: header {header.strip()[:80]!r} is not Parameter, Value, Threshold, Worst[, Raw] over its dashes"
        )
    rows = []
    for number, line in enumerate(lines[start + 2 :], start + 3):
        line = line.rstrip()
        if not line:
            continue
        if line[: spans[0][0]].strip():
            raise SmartFormatError(f"{device}: line {number}: text before the first column: {line.strip()[:60]!r}")
        cells = {}
        for name, (a, b, nxt) in zip(names, bounds):
            if nxt is not None and line[b:nxt].strip():
                raise SmartFormatError(
                    f"{device}: line {number}: the {name} cell spills out of its column: {line.strip()[:80]!r}"
                )
            cells[name] = (line[a:] if nxt is None else line[a:b]).strip()
        rows.append((f"line {number}", cells))
    return rows


def _json(body: str, subject: str):
    """json.loads, its every failure one SmartFormatError (a syntax error, nesting deeper than the
    parser recurses). Numbers stay text, read as the table's cells are: one of 5,000 digits is
    refused alone, never handed to int()."""
    try:
        return json.loads(body, parse_int=str, parse_float=str)
    except json.JSONDecodeError as err:
        raise SmartFormatError(f"{subject}: line {err.lineno}: not JSON: {err.msg}") from None
    except RecursionError:
        raise SmartFormatError(f"{subject}: JSON nested too deep") from None


def _json_rows(body: str, device: str) -> list[tuple[str, dict[str, str]]]:
    doc = _json(body, device)
    if not isinstance(doc, list) or not all(isinstance(item, dict) for item in doc):
        raise SmartFormatError(f"{device}: JSON: expected a list of objects (Parameter, Value, Threshold, Worst, Raw)")
    return [(f"JSON item {i}", {_key(k): v for k, v in item.items()}) for i, item in enumerate(doc, 1)]


def _whole(text: str, limit_bits: int) -> int:
    """A whole number written in decimal ('42', '-5') or, with 0x, in hex; _OutOfRange when it is
    negative or needs more than limit_bits (judged on its digits before int() is asked to read
    thousands of them)."""
    negative = text.startswith("-")
    digits = text[1:] if negative else text
    hexadecimal = digits[:2] in ("0x", "0X")
    significant = (digits[2:] if hexadecimal else digits).lstrip("0")
    if negative and significant:
        raise _OutOfRange("negative")
    most = (limit_bits + 3) // 4 if hexadecimal else len(str(1 << limit_bits))
    if len(significant) > most:
        raise _OutOfRange(f"{len(significant)} digits long, more than {limit_bits} bits hold")
    number = int(significant or "0", 16 if hexadecimal else 10)
    if number >> limit_bits:
        raise _OutOfRange(f"more than {limit_bits} bits hold")
    return number


_SMART_FIGURE = re.compile(r"-?[0-9]+")


def _figure(cell, device: str, where: str, column: str, name: str, refused) -> float | None:
    text = str(cell).strip() if cell is not None else ""
    if text.upper() == "N/A":
        return None
    if not text.isascii() or not _SMART_FIGURE.fullmatch(text):
        raise SmartFormatError(f"{device}: {where}: {column} is not a whole number or N/A: {text[:30]!r}")
    try:
        return float(_whole(text, SMART_FIGURE_BITS))
    except _OutOfRange as err:
        _refuse(
            refused,
            device,
            f"{name} {column}",
            "out_of_range",
            f"{device}: {where}: {_shown(name)}: {column} {err}: {text[:30]!r}: refused",
        )
        return None


def _shown(name) -> str:
    """A name from the host as a message shows it: one line, at most 60 characters."""
    return " ".join(str(name).split())[:60]


def _refuse(refused: list[Refusal], subject: str, field: str, reason: str, message: str) -> None:
    refused.append(Refusal(subject, field, reason, message))


def _page(rows: list[tuple[str, dict[str, str]]], device: str, refused=None, limits: Limits = LIMITS) -> m.SmartPage:
    page, mine, past_cap = m.SmartPage(), [], 0
    max_label, max_attributes = limits.label, limits.attributes
    for where, cells in rows:
        name = str(cells.get("parameter") or "").strip()
        if not name:
            raise SmartFormatError(f"{device}: {where}: no parameter name")
        absent = [c for c in REQUIRED[1:] if c not in cells or cells[c] is None or str(cells[c]).strip() == ""]
        if absent:
            raise SmartFormatError(
                f"{device}: {where}: {_shown(name)}: no {', '.join(absent)} (esxcli prints N/A, never nothing)"
            )
        label = snake_case(name)
        if not label:
            raise SmartFormatError(f"{device}: {where}: parameter name {_shown(name)!r} has no letters or digits")
        if len(name) > max_label:
            message = f"{device}: {where}: parameter name of {len(name)} characters (over {max_label}): {name[:40]!r}...: refused"
            _refuse(mine, device, label[:40], "label_too_long", message)
            continue
        if label == HEALTH:
            status = str(cells["value"]).strip()
            if len(status) > max_label:
                message = f"{device}: {where}: Health Status of {len(status)} characters (over {max_label}): refused"
                _refuse(mine, device, HEALTH, "label_too_long", message)
                continue
            page.health = "" if status.upper() == "N/A" else status
            continue
        if label in page.attributes:
            raise SmartFormatError(f"{device}: {where}: {_shown(name)} appears twice")
        if len(page.attributes) >= max_attributes:
            past_cap += 1
            continue
        raw = _figure(cells.get("raw", "N/A"), device, where, "Raw", name, mine)
        page.attributes[label] = m.SmartAttribute(
            value=_figure(cells["value"], device, where, "Value", name, mine),
            threshold=_figure(cells["threshold"], device, where, "Threshold", name, mine),
            worst=_figure(cells["worst"], device, where, "Worst", name, mine),
            raw=None if raw == RAW_NOT_PROVIDED else raw,
        )
    if past_cap:
        message = f"{device}: {past_cap} parameter(s) past the first {max_attributes}: not read"
        _refuse(mine, device, "parameters", "too_many_attributes", message)
    if not page.attributes and not page.health and not mine:
        raise SmartFormatError(f"{device}: no parameters")
    if refused is not None:
        refused.extend(mine)
    return page


# --- nvme device log smart get ----------------------------------------------------------------
def _flag(text: str) -> bool:
    low = text.lower()
    if low not in ("true", "false"):
        raise ValueError("not true or false")
    return low == "true"


def _number(text: str, bits: int, unit: str = "", unit_name: str = "") -> int:
    """'0x1a2b' (esxcli's counters), '42', or with the unit after it: '315 K', '100 %', '0 Mins';
    bits: the field's width in the NVMe log (a negative number or a wider one is _OutOfRange)."""
    match = re.fullmatch(r"(-?(?:0[xX][0-9a-fA-F]+|[0-9]+))" + (rf"(?:\s*(?:{unit}))?" if unit else ""), text)
    if not match:
        raise ValueError(f"not a number{f' of {unit_name}' if unit_name else ''}")
    return _whole(match.group(1), bits)


def _kelvin(text: str) -> float | None:
    kelvin = _number(text, 16, "K", "Kelvin")
    return None if kelvin == 0 else float(kelvin - units.KELVIN_AT_ZERO_CELSIUS)  # 0 K: no sensor


def _percent(most: int):
    def read(text: str) -> float:
        percent = _number(text, 8, "%", "percent")
        if percent > most:
            raise _OutOfRange(f"over {most} %")
        return percent / 100  # divided, not times 0.01: 29 % is 0.29 exactly

    return read


def _minutes(bits: int):
    return lambda text: _number(text, bits, "Mins?|minutes", "minutes") * units.MINUTE


def _counter(scale: float = 1.0):
    return lambda text: _number(text, 128) * scale


# field (as _key spells it) -> (where it goes, reader); the widths are the NVMe specification's
# (SMART / Health Information log): counters 16 bytes, the composite temperature time 4, Kelvin 2,
# percentages 1 (Available Spare and its threshold at most 100 %; Percentage Used may pass 100).
_WARNINGS = {
    "availablesparespacebelowthreshold": "available_spare",
    "temperaturewarning": "temperature",
    "nvmsubsystemreliabilitydegradation": "reliability_degraded",
    "readonlymode": "read_only",
    "volatilememorybackupdevicefailure": "volatile_backup_failed",
}
_RATIOS = {
    "availablespare": ("available_spare_ratio", _percent(100)),
    "availablesparethreshold": ("available_spare_threshold_ratio", _percent(100)),
    "percentageused": ("percentage_used_ratio", _percent(255)),
}
_COUNTERS = {
    "mediaerrors": ("media_errors", _counter()),
    "numberoferrorinfologentries": ("error_log_entries", _counter()),
    "unsafeshutdowns": ("unsafe_shutdowns", _counter()),
    "powercycles": ("power_cycles", _counter()),
    "poweronhours": ("power_on_seconds", _counter(units.HOUR)),
    "dataunitsread": ("read_bytes", _counter(units.NVME_DATA_UNIT_BYTES)),
    "dataunitswritten": ("written_bytes", _counter(units.NVME_DATA_UNIT_BYTES)),
    "hostreadcommands": ("host_read_commands", _counter()),
    "hostwritecommands": ("host_write_commands", _counter()),
    "controllerbusytime": ("controller_busy_seconds", _minutes(128)),  # the NVMe spec counts it in minutes
    "warningcompositetemperaturetime": ("warning_temperature_seconds", _minutes(32)),
    "criticalcompositetemperaturetime": ("critical_temperature_seconds", _minutes(32)),
}
_SENSOR = re.compile(r"temperaturesensor([1-8])")


def nvme_log_text(text: str, adapter: str, refused: list[Refusal] | None = None) -> m.NvmeHealthLog:
    """The default `SMART And Health Info:` block, or its --formatter=json object."""
    body = text.strip()
    if not body:
        raise SmartFormatError(f"{adapter}: empty answer")
    if body[0] in "[{":
        doc = _json(body, adapter)
        doc = doc[0] if isinstance(doc, list) and len(doc) == 1 else doc
        if not isinstance(doc, dict):
            raise SmartFormatError(f"{adapter}: JSON: expected one object of health fields")
        return _log([(f"JSON field {k[:60]!r}", k, v) for k, v in doc.items()], adapter, refused)
    fields = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        name, sep, value = line.strip().partition(":")
        if not sep or not name.strip():
            raise SmartFormatError(f"{adapter}: line {number}: not 'Key: Value': {line.strip()[:60]!r}")
        if not value.strip() and not line[0].isspace():  # the title, "SMART And Health Info:"
            continue
        fields.append((f"line {number}", name, value))
    return _log(fields, adapter, refused)


def nvme_log_records(records: list[dict[str, str]], adapter: str, refused: list[Refusal] | None = None) -> m.NvmeHealthLog:
    """The vSphere API's answer: one record of the log's fields."""
    if len(records) != 1:
        raise SmartFormatError(f"{adapter}: expected one record of health fields, got {len(records)}")
    return _log([(f"field {k[:60]!r}", k, v) for k, v in records[0].items()], adapter, refused)


def _log(fields, adapter: str, refused=None) -> m.NvmeHealthLog:
    log = m.NvmeHealthLog()
    known = 0
    for where, name, value in fields:
        field, text = _key(name), str(value).strip()
        if not text or text.upper() == "N/A":
            continue  # no value (an API field without text): absent, never zero
        try:
            if field in _WARNINGS:
                log.warnings[_WARNINGS[field]] = _flag(text)
            elif field == "compositetemperature":
                log.temperature_celsius = _kelvin(text)
            elif field in _RATIOS:
                ratio, read = _RATIOS[field]
                setattr(log, ratio, read(text))
            elif field in _COUNTERS:
                counter, read = _COUNTERS[field]
                log.counters[counter] = float(read(text))
            elif _SENSOR.fullmatch(field):
                celsius = _kelvin(text)
                if celsius is not None:
                    log.sensors_celsius[_SENSOR.fullmatch(field).group(1)] = celsius
            else:
                continue  # a field newer ESXi prints and this reader does not use
        except _OutOfRange as err:
            if refused is not None:
                message = f"{adapter}: {where}: {_shown(name)}: {err}: {text[:30]!r}: refused"
                refused.append(Refusal(adapter, field[:60], "out_of_range", message))
        except ValueError as err:
            raise SmartFormatError(f"{adapter}: {where}: {_shown(name)}: {err}: {text[:30]!r}") from None
        known += 1
    if not known:
        raise SmartFormatError(f"{adapter}: no NVMe health fields (not the answer of nvme device log smart get)")
    return log


# --- temperatures -----------------------------------------------------------------------------
def temperatures(page: str, smart: m.SmartPage | None, nvme: m.NvmeHealthLog | None) -> dict[str, float]:
    """The readings that are °C, by where they come from: the NVMe log's composite temperature,
    the Value of an NVMe SCSI page's Drive Temperature, the low byte of an ATA Drive Temperature's
    raw. An ATA page's normalised Value (often 100 minus the temperature) is never one."""
    out: dict[str, float] = {}
    if nvme is not None and nvme.temperature_celsius is not None:
        out["nvme_log"] = nvme.temperature_celsius
    row = smart.attributes.get("drive_temperature") if smart is not None else None
    if row is None:
        return out
    if page == "nvme" and row.value and row.value <= NVME_MAX_CELSIUS:  # past it: no reading beats a wrong one
        out["smart_page"] = row.value
    elif page == "ata" and row.raw is not None:
        low = int(row.raw) & 0xFF
        if ATA_RAW_CELSIUS[0] <= low <= ATA_RAW_CELSIUS[1]:
            out["ata_raw"] = float(low)
    return out
