"""The corpus: every real esxtop capture the project holds goes through dump, compare, capacity
and backfill, each with exit 0 and no traceback.

Captures are the files in tests/fixtures/esxtop/ (copies with their provenance) and, when the
directory exists beside the checkout, ../shared/data/esxtop/ (a plain clone has none: then those
tests are not collected at all). A capture kept one cell per line (a header and a row file, as
its author split them) is joined back into its lines first, as PROVENANCE.md says. A file of a
kind this module does not know fails the test, so a new capture is never silently left out.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.servers import CAPTURES, ROOT, exporter_env

SHARED = ROOT.parent / "shared" / "data" / "esxtop"
HEADER_SPLIT, ROW_SPLIT = "-header-one-cell-per-line.txt", "-row-one-cell-per-line.txt"


def captures_in(folder: Path) -> dict[str, tuple[Path, ...]]:
    """name -> the files of one capture: (file.csv,) or (header, row) of a one-cell-per-line pair."""
    found: dict[str, tuple[Path, ...]] = {}
    for path in sorted(folder.iterdir()):
        name = path.name
        if name == "PROVENANCE.md" or name.endswith(ROW_SPLIT):
            continue
        if name.endswith(".csv"):
            found[name] = (path,)
        elif name.endswith(HEADER_SPLIT):
            rows = path.with_name(name.replace(HEADER_SPLIT, ROW_SPLIT))
            assert rows.exists(), f"{path}: no {rows.name} beside it"
            found[name.replace(HEADER_SPLIT, "")] = (path, rows)
        else:
            raise AssertionError(f"{path}: not a capture kind the corpus test knows; add it to captures_in()")
    return found


def as_capture(files: tuple[Path, ...], tmp_path: Path) -> Path:
    """The capture as esxtop wrote it: a pair split one cell per line is joined back with commas."""
    if len(files) == 1:
        return files[0]
    joined = tmp_path / (files[0].name.replace(HEADER_SPLIT, "") + ".csv")
    joined.write_text("".join(",".join(f.read_text().splitlines()) + "\n" for f in files))
    return joined


def corpus() -> dict[str, tuple[Path, ...]]:
    """Every distinct capture (the same bytes in both places run once)."""
    out, seen = {}, set()
    for folder in (CAPTURES, SHARED):
        if not folder.is_dir():
            continue
        for name, files in captures_in(folder).items():
            digest = hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()
            if digest not in seen:
                seen.add(digest)
                out[f"{folder.parent.parent.name}/{name}"] = files
    return out


CORPUS = corpus()


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "exporter", *args], capture_output=True, text=True, env=exporter_env(), cwd=ROOT, timeout=300
    )


def test_the_corpus_holds_the_real_captures():
    assert len(CORPUS) >= 2, CORPUS  # the ESXi 6.5 capture and the ESXi 6.0 header+row


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_every_command_reads_every_real_capture(name, tmp_path):
    capture = str(as_capture(CORPUS[name], tmp_path))
    results = {
        "dump": run("dump", "--esxtop-file", capture),
        "compare": run("compare", capture, capture),
        "capacity": run("capacity", "--array-max-outstanding", "64", capture),
        "backfill": run("backfill", capture, "--tsdb", str(tmp_path / "tsdb")),
    }
    for command, done in results.items():
        assert done.returncode == 0, f"{command} {name}: exit {done.returncode}: {done.stderr}"
        assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, f"{command} {name}: {done.stderr}"
    assert "esxi_lun_queue_depth{" in results["dump"].stdout
    assert "Result: 0 worse, 0 better." in results["compare"].stdout
    assert "LUN " in results["capacity"].stdout
    assert " samples written to " in results["backfill"].stdout


if SHARED.is_dir():  # beside the checkout only: a plain clone collects nothing here

    @pytest.mark.parametrize("name", sorted(captures_in(SHARED)))
    def test_the_fixtures_hold_a_copy_of_every_shared_capture(name):
        for shared in captures_in(SHARED)[name]:
            copy = CAPTURES / shared.name
            assert copy.exists(), f"{shared} has no copy in {CAPTURES}: copy it and add it to PROVENANCE.md"
            assert copy.read_bytes() == shared.read_bytes(), f"{copy} differs from {shared}"
            assert shared.name in (CAPTURES / "PROVENANCE.md").read_text(), f"{shared.name} is not in PROVENANCE.md"
