"""The one place human units are parsed: durations and link speeds."""

import pytest

from exporter.commands.compare import parse_link_speed
from exporter.store.units import parse_duration, parse_rate


@pytest.mark.parametrize("text, seconds", [("5s", 5.0), ("10m", 600.0), ("1h30m", 5400.0), ("250ms", 0.25), (7, 7.0)])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    "text, bytes_per_second", [("200MB/s", 200e6), ("2Gb/s", 250e6), ("8Gbit/s", 1e9), ("100MiB/s", 100 * 1048576.0)]
)
def test_rates(text, bytes_per_second):
    assert parse_rate(text) == bytes_per_second


@pytest.mark.parametrize("text", ["fast", "200", "2 furlongs/s", ""])
def test_bad_rates_name_the_value(text):
    with pytest.raises(ValueError, match="not a"):
        parse_rate(text)


def test_link_speed_flag_uses_the_same_parser():
    assert parse_link_speed("vmhba1=2Gb/s") == ("vmhba1", 250e6)
    with pytest.raises(ValueError, match=r"--link-speed 'vmhba1': use ADAPTER=SPEED"):
        parse_link_speed("vmhba1")
