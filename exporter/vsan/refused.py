"""What a vSAN answer may carry into the exporter, and the values it refuses: each refusal is
counted by reason (esxi_vsan_dropped_values_total) and noted with where it came from (the entity
and field), so the source logs the first of each field and reason of a cluster once.

The bounds, checked where each value is converted:
- a number is finite and fits a float (`too_large` otherwise: 1e400, a 400-digit count);
- a count, amount, rate or ratio is not negative (`negative`), a ratio not over 1 (`out_of_range`);
- a sample interval (metricsCollectInterval) is 1 s to one day (`bad_interval`): a count over
  1e-320 s would be +Inf per second;
- a text that becomes a label (a health state) or names an entity is at most 128 characters
  (`label_too_long`, --limits.max-label-length): longer, it is refused, never exported whole;
- a performance answer keeps at most its cap of the entities asked for (`answer_too_large`: one
  per entity asked for and not read when the cap stopped the answer; exporter.vsan.perf).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from exporter.configuration.config import default

MAX_LABEL = default("limits.max_label_length")  # characters of a label value or an entity id from an answer: 128
INTERVAL_MIN, INTERVAL_MAX = 1.0, 86400.0  # seconds a sample may average over

BAD_VALUE, NEGATIVE, TOO_LARGE, OUT_OF_RANGE = "bad_value", "negative", "too_large", "out_of_range"
BAD_INTERVAL, LABEL_TOO_LONG = "bad_interval", "label_too_long"
ANSWER_TOO_LARGE = "answer_too_large"  # entities asked for, not read: their answer passed its cap before them
WHY = {
    BAD_VALUE: "not a number",
    NEGATIVE: "negative",
    TOO_LARGE: "too large for a float",
    OUT_OF_RANGE: "a ratio over 1",
    BAD_INTERVAL: f"not within {INTERVAL_MIN:g} s to {INTERVAL_MAX:g} s",
    LABEL_TOO_LONG: f"over {MAX_LABEL} characters",
    ANSWER_TOO_LARGE: "the entities asked for passed the answer's cap: those read are kept, the rest not read",
}


@dataclass(frozen=True, slots=True)
class Refusal:
    reason: str
    entity: str  # what the value belongs to: an entity id (`host-domclient:<uuid>`) or a part of an answer
    field: str  # the answer's field or metric label
    value: str  # the value as sent, cut for a log line


class Dropped(dict):
    """reason -> values refused or not placed (the counter's figures), and the first refusal of
    each (field, reason), with its entity, for one log line each."""

    def __init__(self):
        super().__init__()
        self.refusals: dict[tuple[str, str], Refusal] = {}


def count(dropped: dict[str, int], reason: str, n: int = 1) -> None:
    if n:
        dropped[reason] = dropped.get(reason, 0) + n


def refuse(dropped: dict[str, int], reason: str, entity: str, field: str, value, n: int = 1) -> None:
    """Count n refused values (one by default), and note where they came from (a plain dict only counts)."""
    count(dropped, reason, n)
    notes = getattr(dropped, "refusals", None)
    if notes is not None and (field, reason) not in notes:
        text = value if isinstance(value, str) else repr(value)
        shown = text if len(text) <= 40 else f"{text[:40]}... ({len(text)} characters)"
        notes[(field, reason)] = Refusal(reason, _cut(entity), _cut(field), shown)


def number(value) -> float | str:
    """A number of an answer (text, int or float) as a finite float, or the reason it is refused
    (bad_value, too_large); its sign is the caller's to judge."""
    try:
        out = float(value.strip() if isinstance(value, str) else value)
    except OverflowError:  # an int past a float's range: float(10**400)
        return TOO_LARGE
    except (TypeError, ValueError):
        return BAD_VALUE
    if math.isnan(out):
        return BAD_VALUE
    if math.isinf(out):  # "inf" itself is no number vSAN writes; "1e400" is one too large
        spelled = value.strip().lstrip("+-").lower() if isinstance(value, str) else ""
        return BAD_VALUE if spelled.startswith("inf") else TOO_LARGE
    return out


def amount(value) -> float | str:
    """A count, size or rate: a finite float not under 0, or the reason it is refused."""
    out = number(value)
    return NEGATIVE if isinstance(out, float) and out < 0 else out


def interval(value) -> float | str:
    """A sample interval in seconds, or bad_interval."""
    out = number(value)
    return out if isinstance(out, float) and INTERVAL_MIN <= out <= INTERVAL_MAX else BAD_INTERVAL


def label(text: str, most: int = MAX_LABEL) -> str | None:
    """A text from an answer fit to be a label value (at most `most` characters), or None when it is too long."""
    return text if len(text) <= most else None


def _cut(text: str) -> str:
    return text if len(text) <= MAX_LABEL else f"{text[:MAX_LABEL]}... ({len(text)} characters)"
