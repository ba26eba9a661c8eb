"""The churn soak's checks (bench/soak_checks.py) catch what they are for: an object without its
series, a series outliving its object, a counter going down, esxi_vsphere_up 0 while the
simulator answers, a traceback and a cause logged again and again; and a disturbance of the
simulator excuses what it should, no more."""

from __future__ import annotations

from bench.soak_checks import GRACE, RETURN, SSH_RETURN, Checks, Inventory, cause, inventory_keys
from bench.soak_driver import Timeline

T0 = 1000.0
HOSTS = [("esx01", "connected"), ("esx02", "disconnected")]
VMS = [("db01", "poweredOn", "esx01"), ("old01", "poweredOff", "esx01"), ("app01", "poweredOn", "esx02")]
DATASTORES = [("ds1", [("esx01", True), ("esx02", True)])]


def body(*extra: str, up: int = 1, reads: float = 5.0) -> str:
    lines = [
        "# TYPE esxi_vsphere_up gauge",
        f'esxi_vsphere_up{{target="vc"}} {up}',
        "# TYPE esxi_host_connection_state gauge",
        'esxi_host_connection_state{host="esx01",state="connected"} 1',
        'esxi_host_connection_state{host="esx02",state="disconnected"} 1',
        "# TYPE esxi_host_info gauge",
        'esxi_host_info{host="esx01"} 1',
        "# TYPE esxi_esxcli_up gauge",
        'esxi_esxcli_up{host="esx01"} 1',
        "# TYPE esxi_vm_reads counter",
        f'esxi_vm_reads_total{{host="esx01",vm="db01"}} {reads}',
        "# TYPE esxi_datastore_info gauge",
        'esxi_datastore_info{host="esx01",datastore="ds1"} 1',
        *extra,
    ]
    return "\n".join(lines) + "\n"


def checks(tmp_path, log: str = "") -> Checks:
    inventory = Inventory()
    inventory.record(T0, inventory_keys(VMS, HOSTS, DATASTORES))
    path = tmp_path / "exporter.log"
    path.write_text(log)
    timeline = Timeline(T0 - 10 * RETURN)  # started long ago: no disturbance
    return Checks(inventory, path, timeline)


def test_the_inventory_keys_judge_connected_hosts_running_vms_and_mounts():
    keys = inventory_keys(VMS, HOSTS, DATASTORES)
    assert keys == {
        ("host", "esx01"), ("host", "esx02"), ("host_data", "esx01"), ("esxcli", "esx01"), ("vm", "esx01", "db01"),
        ("ds", "esx01", "ds1"),
    }  # fmt: skip


def test_a_scrape_that_matches_the_inventory_passes(tmp_path):
    c = checks(tmp_path)
    failed, series = c.scrape(T0 + GRACE + 1, body())
    assert failed == [] and series == 7 and c.judged == 6


def test_an_object_without_its_series_and_a_series_without_its_object_fail(tmp_path):
    c = checks(tmp_path)
    text = body('esxi_vm_reads_total{host="esx01",vm="gone01"} 1').replace('esxi_host_info{host="esx01"} 1\n', "")
    text = text.replace('esxi_datastore_info{host="esx01",datastore="ds1"} 1\n', "")
    text = text.replace('esxi_esxcli_up{host="esx01"} 1\n', "")
    failed, _ = c.scrape(T0 + GRACE + 1, text)
    assert failed == [
        "missing: ds esx01 ds1 (in the inventory for 45s)",
        "missing: esxcli esx01 (in the inventory for 45s)",
        "missing: host_data esx01 (in the inventory for 45s)",
        "outlived: vm esx01 gone01 (gone from the inventory for 45s)",
    ]


def test_an_object_is_judged_only_once_in_the_inventory_for_the_grace(tmp_path):
    c = checks(tmp_path)
    c.inventory.record(T0 + 30, inventory_keys(VMS + [("new01", "poweredOn", "esx01")], HOSTS, DATASTORES))
    assert c.scrape(T0 + 40, body())[0] == []  # new01 is 10 s old: not yet required
    failed, _ = c.scrape(T0 + 30 + GRACE + 1, body())
    assert failed == ["missing: vm esx01 new01 (in the inventory for 45s)"]


def test_a_connected_host_whose_esxcli_fails_or_is_not_read_fails(tmp_path):
    c = checks(tmp_path)
    failing = body().replace('esxi_esxcli_up{host="esx01"} 1', 'esxi_esxcli_up{host="esx01"} 0')
    assert c.scrape(T0 + GRACE + 1, failing)[0] == ["missing: esxcli esx01 (in the inventory for 45s)"]
    unread = body().replace('esxi_esxcli_up{host="esx01"} 1\n', "")
    assert c.scrape(T0 + GRACE + 16, unread)[0] == ["missing: esxcli esx01 (in the inventory for 45s)"]


def test_a_counter_going_down_fails_unless_its_series_left_between(tmp_path):
    c = checks(tmp_path)
    assert c.scrape(T0 + GRACE + 1, body(reads=9.0))[0] == []
    failed, _ = c.scrape(T0 + GRACE + 16, body(reads=3.0))
    assert failed == ["counter down: esxi_vm_reads_total{'host': 'esx01', 'vm': 'db01'} 9.0 -> 3.0"]


def test_up_zero_fails_only_beyond_a_minute_after_a_disturbance(tmp_path):
    c = checks(tmp_path)
    span = c.timeline.begin("restart", T0 + 100)
    assert c.scrape(T0 + 110, body(up=0))[0] == []  # down
    c.timeline.end(span, T0 + 120)
    assert c.scrape(T0 + 120 + RETURN - 1, body(up=0))[0] == []  # returned under a minute ago
    failed, _ = c.scrape(T0 + 120 + RETURN + 1, body(up=0))
    assert failed == ["esxi_vsphere_up 0 while the simulator answers (longer than a minute after a return)"]


def test_objects_are_not_judged_while_the_simulator_is_disturbed(tmp_path):
    c = checks(tmp_path)
    span = c.timeline.begin("stall", T0 + 100)
    without = body().replace('esxi_host_info{host="esx01"} 1\n', "").replace('esxi_esxcli_up{host="esx01"} 1\n', "")
    assert c.scrape(T0 + 110, without)[0] == []
    c.timeline.end(span, T0 + 140)
    assert c.scrape(T0 + 140 + RETURN, without)[0] == []
    failed, _ = c.scrape(T0 + 140 + RETURN + GRACE + 1, without)
    assert failed == ["missing: esxcli esx01 (in the inventory for 45s)", "missing: host_data esx01 (in the inventory for 45s)"]


def test_a_traceback_and_a_cause_logged_again_and_again_fail(tmp_path):
    warning = "2026-11-28 02:33:51,112 WARNING exporter.vsphere.source: target vc: collection took {}s\n"
    log = warning.format("27.0") + warning.format("31.5") + "Traceback (most recent call last):\n"
    c = checks(tmp_path, log)
    failed, _ = c.scrape(T0 + GRACE + 1, body())
    assert failed == [
        "WARNING logged 2 times for 0 disturbances: exporter.vsphere.source: target vc: collection took #s",
        "traceback in the log after: " + warning.format("31.5").strip(),
    ]
    c.timeline.begin("expire", T0 + 50)
    (tmp_path / "exporter.log").open("a").write(warning.format("9"))
    assert c.scrape(T0 + GRACE + 16, body())[0] == []  # reported once, not at every scrape


def test_a_cause_keeps_object_names_and_drops_figures():
    line = "2026-11-28 02:33:51,112 ERROR x: host soak-esx12.lab.local took 12.5s, 3 tries"
    assert cause(line) == ("ERROR", "x: host soak-esx12.lab.local took #s, # tries")
    assert cause("2026-11-28 02:33:51,112 INFO x: fine") is None


def test_vsan_series_of_a_host_gone_from_vcenter_fail_after_two_vsan_intervals(tmp_path):
    c = checks(tmp_path)
    c.vsan_grace = 125.0
    c.inventory.record(T0 + 100, inventory_keys(VMS, HOSTS[:1], DATASTORES))  # esx02 removed at T0 + 100
    vsan = 'esxi_vsan_host_info{cluster="c1",host="esx02"} 1'
    text = body(vsan).replace('esxi_host_connection_state{host="esx02",state="disconnected"} 1\n', "")
    assert c.scrape(T0 + 200, text)[0] == []  # gone 100 s: vSAN is read every minute
    failed, _ = c.scrape(T0 + 100 + 126, text)
    assert failed == ["outlived: vSAN series of esx02 (gone from vCenter for 125s)"]


def test_a_vsan_host_without_its_vsan_series_for_two_vsan_intervals_fails(tmp_path):
    c = checks(tmp_path)
    c.vsan_grace = 125.0
    # esx02 is disconnected: a vSAN host, but not required; esx01 is required once a vSAN host for 125 s
    c.inventory.record(T0 + 100, inventory_keys(VMS, HOSTS, DATASTORES, vsan_members=["esx01", "esx02"]))
    assert ("vsan_member", "esx02") not in c.inventory.keys[-1]
    assert c.scrape(T0 + 200, body())[0] == []  # a vSAN host for 100 s: not yet required
    failed, _ = c.scrape(T0 + 100 + 126, body())
    assert failed == ["missing: vSAN series of esx01 (a vSAN host for 125s)"]
    vsan = 'esxi_vsan_host_info{cluster="c1",host="esx01",node_uuid="u1"} 1'
    assert c.scrape(T0 + 100 + 141, body(vsan))[0] == []


def test_a_vsan_host_that_left_maintenance_or_the_cluster_within_the_grace_is_not_required(tmp_path):
    c = checks(tmp_path)
    c.vsan_grace = 125.0
    c.inventory.record(T0 + 100, inventory_keys(VMS, HOSTS, DATASTORES, vsan_members=["esx01"]))
    c.inventory.record(T0 + 150, inventory_keys(VMS, HOSTS, DATASTORES))  # into maintenance at T0 + 150
    assert c.scrape(T0 + 300, body())[0] == []


def ssh_checks(tmp_path):
    from bench.soak_checks import SshHost

    c = checks(tmp_path)
    c.ssh = SshHost("127.0.0.1", "esx-sim", ["naa.1"], ["t10.A"], Timeline(T0 - 10 * SSH_RETURN))
    return c


def ssh_body(up: int = 1, lun: bool = True, smart: bool = True) -> str:
    lines = ["# TYPE esxi_esxtop_up gauge", f'esxi_esxtop_up{{host="127.0.0.1"}} {up}']
    if lun:
        lines += ["# TYPE esxi_lun_queue_depth gauge", 'esxi_lun_queue_depth{host="esx-sim",device="naa.1"} 32']
    if smart:
        lines += [
            "# TYPE esxi_disk_smart_up gauge",
            'esxi_disk_smart_up{host="esx-sim"} 1',
            "# TYPE esxi_disk_smart_status gauge",
            'esxi_disk_smart_status{host="esx-sim",device="t10.A",status="ok"} 1',
        ]
    return body(*lines)


def test_the_ssh_hosts_series_are_judged_apart_from_the_vsphere_inventory(tmp_path):
    c = ssh_checks(tmp_path)
    failed, _ = c.scrape(T0 + GRACE + 1, ssh_body())
    assert failed == []  # esx-sim and 127.0.0.1 are no vSphere objects: not "outlived"
    failed, _ = c.scrape(T0 + GRACE + 16, ssh_body(lun=False, smart=False))
    assert failed == [
        f"missing: lun naa.1 of SSH host esx-sim ({SSH_RETURN:.0f}s after a return)",
        f"missing: smart t10.A of SSH host esx-sim ({SSH_RETURN:.0f}s after a return)",
        f"missing: smart_up of SSH host esx-sim ({SSH_RETURN:.0f}s after a return)",
    ]


def test_esxtop_up_zero_fails_only_beyond_the_bound_after_the_session_returns(tmp_path):
    c = ssh_checks(tmp_path)
    span = c.ssh.timeline.begin("ssh_stop", T0 + 100)
    assert c.scrape(T0 + 105, ssh_body(up=0, lun=False))[0] == []  # sshd is down
    c.ssh.timeline.end(span, T0 + 110)
    assert c.scrape(T0 + 110 + SSH_RETURN - 1, ssh_body(up=0, lun=False))[0] == []  # back under the bound
    failed, _ = c.scrape(T0 + 110 + SSH_RETURN + 1, ssh_body(up=0))
    assert failed == [f"esxi_esxtop_up 0 while the SSH session is up (longer than {SSH_RETURN:.0f}s after a return)"]
    assert c.timeline.disturbed_between(T0 + 100, T0 + 110) is False  # an SSH drop excuses nothing of vSphere's


def test_an_ssh_drop_allows_its_warning_once_more(tmp_path):
    warning = "2026-11-28 02:33:51,112 WARNING exporter.esxtop.ssh: esxtop ssh 127.0.0.1: connection closed\n"
    c = ssh_checks(tmp_path)
    (tmp_path / "exporter.log").write_text(warning)
    c.ssh.timeline.begin("ssh_kill", T0 + 10)
    assert c.scrape(T0 + GRACE + 1, ssh_body())[0] == []
    (tmp_path / "exporter.log").open("a").write(warning)
    assert c.scrape(T0 + GRACE + 16, ssh_body())[0] == []  # two drops' worth: the start and one kill
    (tmp_path / "exporter.log").open("a").write(warning)
    failed, _ = c.scrape(T0 + GRACE + 31, ssh_body())
    assert failed == ["WARNING logged 3 times for 1 disturbances: exporter.esxtop.ssh: esxtop ssh #: connection closed"]


# --- a crash of the simulator: excused like a restart, reported apart --------------------------------
CRASH = "100s the simulator died (exit 2: panic: interface conversion: mo.Reference is nil, not *simulator.HostSystem)"


def test_a_crash_of_the_simulator_excuses_up_zero_like_a_restart_and_no_longer(tmp_path):
    c = checks(tmp_path)
    span = c.timeline.crash(T0 + 100, CRASH)  # last seen running at T0 + 100
    assert c.scrape(T0 + 110, body(up=0))[0] == []  # down: the exporter cannot be up
    c.timeline.end(span, T0 + 120)  # the driver started it again
    assert c.scrape(T0 + 120 + RETURN - 1, body(up=0))[0] == []  # the same minute's grace as a restart
    failed, _ = c.scrape(T0 + 120 + RETURN + 1, body(up=0))
    assert failed == ["esxi_vsphere_up 0 while the simulator answers (longer than a minute after a return)"]
    assert c.timeline.crashes == [CRASH] and c.timeline.kinds == {"crash": 1}


def test_a_scrape_waits_for_the_watch_to_know_of_a_crash_just_before_it(tmp_path):
    """The driver's watch looks at the simulator every 0.1 s: a scrape taken just after a crash is
    judged once the watch has looked (else its up 0 was the exporter's fault, as in the 30-minute
    soak at seed 45, where the driver found the crash seconds after the scrape)."""
    import threading

    c = checks(tmp_path)
    c.timeline.settle(T0 + 105)
    spans = []

    def watch_finds_the_crash():
        spans.append(c.timeline.crash(T0 + 105, CRASH))
        c.timeline.settle(T0 + 111)

    threading.Timer(0.3, watch_finds_the_crash).start()
    assert c.scrape(T0 + 110, body(up=0))[0] == []
    c.timeline.end(spans[0], T0 + 120)
    # with no crash the wait ends too (the watch looked), and up 0 is the exporter's
    c.timeline.settle(T0 + 10 * RETURN)
    failed, _ = c.scrape(T0 + 9 * RETURN, body(up=0))
    assert failed == ["esxi_vsphere_up 0 while the simulator answers (longer than a minute after a return)"]


def test_the_soak_reports_a_crash_as_the_simulators_failure_apart_from_the_checks():
    from bench.soak_vsphere import report

    summary = {
        "events": {"done": {"restart": 1}, "refused": {}}, "objects_judged": 40, "scrapes_judged": 4,
        "vsan": False, "ssh": False, "failures": [], "simulator_failures": [CRASH],
    }  # fmt: skip
    lines: list[str] = []
    report(summary, lines.append)
    assert lines[1].endswith("failed checks: 0")  # the exporter's: none
    assert lines[2:] == ["simulator failures (not the exporter's): 1", f"  {CRASH}"]


class _Process:
    """A stand-in for the simulator that a test's own process plays: it runs, or dies saying a panic."""

    def __init__(self, tmp, die: bool):
        import subprocess
        import sys

        self.log = open(tmp / f"sim-{die}.log", "wb")
        code = (
            "import sys, time; print('panic: boom', file=sys.stderr, flush=True); sys.exit(2)"
            if die
            else "import time; time.sleep(30)"
        )
        self.proc = subprocess.Popen([sys.executable, "-c", code], stderr=self.log)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.log.close()


def test_the_drivers_watch_finds_a_crash_and_takes_a_planned_stop_for_none(tmp_path):
    import threading
    import time

    from bench.soak_driver import Driver

    class Sim:  # bench/soak_driver.py's Simulator, as the watch reads it
        sim = None

    sim = Sim()
    driver = Driver(sim, proxy=None, inventory=Inventory(), seed=1, every=1.0, duration=60.0)
    stop = threading.Event()
    watch = threading.Thread(target=driver._watch, args=(stop,))
    watch.start()
    try:
        sim.sim = _Process(tmp_path, die=False)
        time.sleep(0.3)
        planned, sim.sim = sim.sim, None  # a planned stop: None first, as Simulator.stop does
        planned.stop()
        time.sleep(0.3)
        assert driver.timeline.crashes == [] and driver.crash_span is None
        sim.sim = _Process(tmp_path, die=True)
        assert driver._crashed(wait=5.0)
        assert driver.crash_span[1] is None  # down until the driver starts it again
        assert len(driver.crashes) == 1 and "died (exit 2: panic: boom;" in driver.crashes[0], driver.crashes
        assert driver.timeline.settled is not None and driver.timeline.settled >= driver.crash_span[0]
    finally:
        stop.set()
        watch.join(5)
        sim.sim.stop()


def test_a_failed_change_is_the_crashs_an_object_gone_or_the_drivers_own(tmp_path):
    from pyVmomi import vmodl

    from bench.soak_driver import Driver

    driver = Driver(object(), proxy=None, inventory=Inventory(), seed=1, every=1.0, duration=60.0)
    driver.action = "host_remove"
    gone = vmodl.fault.ManagedObjectNotFound(msg="The object has already been deleted or has not been completely created")
    driver._failed(gone, 12.0, wait=0.0)
    assert driver.refused == {"host_remove_object_gone": 1} and driver.errors == []
    driver._failed(ValueError("a bug of the driver"), 13.0, wait=0.0)
    assert driver.errors == ["13s driver: ValueError: a bug of the driver"]
    driver.crash_span = driver.timeline.crash(T0, CRASH)
    driver._failed(ConnectionResetError("reset"), 14.0, wait=0.0)  # the crash's doing: said with it
    assert len(driver.errors) == 1
    assert driver.crashes == [CRASH + "; the driver's host_remove failed with it (ConnectionResetError)"]


def test_the_flatness_line_reads_rss_at_minute_10_and_the_end_and_cpu_against_its_median():
    from bench.soak_vsphere import flatness

    windows = [
        {"minute": 5.0, "rss_mib": 101.4, "cpu_s": 1.9},
        {"minute": 10.0, "rss_mib": 101.6, "cpu_s": 1.8},
        {"minute": 15.0, "rss_mib": 101.6, "cpu_s": 1.5},
        {"minute": 20.0, "rss_mib": 50.7, "cpu_s": 2.4},
    ]
    assert flatness(windows) == (
        "flatness: RSS minute 10 -> end: 101.6 -> 50.7 MiB (-50 %); "
        "CPU a window: median 1.85 s, 1.50-2.40 (-19 % / +30 %); first half 1.85, second half 1.95 s a window (+5 %)"
    )
    assert flatness(windows[:1]) == "flatness: fewer than two windows"


def test_a_window_names_the_disturbances_begun_in_it_and_its_table_row_its_walks_and_load():
    from bench.soak_vsphere import markdown

    timeline = Timeline(T0)
    timeline.begin("restart", T0 + 10)
    timeline.begin("expire", T0 + 299.9)
    timeline.begin("stall", T0 + 300)  # the next window's: a window is [start, end)
    timeline.begin("stall", T0 + 420)
    assert timeline.begun_between(T0, T0 + 300) == {"restart": 1, "expire": 1}
    assert timeline.begun_between(T0 + 300, T0 + 600) == {"stall": 2}
    assert timeline.begun_between(T0 + 600, T0 + 900) == {}

    window = {"minute": 5.0, "rss_mib": 49.1, "cpu_s": 4.2, "series": 2500, "scrape_s_median": 0.004,
              "scrape_s_max": 0.03, "requests": 900, "bytes": 4 * 2**20, "failed": 0}  # fmt: skip
    table = markdown({"windows": [
        {**window, "walks": 2.0, "disturbances": {"restart": 1, "expire": 1}, "load1": 1.37},
        {**window, "minute": 10.0, "walks": 0.0, "disturbances": {"stall": 2}, "load1": 0.9},
        window,  # a summary written before walks, disturbances and load were kept
    ]})  # fmt: skip
    rows = table.splitlines()[2:]
    assert rows[0] == "| 5.0 | 49.1 | 4.2 | 2500 | 0.004 / 0.03 | 900 | 4.0 | 2 | expire, restart | 1.37 | 0 |"
    assert rows[1] == "| 10.0 | 49.1 | 4.2 | 2500 | 0.004 / 0.03 | 900 | 4.0 | 0 | 2 stall | 0.9 | 0 |"
    assert rows[2] == "| 5.0 | 49.1 | 4.2 | 2500 | 0.004 / 0.03 | 900 | 4.0 | - | - | - | 0 |"


def test_the_busiest_spans_are_the_minutes_with_the_most_cpu_none_overlapping():
    from bench.soak_vsphere import busiest

    cpu_at = [(15.0 * i, 0.2 * i) for i in range(20)]  # 0.8 s a minute
    cpu_at = [(t, cpu + (3.0 if t >= 150 else 0.0)) for t, cpu in cpu_at]  # 3 s between 135 and 150 s
    assert busiest(cpu_at, top=2) == "busiest: 0-60 s 0.80 s CPU; 90-150 s 3.80 s CPU"
    assert busiest(cpu_at[:1]) == "busiest: fewer than two scrapes a span apart"
