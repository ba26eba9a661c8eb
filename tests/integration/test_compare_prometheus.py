"""compare --prometheus: the same verdicts from the stored history as from the captures.

Captures are backfilled with the project's own `backfill` at known times into a real Prometheus
(and imported into a real VictoriaMetrics), then `compare --prometheus` on their ranges is held
against `compare` on the captures themselves.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from exporter.analysis import history
from exporter.analysis import stats as st
from exporter.analysis.backfill import create_blocks
from exporter.analysis.capture import load
from tests.support.analysis_captures import DEVICE, Setup, write
from tests.support.cli import run_cli
from tests.support.servers import Prometheus, VictoriaMetrics

pytestmark = pytest.mark.integration

HOUR = 3600.0
T0 = float(int(time.time() - 14 * HOUR))  # every capture lies in the last 14 hours
# name -> (setup, seed, start, run label). 720 samples 5 s apart: one hour each.
CAPTURES = {
    "dqlen32": (Setup(dqlen=32), 11, T0, "before"),
    "dqlen64": (Setup(dqlen=64), 12, T0 + 2 * HOUR, "after"),
    "steady1": (Setup(), 21, T0 + 4 * HOUR, "steady1"),
    "steady2": (Setup(), 22, T0 + 6 * HOUR, "steady2"),
    "slow": (Setup(service_ms=10.0), 23, T0 + 8 * HOUR, "slow"),
    # a tuning session the exporter saw live: one series, DQLEN 32 then 64 from TUNED on
    "tuning-before": (Setup(dqlen=32), 31, T0 + 10 * HOUR, "lab"),
    "tuning-after": (Setup(dqlen=64), 32, T0 + 11 * HOUR, "lab"),
}
TUNED = T0 + 11 * HOUR  # the first sample of tuning-after
HOST = "esx01.lab.local"


def window(name: str) -> str:
    """The capture's range, a second either side."""
    start = CAPTURES[name][2]
    return f"{start - 1:.0f}/{HOUR + 2:.0f}s"


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """Every capture written, backfilled into one Prometheus and imported into one VictoriaMetrics."""
    tmp = tmp_path_factory.mktemp("history")
    files, openmetrics = {}, []
    data = tmp / "prom" / "data"
    for name, (setup, seed, start, run) in CAPTURES.items():
        files[name] = write(tmp / f"{name}.csv", setup, seed=seed, samples=720, start=start)
        kept = tmp / f"{name}.om"
        done = run_cli("backfill", files[name], "--tsdb", data, "--run", run, "--keep-openmetrics", kept)
        assert done.returncode == 0, done.stderr
        openmetrics.append(kept)
    settings = tmp / "settings.om"
    settings.write_text(settings_history())
    create_blocks(settings, data)
    openmetrics.append(settings)
    prom = Prometheus(tmp / "prom", [], args=("--storage.tsdb.retention.time=100y",))
    vm = None
    if shutil.which("victoria-metrics"):
        vm = VictoriaMetrics(tmp / "vm")
        for path in openmetrics:
            import_into_victoriametrics(vm.url, path)
        urllib.request.urlopen(vm.url + "/internal/force_flush", timeout=30).close()
    try:
        yield {"files": files, "prometheus": prom.url, "victoriametrics": vm.url if vm else None, "tmp": tmp}
    finally:
        prom.stop()
        if vm:
            vm.stop()


def settings_history() -> str:
    """What esxcli reported through the tuning session, every 20 s: DSNRO 32 and MRU, then from
    TUNED on DSNRO 64 and round robin (the MRU series stops, a new one starts)."""
    labels = f'host="{HOST}",device="{DEVICE}"'
    stamps = np.arange(T0 + 10 * HOUR, T0 + 12 * HOUR, 20.0)
    lines = ["# TYPE esxi_lun_dsnro gauge"]
    lines += [f"esxi_lun_dsnro{{{labels}}} {32 if t < TUNED else 64} {t:.3f}" for t in stamps]
    lines.append("# TYPE esxi_lun_multipath_info gauge")
    for psp, keep in (("VMW_PSP_MRU", stamps < TUNED), ("VMW_PSP_RR", stamps >= TUNED)):
        info = f'{labels},plugin="NMP",satp="VMW_SATP_ALUA",psp="{psp}",psp_limit_type=""'
        lines += [f"esxi_lun_multipath_info{{{info}}} 1 {t:.3f}" for t in stamps[keep]]
    return "\n".join(lines) + "\n# EOF\n"


def import_into_victoriametrics(url: str, openmetrics: Path) -> None:
    """OpenMetrics (seconds) -> the Prometheus text import (milliseconds), in one request."""
    lines = []
    for line in openmetrics.read_text().splitlines():
        if line and not line.startswith("#"):
            series, value, stamp = line.rsplit(" ", 2)
            lines.append(f"{series} {value} {round(float(stamp) * 1000)}")
    request = urllib.request.Request(url + "/api/v1/import/prometheus", data="\n".join(lines).encode() + b"\n")
    urllib.request.urlopen(request, timeout=120).close()


def compare_json(tmp: Path, *args) -> tuple[dict, object]:
    out = tmp / f"report-{time.monotonic_ns()}.json"
    done = run_cli("compare", *args, "--json", out)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(out.read_text()), done


def verdicts(report: dict) -> set[tuple]:
    return {(m["family"], m["subject"], m["metric"], m["verdict"]) for m in report["metrics"] if m["significant"]}


def by_key(report: dict) -> dict[tuple, dict]:
    return {(m["family"], m["subject"], m["metric"]): m for m in report["metrics"]}


@pytest.mark.parametrize("store", ["prometheus", "victoriametrics"])
def test_the_history_gives_the_captures_verdicts_and_figures(stored, store):
    url = stored[store]
    if url is None:
        pytest.skip("victoria-metrics is not installed: run .ci/install")
    files, tmp = stored["files"], stored["tmp"]
    from_files, done_files = compare_json(tmp, files["dqlen32"], files["dqlen64"])
    from_history, done_history = compare_json(
        tmp, "--prometheus", url, "--before", window("dqlen32"), "--after", window("dqlen64")
    )
    assert done_history.returncode == done_files.returncode
    assert verdicts(from_history) == verdicts(from_files)
    assert ("luns", DEVICE, "qued", "better") in verdicts(from_history)  # DQLEN 64 ended the overrun
    assert ("luns", DEVICE, "gavg", "better") in verdicts(from_history)
    files_rows, history_rows = by_key(from_files), by_key(from_history)
    assert files_rows.keys() == history_rows.keys() and len(files_rows) > 20
    for key, row in files_rows.items():
        for side in ("before", "after"):
            assert history_rows[key][side] == pytest.approx(row[side], rel=0.01, abs=1e-9), (key, side)
    assert [(f["rule"], f["subject"], f["state"]) for f in from_history["findings"]] == [
        (f["rule"], f["subject"], f["state"]) for f in from_files["findings"]
    ]
    assert from_history["comparisons"][0]["before"]["samples"] == 720
    assert "RESOLVED  queue overrun" in done_history.stdout


def test_a_steady_workload_with_autocorrelated_noise_is_not_called_a_change(stored):
    report, done = compare_json(
        stored["tmp"], "--prometheus", stored["prometheus"], "--before", window("steady1"), "--after", window("steady2")
    )
    assert done.returncode == 0
    assert verdicts(report) == set()
    assert len(report["metrics"]) > 20


def test_twice_the_latency_is_significant_and_worse(stored):
    report, done = compare_json(
        stored["tmp"], "--prometheus", stored["prometheus"], "--before", window("steady1"), "--after", window("slow")
    )
    assert done.returncode == 1  # something got worse
    gavg = by_key(report)[("luns", DEVICE, "gavg")]
    assert gavg["significant"] and gavg["verdict"] == "worse"
    assert gavg["after"] / gavg["before"] == pytest.approx(2.0, rel=0.1)


def test_a_gap_and_a_counter_reset_are_left_out_not_read_as_zero(stored, tmp_path):
    """A capture cut in two with 20 samples missing between the parts, each part backfilled on
    its own (an exporter restart: the counters start again from zero)."""
    source = stored["files"]["steady1"].read_text().splitlines(keepends=True)
    header, rows = source[0], source[1:]
    first, second = tmp_path / "part1.csv", tmp_path / "part2.csv"
    first.write_text(header + "".join(rows[:300]))
    second.write_text(header + "".join(rows[320:]))
    data = tmp_path / "prom" / "data"
    for part in (first, second):
        done = run_cli("backfill", part, "--tsdb", data, "--run", "restarted")
        assert done.returncode == 0, done.stderr
    prom = Prometheus(tmp_path / "prom", [], args=("--storage.tsdb.retention.time=100y",))
    try:
        start = CAPTURES["steady1"][2]
        [capture] = history.captures(history.Prometheus(prom.url), start - 1, start + HOUR + 1).values()
    finally:
        prom.stop()
    iops = st.series(capture, "luns", DEVICE, st.IOPS)
    gavg = st.series(capture, "luns", DEVICE, st.GAVG)
    # each part's first sample has no interval before it; the one across the restart is unknown
    parts = [load(first), load(second)]
    assert len(iops.values) == sum(int(p.measured.sum()) for p in parts) == 299 + 399
    expected = [st.series(p, "luns", DEVICE, st.IOPS) for p in parts]
    values = np.concatenate([e.values for e in expected])
    weights = np.concatenate([e.weights for e in expected])
    assert np.average(iops.values, weights=iops.weights) == pytest.approx(np.average(values, weights=weights), rel=1e-6)
    assert iops.values.min() > 0  # no interval read as zero I/O
    expected_gavg = [st.series(p, "luns", DEVICE, st.GAVG) for p in parts]
    assert np.average(gavg.values, weights=gavg.weights) == pytest.approx(
        np.average(np.concatenate([e.values for e in expected_gavg]), weights=np.concatenate([e.weights for e in expected_gavg])),
        rel=1e-6,
    )


def test_change_and_last_change_pick_the_windows_around_the_change(stored):
    tmp, url = stored["tmp"], stored["prometheus"]
    at_change, _ = compare_json(tmp, "--prometheus", url, "--change", f"{TUNED:.0f}", "--window", "30m")
    last, done = compare_json(tmp, "--prometheus", url, "--last-change", "--window", "30m")
    # DQLEN, DSNRO and the PSP all changed at TUNED: the line names one of them
    assert f"last change at {history.iso(TUNED)}: {HOST} esxi_lun_" in done.stderr
    assert any(what in done.stderr for what in ("32 -> 64", "appeared"))
    for report in (at_change, last):
        [ranges] = report["comparisons"]
        assert TUNED - 1800 <= ranges["before"]["start"] and ranges["before"]["end"] < TUNED
        assert TUNED <= ranges["after"]["start"] and ranges["after"]["end"] <= TUNED + 1800
        assert ("luns", DEVICE, "dqlen", "changed") in {
            (m["family"], m["subject"], m["metric"], m["verdict"]) for m in report["metrics"]
        }
        assert [(f["rule"], f["state"]) for f in report["findings"]] == [("queue overrun (QUED > 0)", "resolved")]
        assert report["settings_changed"] == [
            f"{HOST} {DEVICE}: DSNRO 32 -> 64",
            f"{HOST} {DEVICE}: path selection policy VMW_PSP_MRU -> VMW_PSP_RR",
        ]
    assert verdicts(at_change) == verdicts(last)
    text = run_cli("compare", "--prometheus", url, "--change", f"{TUNED:.0f}", "--window", "30m").stdout
    assert f"{DEVICE}: DSNRO 32 -> 64" in text.split("Findings")[0]  # listed at the top, as for captures


@pytest.mark.parametrize(
    "args, message",
    [
        (["--before", "yesterday/1h", "--after", "0/1h"], "--before 'yesterday': not a time"),
        (["--before", "2026-11-25T08:00:00/1h", "--after", "0/1h"], "give the time zone"),
        (["--before", "0/1h"], "--before and --after go together"),
        (["--change", "0", "--last-change"], "give --before and --after, or --change TIME, or --last-change"),
        (["--change", "0", "--window=-5m"], "--window '-5m': not a duration"),
        (["--change", "0", "--window=0s"], "--window '0s': the duration must be positive"),
        (["--before", "0/1h", "--after", "3600/1h"], "no host has esxi_* samples in both ranges"),
        (["--change", "0", "--lun.include", "("], "--lun.include/--lun.exclude: not a regular expression"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(stored, args, message):
    done = run_cli("compare", "--prometheus", stored["prometheus"], *args)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_an_unreachable_server_and_a_non_url_are_one_line(tmp_path):
    for url, message in (("http://127.0.0.1:9/", "cannot reach the server"), ("prometheus:9090", "not an http(s) URL")):
        done = run_cli("compare", "--prometheus", url, "--change", "0")
        assert done.returncode == 2 and message in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1


def test_credentials_never_show(tmp_path):
    token = tmp_path / "token"
    token.write_text("Sekret-Bearer-Token-42\n")
    done = run_cli("compare", "--prometheus", "http://127.0.0.1:9/", "--prometheus.bearer-token-file", token, "--change", "0")
    assert done.returncode == 2 and "Sekret" not in done.stderr + done.stdout
    done = run_cli("compare", "--prometheus", "http://user:Sekret@127.0.0.1:9/", "--change", "0")
    assert done.returncode == 2 and "Sekret" not in done.stderr and "no credentials in the URL" in done.stderr


def test_json_report_of_two_captures_lists_every_subject_and_metric(tmp_path):
    before = write(tmp_path / "before.csv", Setup(dqlen=32), seed=1)
    after = write(tmp_path / "after.csv", Setup(dqlen=64), seed=2)
    report, done = compare_json(tmp_path, before, after)
    assert done.returncode == 0
    families = {m["family"] for m in report["metrics"]}
    assert {"luns", "adapters", "paths", "worlds", "cpus"} <= families
    dqlen = by_key(report)[("luns", DEVICE, "dqlen")]
    assert (dqlen["before"], dqlen["after"], dqlen["verdict"]) == (32, 64, "changed")
    gavg = by_key(report)[("luns", DEVICE, "gavg")]
    assert gavg["unit"] == "ms" and gavg["p_holm"] < 0.05 and gavg["verdict"] == "better"
    assert report["worse"] == 0


def test_the_board_gives_the_command_line_and_the_report_links_back_to_the_board(stored):
    """The before/after board's command, with its time range and shift filled in as Grafana does,
    compares the ranges the board shows; the HTML report links to the board with those ranges."""
    board = json.loads((Path(__file__).resolve().parents[2] / "dashboards/provisioned/before-after.json").read_text())
    [panel] = [p for p in board["panels"] if p.get("type") == "text"]
    command = panel["options"]["content"].split("```")[1]
    after = CAPTURES["dqlen64"][2]
    shift = after - CAPTURES["dqlen32"][2]
    filled = (
        command.replace("${__from:date:iso}", history.iso(after - 1))
        .replace("${__to:date:iso}", history.iso(after + HOUR + 1))
        .replace("${shift}", f"{shift:.0f}s")
    )
    args = shlex.split(filled.replace("\\\n", " "))
    assert args[:3] == ["esxi-storage-exporter", "compare", "--prometheus"]
    args[3] = stored["prometheus"]
    html = stored["tmp"] / "board.html"
    args[args.index("report.html")] = str(html)
    from_board, done = compare_json(stored["tmp"], *args[2:], "--grafana", "https://grafana.example.com/")
    from_ranges, _ = compare_json(
        stored["tmp"], "--prometheus", stored["prometheus"], "--before", window("dqlen32"), "--after", window("dqlen64")
    )
    assert verdicts(from_board) == verdicts(from_ranges) and verdicts(from_board)
    link = re.search(r'href="(https://grafana\.example\.com/d/esxi-before-after\?[^"]+)"', html.read_text()).group(1)
    query = urllib.parse.parse_qs(urllib.parse.urlparse(link.replace("&amp;", "&")).query)
    assert query == {
        "from": [str(int((after - 1) * 1000))],
        "to": [str(int((after + HOUR + 1) * 1000))],
        "var-shift": [f"{shift:.0f}s"],
    }


def test_basic_auth_with_the_password_from_a_file(tmp_path):
    """A Prometheus behind basic auth (its own web config, bcrypt): the right password from a file
    reads the history; a wrong one is one line naming the server, the password nowhere."""
    import bcrypt

    from tests.support.servers import free_port, stop

    before = write(tmp_path / "before.csv", Setup(dqlen=32), seed=41, samples=240, start=T0)
    after = write(tmp_path / "after.csv", Setup(dqlen=64), seed=42, samples=240, start=T0 + HOUR)
    for path, run in ((before, "before"), (after, "after")):
        done = run_cli("backfill", path, "--tsdb", tmp_path / "data", "--run", run)
        assert done.returncode == 0, done.stderr
    password = "Prom-Basic-Auth-Secret-7"
    hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()
    (tmp_path / "web.yml").write_text(f"basic_auth_users:\n  monitor: '{hashed}'\n")
    (tmp_path / "prometheus.yml").write_text("global:\n  scrape_interval: 15s\n")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = open(tmp_path / "prometheus.log", "wb")
    proc = subprocess.Popen(
        [
            shutil.which("prometheus"),
            f"--config.file={tmp_path / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            "--storage.tsdb.retention.time=100y",
            f"--web.listen-address=127.0.0.1:{port}",
            f"--web.config.file={tmp_path / 'web.yml'}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.write_text(password + "\n")
    bad.write_text("not-the-password\n")
    ranges = ["--before", f"{T0 - 1:.0f}/{HOUR:.0f}s", "--after", f"{T0 + HOUR - 1:.0f}/{HOUR:.0f}s"]
    try:
        deadline = time.monotonic() + 30
        while True:  # ready once it answers 401 to a request without credentials
            try:
                urllib.request.urlopen(url + "/-/ready", timeout=2)
            except urllib.error.HTTPError as err:
                if err.code == 401:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "prometheus did not start"
            time.sleep(0.2)
        auth = ["--prometheus", url, "--prometheus.user", "monitor"]
        ok = run_cli("compare", *auth, "--prometheus.password-file", good, *ranges)
        wrong = run_cli("compare", *auth, "--prometheus.password-file", bad, *ranges)
        anonymous = run_cli("compare", "--prometheus", url, *ranges)
    finally:
        stop(proc)
        log.close()
    assert ok.returncode == 0, ok.stderr
    assert "RESOLVED  queue overrun" in ok.stdout
    for done in (wrong, anonymous):
        assert done.returncode == 2 and f"{url}: 401" in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    assert all(password not in d.stdout + d.stderr for d in (ok, wrong, anonymous))


def test_holm_runs_over_every_host_of_the_report(tmp_path):
    """With several hosts in one report, each p-value is corrected for all of their tests."""
    from exporter.analysis import compare as cmp
    from exporter.analysis.significance import holm

    pairs = [
        (write(tmp_path / f"b{i}.csv", Setup(dqlen=32), seed=50 + i), write(tmp_path / f"a{i}.csv", Setup(dqlen=64), seed=60 + i))
        for i in range(2)
    ]
    results = [cmp.compare(load(b), load(a)) for b, a in pairs]
    alone = [row.p_adjusted for result in results for row in result.rows]
    cmp.correct_together(results)
    rows = [row for result in results for row in result.rows]
    assert [row.p_adjusted for row in rows] == holm([row.p for row in rows])
    assert all(t is None or t >= a for t, a in zip([row.p_adjusted for row in rows], alone))
    assert any(t is not None and t > a for t, a in zip([row.p_adjusted for row in rows], alone))
    assert {(r.family, r.metric.key, r.verdict) for r in results[0].rows if r.significant} >= {("luns", "qued", "better")}


def test_host_and_lun_selectors_narrow_the_comparison(stored):
    tmp, url = stored["tmp"], stored["prometheus"]
    ranges = ["--before", window("dqlen32"), "--after", window("dqlen64")]
    kept, _ = compare_json(tmp, "--prometheus", url, *ranges, "--lun.include", DEVICE[-6:], "--host", HOST)
    assert {m["subject"] for m in kept["metrics"] if m["family"] == "luns"} == {DEVICE}
    left_out, _ = compare_json(tmp, "--prometheus", url, *ranges, "--lun.exclude", DEVICE[-6:])
    families = {m["family"] for m in left_out["metrics"]}
    assert "luns" not in families and "worlds" not in families and "paths" not in families
    assert "adapters" in families  # the host's adapters are not LUNs
    other = run_cli("compare", "--prometheus", url, *ranges, "--host", "esx99.lab.local")
    assert other.returncode == 2 and "no host has esxi_* samples in both ranges" in other.stderr
