"""Random byte-level mutations of a real esxtop capture, and every command run on the result
in-process, judged as a user would: exit 0, or a non-zero exit with one error line; never a
traceback (an exception out of the command, or Python's "Exception ignored in" report).

    python3 -m tests.support.mutations 3000 [SEED]    # a long hunt; failures saved for review

Each mutation is 1 to 4 edits: bytes inserted (esxtop tokens, invalid UTF-8, NUL, line ends),
ranges deleted or overwritten, lines duplicated, dropped or joined, line ends turned into bare
CR or CRLF (the spreadsheet re-saves the pyarrow path reads), the file cut short.
"""

from __future__ import annotations

import contextlib
import io
import logging
import random
import shutil
import sys
from pathlib import Path

from exporter.cli import main

PROG = "esxi-storage-exporter: "
TOKENS = [
    b'"',
    b",",
    b'"(PDH-CSV 4.0) (UTC)(0)",',
    b"\\\\",
    b"\xff",
    b"\xfe\xff",
    b"\xc3",
    b"\xe2\x82",
    b"\x00",
    b"\r",
    b"\n",
    b"\r\n",
    b"nan",
    b"-1",
    b"1e309",
    b"1e301",
    b"1_000",
    b"\xd9\xa1",
    b"99/99/9999 99:99:99",
    b"\xef\xbb\xbf",
    b"(",
    b")",
]


def mutate(data: bytes, rng: random.Random) -> bytes:
    for _ in range(rng.randint(1, 4)):
        op = rng.choice(["insert", "delete", "overwrite", "line_dup", "line_drop", "line_join", "cr", "crlf", "cut"])
        pos = rng.randrange(len(data) + 1)
        if op == "insert":
            piece = rng.choice(TOKENS) if rng.random() < 0.8 else bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
            data = data[:pos] + piece + data[pos:]
        elif op == "delete":
            data = data[:pos] + data[pos + rng.randint(1, 400) :]
        elif op == "overwrite":
            piece = bytes(rng.randrange(256) for _ in range(rng.randint(1, 6)))
            data = data[:pos] + piece + data[pos + len(piece) :]
        elif op in ("line_dup", "line_drop", "line_join"):
            lines = data.split(b"\n")
            at = rng.randrange(len(lines))
            if op == "line_dup":
                lines.insert(at, lines[at])
            elif op == "line_drop" and len(lines) > 1:
                del lines[at]
            elif op == "line_join" and at + 1 < len(lines):
                lines[at : at + 2] = [lines[at] + lines[at + 1]]
            data = b"\n".join(lines)
        elif op == "cr":
            data = data.replace(b"\r\n", b"\n").replace(b"\n", b"\r")
        elif op == "crlf":
            data = data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
        elif op == "cut":
            data = data[:pos]
    return data


def run(argv: list[str]) -> tuple[int | str, str]:
    """(exit status, or 'traceback: ...' if an exception escaped; everything written to stderr,
    with what Python would print as "Exception ignored in" (a test runner may catch those itself))."""
    out, err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8"), io.StringIO()
    unraisable: list = []
    hook, sys.unraisablehook = sys.unraisablehook, unraisable.append
    logging.root.handlers.clear()  # main() configures logging afresh onto this run's stderr
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(argv)
        except SystemExit as done:
            status = done.code
        except BaseException as escaped:  # noqa: BLE001 - what a user would see as a traceback
            status = f"traceback: {type(escaped).__name__}: {escaped}"
        finally:
            logging.root.handlers.clear()
            sys.unraisablehook = hook
    shown = "".join(f"Exception ignored in: {u.object!r}\nTraceback: {u.exc_type.__name__}: {u.exc_value}\n" for u in unraisable)
    return status, shown + err.getvalue()


def commands(capture: Path, original: Path, tmp: Path) -> dict[str, list[str]]:
    return {
        "dump": ["dump", "--esxtop-file", str(capture)],
        "compare": ["compare", str(capture), str(original)],
        "capacity": ["capacity", "--array-max-outstanding", "64", str(capture)],
        "backfill": ["backfill", str(capture), "--tsdb", str(tmp / "tsdb")],
    }


def problems(capture: Path, original: Path, tmp: Path) -> list[str]:
    """What a user would call a defect in each command's answer to this capture."""
    found = []
    for name, argv in commands(capture, original, tmp).items():
        status, stderr = run(argv)
        shutil.rmtree(tmp / "tsdb", ignore_errors=True)
        if isinstance(status, str):
            found.append(f"{name}: {status}")
        elif "Traceback" in stderr or "Exception ignored" in stderr:
            found.append(f"{name}: exit {status}, a traceback on stderr: {stderr[:300]!r}")
        elif status not in (0, 1, 2):
            found.append(f"{name}: exit {status}")
        elif status != 0 and name != "compare" or status == 2:
            errors = [line for line in stderr.splitlines() if line.startswith(PROG)]
            if len(errors) != 1:
                found.append(f"{name}: exit {status} with {len(errors)} error lines: {stderr[:300]!r}")
    return found


def hunt(count: int, seed: int, base: Path, out: Path) -> int:
    """Mutate `base` `count` times; save each mutation that shows a problem under `out`."""
    import tempfile

    rng = random.Random(seed)
    data = base.read_bytes()
    failed = 0
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        for n in range(count):
            capture = tmp / f"mutation-{seed}-{n}.csv"
            capture.write_bytes(mutate(data, rng))
            found = problems(capture, base, tmp)
            if found:
                failed += 1
                out.mkdir(parents=True, exist_ok=True)
                shutil.copy(capture, out / capture.name)
                print(f"{capture.name}: {found}", file=sys.__stderr__)
    return failed


if __name__ == "__main__":
    from tests.support.servers import CAPTURES

    total = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    bad = hunt(total, seed, CAPTURES / "esxi65-default-3samples.csv", Path("/tmp/esxtop-mutations"))
    print(f"{bad} of {total} mutations (seed {seed}) showed a problem", file=sys.__stderr__)
