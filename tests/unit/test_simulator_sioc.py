"""Storage I/O Control in the built-in simulator: the scenario schema's sioc section and shares,
the queueing model's fixed point (exporter/simulator/queueing.py, step 5) and the inventory."""

from __future__ import annotations

import random

import pytest

from exporter.simulator import Simulation, load_scenario
from exporter.simulator import queueing as q
from exporter.simulator.schema import parse
from exporter.simulator.spec import ScenarioError

LUN = "naa.600601601e3021001a2b3c4d5e6f0044"


def _text(sioc: str = "sioc: {enabled: true, threshold: 30ms}", phases: str = "", datastore: str = "vmfs-a") -> str:
    return f"""
description: t
luns:
  - {{device: {LUN}, service_time: 5ms, absorbs: 32, datastore: "{datastore}", {sioc}}}
hosts:
  - name: esx01
    cpus: 2
    cpu_mhz: 2000
    dsnro: 32
    adapters: [{{name: vmhba1, type: fc, model: m, driver: d, link_speed: 200MB/s}}]
    luns: [{{device: {LUN}, queue_depth: 32, paths: {{vmhba1:C0:T0:L1: active}}}}]
    vms: [{{name: vm1, lun: {LUN}, oio: 8, block_size: 4KiB, shares: 500}}]
{phases}"""


@pytest.mark.parametrize(
    "text, message",
    [
        (_text("sioc: {enabled: true, threshold: 4ms}"), "luns[0].sioc.threshold: must be 5ms..100ms (vCenter refuses others)"),
        (_text("sioc: {enabled: true, threshold: 101ms}"), "must be 5ms..100ms"),
        (_text("sioc: {enabled: yes please}"), "luns[0].sioc.enabled: expected true or false"),
        (_text(datastore=""), "luns[0].sioc: Storage I/O Control is a datastore's: the LUN needs a datastore"),
        (_text("sioc: {enabled: true, mode: automatic}"), "mode"),
        (
            _text("", f"phases: [{{name: 'on', duration: 1m, luns: {{{LUN}: {{sioc_enabled: true}}}}}}]"),
            "no sioc section to turn on or off",
        ),
    ],
)
def test_bad_sioc_sections_are_refused_in_one_line(text, message):
    with pytest.raises(ScenarioError) as err:
        parse(text, "t", "t.yaml")
    assert message in str(err.value) and "\n" not in str(err.value)


def _queue(host: str, oio: int, shares: float, depth: int = 32) -> q.HostLoad:
    vms = [q.VmLoad(world="1", oio=oio, block_size=4096, read_ratio=1.0, shares=shares)]
    lun = q.HostLunLoad(LUN, depth, [("vmhba1:C0:T0:L1", "vmhba1")], vms)
    return q.HostLoad(host, 32, 2, 0.0, {"vmhba1": q.Link(None, 0.0)}, [lun])


def test_sioc_splits_the_window_by_shares_and_holds_latency_at_the_threshold():
    # 4 hosts x 32 on an array serving 32 in 5 ms: 128 outstanding would answer in 20 ms.
    # SIOC at 10 ms: the hosts together keep 32 x 10 / 5 = 64, split 2:1:1:0.5 by shares.
    hosts = [_queue("a", 32, 2000), _queue("b", 32, 1000), _queue("c", 32, 1000), _queue("d", 4, 500)]
    model = q.Model(hosts, {LUN: q.ArrayLun(0.005, 32, sioc_threshold=0.010)}, [])
    depth = {h.name: model.queues[h.name][0].sioc_depth for h in hosts}
    # d asks 4, under its 500/4500 of 64 = 7.1: not cut. The other 60 by 2:1:1 -> 30, 15, 15.
    assert depth == {"a": 30, "b": 15, "c": 15, "d": 32}
    assert {h.name: model.queues[h.name][0].queued for h in hosts} == {"a": 2, "b": 17, "c": 17, "d": 0}
    assert model.array_load[LUN] == pytest.approx(64 / 32)  # 10 ms: the threshold
    result = model.sample(random.Random(0))
    assert result["b"].luns[LUN].queue_depth == 15
    assert result["b"].luns[LUN].davg == pytest.approx(0.010, rel=0.15)


def test_below_the_threshold_sioc_leaves_the_queues_alone():
    hosts = [_queue("a", 8, 1000), _queue("b", 8, 1000)]
    model = q.Model(hosts, {LUN: q.ArrayLun(0.005, 32, sioc_threshold=0.010)}, [])
    assert [model.queues[h][0].sioc_depth for h in ("a", "b")] == [0, 0]
    assert model.sample(random.Random(0))["a"].luns[LUN].queue_depth == 0  # esxtop shows the configured DQLEN


def test_no_host_is_cut_below_the_floor():
    hosts = [_queue(f"h{i}", 32, 1000) for i in range(40)]  # 64 / 40 = 1.6 each
    model = q.Model(hosts, {LUN: q.ArrayLun(0.005, 32, sioc_threshold=0.010)}, [])
    assert {model.queues[h.name][0].sioc_depth for h in hosts} == {q.SIOC_MIN_DEPTH}


def test_the_inventory_reports_the_datastores_sioc_and_a_phase_turns_it_on():
    text = _text(
        "sioc: {enabled: false, threshold: 25ms}",
        f"phases: [{{name: 'off', duration: 1m}}, {{name: 'on', duration: 1m, luns: {{{LUN}: {{sioc_enabled: true}}}}}}]",
    )
    sim = Simulation(parse(text, "t", "t.yaml"), interval=30)
    sim.step()
    config = sim.inventories()[0].datastores["vmfs-a"].sioc
    assert (config.reported, config.enabled, config.mode, config.threshold_seconds) == (True, False, "manual", 0.025)
    changed = [sim.step() and sim.phase_changed() for _ in range(4)]
    assert changed == [False, True, False, False]  # 30 s, 60 s (the second phase), 90 s, 120 s
    assert sim.inventories()[0].datastores["vmfs-a"].sioc.enabled is True


def test_vm_shares_reach_the_inventory():
    sim = Simulation(load_scenario("sioc-on"))
    shares = {inv.host: inv.vdisks[next(iter(inv.vdisks))].shares for inv in sim.inventories()}
    assert shares["esx08.lab.local"] == 2000 and shares["esx01.lab.local"] == 1000
