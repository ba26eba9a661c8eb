"""The command line as a user meets it: dump, errors, config file, environment, follow."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from exporter.configuration import config
from simulators.esxtop_csv import device_columns, header, row
from tests.support.cli import run
from tests.support.servers import CAPTURES, ROOT, Exporter, exporter_env

RS = CAPTURES / "esxi65-default-3samples.csv"
DEV = "naa.600a0b80002a"


def test_dump_prints_the_exposition():
    result = run("dump", "--esxtop-file", str(RS))
    assert result.returncode == 0, result.stderr
    assert 'esxi_esxtop_samples_total{host="localhost.home"} 3.0' in result.stdout
    assert "esxi_lun_world_active_commands" in result.stdout


def test_per_world_series_can_be_switched_off():
    result = run("dump", "--esxtop-file", str(RS), "--no-collector.world")
    assert result.returncode == 0, result.stderr
    assert "esxi_lun_world_" not in result.stdout and "esxi_lun_queue_depth" in result.stdout


@pytest.mark.parametrize(
    "content, message",
    [
        ("", "empty.csv: empty file, no esxtop header"),
        ('"01/01/2024 00:00:00","1.00"\n', "empty.csv:1: no esxtop header"),
        (
            header("h", device_columns(DEV, ["Device Q Depth"])) + "\n" + row(0, [32, 1]) + "\n",
            "empty.csv:2: 4 cells, the header has 3",
        ),
    ],
)
def test_dump_bad_input_is_one_line_nonzero_no_traceback(tmp_path, content, message):
    path = tmp_path / "empty.csv"
    path.write_text(content)
    result = run("dump", "--esxtop-file", str(path))
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"esxi-storage-exporter: {path.parent}/{message}")
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_missing_file_is_one_line():
    result = run("dump", "--esxtop-file", "/nonexistent/capture.csv")
    assert result.returncode == 1
    assert result.stderr == "esxi-storage-exporter: /nonexistent/capture.csv: No such file or directory\n"


def test_config_validation_reports_every_bad_entry(tmp_path):
    cfg = tmp_path / "exporter.yml"
    cfg.write_text("web:\n  listen_address: nowhere\nesxtop:\n  stale_after: -5s\n  bogus: 1\nlog:\n  level: loud\n")
    result = run("dump", "--config.file", str(cfg), "--esxtop-file", str(RS))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert lines == [
        f"esxi-storage-exporter: {cfg}: esxtop.bogus: unknown setting",
        f"esxi-storage-exporter: {cfg}: web.listen_address: not a listen address: 'nowhere' (use HOST:PORT or :PORT)",
        f"esxi-storage-exporter: {cfg}: esxtop.stale_after: not a duration: '-5s' (use e.g. 5s, 10m, 1h)",
        f"esxi-storage-exporter: {cfg}: log.level: 'loud' is not one of debug, info, warning, error",
    ]


def test_bad_yaml_names_the_line(tmp_path):
    cfg = tmp_path / "exporter.yml"
    cfg.write_text("web:\n  listen_address: ':1'\n bad: [\n")
    result = run("dump", "--config.file", str(cfg), "--esxtop-file", str(RS))
    assert result.returncode == 2
    assert result.stderr.startswith(f"esxi-storage-exporter: {cfg}:3: not valid YAML")
    assert len(result.stderr.strip().splitlines()) == 1


def test_flags_override_environment_override_file(tmp_path):
    cfg = tmp_path / "exporter.yml"
    cfg.write_text("web:\n  listen_address: ':1111'\n  telemetry_path: /from-file\nlog:\n  level: error\n")
    options = config.OPTIONS
    env = {"ESXI_EXPORTER_WEB_LISTEN_ADDRESS": ":2222", "ESXI_EXPORTER_LOG_LEVEL": "warning"}
    settings = config.load(options, {"log__level": "debug"}, environ=env, config_file=str(cfg))
    assert settings["web.listen_address"] == ":2222"
    assert settings["web.telemetry_path"] == "/from-file"
    assert settings["log.level"] == "debug"
    assert settings["esxtop.stale_after"] == 300.0


def test_follow_a_growing_capture(tmp_path):
    capture = tmp_path / "esx01.csv"
    lines = [header("esx01", device_columns(DEV))]
    t0 = time.time()
    values = [32, 30, 6, 93.75, 1.12, 1000.0, 600, 400, 10.0, 5.0, 20.0, 3.5, 23.5, 3.0]
    lines += [row(t0 - 10 + 5 * i, values) for i in range(2)]  # history before the exporter starts
    capture.write_text("\n".join(lines) + "\n")
    exporter = Exporter("--esxtop-follow", str(capture), "--no-collector.world")
    try:
        with open(capture, "a") as handle:
            for i in range(3):
                handle.write(row(t0 + 5 * i, values) + "\n")
                handle.flush()
                time.sleep(0.3)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            text = exporter.metrics()
            if 'esxi_esxtop_samples_total{host="esx01"} 3.0' in text:
                break
            time.sleep(0.2)
        # Counters start when the exporter starts: the two rows already there are not replayed.
        assert 'esxi_esxtop_samples_total{host="esx01"} 3.0' in text
        assert f'esxi_lun_commands_total{{host="esx01",device="{DEV}"}} 10000.0' in text
        assert f'esxi_lun_queued_commands{{host="esx01",device="{DEV}"}} 6.0' in text
    finally:
        exporter.stop()


def test_python_dash_m_and_version():
    result = run("--version")
    assert result.returncode == 0 and result.stdout.startswith("esxi-storage-exporter ")


def test_analysis_commands_without_the_analysis_extra_say_what_to_install(tmp_path):
    # A stand-in `pandas` that cannot be imported, as on an install without the extra.
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(
        "import sys\nclass _Block:\n    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('pandas', 'pyarrow', 'numpy'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name.split('.')[0])\n"
        "sys.meta_path.insert(0, _Block())\n"
    )
    env = exporter_env()
    env["PYTHONPATH"] = f"{blocker}:{env['PYTHONPATH']}"
    result = subprocess.run(
        [sys.executable, "-m", "exporter", "compare", str(RS), str(RS)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert lines[0].startswith("esxi-storage-exporter: compare needs the analysis extra (")
    assert lines[0].endswith("is not installed): pip install 'esxi-storage-exporter[analysis]'")
    # The exporter itself needs none of it.
    served = subprocess.run(
        [sys.executable, "-m", "exporter", "dump", "--esxtop-file", str(RS)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )
    assert served.returncode == 0 and "esxi_lun_queue_depth" in served.stdout
