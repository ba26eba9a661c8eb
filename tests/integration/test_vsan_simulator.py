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


def _run(seconds: float, step: float = 5.0, scenario: str = "vsan-congestion"):
    """(simulated second, VsanSample) at every step, read back through perfcsv."""
    sim = VsanSimulation(load_vsan_scenario(scenario), start=1_800_000_000)
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


def test_lossy_nic_one_vmnic_drops_packets_every_hosts_writes_slow_no_disk_at_fault():
    """vsan-lossy-nic (vSAN ESA): esx-vsan03's first vSAN vmnic loses 1.5% of what it receives and
    counts CRC errors; the write latency of every host passes 50 ms; the disks stay fast and vSAN
    raises no congestion. Before it, no loss and a few ms."""
    scenario = load_vsan_scenario("vsan-lossy-nic")
    assert scenario.esa and scenario.incident.kind == "lossy-nic" and "vsan-lossy-nic" in dict(list_scenarios())
    sim, found = _run(scenario.cycle, scenario="vsan-lossy-nic")
    lossy = ("esx-vsan03.lab.local", "vmnic2")
    after = scenario.incident.after
    before = [s for t, s in found if t < after]
    during = [s for t, s in found if after + 10 <= t < after + scenario.incident.burst]
    assert before and during
    for s in before:
        assert all(nic[m.VSAN_RX_LOSS] == 0 for nic in s.nics.values())
        assert all(host[m.GAVG_WRITE] < 0.005 for host in s.hosts.values())
        assert all(tcp[m.VSAN_TCP_RETRANSMITS] < 0.01 for tcp in s.tcpip.values())
    for s in during:
        assert s.nics[lossy][m.VSAN_RX_LOSS] == 0.015  # 15 per mille as the service gives it
        assert all(v[m.VSAN_RX_LOSS] == 0 for k, v in s.nics.items() if k != lossy)
        assert all(host[m.GAVG_WRITE] > 0.05 for host in s.hosts.values())  # every host's writes
        assert all(host[m.VSAN_CONGESTION] == 0 for host in s.hosts.values())
        assert all(disk[m.DAVG] < 0.005 for disk in s.disks.values())  # no disk at fault
        # TCP from vsan-tcpip-stats, per host and netstack (vsan-host-net gives none)
        assert set(s.tcpip) == {(host, "defaultTcpipStack") for host in sim.hosts}
        assert all(tcp[m.VSAN_TCP_RETRANSMITS] > 0.01 for tcp in s.tcpip.values())
        assert all(m.VSAN_TCP_RETRANSMITS not in host for host in s.host_networks.values())
    crc = [s.nics[lossy][m.VSAN_RX_CRC_ERRORS_TOTAL] for s in during]
    assert crc == sorted(crc) and crc[-1] > crc[0]  # the counter rises
    # ESA: storage pool disks per tier and device layer, no disk groups; the backend and NIC speeds
    sample = during[-1]
    assert sample.disk_groups == {} and len(sample.disks) == 4 * 8
    assert all(m.vsan_tier_field("performance", m.GAVG_WRITE) in d and m.KAVG in d for d in sample.disks.values())
    assert set(sample.host_backends) == set(sim.hosts) and sample.cluster_backend and sample.cluster_owner
    # the rebalancing resync: the owners run jobs, the component managers' resync queues are not empty
    assert sample.cluster_owner[m.vsan_resync_jobs("running")] == 2.0 * len(sim.hosts)
    assert set(sample.host_owners) == set(sim.hosts)
    for host in sim.hosts:
        assert sample.host_owners[host][m.vsan_resync_jobs("running")] == 2.0
        assert sample.host_owners[host][m.vsan_resync_jobs("blocked")] == 0.0
        backend = sample.host_backends[host]
        assert backend[m.vsan_queue_depth("resync", "write")] > 1 and backend[m.vsan_queue_depth("resync", "read")] > 1
        assert backend[m.VSAN_OUTSTANDING_RECOVERY_WRITES] > 0 and backend[m.VSAN_RECOVERY_WRITES] > 0
    record = sim.cluster()
    assert record.esa and {d.tier for d in record.disks.values()} == {"storage_pool"}
    assert record.nic_speeds[lossy] == 25e9 / 8
