"""What esxcli prints about disk health, read strictly (exporter.smart.parse): the 5- and 4-column
tables, the JSON formatter, the vSphere API's records, N/A as no value, the NVMe log in Kelvin,
hex and percent, temperatures only where they are degrees, and garbage refused in one line that
names the device and the line. Fixtures: tests/fixtures/smart/ (made to the documented layouts)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.smart import parse
from exporter.store import model as m

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "smart"
DEV = "t10.ATA_____WDC_WD40EFRX2D68N32N0_________________________WD2DWCC7K1AB2C3D"


def text(name: str) -> str:
    return (FIXTURES / name).read_text()


def row(page: m.SmartPage, name: str) -> tuple:
    a = page.attributes[name]
    return (a.value, a.threshold, a.worst, a.raw)


def test_five_column_table_reads_every_cell_and_na_is_no_value():
    page = parse.smart_page_text(text("smart-hdd.txt"), DEV)
    assert page.health == "OK"
    assert list(page.attributes) == [
        "read_error_count",
        "power_on_hours",
        "power_cycle_count",
        "reallocated_sector_count",
        "drive_temperature",
        "pending_sector_reallocation_count",
    ]
    assert row(page, "read_error_count") == (81, 44, 71, 112233)
    assert row(page, "power_on_hours") == (90, 0, 90, 8811)  # 'Power-on Hours': hyphen -> snake_case
    assert row(page, "drive_temperature") == (67, 0, 55, 141733920801)


def test_four_column_table_of_older_builds_has_no_raw():
    four = parse.smart_page_text(text("smart-hdd-esxi67.txt"), DEV)
    five = parse.smart_page_text(text("smart-hdd.txt"), DEV)
    assert four.health == five.health and list(four.attributes) == list(five.attributes)
    for name, attribute in four.attributes.items():
        assert attribute.raw is None
        assert (attribute.value, attribute.threshold, attribute.worst) == row(five, name)[:3]


def test_json_formatter_reads_as_the_table():
    assert parse.smart_page_text(text("smart-hdd.json"), DEV) == parse.smart_page_text(text("smart-hdd.txt"), DEV)
    items = json.loads(text("smart-hdd.json"))
    items[1]["Raw"] = "4294967295"  # JSON's "not provided"
    page = parse.smart_page_text(json.dumps(items, indent=2), DEV)
    assert page.attributes["read_error_count"].raw is None and page.attributes["read_error_count"].value == 81


def test_api_records_read_as_the_table():
    items = json.loads(text("smart-hdd.json"))
    records = [{k.lower(): v for k, v in item.items()} for item in items]  # as exporter.vsphere.esxcli.run keys them
    assert parse.smart_page_records(records, DEV) == parse.smart_page_text(text("smart-hdd.txt"), DEV)


def test_nvme_scsi_page_keeps_raw_figures_in_value():
    page = parse.smart_page_text(text("smart-nvme.txt"), "t10.NVMe____X")
    assert row(page, "reallocated_sector_count") == (0, 100, None, None)
    assert row(page, "drive_temperature") == (41, 80, None, None)
    assert row(page, "power_on_hours") == (11111, None, None, None)


@pytest.mark.parametrize(
    "table",
    [
        # names with spaces, parentheses and hyphens; no trailing spaces; a wider first column
        "Parameter                        Value  Threshold  Worst  Raw\n"
        "-------------------------------  -----  ---------  -----  ---\n"
        "Health Status                    OK     N/A        N/A    N/A\n"
        "Temperature (Airflow)            64     45         52     36\n"
        "Power-off Retract Count          100    0          100    3\n"
        "Seek Error Rate                  88     30         60     71\n",
        # Windows line ends and blank lines around the table
        "\r\n\r\nParameter              Value  Threshold  Worst\r\n"
        "---------------------  -----  ---------  -----\r\n"
        "Temperature (Airflow)  64     45         52   \r\n"
        "Seek Error Rate        88     30         60   \r\n\r\n",
    ],
)
def test_other_layouts_real_hosts_print(table):
    page = parse.smart_page_text(table, DEV)
    assert page.attributes["temperature_airflow"].value == 64 and page.attributes["temperature_airflow"].threshold == 45
    assert page.attributes["seek_error_rate"].worst == 60


@pytest.mark.parametrize(
    "broken, line, says",
    [
        (lambda t: t.replace("81     44", "81x    44"), 4, "Value is not a whole number or N/A: '81x'"),
        (lambda t: t.replace("10         100    0 ", "10         1000000 0"), 7, "the worst cell spills"),
        (
            lambda t: t.replace("Power Cycle Count                  100    20         100    12", "Power Cycle Count"),
            6,
            "no value",
        ),
        (lambda t: t.replace("---------  -----", "---------------"), 1, "header"),
        (lambda t: t.splitlines()[0] + "\n", 2, "expected the dashed line"),
        (lambda t: t + "Read Error Count                   1      1          1      1\n", 10, "appears twice"),
        (lambda t: t.replace("Worst", "Worse"), 1, "header"),
        (lambda t: t + "stray text under the table\n", 10, "stray text under the table: no value"),
    ],
)
def test_garbage_is_refused_in_one_line_naming_the_device_and_line(broken, line, says):
    with pytest.raises(parse.SmartFormatError) as caught:
        parse.smart_page_text(broken(text("smart-hdd.txt")), DEV)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{DEV}: line {line}: ") and says in message, message


@pytest.mark.parametrize(
    "answer, says",
    [
        ("", "empty answer"),
        ("[{not json", "line 1: not JSON"),
        ('{"Parameter": "x"}', "expected a list of objects"),
        ('[{"Parameter": "Drive Temperature", "Value": "33", "Threshold": "0"}]', "no worst"),
        ("Parameter  Value  Threshold  Worst\n---------  -----  ---------  -----\n", "no parameters"),
    ],
)
def test_other_garbage_is_refused_too(answer, says):
    with pytest.raises(parse.SmartFormatError, match=says):
        parse.smart_page_text(answer, DEV)


def test_nvme_log_in_base_units():
    log = parse.nvme_log_text(text("nvme-log.txt"), "vmhba2")
    assert log.warnings == dict.fromkeys(m.NVME_WARNINGS, False)
    assert log.temperature_celsius == 315 - 273
    assert log.sensors_celsius == {"1": 45.0}  # sensor 2 at 0 K is absent, not -273 °C
    assert (log.available_spare_ratio, log.available_spare_threshold_ratio, log.percentage_used_ratio) == (1.0, 0.1, 0.03)
    assert log.counters == {
        "read_bytes": 0x1A2B3C * 512_000,
        "written_bytes": 0x4D5E6F * 512_000,
        "host_read_commands": 0x12345678,
        "host_write_commands": 0x9ABCDEF0,
        "controller_busy_seconds": 0x1F4 * 60,
        "power_cycles": 0x1C,
        "power_on_seconds": 0x2B67 * 3600,
        "unsafe_shutdowns": 9,
        "media_errors": 0,
        "error_log_entries": 0,
        "warning_temperature_seconds": 0,
        "critical_temperature_seconds": 0,
    }


def test_failing_nvme_log():
    log = parse.nvme_log_text(text("nvme-log-failing.txt"), "vmhba2")
    assert [w for w, on in log.warnings.items() if on] == ["available_spare", "temperature", "reliability_degraded"]
    assert (log.temperature_celsius, log.available_spare_ratio, log.percentage_used_ratio) == (84, 0.06, 0.95)
    assert (log.counters["media_errors"], log.counters["warning_temperature_seconds"]) == (18, 45 * 60)


def test_nvme_log_records_and_json_read_as_the_text():
    fields = dict(line.strip().split(": ", 1) for line in text("nvme-log.txt").splitlines()[1:])
    expected = parse.nvme_log_text(text("nvme-log.txt"), "vmhba2")
    assert parse.nvme_log_text(json.dumps(fields), "vmhba2") == expected
    records = [{k.replace(" ", ""): v for k, v in fields.items()}]  # the API's field names
    assert parse.nvme_log_records(records, "vmhba2") == expected


@pytest.mark.parametrize(
    "change, says",
    [
        (
            ("Composite Temperature: 315 K", "Composite Temperature: 42 C"),
            "line 7: Composite Temperature: not a number of Kelvin",
        ),
        (("Read Only Mode: false", "Read Only Mode: maybe"), "line 5: Read Only Mode: not true or false"),
        (("Media Errors: 0x0", "Media Errors: 0xZZ"), "line 19: Media Errors: not a number"),
        (("Available Spare: 100 %", "Available Spare: full"), "line 8: Available Spare: not a number of percent"),
        (("   Power Cycles: 0x1c", "   Power Cycles 0x1c"), "line 16: not 'Key: Value'"),
    ],
)
def test_nvme_log_garbage_is_refused_naming_the_adapter_and_line(change, says):
    with pytest.raises(parse.SmartFormatError) as caught:
        parse.nvme_log_text(text("nvme-log.txt").replace(*change), "vmhba2")
    assert str(caught.value).startswith(f"vmhba2: {says}") and "\n" not in str(caught.value), str(caught.value)


def test_an_nvme_field_without_a_value_is_absent_not_zero():
    records = [{"AvailableSpare": "100 %", "MediaErrors": "", "PercentageUsed": "N/A", "CompositeTemperature": "315"}]
    log = parse.nvme_log_records(records, "vmhba2")
    assert (log.available_spare_ratio, log.percentage_used_ratio, log.temperature_celsius) == (1.0, None, 42)
    assert "media_errors" not in log.counters


def test_a_log_with_no_health_field_is_refused():
    with pytest.raises(parse.SmartFormatError, match="vmhba2: no NVMe health fields"):
        parse.nvme_log_text("Error: something else\n", "vmhba2")


def test_temperatures_only_where_they_are_degrees():
    hdd = parse.smart_page_text(text("smart-hdd.txt"), DEV)
    assert parse.temperatures("ata", hdd, None) == {"ata_raw": 33}  # raw 0x2100000021; Value 67 is not °C
    older = parse.smart_page_text(text("smart-hdd-esxi67.txt"), DEV)
    assert parse.temperatures("ata", older, None) == {}  # no Raw column: no temperature, never the Value
    nvme = parse.smart_page_text(text("smart-nvme.txt"), "t10.NVMe____X")
    log = parse.nvme_log_text(text("nvme-log.txt"), "vmhba2")
    assert parse.temperatures("nvme", nvme, log) == {"smart_page": 41, "nvme_log": 42}
    packed = m.SmartPage(attributes={"drive_temperature": m.SmartAttribute(value=40, raw=0x1234_00C8)})  # low byte 200
    assert parse.temperatures("ata", packed, None) == {}  # another packing: no reading beats a wrong one


def _render(rows, raw: bool, pad: list[int], trailing: bool) -> str:
    header = ["Parameter", "Value", "Threshold", "Worst", "Raw"][: 5 if raw else 4]
    cells = [[name, *(str(x) if x is not None else "N/A" for x in figures[: len(header) - 1])] for name, figures in rows]
    widths = [max(len(c[i]) for c in [header, *cells]) + pad[i] for i in range(len(header))]

    def line(values):
        text = "  ".join(v.ljust(w) for v, w in zip(values, widths))
        return text if trailing else text.rstrip()

    return "\n".join([line(header), "  ".join("-" * w for w in widths), *(line(c) for c in cells)]) + "\n"


NAMES = st.from_regex(r"[A-Z][A-Za-z]{1,8}( [A-Za-z()\-]{1,10}){0,3}", fullmatch=True).filter(lambda n: n.strip() == n)
FIGURE = st.one_of(st.none(), st.integers(0, 2**40))


@settings(max_examples=150, deadline=None)
@given(
    rows=st.lists(
        st.tuples(NAMES, st.tuples(FIGURE, FIGURE, FIGURE, FIGURE)),
        min_size=1,
        max_size=8,
        unique_by=lambda r: parse.snake_case(r[0]),
    ),
    raw=st.booleans(),
    pad=st.lists(st.integers(0, 3), min_size=5, max_size=5),
    trailing=st.booleans(),
)
def test_any_layout_esxcli_could_print_reads_back_exactly(rows, raw, pad, trailing):
    """Whatever the column widths, names, 4 or 5 columns, trailing spaces or none: every cell back."""
    rows = [(n, f) for n, f in rows if parse.snake_case(n) and parse.snake_case(n) != "health_status"]
    if not rows:
        return
    page = parse.smart_page_text(_render(rows, raw, pad, trailing), DEV)
    for name, (value, threshold, worst, raw_value) in rows:
        got = page.attributes[parse.snake_case(name)]
        want_raw = raw_value if raw and raw_value != parse.RAW_NOT_PROVIDED else None
        assert (got.value, got.threshold, got.worst, got.raw) == (value, threshold, worst, want_raw)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_anything_else_is_a_page_or_one_refusal_never_a_crash(answer):
    try:
        parse.smart_page_text(answer, DEV)
    except parse.SmartFormatError as err:
        assert "\n" not in str(err) and str(err).startswith(f"{DEV}: ")
    try:
        parse.nvme_log_text(answer, "vmhba2")
    except parse.SmartFormatError as err:
        assert "\n" not in str(err) and str(err).startswith("vmhba2: ")
