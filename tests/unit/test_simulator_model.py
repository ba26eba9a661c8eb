"""Properties of the queueing model for any small configuration, checked on what the esxtop reader
reads from the simulator's lines: the queue rules of the paper and Little's law."""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.esxtop import EsxtopReader
from exporter.simulator import Simulation, scenario_from_text
from exporter.store import model as m

DEVICE = "naa.600000000000000a"


def scenario_text(oios: list[int], dqlen: int, dsnro: int, absorbs: int) -> str:
    vms = "\n".join(
        f"      - {{name: vm{i}, lun: {DEVICE}, oio: {oio}, block_size: 4KiB, read_ratio: 0.5}}" for i, oio in enumerate(oios)
    )
    return (
        textwrap.dedent(f"""\
        description: generated
        luns:
          - {{device: {DEVICE}, service_time: 4ms, absorbs: {absorbs}}}
        hosts:
          - name: prop01
            dsnro: {dsnro}
            adapters:
              - {{name: vmhba1, link_speed: 1GB/s}}
            luns:
              - {{device: {DEVICE}, queue_depth: {dqlen}, paths: {{vmhba1:C0:T0:L1: active}}}}
            vms:
        """)
        + vms
        + "\n"
    )


@settings(max_examples=60, deadline=None)
@given(
    oios=st.lists(st.integers(0, 80), min_size=1, max_size=4),
    dqlen=st.integers(1, 128),
    dsnro=st.integers(1, 128),
    absorbs=st.integers(1, 128),
    seed=st.integers(0, 2**32),
)
def test_queue_rules_and_littles_law(oios, dqlen, dsnro, absorbs, seed):
    sim = Simulation(scenario_from_text(scenario_text(oios, dqlen, dsnro, absorbs)), seed=seed)
    reader = EsxtopReader("prop")
    reader.feed(sim.header("prop01"))
    assert reader.feed(sim.step()["prop01"]).interval is None
    sample = reader.feed(sim.step()["prop01"])
    lun = sample.luns[DEVICE]
    demand = sum(oios)
    # DQLEN caps active commands; DSNRO too, but only when more than one VM competes
    competing = sum(1 for o in oios if o > 0)
    limit = dqlen if competing <= 1 else min(dsnro, dqlen)
    assert lun[m.QUEUE_DEPTH] == dqlen
    assert lun[m.ACTIVE] == min(demand, limit)
    assert lun[m.QUEUED] == max(0, demand - limit)
    # every VM keeps its own OIO outstanding (rounded per world as esxtop prints integers)
    for (_, world), stats in sample.worlds.items():
        vm = int(sample.world_vms[world][2:])
        assert abs(stats[m.ACTIVE] + stats[m.QUEUED] - oios[vm]) <= 1
    if demand == 0:
        assert lun[m.COMMANDS] == 0
        return
    # Little's law on what was written (2-decimal ms and rates): outstanding = throughput x GAVG
    assert lun[m.COMMANDS] * lun[m.GAVG] == pytest.approx(demand, rel=0.01)
    assert abs(lun[m.GAVG] - (lun[m.DAVG] + lun[m.KAVG])) <= 2e-5
    # the array: base service time while the outstanding commands fit in what its disks absorb
    active = min(demand, limit)
    expected_davg = 4e-3 * max(1.0, active / absorbs)
    assert 0.85 * expected_davg <= lun[m.DAVG] <= 1.15 * expected_davg + 1e-4
