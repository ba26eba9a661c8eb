"""Unit conversions, done once at the edge where a source's value enters the model."""

MIB = 1024 * 1024  # esxtop's "MBytes" are MiB
KIB = 1024  # vSphere's "KBps" are KiB/s
MILLISECOND = 1e-3
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
