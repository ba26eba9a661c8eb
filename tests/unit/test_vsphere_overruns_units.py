"""Overruns (exporter.vsphere.overruns) through the shared FaultLog: each run past its interval
counted, an episode logged once when it starts and once when runs keep time again."""

import logging

from exporter.vsphere.overruns import Overruns


def test_an_episode_of_overruns_is_counted_every_run_and_logged_once(caplog):
    overruns = Overruns("vc", phases=("collection", "vsan"))
    assert overruns.snapshot() == {"collection": 0, "vsan": 0}  # each phase's series from the start
    with caplog.at_level(logging.INFO, logger="exporter.vsphere.overruns"):
        assert [overruns.check("collection", seconds, 20) for seconds in (31.0, 45.5, 22.0)] == [True] * 3
        assert not overruns.check("collection", 12.0, 20)
        assert not overruns.check("collection", 11.0, 20)
        assert overruns.check("collection", 25.0, 20)  # a new episode
        assert not overruns.check("vsan", 100.0, 300)
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", "vsphere target vc: collection took 31.0s, longer than its 20s interval: samples fall behind"),
        ("INFO", "vsphere target vc: collection keeps its 20s interval again (12.0s)"),
        ("WARNING", "vsphere target vc: collection took 25.0s, longer than its 20s interval: samples fall behind"),
    ]
    assert overruns.snapshot() == {"collection": 4, "vsan": 0}
    assert not Overruns("vc").check("vsan", 1.0, 300) and Overruns("vc").snapshot() == {"collection": 0}
