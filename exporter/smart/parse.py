"""What esxcli prints about a disk's health, read into the model, strictly (docs/smart.md):

- `storage core device smart get -d DEV`: a dashed table (ESXi 8.0.3: Parameter, Value,
  Threshold, Worst, Raw; older builds: no Raw), its `--formatter=json` list of objects, or the
  vSphere API's records of the same fields;
- `nvme device log smart get -A vmhbaN`: `Key: Value` lines under a title, temperatures in
  Kelvin, counters in hexadecimal, percentages with ` %`; or its records.

A wrong reading is worse than none: an answer that does not read exactly is refused whole, with
one line naming the device (or adapter) and the line, and nothing of it enters the model. `N/A`
is no value, never zero. Units are converted here, once (exporter.store.units).

This module imports only the model: the simulator writes SMART text for it (no esxcli, no SSH).
"""

from __future__ import annotations

import json
import re

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


class SmartFormatError(ValueError):
    """An answer that does not read as the format; str() is one line naming the device and line."""


def snake_case(name: str) -> str:
    """esxcli's parameter name as a label value: 'Power-on Hours' -> 'power_on_hours'."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def _key(name: str) -> str:
    """A column or field name as the text, JSON and API forms all spell it: 'Available Spare' and
    'AvailableSpare' -> 'availablespare' (as exporter.esxcli.parse.key)."""
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


# --- storage core device smart get ------------------------------------------------------------
def smart_page_text(text: str, device: str) -> m.SmartPage:
    """The default table (4 or 5 columns) or the --formatter=json form."""
    body = text.strip()
    if not body:
        raise SmartFormatError(f"{device}: empty answer")
    if body[0] in "[{":
        return _page(_json_rows(body, device), device)
    return _page(_table_rows(text, device), device)


def smart_page_records(records: list[dict[str, str]], device: str) -> m.SmartPage:
    """The vSphere API's answer: one record per row, keys as exporter.esxcli.parse.key spells them."""
    return _page([(f"record {i}", {_key(k): v for k, v in r.items()}) for i, r in enumerate(records, 1)], device)


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


def _json_rows(body: str, device: str) -> list[tuple[str, dict[str, str]]]:
    try:
        doc = json.loads(body)
    except json.JSONDecodeError as err:
        raise SmartFormatError(f"{device}: line {err.lineno}: not JSON: {err.msg}") from None
    if not isinstance(doc, list) or not all(isinstance(item, dict) for item in doc):
        raise SmartFormatError(f"{device}: JSON: expected a list of objects (Parameter, Value, Threshold, Worst, Raw)")
    return [(f"JSON item {i}", {_key(k): v for k, v in item.items()}) for i, item in enumerate(doc, 1)]


def _figure(cell, device: str, where: str, column: str) -> float | None:
    text = str(cell).strip() if cell is not None else ""
    if text.upper() == "N/A":
        return None
    if not text.isdigit() or not text.isascii():
        raise SmartFormatError(f"{device}: {where}: {column} is not a whole number or N/A: {text[:30]!r}")
    return float(int(text))


def _page(rows: list[tuple[str, dict[str, str]]], device: str) -> m.SmartPage:
    page = m.SmartPage()
    for where, cells in rows:
        name = str(cells.get("parameter") or "").strip()
        if not name:
            raise SmartFormatError(f"{device}: {where}: no parameter name")
        absent = [c for c in REQUIRED[1:] if c not in cells or cells[c] is None or str(cells[c]).strip() == ""]
        if absent:
            raise SmartFormatError(f"{device}: {where}: {name}: no {', '.join(absent)} (esxcli prints N/A, never nothing)")
        label = snake_case(name)
        if not label:
            raise SmartFormatError(f"{device}: {where}: parameter name {name!r} has no letters or digits")
        if label == HEALTH:
            status = str(cells["value"]).strip()
            page.health = "" if status.upper() == "N/A" else status
            continue
        if label in page.attributes:
            raise SmartFormatError(f"{device}: {where}: {name} appears twice")
        raw = _figure(cells.get("raw", "N/A"), device, where, "Raw")
        page.attributes[label] = m.SmartAttribute(
            value=_figure(cells["value"], device, where, "Value"),
            threshold=_figure(cells["threshold"], device, where, "Threshold"),
            worst=_figure(cells["worst"], device, where, "Worst"),
            raw=None if raw == RAW_NOT_PROVIDED else raw,
        )
    if not page.attributes and not page.health:
        raise SmartFormatError(f"{device}: no parameters")
    return page


# --- nvme device log smart get ----------------------------------------------------------------
def _flag(text: str) -> bool:
    low = text.lower()
    if low not in ("true", "false"):
        raise ValueError("not true or false")
    return low == "true"


def _number(text: str, unit: str = "", unit_name: str = "") -> int:
    """'0x1a2b' (esxcli's counters), '42', or with the unit after it: '315 K', '100 %', '0 Mins'."""
    match = re.fullmatch(r"(0[xX][0-9a-fA-F]+|[0-9]+)" + (rf"(?:\s*(?:{unit}))?" if unit else ""), text)
    if not match:
        raise ValueError(f"not a number{f' of {unit_name}' if unit_name else ''}")
    return int(match.group(1), 0)


def _kelvin(text: str) -> float | None:
    kelvin = _number(text, "K", "Kelvin")
    return None if kelvin == 0 else float(kelvin - units.KELVIN_AT_ZERO_CELSIUS)  # 0 K: no sensor


def _percent(text: str) -> float:
    return _number(text, "%", "percent") / 100  # divided, not times 0.01: 29 % is 0.29 exactly


def _minutes(text: str) -> float:
    return _number(text, "Mins?|minutes", "minutes") * units.MINUTE


def _counter(scale: float = 1.0):
    return lambda text: _number(text) * scale


# field (as _key spells it) -> (where it goes, reader)
_WARNINGS = {
    "availablesparespacebelowthreshold": "available_spare",
    "temperaturewarning": "temperature",
    "nvmsubsystemreliabilitydegradation": "reliability_degraded",
    "readonlymode": "read_only",
    "volatilememorybackupdevicefailure": "volatile_backup_failed",
}
_RATIOS = {
    "availablespare": "available_spare_ratio",
    "availablesparethreshold": "available_spare_threshold_ratio",
    "percentageused": "percentage_used_ratio",
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
    "controllerbusytime": ("controller_busy_seconds", _minutes),  # the NVMe spec counts it in minutes
    "warningcompositetemperaturetime": ("warning_temperature_seconds", _minutes),
    "criticalcompositetemperaturetime": ("critical_temperature_seconds", _minutes),
}
_SENSOR = re.compile(r"temperaturesensor([1-8])")


def nvme_log_text(text: str, adapter: str) -> m.NvmeHealthLog:
    """The default `SMART And Health Info:` block, or its --formatter=json object."""
    body = text.strip()
    if not body:
        raise SmartFormatError(f"{adapter}: empty answer")
    if body[0] in "[{":
        try:
            doc = json.loads(body)
        except json.JSONDecodeError as err:
            raise SmartFormatError(f"{adapter}: line {err.lineno}: not JSON: {err.msg}") from None
        doc = doc[0] if isinstance(doc, list) and len(doc) == 1 else doc
        if not isinstance(doc, dict):
            raise SmartFormatError(f"{adapter}: JSON: expected one object of health fields")
        return _log([(f"JSON field {k!r}", k, v) for k, v in doc.items()], adapter)
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
    return _log(fields, adapter)


def nvme_log_records(records: list[dict[str, str]], adapter: str) -> m.NvmeHealthLog:
    """The vSphere API's answer: one record of the log's fields."""
    if len(records) != 1:
        raise SmartFormatError(f"{adapter}: expected one record of health fields, got {len(records)}")
    return _log([(f"field {k!r}", k, v) for k, v in records[0].items()], adapter)


def _log(fields, adapter: str) -> m.NvmeHealthLog:
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
                setattr(log, _RATIOS[field], _percent(text))
            elif field in _COUNTERS:
                counter, read = _COUNTERS[field]
                log.counters[counter] = float(read(text))
            elif _SENSOR.fullmatch(field):
                celsius = _kelvin(text)
                if celsius is not None:
                    log.sensors_celsius[_SENSOR.fullmatch(field).group(1)] = celsius
            else:
                continue  # a field newer ESXi prints and this reader does not use
        except ValueError as err:
            raise SmartFormatError(f"{adapter}: {where}: {str(name).strip()}: {err}: {text[:30]!r}") from None
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
    if page == "nvme" and row.value:
        out["smart_page"] = row.value
    elif page == "ata" and row.raw is not None:
        low = int(row.raw) & 0xFF
        if ATA_RAW_CELSIUS[0] <= low <= ATA_RAW_CELSIUS[1]:
            out["ata_raw"] = float(low)
    return out
