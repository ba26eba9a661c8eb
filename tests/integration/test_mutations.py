"""No input makes a command print a traceback (issue 27): random byte-level mutations of a real
capture (tests/support/mutations.py) go through dump, compare, capacity and backfill, in-process,
and each command answers with exit 0, or a non-zero exit with one error line; never a traceback
(an exception out of the command, or Python's "Exception ignored in" report).

The mutations that once failed are kept (tests/fixtures/mutations/, see its PROVENANCE.md); a
seeded run of MUTATIONS more (default 200) runs each time. `python3 -m tests.support.mutations
3000 SEED` hunts longer and saves what it finds.
"""

from __future__ import annotations

import lzma
import os
import random
import shutil

import pytest

from tests.support.mutations import mutate, problems
from tests.support.servers import CAPTURES, FIXTURES

ORIGINAL = CAPTURES / "esxi65-default-3samples.csv"
KEPT = sorted((FIXTURES / "mutations").glob("*.csv.xz"))
MUTATIONS = int(os.environ.get("MUTATIONS", "200"))
SEED = 27


def test_the_kept_mutations_are_there():
    assert len(KEPT) == 13


@pytest.mark.parametrize("kept", KEPT, ids=lambda path: path.name.removesuffix(".csv.xz"))
def test_a_mutation_that_once_failed_gets_one_line_or_success(kept, tmp_path):
    capture = tmp_path / kept.name.removesuffix(".xz")
    capture.write_bytes(lzma.decompress(kept.read_bytes()))
    assert problems(capture, ORIGINAL, tmp_path) == []


def test_seeded_random_mutations_of_a_real_capture_get_one_line_or_success(tmp_path):
    rng = random.Random(SEED)
    data = ORIGINAL.read_bytes()
    failed = []
    for n in range(MUTATIONS):
        capture = tmp_path / f"mutation-{SEED}-{n}.csv"
        capture.write_bytes(mutate(data, rng))
        found = problems(capture, ORIGINAL, tmp_path)
        if found:
            failed.append((capture.name, found))
            shutil.copy(capture, tmp_path / f"failed-{capture.name}")  # kept for a look
        capture.unlink()
    print(f"\n{MUTATIONS} mutations (seed {SEED}), {len(failed)} with a problem")
    assert failed == []
