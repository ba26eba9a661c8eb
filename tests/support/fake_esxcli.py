"""Stand-in `esxcli` run by the test sshd: prints the fixture a real ESXi 7/8 host would print for
the storage commands (tests/fixtures/esxcli/), and the error a host prints for a namespace or
module it does not have. Each run is appended to esxcli-runs.jsonl beside the control file."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "esxcli"
ANSWERS = {
    ("storage", "core", "device", "list"): "device-list.txt",
    ("storage", "nmp", "device", "list"): "nmp-device-list.txt",
    ("storage", "core", "adapter", "list"): "adapter-list.txt",
    ("system", "module", "parameters", "list", "-m", "qlnativefc"): "module-parameters-qlnativefc.txt",
}


def main(argv: list[str]) -> int:
    control = os.environ.get("FAKE_ESXTOP_CONTROL")
    if control:
        with open(Path(control).with_name("esxcli-runs.jsonl"), "a") as runs:
            runs.write(json.dumps({"argv": argv}) + "\n")
    answer = ANSWERS.get(tuple(argv))
    if answer is None:
        print(f"Error: Unknown command or namespace {' '.join(argv)}", file=sys.stderr)
        return 1
    sys.stdout.write((FIXTURES / answer).read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
