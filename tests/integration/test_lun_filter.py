"""LUN include/exclude filters (`--lun.include`, `--lun.exclude`): a filtered LUN loses its
device, path and per-world series and nothing else changes."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import urllib.request

import pytest

from exporter.configuration.filters import LunFilter
from exporter.store import model as m
from tests.support.servers import CAPTURES, ROOT, exporter_env

CAPTURE = CAPTURES / "esxi65-default-3samples.csv"
CDROM = "mpx.vmhba0:C0:T5:L0"  # the capture's CD-ROM, a typical thing to leave out
CDROM_PATH = "vmhba0:C0:T5:L0"


def sample() -> m.Sample:
    stats = {m.ACTIVE: 1.0}
    return m.Sample(
        host="esx01",
        timestamp=10.0,
        interval=5.0,
        luns={"naa.1": stats, "naa.2": stats, "mpx.vmhba32:C0:T0:L0": stats},
        paths={"vmhba1:C0:T0:L1": stats, "vmhba1:C0:T0:L2": stats, "vmhba32:C0:T0:L0": stats, "vmhba9:C0:T0:L9": stats},
        worlds={("naa.1", "1001"): stats, ("naa.2", "1002"): stats},
        path_devices={"vmhba1:C0:T0:L1": "naa.1", "vmhba1:C0:T0:L2": "naa.2", "vmhba32:C0:T0:L0": "mpx.vmhba32:C0:T0:L0"},
        adapters={"vmhba1": stats},
    )


def test_exclude_drops_the_lun_its_paths_and_worlds():
    kept = LunFilter(exclude=r"^mpx\.|^naa\.2$").sample(sample())
    assert set(kept.luns) == {"naa.1"}
    assert set(kept.worlds) == {("naa.1", "1001")}
    # vmhba9's device is unknown: kept rather than silently lost.
    assert set(kept.paths) == {"vmhba1:C0:T0:L1", "vmhba9:C0:T0:L9"}
    assert set(kept.path_devices) == {"vmhba1:C0:T0:L1"}
    assert set(kept.adapters) == {"vmhba1"}


def test_include_and_exclude_combine():
    kept = LunFilter(include=r"^naa\.", exclude=r"\.1$").sample(sample())
    assert set(kept.luns) == {"naa.2"}


def test_no_pattern_is_no_filter():
    assert not LunFilter()
    assert LunFilter(exclude="x")


def test_inventory_is_filtered_the_same_way():
    inventory = m.Inventory(
        host="esx01",
        luns={"naa.1": m.LunConfig(), "mpx.vmhba32:C0:T0:L0": m.LunConfig()},
        paths={"vmhba1:C0:T0:L1": m.PathConfig(device="naa.1"), "vmhba32:C0:T0:L0": m.PathConfig(device="mpx.vmhba32:C0:T0:L0")},
    )
    kept = LunFilter(exclude=r"^mpx\.").inventory(inventory)
    assert set(kept.luns) == {"naa.1"} and set(kept.paths) == {"vmhba1:C0:T0:L1"}


def dump(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "exporter", "dump", "--esxtop-file", str(CAPTURE), *args],
        capture_output=True,
        text=True,
        env=exporter_env(),
        cwd=ROOT,
        timeout=120,
    )


def series(exposition: str) -> set[str]:
    return {
        line
        for line in exposition.splitlines()
        if line and not line.startswith("#") and not line.startswith("esxi_scrape_collector_duration_seconds")
    }


def test_dump_of_a_real_capture_loses_exactly_the_excluded_lun():
    if not CAPTURE.exists():
        pytest.skip(f"{CAPTURE} not present")
    full, filtered = dump(), dump(f"--lun.exclude=^{re.escape(CDROM)}$")
    assert full.returncode == 0 and filtered.returncode == 0, full.stderr + filtered.stderr
    lost = series(full.stdout) - series(filtered.stdout)
    assert series(filtered.stdout) <= series(full.stdout)
    assert lost, "the CD-ROM had series to lose"
    assert all(f'device="{CDROM}"' in line or f'path="{CDROM_PATH}"' in line for line in lost), lost
    assert not any(CDROM in line or CDROM_PATH in line for line in series(filtered.stdout))


def test_a_bad_pattern_is_one_clear_line_and_exit_2():
    result = dump("--lun.include=naa.(")
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "--lun.include" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_posix_class_is_refused_not_matched_as_a_plain_set():
    """Prometheus users write RE2's [[:alnum:]]; Python reads it as a set of ':alnum[' and a ']'."""
    result = dump("--lun.exclude=naa[[:alnum:]]+")
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "--lun.exclude" in result.stderr
    assert "ambiguous regular expression" in result.stderr and "POSIX classes" in result.stderr
    assert "Traceback" not in result.stderr and "FutureWarning" not in result.stderr


@pytest.mark.integration
def test_vsphere_dump_and_probe_leave_the_filtered_lun_out(tmp_path):
    """Against the project's storage simulator (simulators/storagesim): the filter applies to the vSphere
    source too, in `dump` and in serve's /metrics and per-target /probe."""
    from simulators.storagesim.sims import PASSWORD, USER, StorageSim
    from tests.support.servers import Exporter

    shared_lun = "naa.600a098038303053453f463045727a61"  # ds-shared-01 in the fixture, on every host
    exclude = f"--lun.exclude=^{re.escape(shared_lun)}$"
    sim = StorageSim(tmp_path / "vc")
    password_file = tmp_path / "vsphere-password"
    password_file.write_text(PASSWORD + "\n")
    try:
        flags = [
            "--vsphere",
            sim.url,
            "--vsphere.user",
            USER,
            "--vsphere.password-file",
            str(password_file),
            "--vsphere.ca-file",
            str(sim.cert),
        ]
        full, filtered = dump_vsphere(flags), dump_vsphere([*flags, exclude])
        assert f'device="{shared_lun}"' in full
        assert shared_lun not in filtered and 'device="naa.' in filtered, "only that LUN goes"
        config = tmp_path / "exporter.yml"
        config.write_text(
            f"vsphere:\n  user: {USER}\n  password_file: {password_file}\n  interval: 1s\n"
            f'  targets:\n    vc: {{url: "{sim.url}", ca_file: "{sim.cert}"}}\n'
        )
        exporter = Exporter("--config.file", str(config), exclude)
        try:
            deadline, metrics, probe = time.monotonic() + 30, "", ""
            while time.monotonic() < deadline and not ('device="naa.' in metrics and 'device="naa.' in probe):
                metrics = exporter.metrics()
                with urllib.request.urlopen(exporter.url + "/probe?target=vc", timeout=10) as response:
                    probe = response.read().decode()
                time.sleep(0.5)
            for where, body in (("/metrics", metrics), ("/probe", probe)):
                assert 'device="naa.' in body, f"{where} has no LUN series at all"
                assert shared_lun not in body, f"{where} still has the excluded LUN"
        finally:
            exporter.stop()
    finally:
        sim.stop()


def dump_vsphere(flags: list[str]) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "exporter", "dump", *flags],
        capture_output=True,
        text=True,
        env=exporter_env(),
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout
