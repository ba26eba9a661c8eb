"""Reading an exposition in tests: values by metric name and labels, and waiting for a condition."""

from __future__ import annotations

import time

from prometheus_client.parser import text_string_to_metric_families


def samples(text: str) -> list[tuple[str, dict, float]]:
    return [(s.name, s.labels, s.value) for family in text_string_to_metric_families(text) for s in family.samples]


def value(text: str, name: str, **labels) -> float | None:
    """The one sample of `name` whose labels include `labels`; None when there is none."""
    found = [v for n, lab, v in samples(text) if n == name and all(lab.get(k) == w for k, w in labels.items())]
    assert len(found) <= 1, f"{name}{labels} matches {len(found)} series"
    return found[0] if found else None


def eventually(check, timeout: float = 20.0, interval: float = 0.2, what: str = "condition"):
    """Calls check() until it returns a truthy value; fails with the last value after timeout."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"{what} not reached within {timeout}s (last: {last!r})")
