"""A slow vCenter (issue 27): every QueryPerf answered late, through a local HTTPS endpoint in front
of the storage simulator. Each collection that takes longer than its interval is counted in
esxi_vsphere_collection_overruns_total{target, phase="collection"} (0 from the start), said once
in the log when it starts and once when collections keep time again, while `up` stays 1: the
samples arrive, late. The alert on it is tested with promtool (alerts/tests/pipeline.test.yml)."""

from __future__ import annotations

import pytest

from exporter.collectors.vsphere import collect as render_vsphere
from exporter.vsphere import TargetConfig, VsphereTarget
from simulators import hostile_vsphere as hostile
from simulators.storagesim.sims import PASSWORD, USER, StorageSim

pytestmark = pytest.mark.integration


def overrun_lines(vc: VsphereTarget) -> list[str]:
    families = {family.name: family for family in render_vsphere(vc.store)}
    return list(families["esxi_vsphere_collection_overruns_total"].lines)


def test_collections_past_their_interval_are_counted_and_said_once(tmp_path, caplog):
    sim = StorageSim(tmp_path / "sim")
    proxy = hostile.HostileProxy(sim.url, tmp_path)
    password = tmp_path / "password"
    password.write_text(PASSWORD + "\n")
    password.chmod(0o600)
    vc = VsphereTarget(
        TargetConfig(name="vc", url=proxy.url, user=USER, password_file=str(password), insecure=True, interval=1.0, timeout=10.0)
    )
    caplog.set_level("INFO")
    try:
        assert vc.discover(), vc.error
        assert vc.collect(), vc.error
        assert overrun_lines(vc) == ['esxi_vsphere_collection_overruns_total{target="vc",phase="collection"} 0.0\n']
        proxy.slow("QueryPerf", 1.2)  # every answer later than the 1 s interval
        for _ in range(3):
            assert vc.collect(), vc.error
            assert vc.up == 1  # the samples come, late: up alone does not show it
        assert overrun_lines(vc) == ['esxi_vsphere_collection_overruns_total{target="vc",phase="collection"} 3.0\n']
        proxy.slow(None)
        assert vc.collect(), vc.error
        assert vc.overruns.snapshot() == {"collection": 3}
    finally:
        vc.client.close()
        proxy.stop()
        sim.stop()
    said = [r.getMessage() for r in caplog.records if "interval" in r.getMessage() and r.name.endswith("overruns")]
    assert len(said) == 2, said
    assert said[0].startswith("vsphere target vc: collection took ") and "longer than its 1s interval" in said[0]
    assert said[1].startswith("vsphere target vc: collection keeps its 1s interval again")


def test_a_walk_whose_answers_outlast_the_timeout_waits_longer_next_time_then_settles_back(tmp_path, caplog):
    """vCenter's first answer for a large inventory can take longer than a call's timeout (40,000
    VMs from the simulator on a loaded machine: over 30 s, walk after walk). The walk that timed
    out is counted and logged as before; the next waits twice as long for each answer (said once),
    and once answers come quickly again the wait goes back to --vsphere.timeout."""
    from exporter.vsphere import source

    sim = StorageSim(tmp_path / "sim")
    proxy = hostile.HostileProxy(sim.url, tmp_path)
    password = tmp_path / "password"
    password.write_text(PASSWORD + "\n")
    password.chmod(0o600)
    vc = VsphereTarget(TargetConfig(name="vc", url=proxy.url, user=USER, password_file=str(password), insecure=True, timeout=2.0))
    caplog.set_level("INFO")
    try:
        proxy.slow("WaitForUpdatesEx", 3.0)  # each answer of the walk 3 s late: past the 2 s timeout
        assert not vc.discover()
        assert "timed out" in vc.error and vc.errors["discovery"] == 1
        assert vc.walk_timeout == 4.0
        assert vc.discover(), vc.error  # every answer within 4 s now
        assert vc.walk_timeout == 4.0  # its answers took over 2 s: kept
        assert {topo.name for topo in vc.topology.hosts} == {"esx01.lab.local", "esx02.lab.local", "esx03.lab.local"}
        proxy.slow(None)
        assert vc.discover(), vc.error
        assert vc.walk_timeout == 2.0  # quick again: back to --vsphere.timeout
        for _ in range(5):  # never past WALK_TIMEOUT_FACTOR times the timeout
            vc._lengthen_walk_timeout()
        assert vc.walk_timeout == source.WALK_TIMEOUT_FACTOR * 2.0
    finally:
        vc.client.close()
        proxy.stop()
        sim.stop()
    said = [r.getMessage() for r in caplog.records if "next walk waits" in r.getMessage()]
    assert (
        said[0]
        == "vsphere target vc: the walk timed out; the next walk waits up to 4s for each of its answers (--vsphere.timeout 2s)"
    )
    assert len(said) == 1 + 3  # the walk that timed out; by hand, from 2 s up to the cap: 4, 8 and 16 s
