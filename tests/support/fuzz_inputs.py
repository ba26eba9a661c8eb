"""Hostile inputs for the fuzz targets of tests/support/fuzz_targets.py, as hypothesis strategies
(STRATEGIES: target -> bytes): built from the real answers (tests/fixtures/smart/, a
WaitForUpdatesEx answer of the storage simulator's shape) with hostile cells, fields and elements
mixed in: numbers of hundreds of digits, negative, hex, unicode digits, floats, labels of hundreds
of characters, thousands of rows, deep JSON, bytes that are not UTF-8, DOCTYPEs, missing and
repeated elements. tests/fuzz/generate.py grows the corpus with them; tests/unit/test_fuzz_corpus.py
runs a few of each in the suite."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import strategies as st

from tests.support import fuzz_targets

SMART = Path(__file__).resolve().parents[1] / "fixtures" / "smart"

# Cells a host could print, and cells it never should.
NUMBERS = st.sampled_from(
    [
        "0",
        "100",
        "253",
        "4294967295",
        "18446744073709551615",  # 2^64 - 1: the largest figure read
        "18446744073709551616",
        "9" * 400,  # the raw
        "9" * 5000,  # past int()'s 4,300 digits
        "0" * 300 + "1",
        "-1",
        "-0",
        "-" + "9" * 30,
        "0x1f",
        "0x" + "f" * 32,
        "0x1" + "0" * 32,  # 2^128
        "0x" + "f" * 400,
        "1e400",
        "inf",
        "nan",
        "1.5",
        "٣",  # an Arabic-Indic digit: isdigit() says yes
        "１２",  # fullwidth digits
        "²",
        "N/A",
        "n/a",
        "",
        " ",
    ]
)
UNITS = st.sampled_from(["", " K", "K", " %", "%", " Mins", " Min", " minutes", " C", " %%"])
NAMES = st.sampled_from(
    [
        "Health Status",
        "Read Error Count",
        "Power-on Hours",
        "Drive Temperature",
        "Reallocated Sector Count",
        "Media Wearout Indicator",
        "A" * 128,
        "B" * 129,
        "Vendor " + "x" * 700,
        "(((---)))",
        "Temperature (Airflow)",
        "Ünïcode Näme",
        "tab\tname",
    ]
)
TEXT = st.text(max_size=40)
CELL = NUMBERS | NAMES | TEXT
NVME_FIELDS = [
    "Available Spare Space Below Threshold",
    "Temperature Warning",
    "NVM Subsystem Reliability Degradation",
    "Read Only Mode",
    "Volatile Memory Backup Device Failure",
    "Composite Temperature",
    "Available Spare",
    "Available Spare Threshold",
    "Percentage Used",
    "Data Units Read",
    "Data Units Written",
    "Host Read Commands",
    "Host Write Commands",
    "Controller Busy Time",
    "Power Cycles",
    "Power On Hours",
    "Unsafe Shutdowns",
    "Media Errors",
    "Number of Error Info Log Entries",
    "Warning Composite Temperature Time",
    "Critical Composite Temperature Time",
    "Temperature Sensor 1",
    "Temperature Sensor 8",
    "Temperature Sensor 9",
    "Some Newer Field",
]
NVME_VALUE = (st.tuples(NUMBERS, UNITS).map("".join)) | st.sampled_from(["true", "false", "TRUE", "maybe"]) | TEXT


def seed_tables() -> list[list[list[str]]]:
    """The fixtures' tables as rows of cells (header first)."""
    tables = []
    for path in sorted(SMART.glob("smart-*.txt")):
        lines = path.read_text().splitlines()
        spans = [(i, j) for i, j in _spans(lines[1])]
        rows = [[(line[a:] if k == len(spans) - 1 else line[a:b]).strip() for k, (a, b) in enumerate(spans)] for line in lines]
        tables.append([rows[0], *rows[2:]])
    return tables


def _spans(rule: str):
    start = None
    for i, ch in enumerate(rule + " "):
        if ch == "-" and start is None:
            start = i
        elif ch != "-" and start is not None:
            yield start, i
            start = None


def render(rows: list[list[str]]) -> str:
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(width)]
    lines = [rows[0], ["-" * w for w in widths], *rows[1:]]
    return "".join("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() + "\n" for line in lines)


TABLES = seed_tables()


@st.composite
def smart_table(draw) -> bytes:
    rows = [list(r) for r in draw(st.sampled_from(TABLES))]
    for _ in range(draw(st.integers(0, 4))):
        action = draw(st.sampled_from(["cell", "cell", "cell", "row", "many", "drop", "twice"]))
        if action == "cell" and len(rows) > 1:
            row = draw(st.integers(1, len(rows) - 1))
            rows[row][draw(st.integers(0, len(rows[row]) - 1))] = draw(CELL)
        elif action == "row":
            rows.insert(draw(st.integers(1, len(rows))), [draw(NAMES), *(draw(NUMBERS) for _ in rows[0][1:])])
        elif action == "many":
            rows += [
                [f"Vendor Attribute {i}", "100", "0", "100", str(i)][: len(rows[0])] for i in range(draw(st.integers(250, 600)))
            ]
        elif action == "drop" and len(rows) > 1:
            rows.pop(draw(st.integers(1, len(rows) - 1)))
        elif action == "twice" and len(rows) > 1:
            rows.append(list(rows[draw(st.integers(1, len(rows) - 1))]))
    text = render(rows).encode()
    return _bytes_mutated(draw, text)


def _bytes_mutated(draw, data: bytes) -> bytes:
    """Now and then a raw edit after the layout: a byte that is not UTF-8, a cut, stray text."""
    action = draw(st.sampled_from(["none", "none", "none", "invalid", "cut", "insert"]))
    if action == "none" or not data:
        return data
    at = draw(st.integers(0, len(data) - 1))
    if action == "invalid":
        return data[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\x00", b"\xed\xa0\x80"])) + data[at:]
    if action == "cut":
        return data[:at]
    return data[:at] + draw(TEXT).encode() + data[at:]


SCALAR = NUMBERS | NAMES | st.integers(-(2**70), 2**70) | st.floats() | st.booleans() | st.none()


@st.composite
def smart_items(draw) -> list[dict]:
    """The JSON formatter's list, from the fixture, with hostile values, keys and items."""
    items = [dict(i) for i in json.loads((SMART / "smart-hdd.json").read_text())]
    for _ in range(draw(st.integers(0, 4))):
        action = draw(st.sampled_from(["value", "value", "key", "item", "many"]))
        if action == "value":
            item = draw(st.sampled_from(items))
            item[draw(st.sampled_from(["Parameter", "Value", "Threshold", "Worst", "Raw"]))] = draw(SCALAR)
        elif action == "key":
            draw(st.sampled_from(items))[draw(TEXT)] = draw(SCALAR)
        elif action == "item":
            items.append({k: draw(SCALAR) for k in ("Parameter", "Value", "Threshold", "Worst", "Raw")})
        else:
            items += [{"Parameter": f"V{i}", "Value": "1", "Threshold": "0", "Worst": "1", "Raw": str(i)} for i in range(300)]
    return items


@st.composite
def smart_json(draw) -> bytes:
    action = draw(st.sampled_from(["items"] * 8 + ["deep", "bigint"]))
    if action == "deep":
        return ("[" * draw(st.integers(900, 100_000))).encode()
    if action == "bigint":
        return f'[{{"Parameter": "X", "Value": {"9" * draw(st.integers(300, 6000))}, "Threshold": 0, "Worst": 0}}]'.encode()
    return _bytes_mutated(draw, json.dumps(draw(smart_items())).encode())


@st.composite
def smart_records(draw) -> bytes:
    # the API's field names (exporter.esxcli.parse.key spells them lower case, no spaces), every value text
    items = draw(smart_items())
    return json.dumps([{k.replace(" ", "").lower(): "" if v is None else str(v) for k, v in i.items()} for i in items]).encode()


@st.composite
def nvme_log(draw) -> bytes:
    lines = (SMART / draw(st.sampled_from(["nvme-log.txt", "nvme-log-failing.txt"]))).read_text().splitlines()
    for _ in range(draw(st.integers(0, 5))):
        action = draw(st.sampled_from(["value", "value", "field", "line", "title"]))
        if action == "value":
            at = draw(st.integers(1, len(lines) - 1))
            name = lines[at].partition(":")[0]
            lines[at] = f"{name}: {draw(NVME_VALUE)}"
        elif action == "field":
            lines.insert(draw(st.integers(1, len(lines))), f"   {draw(st.sampled_from(NVME_FIELDS))}: {draw(NVME_VALUE)}")
        elif action == "line":
            lines.insert(draw(st.integers(0, len(lines))), draw(TEXT))
        else:
            lines[0] = draw(TEXT)
    return _bytes_mutated(draw, ("\n".join(lines) + "\n").encode())


@st.composite
def nvme_json(draw) -> bytes:
    fields = {f: draw(NVME_VALUE | SCALAR) for f in draw(st.lists(st.sampled_from(NVME_FIELDS), min_size=1, max_size=8))}
    doc = [fields] if draw(st.booleans()) else fields
    if draw(st.integers(0, 9)) == 0:
        return ('{"Media Errors": ' + "[" * draw(st.integers(900, 50_000))).encode()
    return _bytes_mutated(draw, json.dumps(doc).encode())


@st.composite
def nvme_records(draw) -> bytes:
    fields = {f.replace(" ", ""): draw(NVME_VALUE) for f in draw(st.lists(st.sampled_from(NVME_FIELDS), max_size=8))}
    return json.dumps([fields] * draw(st.sampled_from([1, 1, 1, 0, 2]))).encode()


PROPERTIES = [
    "name",
    "parent",
    "parentFolder",
    "parentVApp",
    "runtime.connectionState",
    "runtime.powerState",
    "runtime.host",
    "config.storageDevice.scsiLun",
    "config.storageDevice.hostBusAdapter",
    "config.storageDevice.multipathInfo",
    "config.fileSystemVolume.mountInfo",
    "config.hardware.device",
    "hardware.cpuInfo.numCpuThreads",
    "",
]
VALUES = [
    '<val xsi:type="xsd:string">esx09</val>',
    '<val type="ClusterComputeResource" xsi:type="ManagedObjectReference">domain-c1</val>',
    '<val type="Folder" xsi:type="ManagedObjectReference">group-h1</val>',
    '<val type="HostSystem" xsi:type="ManagedObjectReference">host-9</val>',
    '<val xsi:type="HostSystemConnectionState">connected</val>',
    '<val xsi:type="VirtualMachinePowerState">poweredOn</val>',
    '<val xsi:type="ArrayOfScsiLun"><ScsiLun xsi:type="HostScsiDisk"><key>k-1</key><uuid>u-1</uuid>'
    "<canonicalName>naa.1</canonicalName><queueDepth>64</queueDepth><operationalState>ok</operationalState></ScsiLun></val>",
    '<val xsi:type="ArrayOfHostHostBusAdapter"><HostHostBusAdapter xsi:type="HostFibreChannelHba"><key>hba-2</key>'
    "<device>vmhba2</device><speed>16000000000</speed></HostHostBusAdapter></val>",
    '<val xsi:type="HostMultipathInfo"><lun><key>u-1</key><id>naa.1</id><lun>k-1</lun><path><name>vmhba2:C0:T0:L0</name>'
    "<state>active</state><adapter>hba-2</adapter></path></lun></val>",
    '<val xsi:type="ArrayOfVirtualDevice"><VirtualDevice xsi:type="ParaVirtualSCSIController"><key>1000</key>'
    '<busNumber>0</busNumber></VirtualDevice><VirtualDevice xsi:type="VirtualDisk"><key>2000</key>'
    '<backing xsi:type="VirtualDiskFlatVer2BackingInfo"><fileName>[ds1] vm/vm.vmdk</fileName></backing>'
    "<controllerKey>1000</controllerKey><unitNumber>0</unitNumber></VirtualDevice></val>",
    '<val xsi:type="xsd:int">8</val>',
    '<val xsi:type="xsd:int">99999999999999999999999999999999</val>',
    "<val>-1</val>",
    "<val/>",
    "<val>" + "<a>" * 200 + "</a>" * 200 + "</val>",
]
ENVELOPE = (
    '<?xml version="1.0" encoding="UTF-8"?>{doctype}<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/">'
    '<soapenv:Body><WaitForUpdatesExResponse xmlns="urn:vim25" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">'
    "{returnval}</WaitForUpdatesExResponse></soapenv:Body></soapenv:Envelope>"
)


@st.composite
def update_set(draw) -> bytes:
    filter_sets = []
    for _ in range(draw(st.integers(0, 3))):
        objects = []
        for _ in range(draw(st.integers(0, 4))):
            changes = "".join(
                f"<changeSet><name>{draw(st.sampled_from(PROPERTIES))}</name>"
                f"<op>{draw(st.sampled_from(['assign', 'remove', 'indirectRemove', 'add', '']))}</op>"
                f"{draw(st.sampled_from(VALUES + ['']))}</changeSet>"
                for _ in range(draw(st.integers(0, 4)))
            )
            missing = "<missingSet><path>runtime.connectionState</path></missingSet>" if draw(st.booleans()) else ""
            kind = draw(st.sampled_from(["enter", "modify", "leave", "", "bogus"]))
            kind_type = draw(
                st.sampled_from(["HostSystem", "VirtualMachine", "Folder", "ClusterComputeResource", "Datacenter", ""])
            )
            moid = draw(st.sampled_from(["host-1", "host-9", "vm-1", "group-h1", "domain-c1", "datacenter-1", "", "x" * 300]))
            obj = f'<obj type="{kind_type}">{moid}</obj>' if draw(st.integers(0, 5)) else ""
            objects.append(f"<objectSet><kind>{kind}</kind>{obj}{changes}{missing}</objectSet>")
        role = draw(st.sampled_from([*fuzz_targets.ROLES, "f-unknown", ""]))
        filter_sets.append(f'<filterSet><filter type="PropertyFilter">session[1]{role}</filter>{"".join(objects)}</filterSet>')
    version = draw(st.sampled_from(["<version>7</version>", "", "<version/>", "<version>" + "9" * 500 + "</version>"]))
    truncated = draw(st.sampled_from(["", "<truncated>true</truncated>", "<truncated>maybe</truncated>"]))
    if draw(st.integers(0, 9)) == 0:  # a tree whose parents form a cycle
        filter_sets.append(
            '<filterSet><filter type="PropertyFilter">session[1]f-tree</filter>'
            + "".join(
                f'<objectSet><kind>enter</kind><obj type="{kind}">{moid}</obj>'
                f"<changeSet><name>name</name><op>assign</op><val>{moid}</val></changeSet>"
                f'<changeSet><name>parent</name><op>assign</op><val type="{parent_kind}">{parent}</val></changeSet></objectSet>'
                for kind, moid, parent_kind, parent in (
                    ("HostSystem", "host-9", "ClusterComputeResource", "domain-c1"),
                    ("ClusterComputeResource", "domain-c1", "Folder", "group-h1"),
                    (
                        "Folder",
                        "group-h1",
                        draw(st.sampled_from(["HostSystem", "ClusterComputeResource"])),
                        draw(st.sampled_from(["host-9", "domain-c1", "group-h1"])),
                    ),
                )
            )
            + "</filterSet>"
        )
    returnval = f"<returnval>{version}{''.join(filter_sets)}{truncated}</returnval>" if draw(st.integers(0, 6)) else ""
    doctype = '<!DOCTYPE x [<!ENTITY a "aaaa">]>' if draw(st.integers(0, 15)) == 0 else ""
    return _bytes_mutated(draw, ENVELOPE.format(doctype=doctype, returnval=returnval).encode())


STRATEGIES = {
    "smart_table": smart_table(),
    "smart_json": smart_json(),
    "smart_records": smart_records(),
    "nvme_log": nvme_log(),
    "nvme_json": nvme_json(),
    "nvme_records": nvme_records(),
    "update_set": update_set(),
}
