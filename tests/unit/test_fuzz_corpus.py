"""Every file of the fuzz corpus (tests/fuzz/<target>/) through its reader, with the contract of
tests/support/fuzz_targets.py: no exception but the reader's own one-line error, every value in the
model and on /metrics finite and in range, label values at most 128 characters, at most 256
attributes a device. The crash-* files made the code before issue 37 raise (OverflowError,
RecursionError, ValueError, UnicodeDecodeError); tests/fuzz/generate.py grows the corpus. A few
fresh inputs a target are drawn in each run too (the generator's strategies), so a change that
breaks the contract on an input the corpus lacks can still fail here."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings

from tests.support import fuzz_targets
from tests.support.fuzz_inputs import STRATEGIES

# Fresh inputs a target in each run, beside the corpus (FUZZ_EXAMPLES, as tests/unit/test_fuzz.py).
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "30"))

FILES = [(target, path) for target in fuzz_targets.TARGETS for path in fuzz_targets.corpus(target)]


def test_every_target_has_a_corpus_with_crashes_kept_and_both_outcomes():
    for target in fuzz_targets.TARGETS:
        outcomes = [fuzz_targets.check(target, p.read_bytes()) for p in fuzz_targets.corpus(target)]
        assert len(outcomes) >= 5, f"{target}: {len(outcomes)} files"
        assert any(o.startswith("error") for o in outcomes) and any(not o.startswith("error") for o in outcomes), target
    crashes = [p for _, p in FILES if p.name.startswith("crash-")]
    assert len(crashes) >= 13 and {p.parent.name for p in crashes} >= set(fuzz_targets.TARGETS) - {"update_set"}


def test_the_contract_can_fail():
    """The checker itself: a value out of range, a long label and a crash are caught."""
    from exporter.smart import parse

    page = parse.m.SmartPage(attributes={"x": parse.m.SmartAttribute(value=float("inf"))})
    with pytest.raises(fuzz_targets.ContractBroken, match="not in"):
        fuzz_targets._check_page(page)
    page = parse.m.SmartPage(health="y" * 129)
    with pytest.raises(fuzz_targets.ContractBroken, match="129 characters"):
        fuzz_targets._check_page(page)
    log = parse.m.NvmeHealthLog(available_spare_ratio=1.5)
    with pytest.raises(fuzz_targets.ContractBroken, match="available spare"):
        fuzz_targets._check_log(log)


@pytest.mark.parametrize("target, path", FILES, ids=[f"{t}/{p.name[:60]}" for t, p in FILES])
def test_corpus_file_keeps_the_contract(target, path):
    fuzz_targets.check(target, path.read_bytes())


@pytest.mark.parametrize("target", fuzz_targets.TARGETS)
def test_fresh_inputs_keep_the_contract(target):
    @settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(STRATEGIES[target])
    def one(data: bytes) -> None:
        fuzz_targets.check(target, data)

    one()
