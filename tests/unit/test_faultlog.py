"""The shared fault helper: counted every time, logged once per cause, recovery logged once."""

import logging

from exporter.store.faultlog import FaultLog


def test_logged_once_per_cause_counted_every_time(caplog):
    faults = FaultLog(logging.getLogger("t.faultlog"))
    with caplog.at_level(logging.INFO, logger="t.faultlog"):
        assert faults.failed(("h1", "perf"), "timed out", "host h1: perf failed: timed out")
        assert not faults.failed(("h1", "perf"), "timed out")
        assert faults.failed(("h1", "perf"), "NotFound", "host h1: perf failed: NotFound")
        assert faults.failed(("h2", "perf"), "timed out")
    assert [r.getMessage() for r in caplog.records] == [
        "host h1: perf failed: timed out",
        "host h1: perf failed: NotFound",
        "timed out",
    ]
    assert faults.snapshot() == {("h1", "perf"): 3, ("h2", "perf"): 1}


def test_recovery_logged_once_and_counts_start_at_zero(caplog):
    faults = FaultLog(logging.getLogger("t.faultlog"))
    with caplog.at_level(logging.INFO, logger="t.faultlog"):
        assert not faults.answered("k", "k answers again")  # never failed: nothing said
        assert faults.snapshot() == {"k": 0}
        faults.failed("k", "boom")
        assert faults.is_failing("k")
        assert faults.answered("k", "k answers again")
        assert not faults.answered("k", "k answers again")
        assert faults.failed("k", "boom")  # failing again after a recovery is a new cause
    assert [r.getMessage() for r in caplog.records] == ["boom", "k answers again", "boom"]
    assert [r.levelno for r in caplog.records] == [logging.WARNING, logging.INFO, logging.WARNING]
    assert faults.snapshot() == {"k": 2}


def test_forget_takes_counts_and_causes():
    faults = FaultLog(logging.getLogger("t.faultlog"))
    faults.failed(("h1", "a"), "x", n=4)
    faults.failed(("h2", "a"), "x")
    assert faults.forget(lambda k: k[0] == "h1")
    assert not faults.forget(lambda k: k[0] == "h1")
    assert faults.snapshot() == {("h2", "a"): 1}
    assert faults.snapshot(lambda k: k[0] == "h1") == {}
    assert faults.failed(("h1", "a"), "x")  # a host that came back is new


def test_recovered_ends_every_matching_failing_key_once(caplog):
    faults = FaultLog(logging.getLogger("t.faultlog"))
    with caplog.at_level(logging.INFO, logger="t.faultlog"):
        faults.failed(("c1", "perf:a"), "off", quiet=True)
        faults.failed(("c1", "health"), "timed out", quiet=True)
        faults.failed(("c2", "perf:a"), "off", quiet=True)
        assert not faults.failed(("c1", "perf:a"), "off", quiet=True)
        assert faults.recovered(lambda k: k[0] == "c1", lambda k: f"{k[1]} answers again") == [("c1", "health"), ("c1", "perf:a")]
        assert faults.recovered(lambda k: k[0] == "c1", lambda k: f"{k[1]} answers again") == []
    assert [r.getMessage() for r in caplog.records] == ["health answers again", "perf:a answers again"]  # quiet: no failure line
    assert faults.is_failing(("c2", "perf:a")) and not faults.is_failing(("c1", "perf:a"))
    assert faults.snapshot() == {("c1", "perf:a"): 2, ("c1", "health"): 1, ("c2", "perf:a"): 1}  # counts stay
