"""The container image built from the Dockerfile and run with podman (tests/support/image.py): on
a Debian bookworm base made here, since no container registry can be reached. Built once per
session; skipped where podman is not installed, failed in CI (CI=true, set by .ci/run)."""

from __future__ import annotations

import pytest

from tests.support.image import Podman, base_tarball
from tests.support.promtext import samples

pytestmark = pytest.mark.integration

MAX_IMAGE_BYTES = 250 * 1000 * 1000  # 250 MB as podman counts them
CONFIG_IN_IMAGE = "/etc/esxi-storage-exporter/config.yml"


def hosts(exposition: str) -> set[str]:
    return {labels["host"] for name, labels, _ in samples(exposition) if name == "esxi_host_info"}


@pytest.fixture(scope="module")
def podman(tmp_path_factory):
    engine = Podman(tmp_path_factory.mktemp("podman"))
    yield engine
    engine.remove_everything()


@pytest.fixture(scope="module")
def image(podman) -> str:
    base = podman.import_base(base_tarball(), "localhost/debian-bookworm-python3:test")
    return podman.build("localhost/esxi-storage-exporter:test", base)


@pytest.fixture(scope="module")
def default(podman, image):
    """The image as `docker run` starts it: its own ENTRYPOINT and CMD (serve the demo simulator)."""
    with podman.run(image) as container:
        yield container.wait_healthy()


def test_image_serves_the_simulator_on_its_port(default):
    body = default.wait_for_metric("esxi_lun_queue_depth")
    assert hosts(body) == {"esx01.lab.local", "esx02.lab.local"}, "the demo scenario's two hosts"
    assert "esxi_scrape_collector_success" in body


def test_image_runs_as_user_and_group_exporter(default):
    ids = default.exec("id")
    assert ids.stdout.strip() == "uid=10114(exporter) gid=10114(exporter) groups=10114(exporter)", ids.stdout + ids.stderr


def test_healthcheck_reports_healthy_while_the_exporter_serves(default):
    assert default.healthcheck() == (0, "healthy")


def test_healthcheck_reports_unhealthy_when_nothing_listens(podman, image):
    # sleep as PID 1 ignores SIGTERM: no stop timeout to wait out.
    with podman.run(image, "infinity", options=("--entrypoint", "sleep", "--stop-timeout", "0")) as idle:
        code, status = idle.healthcheck()
    # Within the start period a failure leaves the status at "starting"; the run itself fails.
    assert code != 0 and status in {"starting", "unhealthy"}, (code, status)


def test_serve_simulate_serves_the_scenario_given(podman, image):
    with podman.run(image, "serve", "--simulate", "shared-lun-4-hosts", "--simulate.interval", "1") as container:
        body = container.wait_healthy().wait_for_metric("esxi_lun_queue_depth")
    assert hosts(body) == {f"esx0{n}.lab.local" for n in range(1, 5)}


def test_mounted_config_file_is_read(podman, image, tmp_path):
    config = tmp_path / "config.yml"
    config.write_text("simulate:\n  scenario: shared-lun-3-hosts\n  interval: 1s\n")
    config.chmod(0o644)  # readable by the image's user, whatever the umask
    mount = ("--volume", f"{config}:{CONFIG_IN_IMAGE}:ro")
    with podman.run(image, "serve", f"--config.file={CONFIG_IN_IMAGE}", options=mount) as container:
        body = container.wait_healthy().wait_for_metric("esxi_lun_queue_depth")
    assert hosts(body) == {f"esx0{n}.lab.local" for n in range(1, 4)}


def test_image_is_small_on_a_bookworm_base_and_carries_no_apt_caches(podman, image, default):
    size = podman.size(image)
    assert size <= MAX_IMAGE_BYTES, f"{size / 1e6:.0f} MB"
    assert default.exec("cat", "/etc/debian_version").stdout.startswith("12."), "Debian 12 (bookworm)"
    # What apt leaves behind: downloaded packages, its package caches (*.bin), the package lists.
    left = default.exec("find", "/var/cache/apt", "/var/lib/apt/lists", "-type", "f", "!", "-name", "lock", user="0")
    assert left.returncode == 0, left.stderr
    assert left.stdout.split() == []
