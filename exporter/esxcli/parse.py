"""The three shapes esxcli prints, read without guessing (see docs/esxcli.md):

- blocks: `storage core device list`, `storage nmp device list`: a name alone on a line, then
  indented `Key: Value` lines (values may hold colons and spaces), a blank line between devices;
- tables: `storage core adapter list`, `system module parameters list`: a header, a line of
  dashes whose runs give the column widths, then rows (cells may be empty);
- settings (`system settings advanced list`): blocks without the name line;
- CSV (`--formatter=csv`): a header of the keys with spaces removed and sorted, every line
  ending in a comma, cells with commas quoted.

Every reader returns (records, problems): a line it cannot read is one Problem naming the line,
and the rest is kept. Keys are normalised (`key()`) so text and CSV records compare.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    line: int  # 1-based line of the command's output; 0 for the whole output
    reason: str  # bad_line | bad_value | empty
    text: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.text}" if self.line else self.text


def key(name: str) -> str:
    """'No of outstanding IOs with competing worlds' and 'NoofoutstandingIOswithcompetingworlds'
    -> 'noofoutstandingioswithcompetingworlds'."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def blocks(text: str, name_key: str = "device") -> tuple[list[dict[str, str]], list[Problem]]:
    """Records of the block format; each has its name line under name_key."""
    records: list[dict[str, str]] = []
    problems: list[Problem] = []
    current: dict[str, str] | None = None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not line.strip():
            current = None
            continue
        if not line[0].isspace():  # a device name
            current = {name_key: line.strip()}
            records.append(current)
            continue
        field, sep, value = line.strip().partition(":")
        if not sep or current is None or not field.strip():
            problems.append(Problem(number, "bad_line", f"not 'Key: Value' under a device: {line.strip()[:60]!r}"))
            continue
        current[key(field)] = value.strip()
    return records, problems


def settings(text: str) -> tuple[list[dict[str, str]], list[Problem]]:
    """Records of `system settings advanced list`: indented `Key: Value` lines with no name line
    above them (the `Path:` field names the option), a blank line between options."""
    records: list[dict[str, str]] = []
    problems: list[Problem] = []
    current: dict[str, str] | None = None
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            current = None
            continue
        field, sep, value = raw.strip().partition(":")
        if not sep or not field.strip():
            problems.append(Problem(number, "bad_line", f"not 'Key: Value': {raw.strip()[:60]!r}"))
            continue
        if current is None:
            current = {}
            records.append(current)
        current[key(field)] = value.strip()
    return records, problems


def csv_records(text: str) -> tuple[list[dict[str, str]], list[Problem]]:
    """Records of --formatter=csv; the trailing comma's empty column is dropped."""
    rows = list(csv.reader(io.StringIO(text.strip("\n"))))
    if not rows or not any(rows[0]):
        return [], [Problem(0, "empty", "no CSV header")]
    header = [key(h) for h in rows[0]]
    while header and not header[-1]:
        header.pop()
    records, problems = [], []
    for number, row in enumerate(rows[1:], 2):
        cells = row[: len(header)] if len(row) == len(header) + 1 and not row[-1] else row
        if len(cells) != len(header):
            problems.append(Problem(number, "bad_line", f"{len(cells)} cells, the header has {len(header)}"))
            continue
        records.append({h: c.strip() for h, c in zip(header, cells)})
    return records, problems


def table(text: str) -> tuple[list[dict[str, str]], list[Problem]]:
    """Records of a dashed table; column spans from the dash runs, the last one open-ended."""
    lines = text.splitlines()
    rule = next((i for i, line in enumerate(lines) if line.strip() and set(line.strip()) <= {"-", " "}), None)
    if rule is None or rule == 0:
        return [], [Problem(0, "empty", "no table header")]
    spans = [(m.start(), m.end()) for m in re.finditer(r"-+", lines[rule])]
    heading = lines[rule - 1]
    names = [key(heading[a : (spans[i + 1][0] if i + 1 < len(spans) else len(heading))]) for i, (a, _) in enumerate(spans)]
    records, problems = [], []
    for number, line in enumerate(lines[rule + 1 :], rule + 2):
        if not line.strip():
            continue
        if len(line) < spans[0][0]:
            problems.append(Problem(number, "bad_line", f"shorter than the first column: {line!r}"))
            continue
        cells = [line[a : (spans[i + 1][0] if i + 1 < len(spans) else None)].strip() for i, (a, _) in enumerate(spans)]
        records.append(dict(zip(names, cells)))
    return records, problems
