"""The one set of setting parsers, and the one section validator, that every part of the
configuration uses: the flags and top-level options (config.OPTIONS), the vSphere targets, the
esxtop-over-SSH hosts and the hand-written inventory. Each parser takes a raw value (a flag's text,
an environment variable, a YAML scalar) and returns it parsed or raises ValueError with a short
reason; `section` names every bad entry the same way: `where.key: reason`."""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable
from typing import Any

from exporter.store.units import parse_duration, parse_rate, parse_size


def boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"not a boolean: {value!r} (use true or false)")


def str_list(value: Any) -> list[str]:
    if isinstance(value, str):
        return [v for v in value.split(",") if v]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    raise ValueError(f"not a list of strings: {value!r}")


def listen_address(value: Any) -> str:
    text = str(value)
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"not a listen address: {text!r} (use HOST:PORT or :PORT)")
    return text


def regex(value: Any) -> str:
    text = str(value)
    with warnings.catch_warnings():
        # Python warns where a pattern means something else than in RE2 (Prometheus): a POSIX
        # class such as [[:alpha:]] is a plain set here. Refuse it rather than match otherwise.
        warnings.simplefilter("error", FutureWarning)
        try:
            re.compile(text)
        except re.error as err:
            raise ValueError(f"not a regular expression: {text!r} ({err})") from None
        except FutureWarning as warning:
            raise ValueError(
                f"ambiguous regular expression: {text!r} ({str(warning).lower()}; POSIX classes "
                "like [[:alpha:]] are not supported, and a literal '[' inside a set is written \\[)"
            ) from None
    return text


def count(value: Any) -> int:
    number = int(value)
    if number < 0:
        raise ValueError(f"must be 0 or more: {value!r}")
    return number


def duration(value: Any) -> float:
    seconds = parse_duration(value)
    if not seconds < math.inf:  # float() takes "nan" and "inf"
        raise ValueError(f"not a finite duration: {value!r}")
    if seconds <= 0:
        raise ValueError(f"must be longer than 0: {value!r}")
    return seconds


def choice(value: Any, choices: tuple[str, ...]) -> str:
    text = str(value).lower()
    if text not in choices:
        raise ValueError(f"{value!r} is not one of {', '.join(choices)}")
    return text


def number(value: Any) -> float:
    """A number of 0 or more, as YAML gives it (not a string, not a boolean)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
        raise ValueError(f"a number of 0 or more, not {value!r}")
    return float(value)


def port(value: Any) -> int:
    number = int(value)
    if not 0 < number < 65536:
        raise ValueError(f"not a port: {value!r}")
    return number


def text(value: Any) -> str:
    return str(value)


def size(value: Any) -> int:
    """A size in bytes, larger than 0: 256MiB, 64MB, or bytes."""
    number = parse_size(value)
    if number <= 0:
        raise ValueError(f"must be larger than 0: {value!r}")
    return number


def rate(value: Any) -> float:
    """A link speed: 8Gb/s, 200MB/s, or bytes per second."""
    return parse_rate(str(value))


def section(entry: dict, keys: dict[str, Callable[[Any], Any]], where: str, problems: list[str]) -> dict[str, Any]:
    """The entry's settings parsed by their keys' parsers (None values left out); every unknown key
    and bad value is added to problems as `where.key: reason`, all at once."""
    out = {}
    for key, raw in entry.items():
        parse = keys.get(key)
        if parse is None:
            problems.append(f"{where}.{key}: unknown setting (known: {', '.join(sorted(keys))})")
            continue
        if raw is None:
            continue
        try:
            out[key] = parse(raw)
        except (ValueError, TypeError) as err:
            problems.append(f"{where}.{key}: {err}")
    return out
