"""The built-in vSAN scenario (`serve --simulate vsan-congestion`): the simulated performance
service's answers read by the real vSAN reader; one host's write buffer fills, congestion rises and
its write latency crosses 50 ms, the others stay healthy; then it drains. Served over HTTP too."""

from __future__ import annotations

import subprocess
import sys

from exporter.simulator.scenario import list_scenarios, load_vsan_scenario
from exporter.simulator.vsan import VsanSimulation
from exporter.store import model as m
from exporter.vsan import perfcsv
from tests.support.promtext import eventually, samples, value
from tests.support.servers import Exporter

INCIDENT_HOST = "esx-vsan02.lab.local"


def _run(seconds: float, step: float = 5.0):
    """(simulated second, VsanSample) at every step, read back through perfcsv."""
    sim = VsanSimulation(load_vsan_scenario("vsan-congestion"), start=1_800_000_000)
    names = sim.names()
    out = []
    for i in range(int(seconds / step)):
        dropped: dict[str, int] = {}
        rows = [perfcsv.parse_entity(*answer, dropped) for answer in sim.step(step)]
        assert None not in rows and dropped == {}
        stamp = rows[0].times[0]
        out.append(((i + 1) * step, perfcsv.sample_at(rows, stamp, names, dropped)))
        assert dropped == {}
    return sim, out


def test_the_scenario_is_listed_and_is_a_vsan_one():
    assert "vsan-congestion" in dict(list_scenarios())
    scenario = load_vsan_scenario("vsan-congestion")
    assert scenario is not None and scenario.hosts == 4 and scenario.incident.host == 2
    assert load_vsan_scenario("queue-overrun") is None


def test_one_hosts_buffer_fills_congestion_rises_latency_crosses_50ms_and_drains():
    sim, samples = _run(sim_cycle := load_vsan_scenario("vsan-congestion").cycle)
    incident = load_vsan_scenario("vsan-congestion").incident

    def latency(host, sample):
        return sample.hosts[host][m.GAVG_WRITE]

    def free(host, sample):
        return min(stats[m.VSAN_WRITE_BUFFER_FREE] for (h, _), stats in sample.disk_groups.items() if h == host)

    before = [s for t, s in samples if t <= incident.after]
    during = [s for t, s in samples if incident.after + 300 <= t <= incident.after + incident.burst]
    after = [s for t, s in samples if t >= sim_cycle - 60]
    # Healthy first: buffers mostly free, no congestion, a few ms.
    assert all(free(INCIDENT_HOST, s) > 0.5 and latency(INCIDENT_HOST, s) < 0.005 for s in before)
    assert all(s.hosts[INCIDENT_HOST][m.VSAN_CONGESTION] == 0 for s in before)
    # The burst: its buffer under 20% free, congestion up, write latency past 50 ms, for minutes.
    assert all(free(INCIDENT_HOST, s) < 0.2 for s in during)
    assert all(s.hosts[INCIDENT_HOST][m.VSAN_CONGESTION] > 0.1 for s in during)
    assert all(latency(INCIDENT_HOST, s) > 0.05 for s in during)
    assert all(
        s.disk_groups[(INCIDENT_HOST, group)][m.vsan_layer_congestion("ssd")] > 0.1
        for s in during
        for (h, group) in s.disk_groups
        if h == INCIDENT_HOST
    )
    # Every other host stays healthy throughout.
    others = [h for h in sim.hosts if h != INCIDENT_HOST]
    assert all(latency(h, s) < 0.005 and free(h, s) > 0.5 for _, s in samples for h in others)
    # Afterwards the buffer drains and latency falls back.
    assert all(free(INCIDENT_HOST, s) > 0.5 and latency(INCIDENT_HOST, s) < 0.005 for s in after)
    # VMs of the host see the same latency; the cluster's is the I/O-weighted mean of its hosts'.
    worst = max(samples, key=lambda ts: latency(INCIDENT_HOST, ts[1]))[1]
    assert all(worst.vms[vm_name][m.GAVG_WRITE] == latency(INCIDENT_HOST, worst) for vm_name in sim.vms(INCIDENT_HOST))
    weighted = sum(st[m.GAVG_WRITE] * st[m.WRITES] for st in worst.hosts.values()) / sum(
        st[m.WRITES] for st in worst.hosts.values()
    )
    assert abs(worst.cluster[m.GAVG_WRITE] - weighted) < 1e-6


def test_simulate_command_refuses_a_vsan_scenario_in_one_line():
    result = subprocess.run(
        [sys.executable, "-m", "exporter", "simulate", "vsan-congestion"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode != 0
    assert result.stderr.strip().count("\n") == 0 and "vSAN scenario" in result.stderr and "Traceback" not in result.stderr


def test_serve_simulate_vsan_shows_the_cluster_over_http():
    exporter = Exporter("--simulate", "vsan-congestion", "--simulate.interval", "0.5s")
    try:
        text = eventually(lambda: _with_sample(exporter.metrics()), what="a vSAN sample")
    finally:
        exporter.stop()
    found = samples(text)

    def series(name):
        return [labels for n, labels, _ in found if n == name]

    assert [labels["cluster"] for labels in series("esxi_vsan_cluster_info")] == ["vsan-sim"]
    assert {labels["host"] for labels in series("esxi_vsan_host_write_latency_mean_seconds")} == {
        f"esx-vsan0{i}.lab.local" for i in range(1, 5)
    }
    assert len(series("esxi_vsan_disk_group_write_buffer_free_ratio")) == 8
    assert len(series("esxi_vsan_vm_write_latency_mean_seconds")) == 20
    assert len(series("esxi_vsan_disk_device_latency_mean_seconds")) == 32
    assert value(text, "esxi_vsan_cluster_health", cluster="vsan-sim", state="green") == 1.0
    assert value(text, "esxi_vsan_up", cluster="vsan-sim") == 1.0
    # The disks are the hosts' local LUNs: the same device label as the LUN families.
    devices = {labels["device"] for labels in series("esxi_vsan_disk_info")}
    assert len(devices) == 32 and devices <= {labels["device"] for labels in series("esxi_lun_info")}


def _with_sample(text: str) -> str | None:
    return text if "esxi_vsan_sample_timestamp_seconds" in text else None
