"""Grow the fuzz corpus of tests/fuzz/ with hypothesis (issue 37).

  python3 tests/fuzz/generate.py [--examples 2000] [--target smart_table ...] [--per-outcome 2]

For each target of tests/support/fuzz_targets.py, hypothesis draws inputs from the strategies of
tests/support/fuzz_inputs.py (the real answers with hostile cells, fields and elements). Each
input is checked against the contract; the first --per-outcome inputs of each outcome (fuzz_targets.outcome) not already in the corpus are
written to tests/fuzz/<target>/, and so is every input that breaks the contract, named crash-*:
fix the code, keep the file (tests/unit/test_fuzz_corpus.py runs every file in the suite).
"""

from __future__ import annotations

import argparse
import hashlib
import resource
import sys
import traceback
from pathlib import Path

from hypothesis import HealthCheck, given, settings

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.support import fuzz_targets  # noqa: E402
from tests.support.fuzz_inputs import STRATEGIES  # noqa: E402

EXTENSIONS = {
    "smart_table": "txt",
    "smart_json": "json",
    "smart_records": "json",
    "nvme_log": "txt",
    "nvme_json": "json",
    "nvme_records": "json",
    "update_set": "xml",
}


MEMORY_LIMIT = 4 << 30


def slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")[:48].strip("-") or "x"


def grow(target: str, examples: int, per_outcome: int) -> tuple[int, int, int]:
    """(inputs tried, files written, crashes) for one target."""
    folder = fuzz_targets.CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    seen: dict[str, int] = {}
    for path in fuzz_targets.corpus(target):
        try:
            seen[fuzz_targets.check(target, path.read_bytes())] = per_outcome  # already covered
        except Exception:  # noqa: BLE001 - a crash file the code does not survive yet
            pass
    counts = {"tried": 0, "written": 0, "crashes": 0}

    def keep(data: bytes, name: str) -> None:
        path = folder / f"{slug(name)}-{hashlib.sha256(data).hexdigest()[:10]}.{EXTENSIONS[target]}"
        if not path.exists():
            path.write_bytes(data)
            counts["written"] += 1

    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(STRATEGIES[target])
    def explore(data: bytes) -> None:
        counts["tried"] += 1
        try:
            found = fuzz_targets.check(target, data)
        except Exception as err:  # noqa: BLE001 - a crash or a broken contract: kept as a file to fix
            where = traceback.extract_tb(err.__traceback__)[-1]
            signature = f"crash {type(err).__name__} {Path(where.filename).stem} {where.lineno}"
            if seen.get(signature, 0) < per_outcome:
                seen[signature] = seen.get(signature, 0) + 1
                counts["crashes"] += 1
                keep(data, signature)
                print(f"  {target}: {signature}: {str(err).splitlines()[0][:120] if str(err) else ''}", flush=True)
            return
        if seen.get(found, 0) < per_outcome:
            seen[found] = seen.get(found, 0) + 1
            keep(data, found)

    explore()
    return counts["tried"], counts["written"], counts["crashes"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=2000)
    parser.add_argument("--target", action="append", choices=fuzz_targets.TARGETS)
    parser.add_argument("--per-outcome", type=int, default=2)
    args = parser.parse_args()
    # A blow-up is a crash to keep, not a machine out of memory: past this, MemoryError.
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    for target in args.target or fuzz_targets.TARGETS:
        tried, written, crashes = grow(target, args.examples, args.per_outcome)
        print(f"{target}: {tried} inputs tried, {written} new files ({crashes} crashes)", flush=True)


if __name__ == "__main__":
    main()
