"""A slow vCenter (issue 27): every QueryPerf answered late, through a local HTTPS endpoint in front
of the storage simulator. Each collection that takes longer than its interval is counted in
esxi_vsphere_collection_overruns_total{target, phase="collection"} (0 from the start), said once
in the log when it starts and once when collections keep time again, while `up` stays 1: the
samples arrive, late. The alert on it is tested with promtool (alerts/tests/pipeline.test.yml)."""

from __future__ import annotations

import pytest

from exporter.collectors.vsphere import collect as render_vsphere
from exporter.vsphere import TargetConfig, VsphereTarget
from tests.support import hostile_vsphere as hostile
from tests.vcsim.sims import PASSWORD, USER, StorageSim

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
