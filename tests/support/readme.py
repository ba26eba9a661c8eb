"""The README's two commands, read from its text: what a user copies is what CI runs.

`.ci/run` runs the second (`python3 tests/support/readme.py test`); tests/deployment/test_readme_commands.py
runs the first in a fresh Debian container. Each is the one line in the "Two commands" section's
shell block that is not a comment, in order: first the exporter's, then the tests'.
"""

from __future__ import annotations

import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
SECTION = "## Two commands"
NAMES = ("run", "test")


def commands(text: str) -> dict[str, str]:
    """{"run": the command that serves the demo, "test": the one that runs the suite}."""
    _, found, rest = text.partition("\n" + SECTION + "\n")
    if not found:
        raise ValueError(f"README.md has no {SECTION!r} section")
    section = rest.split("\n## ", 1)[0]
    _, found, block = section.partition("\n```sh\n")
    if not found:
        raise ValueError(f"README.md's {SECTION!r} section has no ```sh block")
    lines = [line.strip() for line in block.split("\n```", 1)[0].splitlines()]
    found = [line for line in lines if line and not line.startswith("#")]
    if len(found) != len(NAMES):
        raise ValueError(f"README.md's {SECTION!r} block holds {len(found)} commands, not {len(NAMES)}: {found}")
    return dict(zip(NAMES, found))


def command(name: str) -> str:
    return commands(README.read_text())[name]


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in NAMES:
        sys.exit(f"usage: {sys.argv[0]} {{{'|'.join(NAMES)}}}")
    print(command(sys.argv[1]))
