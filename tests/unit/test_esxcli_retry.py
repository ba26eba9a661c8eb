"""A failed refresh on a long interval (esxcli, SMART) is tried again sooner: a minute after the
first failure, twice as long after each further one, never later than the interval; an answer
puts the host back on the interval (exporter.esxcli.retry)."""

from __future__ import annotations

import threading

from exporter.esxcli import retry
from exporter.esxcli.retry import Retries
from exporter.esxcli.ssh import every_interval


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_a_failing_host_waits_a_minute_then_twice_as_long_each_time_up_to_the_interval():
    clock = Clock()
    retries = Retries(3600.0, clock=clock)
    assert [retries.failed("esx01") for _ in range(8)] == [60, 120, 240, 480, 960, 1920, 3600, 3600]


def test_an_answer_starts_the_next_failures_waits_from_a_minute_again():
    retries = Retries(3600.0, clock=Clock())
    retries.failed("esx01")
    retries.failed("esx01")
    retries.succeeded("esx01")
    assert retries.next_in() is None
    assert retries.failed("esx01") == 60


def test_a_host_is_due_once_when_its_time_comes_and_the_soonest_sets_the_wait():
    clock = Clock()
    retries = Retries(3600.0, clock=clock)
    retries.failed("esx01")  # due at +60
    retries.failed("esx02")
    retries.failed("esx02")  # due at +120
    assert retries.next_in() == 60
    assert retries.due() == set()
    clock.now += 60
    assert retries.due() == {"esx01"}
    assert retries.due() == set()  # handed out once
    assert retries.next_in() == 60  # esx02's
    clock.now += 100
    assert retries.next_in() == 0
    assert retries.due() == {"esx02"}
    assert retries.next_in() is None


def test_hosts_that_left_are_not_retried():
    clock = Clock()
    retries = Retries(3600.0, clock=clock)
    retries.failed("esx01")
    retries.failed("gone")
    retries.keep_only(["esx01", "esx03"])
    clock.now += 60
    assert retries.due() == {"esx01"}
    retries.failed("esx01")
    retries.forget("esx01")
    assert retries.next_in() is None


def test_a_short_interval_caps_the_first_wait_too():
    """Over SSH esxcli may run every 30 s: a failure never waits longer than an answer would."""
    assert Retries(30.0, clock=Clock()).failed("esx01") == 30


def test_the_ssh_loop_retries_a_failed_refresh_sooner_and_an_answered_one_on_its_interval(monkeypatch):
    """every_interval (esxcli and SMART over SSH): False or an exception is a failure."""
    monkeypatch.setattr(retry, "FIRST_RETRY", 0.05)
    stop, waits, outcomes = threading.Event(), [], iter([False, False, RuntimeError("boom"), True, False])

    def refresh(host):
        outcome = next(outcomes, None)
        if outcome is None:
            stop.set()
            return True
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    real_wait = stop.wait
    monkeypatch.setattr(stop, "wait", lambda t=None: waits.append(t) or real_wait(0))
    every_interval(stop, lambda: "esx01", 300.0, refresh, "esxcli on esx01")
    # 3 failures: 0.05, 0.1, 0.2; an answer: the interval; a failure after it starts again at
    # 0.05; the last refresh (answered, it stops the loop) waits the interval
    assert waits == [0.05, 0.1, 0.2, 300.0, 0.05, 300.0]


def test_the_wait_ends_at_the_full_round_or_the_next_retry_whichever_is_first():
    clock = Clock()
    retries = Retries(3600.0, clock=clock)
    assert retries.wait_until(clock.now + 500) == 500  # no retry: the full round
    retries.failed("esx01")  # due at +60
    assert retries.wait_until(clock.now + 500) == 60
    assert retries.wait_until(clock.now + 30) == 30
    assert retries.wait_until(clock.now - 5) == 0  # a round overdue: at once
