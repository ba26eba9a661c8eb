"""Kubernetes manifests (deploy/kubernetes/), validated offline:

- built-in kinds against the Kubernetes JSON schemas that the PyPI package `kubernetes-validate`
  ships (strict: an unknown field is an error), for the oldest and newest versions we support;
- ServiceMonitor and PrometheusRule against the CRD schemas of the prometheus-operator Go module
  (`go mod download`, see .ci/install), made strict the same way;
- the PrometheusRule carries exactly the rules in alerts/; the Deployment's command, config and
  probes, run directly, serve the simulator.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import jsonschema
import pytest
import yaml

from tests.support.deploy import DEPLOY, Served, owned_elsewhere, tool
from tests.support.servers import ROOT

K8S = DEPLOY / "kubernetes"
KUBERNETES_VERSIONS = ("1.29.0", "1.34.0")  # the oldest and newest minor we claim to run on
PROMETHEUS_OPERATOR = "github.com/prometheus-operator/prometheus-operator@v0.85.0"
CRD_FILES = {
    "ServiceMonitor": "monitoring.coreos.com_servicemonitors.yaml",
    "PrometheusRule": "monitoring.coreos.com_prometheusrules.yaml",
}


def kustomization() -> dict:
    return yaml.safe_load((K8S / "kustomization.yaml").read_text())


def manifests() -> dict[str, dict]:
    """kind -> the one resource of that kind that kustomization.yaml lists (present files only)."""
    found = {}
    for name in kustomization()["resources"]:
        path = K8S / name
        if path.exists():
            for doc in yaml.safe_load_all(path.read_text()):
                assert doc["kind"] not in found, f"two {doc['kind']} resources"
                found[doc["kind"]] = doc
    return found


def test_kustomization_lists_every_manifest_and_the_prometheusrule():
    resources = kustomization()["resources"]
    on_disk = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(resources) == on_disk | {"prometheusrule.yaml"}
    assert "prometheusrule.yaml" in resources


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("kind", ["Deployment", "Service", "Secret", "ConfigMap"])
def test_builtin_kinds_validate_strictly(kind, version):
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    resource = manifests()[kind]
    kubernetes_validate.validate(resource, version, strict=True)


def test_strict_validation_catches_a_misspelt_field():
    # The check above is worth something only if an unknown field fails it.
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    deployment = json.loads(json.dumps(manifests()["Deployment"]))
    deployment["spec"]["template"]["spec"]["securityContext"]["runAsNonRot"] = True
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSIONS[0], strict=True)


def strict(schema: dict) -> dict:
    """Deny fields a CRD schema does not declare, as the API server's strict field validation does."""
    if isinstance(schema, dict):
        schema = {k: strict(v) for k, v in schema.items()}
        if isinstance(schema.get("pattern"), str) and "(?i)" in schema["pattern"]:
            # Go's RE2 takes (?i) anywhere; Python only at the start, where it means the same here.
            schema["pattern"] = "(?i)" + schema["pattern"].replace("(?i)", "")
        if (
            "properties" in schema
            and "additionalProperties" not in schema
            and not schema.get("x-kubernetes-preserve-unknown-fields")
        ):
            schema["additionalProperties"] = False
    elif isinstance(schema, list):
        schema = [strict(v) for v in schema]
    return schema


@pytest.fixture(scope="module")
def crd_schemas() -> dict[str, dict]:
    go = tool("go")
    result = subprocess.run([go, "mod", "download", "-json", PROMETHEUS_OPERATOR], capture_output=True, text=True)
    if result.returncode != 0:
        pytest.fail(f"go mod download {PROMETHEUS_OPERATOR} failed (run .ci/install): {result.stdout}{result.stderr}")
    module = Path(json.loads(result.stdout)["Dir"])
    schemas = {}
    for kind, name in CRD_FILES.items():
        crd = yaml.safe_load((module / "example" / "prometheus-operator-crd" / name).read_text())
        (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
        schemas[kind] = strict(version["schema"]["openAPIV3Schema"])
    return schemas


def test_servicemonitor_validates_against_its_crd(crd_schemas):
    monitor = manifests()["ServiceMonitor"]
    jsonschema.validate(monitor, crd_schemas["ServiceMonitor"])
    broken = json.loads(json.dumps(monitor))
    broken["spec"]["endpoints"][0]["scrapeInterval"] = "15s"  # the field is `interval`
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, crd_schemas["ServiceMonitor"])


def test_prometheusrule_validates_against_its_crd_and_equals_alerts(crd_schemas):
    owned_elsewhere(K8S / "prometheusrule.yaml", ROOT / "alerts", "generated by alerts/generate.py")
    rule = manifests()["PrometheusRule"]
    jsonschema.validate(rule, crd_schemas["PrometheusRule"])
    rules_file = yaml.safe_load((ROOT / "alerts" / "esxi-storage.rules.yml").read_text())
    assert rule["spec"]["groups"] == rules_file["groups"], "prometheusrule.yaml is stale: run python3 alerts/generate.py"


def test_service_and_monitor_reach_the_container_port():
    found = manifests()
    pod = found["Deployment"]["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    port_names = {p["name"]: p["containerPort"] for p in container["ports"]}
    service = found["Service"]
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    assert all(p["targetPort"] in port_names for p in service["spec"]["ports"])
    monitor = found["ServiceMonitor"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert {e["port"] for e in monitor["spec"]["endpoints"]} <= {p["name"] for p in service["spec"]["ports"]}


def test_pod_runs_non_root_read_only_with_limits():
    pod = manifests()["Deployment"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert {"cpu", "memory"} <= set(container["resources"]["requests"]) and "memory" in container["resources"]["limits"]
    assert {"livenessProbe", "readinessProbe", "startupProbe"} <= set(container)
    # Credentials are files from the Secret, never environment variables.
    assert not any("valueFrom" in e for e in container.get("env", []))
    secret_volumes = [v for v in pod["volumes"] if "secret" in v]
    assert [v["secret"]["secretName"] for v in secret_volumes] == [manifests()["Secret"]["metadata"]["name"]]


@pytest.mark.integration
def test_deployment_command_config_and_probes_serve(tmp_path):
    found = manifests()
    (container,) = found["Deployment"]["spec"]["template"]["spec"]["containers"]
    config_file = tmp_path / "config.yml"
    config_file.write_text(found["ConfigMap"]["data"]["config.yml"])
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == "config"]
    args = [a.replace(mount["mountPath"], str(config_file)) for a in container["args"]]
    env = {e["name"]: e["value"] for e in container.get("env", [])}
    # The image's ENTRYPOINT is the exporter; the Deployment gives only its arguments.
    with Served(["esxi-storage-exporter", *args], env) as served:
        served.wait_for_metric("esxi_lun_queue_depth")
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            status, _ = served.get(container[probe]["httpGet"]["path"])
            assert status == 200, probe
