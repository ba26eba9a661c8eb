"""bench/collection_replay.py's replay: a call is known by the entities it asks for, not by its
start times, and a replayed answer's sample times move on, so each replay is a new sample."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))  # the bench's own imports

from bench.collection_replay import key_of, moved_on  # noqa: E402

ANSWER = (
    b'<returnval xsi:type="PerfEntityMetricCSV"><entity type="HostSystem">host-12</entity>'
    b"<sampleInfoCSV>20,2026-11-29T01:59:40Z,20,2026-11-29T02:00:00Z</sampleInfoCSV>"
    b"<value><id><counterId>6</counterId><instance></instance></id><value>2026,2027</value></value></returnval>"
)


def test_a_replayed_answer_has_every_sample_time_later_and_nothing_else_changed():
    later = moved_on(ANSWER, 40)
    assert b"<sampleInfoCSV>20,2026-11-29T02:00:20Z,20,2026-11-29T02:00:40Z</sampleInfoCSV>" in later
    assert later.replace(b"02:00:20Z,20,2026-11-29T02:00:40Z", b"") == ANSWER.replace(b"01:59:40Z,20,2026-11-29T02:00:00Z", b"")
    assert b"<value>2026,2027</value>" in later  # values that look like years are not times


def test_a_call_is_known_by_its_entities_in_order_not_its_start_times():
    def request(start: str, *moids: str) -> bytes:
        specs = "".join(
            f'<querySpec><entity type="HostSystem">{m}</entity><startTime>{start}</startTime></querySpec>' for m in moids
        )
        return f"<QueryPerf>{specs}</QueryPerf>".encode()

    assert key_of(request("2026-11-29T01:00:00Z", "host-1", "host-2")) == key_of(
        request("2026-11-29T02:00:00Z", "host-1", "host-2")
    )
    assert key_of(request("2026-11-29T01:00:00Z", "host-1", "host-2")) != key_of(
        request("2026-11-29T01:00:00Z", "host-2", "host-1")
    )


def test_the_proxy_moves_an_answers_newest_sample_to_the_time_given():
    from bench.replay_proxy import stamped_at

    at = 1795917640.0  # 2026-11-29T02:00:40Z
    later = stamped_at(ANSWER, at)
    assert b"<sampleInfoCSV>20,2026-11-29T02:00:20Z,20,2026-11-29T02:00:40Z</sampleInfoCSV>" in later
    assert stamped_at(b"<returnval><entity>host-1</entity></returnval>", at) == b"<returnval><entity>host-1</entity></returnval>"


def test_every_call_of_one_collection_gets_the_boundary_it_began_at():
    """A collection that goes past a 20 s boundary: its hosts' and VMs' answers must carry one
    sample time, or the VMs' samples are dropped as time_mismatch (vCenter answers from startTime)."""
    from bench.replay_proxy import BURST_GAP, Bursts

    bursts = Bursts()
    assert bursts.at(1019.0) == 1000.0
    assert bursts.at(1021.0) == 1000.0  # past the boundary, the same collection
    assert bursts.at(1021.0 + BURST_GAP + 0.1) == 1020.0  # the next collection
    assert bursts.at(1039.0 + BURST_GAP) == 1040.0
    assert bursts.at(1050.0 + BURST_GAP) == 1040.0  # begun within the step of the one before: nothing new
