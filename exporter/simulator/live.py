"""The built-in simulated host as a live source: the simulator writes esxtop lines, the real
esxtop reader reads them, one reader per simulated host, paced at the simulated interval. Hosts
with local disks also answer SMART: their esxcli text, read by the real SMART reader
(exporter.smart.parse) every DISK_READ_EVERY simulated seconds."""

from __future__ import annotations

import logging
import time

from exporter.configuration.sharding import shard_of
from exporter.esxtop import EsxtopReader
from exporter.esxtop.streams import pump
from exporter.smart import disks, parse
from exporter.store import model as m

log = logging.getLogger(__name__)
DISK_READ_EVERY = 10.0  # simulated seconds between SMART rounds (an hour on a real host: a demo wants it sooner)


def open_simulation(settings):
    from exporter.simulator import Simulation, load_scenario

    scenario = load_scenario(settings["simulate.scenario"])
    return Simulation(scenario, seed=settings["simulate.seed"], interval=settings["simulate.interval"], start=time.time())


def run_simulation(settings, store, stop) -> None:
    from exporter.simulator.scenario import load_events_scenario, load_space_scenario, load_vsan_scenario

    space_scenario = load_space_scenario(settings["simulate.scenario"])
    if space_scenario is not None:
        run_space_simulation(space_scenario, settings["simulate.interval"], store, stop)
        return
    vsan_scenario = load_vsan_scenario(settings["simulate.scenario"])
    if vsan_scenario is not None:
        run_vsan_simulation(vsan_scenario, settings["simulate.interval"], store, stop)
        return
    events_scenario = load_events_scenario(settings["simulate.scenario"])
    if events_scenario is not None:
        run_events_simulation(events_scenario, settings["simulate.interval"], store, stop)
        return
    sim = open_simulation(settings)
    interval = settings["simulate.interval"]
    per_world = settings["collector.world"]
    # --simulate.shard K/N: every exporter simulates the whole scenario (an array's queue is shared
    # by all its hosts) and serves its share of the hosts, as --vsphere.shard splits a vCenter.
    shard = settings.get("simulate.shard")  # (K, N) or None
    mine = [h for h in sim.hosts if shard is None or shard_of(h, shard[1]) == shard[0]]
    readers = {host: EsxtopReader(f"simulator:{host}", per_world=per_world) for host in mine}
    for inventory in sim.inventories():
        if inventory.host in readers:
            store.set_inventory(inventory)
    for host, reader in readers.items():
        pump([sim.header(host)], reader, store.ingest, store.count_parse_error)
    log.info("simulating %s: %d host(s), one sample every %gs", settings["simulate.scenario"], len(readers), interval)
    deadline, step, last_disks, reports = time.monotonic(), 0, None, {}
    while not stop.is_set():
        for host, line in sim.step().items():
            if host in readers:
                pump([line], readers[host], store.ingest, store.count_parse_error)
        if sim.phase_changed():  # a phase may turn Storage I/O Control on or off: the inventory says so
            for inventory in sim.inventories():
                if inventory.host in readers:
                    store.set_inventory(inventory)
        now = sim.start + step * interval
        if last_disks is None or now - last_disks >= DISK_READ_EVERY:
            for host in readers:
                answers = sim.disk_answers(host)
                if answers:
                    reports[host] = read_disks(host, answers, now, reports.get(host))
                    store.set_disk_health(reports[host])
                    store.set_health(m.SourceHealth(kind="smart", name=host, up=1))
            last_disks = now
        step += 1
        deadline += interval
        stop.wait(max(0.0, deadline - time.monotonic()))


def read_disks(host: str, answers, now: float, previous: m.DiskHealthReport | None = None) -> m.DiskHealthReport:
    """A simulated host's esxcli answers (Simulation.disk_answers) read as a real host's are."""
    report = m.DiskHealthReport(host=host, timestamp=now)
    for device, (page, smart_text, adapter, log_text) in answers.items():
        if smart_text is None:  # what esxcli says of a device without SMART, a state (exporter.smart.reader)
            smart = disks.Reading("unsupported", message="Error getting Smart Parameters: CANNOT open device")
        else:
            smart = _reading(parse.smart_page_text, smart_text, device)
        nvme = _reading(parse.nvme_log_text, log_text, adapter) if log_text is not None else None
        old = previous.disks.get(device) if previous else None
        report.disks[device] = disks.disk_health(page, smart, now, adapter=adapter, nvme=nvme, previous=old)
    return report


def _reading(read, text: str, name: str) -> disks.Reading:
    try:
        return disks.Reading("ok", read(text, name))
    except parse.SmartFormatError as err:  # the writer and the reader disagree: shown, not hidden
        log.warning("simulated SMART: %s", err)
        return disks.Reading("unreadable", message=str(err))


def run_vsan_simulation(scenario, interval: float, store, stop) -> None:
    """A simulated vSAN cluster: each step is one performance-service sample, written as the service
    answers and read by the real vSAN reader, with the cluster's health, space and collection health."""
    from exporter.simulator.vsan import VsanSimulation
    from exporter.store import model as m
    from exporter.vsan import perfcsv

    sim = VsanSimulation(scenario, start=time.time())
    for inventory in sim.inventories():
        store.set_inventory(inventory)
    names = sim.names()
    samples = 0
    log.info("simulating vSAN cluster %s: %d host(s), one sample every %gs", scenario.cluster, len(sim.hosts), interval)
    deadline = time.monotonic()
    while not stop.is_set():
        dropped: dict[str, int] = {}
        rows = [row for row in (perfcsv.parse_entity(*answer, dropped) for answer in sim.step(interval)) if row is not None]
        record = sim.cluster()
        record.sample = perfcsv.sample_at(rows, max(t for row in rows for t in row.times if t is not None), names, dropped)
        sim.summary(record)
        samples += 1
        store.set_vsan(record)
        store.set_health(
            m.SourceHealth(
                kind="vsan",
                name=scenario.cluster,
                up=1,
                durations={"collection": 0.0},
                dropped=dropped,
                samples={scenario.cluster: samples},
            )
        )
        deadline += interval
        stop.wait(max(0.0, deadline - time.monotonic()))


def run_events_simulation(scenario, interval: float, store, stop) -> None:
    """A simulated storage incident: each step's vobd.log lines, per host, read by the real vobd.log
    reader (exporter.events.vobd) into the store's storage event counts."""
    from exporter.events.vobd import VobdFollower
    from exporter.simulator.events import EventsSimulation

    sim = EventsSimulation(scenario, start=time.time())
    for inventory in sim.inventories():
        store.set_inventory(inventory)
    followers = {host: VobdFollower(f"simulator:{host}", store, lambda host=host: host) for host in sim.hosts}
    log.info("simulating %s: %d host(s), one step every %gs", scenario.name, len(sim.hosts), interval)
    deadline = time.monotonic()
    while not stop.is_set():
        for host, lines in sim.step(interval).items():
            follower = followers[host]
            for line in lines:
                follower.feed(line)
            follower.flush()
            follower.publish(True)
        deadline += interval
        stop.wait(max(0.0, deadline - time.monotonic()))


def run_space_simulation(scenario, interval: float, store, stop) -> None:
    """Datastores filling: each step is `step_minutes` of their life, published as the vSphere
    source publishes space and snapshots (replaced whole)."""
    from exporter.simulator.space import SpaceSimulation

    sim = SpaceSimulation(scenario, start=time.time())
    log.info("simulating %s: %d datastore(s), one step every %gs", scenario.name, len(scenario.datastores), interval)
    deadline = time.monotonic()
    while not stop.is_set():
        store.set_space("simulator", sim.spaces())
        store.set_snapshots(sim.snapshots())
        sim.step()
        deadline += interval
        stop.wait(max(0.0, deadline - time.monotonic()))
