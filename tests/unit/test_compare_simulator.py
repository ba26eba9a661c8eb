"""compare on simulator captures (the real esxtop format written by `simulate`) with a known difference."""

from __future__ import annotations

import pytest

from exporter.analysis import compare as cmp
from exporter.analysis.capture import load
from tests.support.cli import run_cli
from tests.support.servers import ROOT

SCENARIOS = ROOT / "exporter" / "simulator" / "scenarios"
LUN = "naa.600601601e3021001a2b3c4d5e6f0001"


def simulate(tmp_path, scenario, seed, duration="30m"):
    out = tmp_path / f"{getattr(scenario, 'stem', scenario)}-{seed}.csv"
    done = run_cli("simulate", scenario, "--duration", duration, "--seed", seed, "--out", out)
    assert done.returncode == 0, done.stderr
    return out


def significant(result):
    return {(r.family, r.name, r.metric.key, r.verdict) for r in result.rows if r.verdict}


@pytest.fixture(scope="module")
def dqlen64(tmp_path_factory):
    # queue-overrun with the fix: DQLEN and DSNRO raised to 64 (DSNRO caps a LUN shared by several VMs)
    text = (SCENARIOS / "queue-overrun.yaml").read_text()
    assert "queue_depth: 32 " in text and "dsnro: 32 " in text
    path = tmp_path_factory.mktemp("scenario") / "dqlen64.yaml"
    path.write_text(text.replace("queue_depth: 32 ", "queue_depth: 64 ").replace("dsnro: 32 ", "dsnro: 64 "))
    return path


def test_queue_overrun_then_dqlen_64(tmp_path, dqlen64):
    before = load(simulate(tmp_path, "queue-overrun", 1))
    after = load(simulate(tmp_path, dqlen64, 2))
    result = cmp.compare(before, after)
    assert [(f.rule, f.name, f.state) for f in result.findings] == [("queue overrun (QUED > 0)", LUN, "resolved")]
    lun = {(k, v) for fam, name, k, v in significant(result) if fam == "luns"}
    assert lun == {
        ("dqlen", "changed"),
        ("actv", "changed"),
        ("qued", "better"),
        ("qued_share", "better"),
        ("gavg", "better"),
        ("kavg", "better"),
        ("qavg", "better"),
        ("iops", "better"),
        ("mbps", "better"),
    }
    assert not any(fam in ("worlds", "cpus") for fam, *_ in significant(result))
    assert result.worse == []


def test_dsnro_below_dqlen_is_found_when_told_the_dsnro(tmp_path, dqlen64):
    # DQLEN 64 with DSNRO left at 32: the queue still overruns, and the rule says why
    half_fix = tmp_path / "dqlen-only.yaml"
    half_fix.write_text(dqlen64.read_text().replace("dsnro: 64 ", "dsnro: 32 "))
    before = load(simulate(tmp_path, "queue-overrun", 1, "10m"))
    after = load(simulate(tmp_path, half_fix, 2, "10m"))
    states = {(f.rule, f.state) for f in cmp.compare(before, after, dsnro=32).findings}
    assert states == {("queue overrun (QUED > 0)", "persists"), ("DSNRO differs from DQLEN", "new")}


def test_one_link_then_two(tmp_path):
    # VMs start one every 2 minutes: leave the ramp out, as a user would with --skip
    before = load(simulate(tmp_path, "link-saturation", 1, "60m")).skip(1200)
    after = load(simulate(tmp_path, "link-saturation-two-links", 2, "60m")).skip(1200)
    result = cmp.compare(before, after, link_speeds={"*": 200e6})
    states = {(f.rule, f.name, f.state) for f in result.findings}
    moved = {("paths carrying I/O", f"naa.600601601e3021001a2b3c4d5e6f020{i}", "changed") for i in (2, 4, 6, 8)}
    # eight VMs at ~45 MB/s fill two 2 Gb/s links too: the rule says so for both
    assert states == moved | {
        ("link saturation", "vmhba1", "persists"),
        ("link saturation", "vmhba2", "new"),
        ("adapters carrying I/O", "esx01.lab.local", "changed"),
    }
    (spread,) = [f for f in result.findings if f.rule == "adapters carrying I/O"]
    assert (spread.detail_before, spread.detail_after) == ("1 (vmhba1)", "2 (vmhba1, vmhba2)")
    luns = before.objects("luns")
    assert len(luns) == 8
    verdicts = {(name, key): v for fam, name, key, v in significant(result) if fam == "luns"}
    for lun in luns:  # every LUN gets twice the throughput at half the latency
        assert all(verdicts.get((lun, k)) == "better" for k in ("gavg", "davg", "iops", "mbps")), lun
    assert not any(v == "worse" for v in verdicts.values())
    # the one thing that got worse is real: the second link now runs at the first one's limit
    assert [(w.rule, w.name) for w in result.worse] == [("link saturation", "vmhba2")]


@pytest.mark.parametrize("scenario", ["queue-overrun", "queue-ok", "link-saturation"])
def test_same_scenario_other_seed_differs_in_nothing(tmp_path, scenario):
    a = load(simulate(tmp_path, scenario, 1))
    b = load(simulate(tmp_path, scenario, 2))
    result = cmp.compare(a, b, link_speeds={"*": 200e6}, dsnro=32)
    assert significant(result) == set()
    assert all(f.state == "persists" for f in result.findings)
    assert all(not names for side in result.only.values() for names in side.values())


def test_what_was_tuned_comes_from_the_inventory_snapshots_beside_the_captures(tmp_path, dqlen64):
    before = simulate(tmp_path, "queue-overrun", 1, "10m")
    after = simulate(tmp_path, dqlen64, 2, "10m")
    assert before.with_suffix(".inventory.json").exists() and after.with_suffix(".inventory.json").exists()
    result = cmp.compare(load(before), load(after))
    assert result.tuning == [
        "esx01.lab.local: Disk.SchedNumReqOutstanding 32 -> 64",
        f"esx01.lab.local {LUN}: queue depth 32 -> 64",
        f"esx01.lab.local {LUN}: DSNRO 32 -> 64",
    ]
    report = run_cli("compare", before, after)
    assert "What was tuned (settings that differ between before and after):" in report.stdout
    assert f"esx01.lab.local {LUN}: queue depth 32 -> 64" in report.stdout
    # no snapshot, nothing claimed
    before.with_suffix(".inventory.json").unlink()
    assert cmp.compare(load(before), load(after)).tuning == []
    # a broken one is one line, exit 2
    before.with_suffix(".inventory.json").write_text("{not json")
    broken = run_cli("compare", before, after)
    assert broken.returncode == 2 and "inventory.json: not an inventory snapshot" in broken.stderr
    assert len(broken.stderr.strip().splitlines()) == 1
