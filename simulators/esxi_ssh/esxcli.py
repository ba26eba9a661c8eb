"""Stand-in `esxcli` run by the test sshd: prints the fixture a real ESXi 7/8 host would print for
the storage commands (tests/fixtures/esxcli/), and the error a host prints for a namespace or
module it does not have. Each run is appended to esxcli-runs.jsonl beside the control file.

With `smart` in the control file ("healthy" or "failing", read at every run so a test can turn a
host's disks bad), it is the SMART host of tests/fixtures/smart/: a SATA HDD, a SATA SSD, an NVMe
namespace on vmhba2 (both its pages), a USB boot device without SMART and a SAN LUN; `smart_broken`
lists devices whose page comes back as garbage; `smart_flood` ({device: megabytes}) makes a device's
page that many megabytes of well-formed rows, written as a host would stream them."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

# What real ESXi hosts print, kept with its provenance among the tests' fixtures
FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "esxcli"
ANSWERS = {
    ("storage", "core", "device", "list"): "device-list.txt",
    ("storage", "nmp", "device", "list"): "nmp-device-list.txt",
    ("storage", "core", "adapter", "list"): "adapter-list.txt",
    ("system", "module", "parameters", "list", "-m", "qlnativefc"): "module-parameters-qlnativefc.txt",
    ("storage", "core", "device", "vaai", "status", "get"): "vaai-status.txt",
    ("system", "settings", "advanced", "list", "-o", "/VMFS3/UseATSForHBOnVMFS5"): "advanced-UseATSForHBOnVMFS5-off-esxi65.txt",
    (
        "system",
        "settings",
        "advanced",
        "list",
        "-o",
        "/VMFS3/HardwareAcceleratedLocking",
    ): "advanced-HardwareAcceleratedLocking.txt",
    ("storage", "vmfs", "lockmode", "list"): "vmfs-lockmode-list.txt",
    ("storage", "filesystem", "list"): "filesystem-list.txt",  # an ESXi 7/8 host: OSDATA, boot banks, a nameless VMFS
}


SMART = FIXTURES.parent / "smart"
HDD = "t10.ATA_____WDC_WD40EFRX2D68N32N0_________________________WD2DWCC7K1AB2C3D"
SSD = "t10.ATA_____Samsung_SSD_870_EVO_1TB_____________________S6PTNM0T512345K_____"
NVME = "t10.NVMe____Samsung_SSD_980_PRO_1TB_______________A1B2C3D4E5382500"
USB = "mpx.vmhba32:C0:T0:L0"
SMART_DEVICES = (HDD, SSD, NVME, USB)
CANNOT_OPEN = "Error getting Smart Parameters: CANNOT open device"


def smart_answers(variant: str) -> dict[tuple[str, ...], str]:
    """The SMART host's answers: argv -> fixture file in tests/fixtures/smart/."""
    bad = "-failing" if variant == "failing" else ""
    get = ("storage", "core", "device", "smart", "get", "-d")
    return {
        ("storage", "core", "device", "list"): "device-list.txt",
        ("nvme", "device", "list"): "nvme-device-list.txt",
        ("storage", "core", "path", "list"): "path-list.txt",
        (*get, HDD): f"smart-hdd{bad}.txt",
        (*get, SSD): f"smart-ssd{bad}.txt",
        (*get, NVME): f"smart-nvme{bad}.txt",
        ("nvme", "device", "log", "smart", "get", "-A", "vmhba2"): f"nvme-log{bad}.txt",
    }


def main(argv: list[str]) -> int:
    control = os.environ.get("FAKE_ESXTOP_CONTROL")
    settings = {}
    if control:
        with open(Path(control).with_name("esxcli-runs.jsonl"), "a") as runs:
            runs.write(json.dumps({"argv": argv}) + "\n")
        settings = json.loads(Path(control).read_text())
    if settings.get("smart"):
        flood = settings.get("smart_flood", {}).get(argv[-1])
        if flood and argv[:5] == ["storage", "core", "device", "smart", "get"]:
            return _flood(int(flood * 1_000_000))
        if argv[-1] in settings.get("smart_broken", ()):
            sys.stdout.write("Parameter  Value\n%%% not a table %%%\n")
            return 0
        answer = smart_answers(settings["smart"]).get(tuple(argv))
        if answer is not None:
            sys.stdout.write((SMART / answer).read_text())
            return 0
        if argv[:5] == ["storage", "core", "device", "smart", "get"]:
            print(CANNOT_OPEN)  # a device without SMART (USB, SAN LUN): esxcli says so and exits 1
            return 1
    answer = ANSWERS.get(tuple(argv))
    if answer is None:
        print(f"Error: Unknown command or namespace {' '.join(argv)}", file=sys.stderr)
        return 1
    sys.stdout.write((FIXTURES / answer).read_text())
    return 0


def _flood(size: int) -> int:
    """A SMART table of `size` bytes: the header, then rows of distinct vendor attributes (each a
    series if the exporter kept them all), written in 1 MB pieces until the reader hangs up."""
    head = (SMART / "smart-hdd.txt").read_text()
    out, written, row = sys.stdout.buffer, 0, 0
    try:
        out.write(head.encode())
        written += len(head)
        while written < size:
            piece = "".join(f"{f'Vendor Attribute {row + i}':<33}  100    0          100    {row + i}\n" for i in range(15_000))
            out.write(piece.encode())
            written += len(piece)
            row += 15_000
        out.flush()
    except BrokenPipeError:  # the exporter stopped reading at its cap and the session went
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
