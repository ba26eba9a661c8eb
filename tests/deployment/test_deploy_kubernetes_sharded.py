"""deploy/kubernetes/sharded: exporter shards (StatefulSet), Prometheus shards (operator), the
global store and vmalert; validated offline like the single-exporter manifests."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from alerts import generate
from tests.support.deploy import DEPLOY, tool
from tests.support.kubernetes import KUBERNETES_VERSIONS, PROMETHEUS_OPERATOR, strict

SHARDED = DEPLOY / "kubernetes" / "sharded"


def resources() -> list[dict]:
    docs = []
    for name in yaml.safe_load((SHARDED / "kustomization.yaml").read_text())["resources"]:
        docs += [d for d in yaml.safe_load_all((SHARDED / name).read_text()) if d]
    return docs


def test_kustomization_lists_every_manifest_here():
    listed = {n for n in yaml.safe_load((SHARDED / "kustomization.yaml").read_text())["resources"] if "/" not in n}
    assert listed == {p.name for p in SHARDED.glob("*.yaml")} - {"kustomization.yaml"}


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_builtin_kinds_validate_strictly(version):
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    kinds = set()
    for doc in resources():
        if doc["apiVersion"] in ("v1", "apps/v1"):
            kubernetes_validate.validate(doc, version, strict=True)
            kinds.add(doc["kind"])
    assert {"StatefulSet", "Deployment", "Service", "ConfigMap"} <= kinds


def test_operator_kinds_validate_against_their_crds():
    jsonschema = pytest.importorskip("jsonschema")
    done = subprocess.run([tool("go"), "mod", "download", "-json", PROMETHEUS_OPERATOR], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    crds = Path(json.loads(done.stdout)["Dir"]) / "example" / "prometheus-operator-crd"
    files = {
        "Prometheus": "monitoring.coreos.com_prometheuses.yaml",
        "PrometheusRule": "monitoring.coreos.com_prometheusrules.yaml",
    }
    seen = set()
    for doc in resources():
        if doc["kind"] in files:
            crd = yaml.safe_load((crds / files[doc["kind"]]).read_text())
            (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
            jsonschema.validate(doc, strict(version["schema"]["openAPIV3Schema"]))
            seen.add(doc["kind"])
    assert seen == set(files)
    prometheus = next(d for d in resources() if d["kind"] == "Prometheus")
    exporters = next(d for d in resources() if d["kind"] == "StatefulSet")
    assert prometheus["spec"]["shards"] == 2 and exporters["spec"]["replicas"] == 2
    assert "--vsphere.shard=$(SHARD)/2" in exporters["spec"]["template"]["spec"]["containers"][0]["args"]


def test_rules_are_the_generated_split():
    shard, global_ = generate.split_cross_host(generate.render_groups(generate.load_config()))
    rule = next(d for d in resources() if d["kind"] == "PrometheusRule")
    assert rule["spec"]["groups"] == shard
    configmap = next(d for d in resources() if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "esxi-storage-global-rules")
    assert yaml.safe_load(configmap["data"]["esxi-storage.global.rules.yml"])["groups"] == global_
