"""The soak's checks, made at every scrape against the simulator's own inventory at that moment
(bench/soak_vsphere.py):

- every object that exists has its series within GRACE (two collection intervals), and no series
  remains for an object gone for longer than that; a connected host's include esxi_esxcli_up 1
  (its esxcli read through the API, hosts the soak adds included);
- no counter goes down (a series that left a scrape and came back is a new series);
- esxi_vsphere_up is 0 only while the simulator is down or stalled, or within RETURN of its
  return (or of the start); a crash of the simulator (the driver starts it again) is a down time
  like a planned restart, and the crash itself a failure of the simulator, reported apart;
- the exporter's log has no traceback, and no ERROR or WARNING line logged again for the same
  cause (the same text, figures aside) more often than the simulator was disturbed, plus once.

Under --vsan: every host of a vSAN cluster, connected and not in maintenance, has its per-host vSAN
series (esxi_vsan_host_info, which the vSAN source exports for every host its discovery names)
within two vSAN intervals, and none outlives its host. Under --ssh: the esxtop-over-SSH host
(SshHost) has esxi_esxtop_up 0 only while its session is down or within SSH_RETURN of its return,
and its LUN and SMART series at every scrape outside that time.

The inventory is what the driver read from the simulator just before and just after each change;
objects are not judged while the simulator is down or stalled, nor until RETURN after (the
exporter is back within a minute, and its series then cover the GRACE before).
"""

from __future__ import annotations

import bisect
import re
import threading
from collections import Counter
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

INTERVAL = 20.0  # --vsphere.interval's default
GRACE = 2 * INTERVAL + 5.0  # two collection intervals; 5 s for the check's own reads on a shared machine
RETURN = 60.0  # esxi_vsphere_up is 1 again within a minute of the simulator's return
# --ssh: esxi_esxtop_up is 1 again, and the host's series are back, within SSH_RETURN of sshd's
# return. The exporter retries a session 1 s after one that delivered, then doubles the wait
# (jitter +-20 %, --esxtop.ssh-backoff-max 60 s): after sshd is down D seconds (at most 10 in the
# soak, bench/soak_ssh.py), the next attempt comes within 2 D x 1.2 = 24 s of its return; then the
# header and a first row (esxtop -d 5 s: 10 s). SMART (esxi_disk_smart_up 1 again) takes the next
# round: within SMART_INTERVAL and 10 s for the round. And 5 s for the check's own reads.
SMART_INTERVAL = 30.0  # --smart.interval in the soak (default 1 h): several rounds between two drops


def ssh_return(smart_interval: float = SMART_INTERVAL) -> float:
    return max(2 * 10.0 * 1.2 + 2 * 5.0, smart_interval + 10.0) + 5.0


SSH_RETURN = ssh_return()

# What vCenter says of a host it still lists, whether or not it can be read (issue 36).
STATE = {"esxi_host_connection_state", "esxi_host_maintenance_mode"}


class Inventory:
    """Snapshots of the simulator's inventory: (monotonic time, set of keys), in time order."""

    def __init__(self):
        self.lock = threading.Lock()
        self.times: list[float] = []
        self.keys: list[frozenset] = []

    def record(self, at: float, keys: frozenset) -> None:
        with self.lock:
            self.times.append(at)
            self.keys.append(keys)

    def between(self, start: float, end: float) -> list[frozenset] | None:
        """Every snapshot in effect in [start, end] (the one before start included); None if none
        was taken before start."""
        with self.lock:
            first = bisect.bisect_right(self.times, start) - 1
            if first < 0:
                return None
            last = bisect.bisect_right(self.times, end)
            return self.keys[first:last]


def inventory_keys(vms, hosts, datastores, vsan_members=()) -> frozenset:
    """The keys of the objects that must have series: every host vCenter lists ("host": its state);
    every connected host ("host_data": its LUNs, paths, configuration, samples; "esxcli": its last
    esxcli refresh succeeded, esxi_esxcli_up 1, as every host the soak adds answers it); every powered-on VM
    of a connected host ("vm"); every datastore a connected host mounts ("ds"); every host of a vSAN
    cluster, connected and not in maintenance ("vsan_member": its vSAN series, judged on the vSAN
    interval). vms: (name, power state, host name); hosts: (name, connection state);
    datastores: (name, [(host name, mounted and accessible)]); vsan_members: host names."""
    connected = {name for name, state in hosts if state == "connected"}
    keys = {("host", name) for name, _ in hosts} | {("host_data", name) for name in connected}
    keys |= {("esxcli", name) for name in connected}
    keys |= {("vsan_member", name) for name in vsan_members if name in connected}
    keys |= {("vm", host, name) for name, power, host in vms if power == "poweredOn" and host in connected}
    keys |= {("ds", host, name) for name, mounts in datastores for host, ok in mounts if ok and host in connected}
    return frozenset(keys)


def scrape_keys(samples) -> set:
    """The objects a scrape has series of, keyed as inventory_keys keys them."""
    keys = set()
    for name, labels, value in samples:
        host = labels.get("host")
        if host is None:
            continue
        if name == "esxi_esxcli_up" and value == 1:
            keys.add(("esxcli", host))
        if name in STATE:
            keys.add(("host", host))
        elif name.startswith("esxi_vsan_"):
            keys.add(("vsan_host", host))
        elif name.startswith("esxi_vm") and "vm" in labels:
            keys.add(("vm", host, labels["vm"]))
        elif name.startswith("esxi_datastore") and "datastore" in labels:
            keys.add(("ds", host, labels["datastore"]))
        else:
            keys.add(("host_data", host))
    return keys


def parse(body: str):
    """(samples as (name, labels, value), names of the counter families)."""
    samples, counters = [], set()
    for family in text_string_to_metric_families(body):
        if family.type == "counter":
            counters.add(family.name)
        for s in family.samples:
            samples.append((s.name, s.labels, s.value))
    return samples, counters


_FIGURE = re.compile(r"(?<![\w.-])\d+(?:\.\d+)*")
_PREFIX = re.compile(r"^\S+ \S+ (ERROR|WARNING|CRITICAL) ")


def cause(line: str) -> tuple[str, str] | None:
    """(level, the line without its time and figures) of an ERROR or WARNING line, else None."""
    m = _PREFIX.match(line)
    if not m:
        return None
    return m.group(1), _FIGURE.sub("#", line[m.end() :].strip())


class SshHost:
    """The esxtop-over-SSH host that `serve` follows beside the vSphere target (--ssh): its target
    label (esxi_esxtop_up's host), the name its esxtop header gives (its series' host), the devices
    its esxtop shows and those whose SMART state it reports, and when its session was down
    (a Timeline of its own: an SSH drop excuses nothing of the vSphere target's)."""

    def __init__(self, target: str, host: str, devices, smart_devices, timeline, bound: float = SSH_RETURN):
        self.target, self.host, self.timeline, self.bound = target, host, timeline, bound
        self.devices, self.smart_devices = tuple(devices), tuple(smart_devices)

    def required(self) -> set:
        return {("lun", d) for d in self.devices} | {("smart", d) for d in self.smart_devices} | {("smart_up",)}


def ssh_keys(samples, ssh: SshHost) -> tuple[set, list[float]]:
    """(the SSH host's objects a scrape has series of, its esxi_esxtop_up values)."""
    keys, ups = set(), []
    for name, labels, value in samples:
        host = labels.get("host")
        if name == "esxi_esxtop_up" and host == ssh.target:
            ups.append(value)
        elif host != ssh.host:
            continue
        elif name == "esxi_lun_queue_depth" and "device" in labels:
            keys.add(("lun", labels["device"]))
        elif name == "esxi_disk_smart_status" and "device" in labels:
            keys.add(("smart", labels["device"]))
        elif name == "esxi_disk_smart_up" and value == 1:
            keys.add(("smart_up",))
    return keys, ups


class Checks:
    def __init__(self, inventory: Inventory, log: Path, timeline, vsan_interval: float = 300.0, ssh: SshHost | None = None):
        self.inventory = inventory
        self.ssh = ssh
        self.vsan_grace = 2 * vsan_interval + 5.0
        self.log = log
        self.timeline = timeline
        self.previous: dict = {}  # (name, labels) -> value, counters of the last scrape
        self.log_offset = 0
        self.logged: Counter = Counter()
        self.reported: set = set()  # failures already reported once (a lasting one is one failure)
        self.judged = 0  # objects judged present or absent, over the run: the checks are not vacuous
        self.judged_scrapes = 0  # scrapes whose objects were judged
        self.vsan_members_judged = 0  # --vsan: vSAN hosts required to have their vSAN series, over the run
        self.ssh_judged_scrapes = 0  # --ssh: scrapes at which the SSH host was judged

    def scrape(self, at: float, body: str) -> tuple[list[str], int]:
        """The failed checks of the scrape taken at `at` (monotonic), and its number of series."""
        self.timeline.wait_settled(at)  # a crash just before the scrape known before it is judged
        samples, counters = parse(body)
        failed = self.objects(at, samples) + self.counters(samples, counters) + self.up(at, samples)
        failed += self.ssh_host(at, samples) + self.lines()
        return failed, len(samples)

    def objects(self, at: float, samples) -> list[str]:
        if self.timeline.disturbed_between(at - GRACE, at, after=RETURN - GRACE):
            return []  # judged from RETURN after the simulator's return: the exporter is back by then
        snapshots = self.inventory.between(at - GRACE, at)
        if not snapshots:
            return []
        present = scrape_keys(samples)
        if self.ssh is not None:  # the SSH host's series: judged by ssh_host
            present = {k for k in present if k[1] not in (self.ssh.host, self.ssh.target)}
        vsan = {k for k in present if k[0] == "vsan_host"}
        present -= vsan
        required = frozenset(k for k in frozenset.intersection(*snapshots) if k[0] != "vsan_member")
        recent = frozenset(k for k in frozenset.union(*snapshots) if k[0] != "vsan_member")
        self.judged += len(required | present)
        self.judged_scrapes += 1
        failed = [f"missing: {' '.join(k)} (in the inventory for {GRACE:.0f}s)" for k in sorted(required - present)]
        failed += [f"outlived: {' '.join(k)} (gone from the inventory for {GRACE:.0f}s)" for k in sorted(present - recent)]
        return failed + self.vsan_hosts(at, vsan)

    def vsan_hosts(self, at: float, vsan: set) -> list[str]:
        """vSAN's series of a host (read every vSAN interval, from the cluster's services): none for a
        host vCenter has not listed for two vSAN intervals; and esxi_vsan_host_info for every host
        that was a connected vSAN host out of maintenance for all of the last two vSAN intervals."""
        if self.timeline.disturbed_between(at - self.vsan_grace, at, after=RETURN - GRACE):
            return []
        snapshots = self.inventory.between(at - self.vsan_grace, at)
        if not snapshots:
            return []
        listed = {k[1] for k in frozenset.union(*snapshots) if k[0] == "host"}
        members = {k[1] for k in frozenset.intersection(*snapshots) if k[0] == "vsan_member"}
        present = {host for _, host in vsan}
        self.judged += len(present | members)
        self.vsan_members_judged += len(members)
        failed = [
            f"missing: vSAN series of {host} (a vSAN host for {self.vsan_grace:.0f}s)" for host in sorted(members - present)
        ]
        return failed + [
            f"outlived: vSAN series of {host} (gone from vCenter for {self.vsan_grace:.0f}s)"
            for host in sorted(present)
            if host not in listed
        ]

    def counters(self, samples, counters) -> list[str]:
        now = {}
        failed = []
        for name, labels, value in samples:
            if name.endswith("_total") and name[: -len("_total")] in counters:
                key = (name, tuple(sorted(labels.items())))
                now[key] = value
                before = self.previous.get(key)
                if before is not None and value < before:
                    failed.append(f"counter down: {name}{dict(labels)} {before} -> {value}")
        self.previous = now
        return failed

    def up(self, at: float, samples) -> list[str]:
        ups = [value for name, _, value in samples if name == "esxi_vsphere_up"]
        if ups and min(ups) == 0 and not self.timeline.disturbed_between(at, at):
            return ["esxi_vsphere_up 0 while the simulator answers (longer than a minute after a return)"]
        return []

    def ssh_host(self, at: float, samples) -> list[str]:
        """--ssh: esxi_esxtop_up 0 only while the session is down or within SSH_RETURN of its
        return (or of the start); the host's LUN and SMART series present outside that time."""
        if self.ssh is None:
            return []
        keys, ups = ssh_keys(samples, self.ssh)
        if self.ssh.timeline.disturbed_between(at, at, after=self.ssh.bound):
            return []
        self.judged += len(self.ssh.required())
        self.ssh_judged_scrapes += 1
        failed = []
        if not ups:
            failed.append(f"missing: esxi_esxtop_up of {self.ssh.target}")
        elif min(ups) == 0:
            failed.append(f"esxi_esxtop_up 0 while the SSH session is up (longer than {self.ssh.bound:.0f}s after a return)")
        missing = sorted(self.ssh.required() - keys)
        failed += [f"missing: {' '.join(k)} of SSH host {self.ssh.host} ({self.ssh.bound:.0f}s after a return)" for k in missing]
        return failed

    def lines(self) -> list[str]:
        """New lines of the exporter's log: a traceback, or a cause logged once too often."""
        with open(self.log, "rb") as f:
            f.seek(self.log_offset)
            data = f.read()
        end = data.rfind(b"\n") + 1  # whole lines only
        self.log_offset += end
        failed = []
        allowed = self.timeline.disturbances() + (self.ssh.timeline.disturbances() if self.ssh else 0) + 1
        for raw in data[:end].decode(errors="replace").splitlines():
            if raw.startswith("Traceback"):
                failed.append(f"traceback in the log after: {self.last_line[:200]}")
            self.last_line = raw
            found = cause(raw)
            if found is None:
                continue
            self.logged[found] += 1
            if self.logged[found] > allowed and found not in self.reported:
                self.reported.add(found)
                failed.append(f"{found[0]} logged {self.logged[found]} times for {allowed - 1} disturbances: {found[1][:200]}")
        return failed

    last_line = ""
