"""Unit conversions, done once at the edge where a source's value enters the model."""

MIB = 1024 * 1024  # esxtop's "MBytes" are MiB
KIB = 1024  # vSphere's "KBps" are KiB/s
MILLISECOND = 1e-3
MICROSECOND = 1e-6  # the vSAN performance service's latencies are microseconds
PERCENT = 1e-2
VSPHERE_PERCENT = 1e-4  # vSphere percent counters are hundredths of a percent
MEGAHERTZ = 1e6


def parse_duration(text: str | float | int) -> float:
    """'5s', '10m', '1h30m', '250ms' or a plain number of seconds -> seconds."""
    if isinstance(text, (int, float)):
        return float(text)
    s = str(text).strip()
    try:
        return float(s)
    except ValueError:
        pass
    units = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
    total, num, i, seen = 0.0, "", 0, False
    while i < len(s):
        ch = s[i]
        if ch.isdigit() or ch == ".":
            num += ch
            i += 1
            continue
        unit = "ms" if s.startswith("ms", i) else ch
        if unit not in units or not num:
            raise ValueError(f"not a duration: {text!r} (use e.g. 5s, 10m, 1h)")
        total += float(num) * units[unit]
        num, seen = "", True
        i += len(unit)
    if num or not seen:
        raise ValueError(f"not a duration: {text!r} (use e.g. 5s, 10m, 1h)")
    return total


# Link speeds as people write them: decimal bytes ("200MB/s") or bits ("2Gb/s", "8Gbit/s").
_RATES = {
    "B/s": 1.0,
    "KB/s": 1e3,
    "MB/s": 1e6,
    "GB/s": 1e9,
    "KiB/s": 1024.0,
    "MiB/s": 1024.0**2,
    "GiB/s": 1024.0**3,
    "Mb/s": 1e6 / 8,
    "Gb/s": 1e9 / 8,
    "Mbit/s": 1e6 / 8,
    "Gbit/s": 1e9 / 8,
}


def parse_rate(text: str) -> float:
    """Bytes per second from '200MB/s', '2Gb/s', '8Gbit/s', '100MiB/s'."""
    number, unit = _split_number(text)
    if unit not in _RATES:
        raise ValueError(f"not a data rate: {text!r} (use e.g. 200MB/s or 2Gb/s; units: {', '.join(_RATES)})")
    return number * _RATES[unit]


# Sizes as people write them: bytes, decimal (MB) or binary (MiB) units.
_SIZES = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def parse_size(text: str | int) -> int:
    """Bytes from '256MiB', '64MB', '1GiB' or a plain number of bytes."""
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    number, unit = _split_number(text)
    if unit not in _SIZES:
        raise ValueError(f"not a size: {text!r} (use e.g. 256MiB or 64MB; units: {', '.join(u for u in _SIZES if u)})")
    return int(number * _SIZES[unit])


def _split_number(text: str) -> tuple[float, str]:
    s = str(text).strip()
    end = len(s) - len(s.lstrip("0123456789.eE+-"))
    try:
        return float(s[:end]), s[end:].strip()
    except ValueError:
        raise ValueError(f"not a number with a unit: {text!r}") from None


# Disk health (exporter.smart): NVMe reports temperatures in Kelvin, which NVMe tools (nvme-cli,
# smartctl) turn into the drive's own whole °C with 273, not 273.15; a data unit is 1,000 blocks
# of 512 bytes; ESXi prints NVMe time counters in hours and minutes.
KELVIN_AT_ZERO_CELSIUS = 273
NVME_DATA_UNIT_BYTES = 512_000
HOUR = 3600.0
MINUTE = 60.0
