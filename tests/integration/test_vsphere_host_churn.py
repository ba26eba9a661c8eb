"""Hosts leaving and coming back (issue 27), on the storage simulator through the API (a host
disconnected, then reconnected, behind the exporter's back): when a host leaves the inventory,
every series keyed by it goes at the next discovery (its LUN, adapter and path counters and
gauges, its configuration, esxi_vsphere_samples_total, esxi_vsphere_last_sample_timestamp_seconds,
esxi_esxcli_up and esxi_esxcli_errors_total), and over several cycles the exposition and the
memory the target holds stay flat."""

from __future__ import annotations

import gc
import io
import linecache
import logging
import re
import tracemalloc

import pytest
from pyVmomi import vim

from exporter.collectors import COLLECTORS
from exporter.serving.exposition import Exposition
from exporter.vsphere import TargetConfig, VsphereTarget, source
from simulators.storagesim.sims import PASSWORD, USER, StorageSim
from tests.support.promtext import samples
from tests.support.vsphere_api import wait  # pyVim's WaitForTask trips over a running task's name from the simulator

pytestmark = pytest.mark.integration
CYCLES = 8
# A line that interns strings (sys.intern; `intern(`, `map(intern, ...)`): its block is the table's.
INTERN = re.compile(r"\bintern\b")
WARM = 2  # cycles before memory is judged: caches (routes, patterns, pyVmomi's types) fill in the first ones
# Series of one host that a host coming back has again at once (its counters go on from where they were).
PER_HOST = {
    "esxi_vsphere_samples_total",
    "esxi_vsphere_last_sample_timestamp_seconds",
    "esxi_esxcli_up",
    "esxi_esxcli_errors_total",
    "esxi_lun_queue_depth",
    "esxi_lun_info",
}


def exposition(target: VsphereTarget) -> str:
    enabled = [name for name, (_, default) in COLLECTORS.items() if default]
    return Exposition(target.store, enabled=enabled).body().decode()


# A host vCenter still lists (disconnected) keeps its state (issue 36): every other series goes.
STATE = {"esxi_host_connection_state", "esxi_host_maintenance_mode"}


def keyed_by(text: str, host: str) -> list[str]:
    return sorted({name for name, labels, _ in samples(text) if labels.get("host") == host and name not in STATE})


def counters_of(text: str, host: str) -> dict:
    """The host's counters (its data series named *_total): (name, labels) -> value."""
    return {
        (name, tuple(sorted(labels.items()))): value
        for name, labels, value in samples(text)
        if labels.get("host") == host and name.endswith("_total")
    }


def state_of(text: str, host: str) -> str | None:
    found = [
        labels["state"]
        for name, labels, v in samples(text)
        if name == "esxi_host_connection_state" and labels["host"] == host and v == 1
    ]
    return found[0] if found else None


def add_host(content, name: str):
    """A new host in the first cluster (the simulator makes one up, without perf data)."""
    view = content.viewManager.CreateContainerView(content.rootFolder, [vim.ClusterComputeResource], True)
    try:
        cluster = view.view[0]
    finally:
        view.DestroyView()
    spec = vim.host.ConnectSpec(hostName=name, userName="root", password="unused", force=True)
    task = cluster.AddHost_Task(spec=spec, asConnected=True)
    wait(task)
    return vim.HostSystem(task.info.result._moId, content.propertyCollector._stub)


def held_by_exporter() -> int:
    """Bytes traced, less the interpreter's table of interned strings: perf interns counter keys and
    instance names and pyVmomi every managed object id it reads (sys.intern), and that one table
    doubles now and then, 1.8 MiB at once at whichever cycle its fill crosses the limit (after
    another test file in the same process, within these cycles: a step, not a growth). Its block
    is charged to the line that interned; the strings themselves are traced where they were made."""
    # the source lines read here to tell an interning line are the test's, not the exporter's
    ours = [tracemalloc.Filter(False, linecache.__file__), tracemalloc.Filter(False, tracemalloc.__file__)]
    snapshot = tracemalloc.take_snapshot().filter_traces(ours)
    held = 0
    for stat in snapshot.statistics("lineno"):
        frame = stat.traceback[0]
        if not INTERN.search(linecache.getline(frame.filename, frame.lineno)):
            held += stat.size
    return held


def test_hosts_that_leave_take_every_series_keyed_by_them(tmp_path, monkeypatch):
    """Each cycle one fixture host is disconnected and a new host (a new name) added; then the
    new one is disconnected for good and the old one reconnected. After each step no series is left for a host
    that is not in the inventory; after each cycle the exposition and the memory traced are flat."""
    sim = StorageSim(tmp_path / "sim")
    password = tmp_path / "password"
    password.write_text(PASSWORD + "\n")
    password.chmod(0o600)
    vc = VsphereTarget(TargetConfig(name="vc", url=sim.url, user=USER, password_file=str(password), ca_file=str(sim.cert)))
    try:
        assert vc.run_once(), vc.error
        hosts = [topo.name for topo in vc.topology.hosts]
        report_esxcli_errors(vc)
        assert set(keyed_by(exposition(vc), hosts[0])) >= {"esxi_lun_commands_total", *PER_HOST}
        content = vc.client.content()
        sizes = []
        # pytest keeps every log record it captures, and each new host is a new cause logged (its
        # esxcli errors): the exporter's lines go to a handler that formats and forgets them here
        logger = logging.getLogger("exporter")
        monkeypatch.setattr(logger, "propagate", False)
        monkeypatch.setattr(logger, "handlers", [logging.StreamHandler(Discard())])
        tracemalloc.start()
        for cycle in range(CYCLES):
            leaving = vc.topology.hosts[cycle % len(hosts)]
            before = counters_of(exposition(vc), leaving.name)
            host = vim.HostSystem(leaving.ref._moId, content.propertyCollector._stub)
            wait(host.DisconnectHost_Task())
            fresh, new = add_host(content, f"churn-{cycle}.lab.local"), f"churn-{cycle}.lab.local"
            assert vc.discover(), vc.error
            vc.collect()
            report_esxcli_errors(vc)
            text = exposition(vc)
            assert keyed_by(text, leaving.name) == [], f"cycle {cycle}: series left for {leaving.name}"
            assert state_of(text, leaving.name) == "disconnected"  # vCenter still lists it
            assert leaving.name in vc.suspended and leaving.name not in vc.last_timestamp  # counters kept, hidden
            assert {"esxi_esxcli_up", "esxi_esxcli_errors_total"} <= set(keyed_by(text, new))
            assert all(keyed_by(text, h) for h in hosts if h != leaving.name)  # the other hosts keep theirs
            wait(fresh.DisconnectHost_Task())  # leaves for good (the simulator cannot add a host after a Destroy)
            wait(host.ReconnectHost_Task())
            assert vc.discover(), vc.error
            assert vc.collect(), vc.error
            report_esxcli_errors(vc)
            text = exposition(vc)
            assert keyed_by(text, new) == [], f"cycle {cycle}: series left for {new}"
            assert set(keyed_by(text, leaving.name)) >= PER_HOST  # back
            after = counters_of(text, leaving.name)
            lower = {key: (before[key], after[key]) for key in before.keys() & after.keys() if after[key] < before[key]}
            assert before.keys() & after.keys() and not lower, f"cycle {cycle}: counters of {leaving.name} went down: {lower}"
            assert state_of(text, leaving.name) == "connected" and state_of(text, new) == "disconnected"
            assert {labels["host"] for name, labels, _ in samples(text) if "host" in labels and name not in STATE} == set(hosts)
            # the new host, disconnected for good, is kept (hidden) for SUSPEND_FOR: held until then,
            # then forgotten, so what the target holds is judged once it has been
            assert set(vc.suspended) == {new}
            with monkeypatch.context() as patched:
                patched.setattr(source, "SUSPEND_FOR", 0.0)
                vc.collect()
            assert vc.suspended == {} and ("vc", new) not in vc.store.host_states and new not in vc.samples
            gc.collect()
            # the hosts disconnected for good stay in vCenter's inventory, with their state series
            # (4 lines each): the simulator cannot remove a host it added; the rest is judged
            lines = [line for line in text.splitlines() if not line.startswith(tuple(STATE))]
            sizes.append((len(lines), held_by_exporter()))
        tracemalloc.stop()
    finally:
        vc.client.close()
        sim.stop()
    lines = [n for n, _ in sizes]
    held = [b for _, b in sizes]
    print(f"\nexposition lines per cycle {lines}; bytes traced {[round(b / 1024) for b in held]} KiB")
    assert max(lines[1:]) - min(lines[1:]) <= 2 * len(hosts)  # the same hosts, the same series (esxcli counts aside)
    # A few KiB a cycle come from pyVmomi and the perf query threads with or without churn; judged
    # after the warm-up (on a loaded machine the first cycles grow by ~30 KiB, then hold), between
    # the lower of two cycles at each end: every third cycle holds ~130 KiB more for a moment
    # (measured: 876, 1007, 899, 893, 1017, 908 KiB from the warm-up on).
    growth = (min(held[-2:]) - min(held[WARM : WARM + 2])) / (CYCLES - 2 - WARM)
    assert growth < 16 * 1024, [round(b / 1024) for b in held]


class Discard(io.TextIOBase):
    def write(self, text: str) -> int:
        return len(text)


def report_esxcli_errors(vc: VsphereTarget) -> None:
    """A field esxcli could not read on every host, so each has esxi_esxcli_errors_total too."""
    for topo in vc.topology.hosts:
        vc.esxcli_health.report(topo.name, [("storage core device list", "unparsed_field", "x")])
