"""The generated dashboards, checked without a Grafana server:

1. against Grafana's own dashboard schema, generated from the pinned @grafana/schema npm package
   with ts-json-schema-generator (committed under dashboards/schema/json/; regenerated and compared
   here when node and the pinned packages are installed), panel options included;
2. against this project's rules: unique ids and uids, panels inside the 24-column grid and not
   overlapping, datasource uids that provisioning defines, $__rate_interval in every time-series
   query, units and descriptions, metric names from the README's metrics reference;
3. the committed JSON is exactly what the generator makes.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest
import yaml

from dashboards.__main__ import BOARDS, generate
from dashboards.render import IMPORT_INPUT, all_panels

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_DIR = ROOT / "dashboards" / "schema"
PROVISIONING = ROOT / "deploy" / "grafana" / "provisioning"
GRID_COLUMNS = 24
FILES = sorted(generate())  # "provisioned/x.json", "import/x.json"


def load(rel: str) -> dict:
    return json.loads((ROOT / "dashboards" / rel).read_text(encoding="utf-8"))


def schema(name: str) -> dict:
    return json.loads((SCHEMA_DIR / "json" / name).read_text(encoding="utf-8"))


@functools.cache
def validator() -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator(dashboard_schema())


def dashboard_schema() -> dict:
    """Grafana's schema, with one documented relaxation: in Grafana's CUE source AnnotationQuery is an
    open struct (`...`), because each datasource keeps its own annotation fields there (Prometheus:
    expr, step, titleFormat). The TypeScript types, and so the generated schema, close it."""
    s = copy.deepcopy(schema("dashboard.json"))
    s["definitions"]["AnnotationQuery"]["additionalProperties"] = True
    return s


def provisioned_datasource_uids() -> set[str]:
    uids = set()
    for f in (PROVISIONING / "datasources").glob("*.yml"):
        uids |= {ds["uid"] for ds in yaml.safe_load(f.read_text())["datasources"]}
    return uids


def targets(model: dict) -> list[tuple[dict, dict]]:
    return [(p, t) for p in all_panels(model) for t in p.get("targets", [])]


def contract_metrics() -> set[str]:
    """Metric names in the metrics reference (docs/metrics.md), with the `esxi_adapter_*` and
    `esxi_path_*` families expanded "as the LUN ones", the VM rows' shorthands expanded
    (`esxi_vm_disk_reads_total`, `_writes_total`) and `esxi_vm_*` "same names" as the disk rows above it."""
    section = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8").split("## Renamed series", 1)[0]
    names = set(re.findall(r"`(esxi_[a-z_]+)`", section))
    disk_rows: set[str] = set()
    for line in section.splitlines():
        full = re.findall(r"`(esxi_[a-z_]+)`", line)
        if full and full[0].startswith("esxi_vm_disk_"):
            disk_rows |= set(full) | {"esxi_vm_disk" + s for s in re.findall(r"`(_[a-z][a-z_]*[a-z])`", line)}
        if "`esxi_vm_*` (same names" in line:
            names |= disk_rows | {"esxi_vm_" + n.removeprefix("esxi_vm_disk_") for n in disk_rows}
    names |= disk_rows
    lun_family = {n[len("esxi_lun_") :] for n in names if n.startswith("esxi_lun_")}
    for family in ("adapter", "path"):
        names |= {f"esxi_{family}_{suffix}" for suffix in lun_family}
    return names


# --- 1. Grafana's schema ------------------------------------------------------------------------
@pytest.mark.parametrize("rel", FILES)
def test_dashboard_matches_grafana_schema(rel):
    model = load(rel)
    model.pop("__inputs", None), model.pop("__requires", None)  # export-only keys, not in the model
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in validator().iter_errors(model)]
    assert errors == []


@pytest.mark.parametrize("rel", FILES)
def test_panel_options_match_grafana_panel_schemas(rel):
    checked, errors = 0, []
    for panel in all_panels(load(rel)):
        for part, value in (
            ("options", panel.get("options")),
            ("fieldconfig", panel.get("fieldConfig", {}).get("defaults", {}).get("custom")),
        ):
            path = SCHEMA_DIR / "json" / f"panel-{panel['type']}-{part}.json"
            if value is None or not path.exists():
                continue
            checked += 1
            errors += [
                f"{panel['title']} {part}: {e.message[:200]}"
                for e in jsonschema.Draft7Validator(schema(path.name)).iter_errors(value)
            ]
    assert errors == []
    assert checked > 0


def test_every_panel_type_has_a_schema():
    types = {p["type"] for rel in FILES for p in all_panels(load(rel))} - {"row"}
    missing = {t for t in types if not (SCHEMA_DIR / "json" / f"panel-{t}-options.json").exists()}
    assert missing == set()


def test_committed_schema_is_what_the_pinned_packages_generate(tmp_path):
    if not shutil.which("node") or not (SCHEMA_DIR / "node_modules" / "@grafana" / "schema").is_dir():
        if os.environ.get("CI"):
            pytest.fail("node or dashboards/schema/node_modules missing: .ci/install runs npm ci there")
        pytest.skip("node or dashboards/schema/node_modules missing (.ci/install runs npm ci there)")
    subprocess.run(["node", str(SCHEMA_DIR / "generate.mjs"), str(tmp_path)], check=True, capture_output=True)
    committed = {p.name: p.read_text() for p in (SCHEMA_DIR / "json").glob("*.json")}
    fresh = {p.name: p.read_text() for p in tmp_path.glob("*.json")}
    assert sorted(fresh) == sorted(committed)
    assert [n for n in fresh if fresh[n] != committed[n]] == []


@pytest.mark.parametrize("breakage", ["gridPos.w = 'wide'", "unknown panel key", "variable without name", "graphTooltip = 'yes'"])
def test_schema_rejects_what_grafana_would_reject(breakage):
    """The schema is not vacuous: each of these breaks validation of an otherwise valid dashboard."""
    broken = load("provisioned/" + BOARDS[0].FILE)
    if breakage == "gridPos.w = 'wide'":
        broken["panels"][1]["gridPos"]["w"] = "wide"
    elif breakage == "unknown panel key":
        broken["panels"][1]["no_such_option"] = 1
    elif breakage == "variable without name":
        del broken["templating"]["list"][0]["name"]
    else:
        broken["graphTooltip"] = "yes"
    assert list(validator().iter_errors(broken)) != []


# --- 2. the project's rules ---------------------------------------------------------------------
def test_uids_are_stable_and_unique():
    uids = [load(f"provisioned/{b.FILE}")["uid"] for b in BOARDS]
    assert uids == [b.UID for b in BOARDS]
    assert len(set(uids)) == len(uids) == 11
    assert all(re.fullmatch(r"[a-z0-9-]{1,40}", u) for u in uids)


@pytest.mark.parametrize("rel", FILES)
def test_panel_ids_titles_and_ref_ids_are_unique(rel):
    panels = all_panels(load(rel))
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids))
    titles = [p["title"] for p in panels if p["type"] != "row"]
    assert sorted(t for t in set(titles) if titles.count(t) > 1) == []
    for p in panels:
        refs = [t["refId"] for t in p.get("targets", [])]
        assert len(refs) == len(set(refs)) and all(refs), p["title"]


def overlaps(a: dict, b: dict) -> bool:
    return a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"] and a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"]


@pytest.mark.parametrize("rel", FILES)
def test_panels_fit_the_grid_without_overlap(rel):
    grid = [(p["title"], p["gridPos"]) for p in load(rel)["panels"]]
    for title, g in grid:
        assert g["x"] >= 0 and g["y"] >= 0 and g["w"] >= 1 and g["h"] >= 1, title
        assert g["x"] + g["w"] <= GRID_COLUMNS, title
    clashes = [(a, b) for i, (a, ga) in enumerate(grid) for b, gb in grid[i + 1 :] if overlaps(ga, gb)]
    assert clashes == []


def test_overlap_rule_can_fail():
    assert overlaps({"x": 0, "y": 0, "w": 12, "h": 8}, {"x": 11, "y": 7, "w": 4, "h": 4})
    assert not overlaps({"x": 0, "y": 0, "w": 12, "h": 8}, {"x": 12, "y": 0, "w": 12, "h": 8})


@pytest.mark.parametrize("rel", [f for f in FILES if f.startswith("provisioned/")])
def test_datasources_are_the_variable_and_the_variable_defaults_to_a_provisioned_uid(rel):
    model = load(rel)
    provisioned = provisioned_datasource_uids()
    assert provisioned, "deploy/grafana/provisioning/datasources defines no uid"
    ds_vars = [v for v in model["templating"]["list"] if v["type"] == "datasource"]
    assert [v["name"] for v in ds_vars] == ["datasource"]
    assert ds_vars[0]["query"] == "prometheus" and ds_vars[0]["current"]["value"] in provisioned
    refs = [p.get("datasource") for p in all_panels(model) if p["type"] not in ("row", "text")]
    refs += [t["datasource"] for _, t in targets(model)]
    refs += [v["datasource"] for v in model["templating"]["list"] if v["type"] == "query"]
    refs += [a["datasource"] for a in model["annotations"].get("list", []) if not a.get("builtIn")]
    assert {(r["type"], r["uid"]) for r in refs} == {("prometheus", "${datasource}")}


@pytest.mark.parametrize("rel", [f for f in FILES if f.startswith("import/")])
def test_import_flavour_declares_its_input(rel):
    model = load(rel)
    assert [i["name"] for i in model["__inputs"]] == [IMPORT_INPUT]
    assert model["__inputs"][0]["pluginId"] == "prometheus"
    text = json.dumps(model)
    used = set(re.findall(r"\$\{(DS_[A-Z_]+)\}", text))
    assert used == {IMPORT_INPUT}
    required_panels = {r["id"] for r in model["__requires"] if r["type"] == "panel"}
    assert required_panels == {p["type"] for p in all_panels(model)} - {"row"}


@pytest.mark.parametrize("rel", [f for f in FILES if f.startswith("provisioned/")])
def test_time_series_queries_use_rate_interval(rel):
    """Every time series rates over Grafana's $__rate_interval, or reads the alerts' recording rule
    (which rates over the thresholds file's rate_window), so a panel and an alert agree."""
    recorded = recording_rules()
    for panel, target in targets(load(rel)):
        if panel["type"] == "timeseries":
            uses_rule = bool(set(re.findall(r"\b[a-z_]+:esxi_[a-z_]+:[a-z_]+", target["expr"])) & recorded)
            assert "$__rate_interval" in target["expr"] or uses_rule, (panel["title"], target["expr"])


def recording_rules() -> set[str]:
    rules = yaml.safe_load((ROOT / "alerts" / "esxi-storage.rules.yml").read_text(encoding="utf-8"))
    return {r["record"] for g in rules["groups"] for r in g["rules"] if "record" in r}


@pytest.mark.parametrize("rel", [f for f in FILES if f.startswith("provisioned/")])
def test_panels_have_units_and_descriptions(rel):
    for panel in all_panels(load(rel)):
        if panel["type"] in ("row", "text"):
            continue
        assert len(panel.get("description", "")) >= 40, panel["title"]
        if panel["type"] in ("timeseries", "stat"):
            assert panel["fieldConfig"]["defaults"].get("unit"), panel["title"]


@pytest.mark.parametrize("rel", [f for f in FILES if f.startswith("provisioned/")])
def test_queries_use_only_contract_metrics_and_defined_variables(rel):
    model = load(rel)
    known = contract_metrics()
    variables = {v["name"] for v in model["templating"]["list"]}
    exprs = [t["expr"] for _, t in targets(model)] + [v["query"] for v in model["templating"]["list"] if v["type"] == "query"]
    exprs += [a["expr"] for a in model["annotations"].get("list", []) if "expr" in a]
    recorded = recording_rules()
    for expr in exprs:
        used_rules = set(re.findall(r"\b[a-z_]+:esxi_[a-z_]+:[a-z_]+", expr))
        assert used_rules <= recorded, expr  # a recording rule the alert rule file defines
        for name in used_rules:
            expr = expr.replace(name, "")
        unknown = set(re.findall(r"\besxi_[a-z_]+", expr)) - known
        assert unknown == set(), expr
        undefined = {n for n in re.findall(r"\$(\w+)", expr) if not n.startswith("__")} - variables
        assert undefined == set(), expr


def test_units_are_base_units():
    """Latency panels in seconds, throughput in bytes/s, ratios as percentunit (0-1)."""
    for b in BOARDS:
        for panel in all_panels(load(f"provisioned/{b.FILE}")):
            exprs = " ".join(t["expr"] for t in panel.get("targets", []))
            unit = panel.get("fieldConfig", {}).get("defaults", {}).get("unit")
            if panel["type"] == "timeseries" and "latency_seconds_total" in exprs and "/" in exprs:
                assert unit == "s", panel["title"]
            if panel["type"] == "timeseries" and "bytes_total" in exprs and "link_speed" not in exprs:
                assert unit == "Bps", panel["title"]
            if panel["type"] in ("timeseries", "stat") and "used_ratio" in exprs:
                assert unit == "percentunit", panel["title"]


def test_provisioning_files_are_grafana_provisioning_files():
    datasources = yaml.safe_load((PROVISIONING / "datasources" / "esxi-storage.yml").read_text())
    assert datasources["apiVersion"] == 1
    [ds] = datasources["datasources"]
    assert ds["type"] == "prometheus" and ds["url"].startswith("http") and ds["jsonData"]["timeInterval"]
    dashboards = yaml.safe_load((PROVISIONING / "dashboards" / "esxi-storage.yml").read_text())
    assert dashboards["apiVersion"] == 1
    [provider] = dashboards["providers"]
    assert provider["type"] == "file" and provider["options"]["path"].startswith("/")


# --- 3. regenerating changes nothing ------------------------------------------------------------
def test_committed_json_is_what_the_generator_makes():
    stale = [rel for rel, text in generate().items() if (ROOT / "dashboards" / rel).read_text(encoding="utf-8") != text]
    assert stale == [], "run: python -m dashboards"


def test_check_flag_fails_on_a_hand_edit(tmp_path, capsys):
    from dashboards.__main__ import main

    assert main(["--out", str(tmp_path)]) == 0
    assert main(["--check", "--out", str(tmp_path)]) == 0
    edited = tmp_path / "provisioned" / BOARDS[0].FILE
    edited.write_text(edited.read_text().replace('"refresh": "30s"', '"refresh": "5s"'))
    (tmp_path / "import" / "stray.json").write_text("{}")
    assert main(["--check", "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert f"provisioned/{BOARDS[0].FILE} is not what the generator makes" in err
    assert "import/stray.json is not made by the generator" in err


def test_link_use_counts_nfs_datastores_on_their_vmknic(tmp_path):
    """The link-use panels' query, with the values Grafana would substitute, evaluated by
    Prometheus' engine (promtool) on series shaped as the exporter writes them: an FC HBA, and
    two NFS datastores on one 10 Gb vmknic (vSphere source) adding up on it; a VMFS datastore is
    never put on a vmknic."""
    from dashboards.promql import link_use

    if not shutil.which("promtool"):
        pytest.fail("promtool is not installed: run .ci/install")
    job = 'instance="vc",job="esxi-vsphere"'
    series = {
        f'esxi_adapter_link_speed_bytes_per_second{{{job},host="esx01",adapter="vmhba1"}}': "250000000x20",
        f'esxi_adapter_read_bytes_total{{{job},host="esx01",adapter="vmhba1"}}': "0+3000000000x20",  # 50 MB/s
        f'esxi_adapter_written_bytes_total{{{job},host="esx01",adapter="vmhba1"}}': "0+0x20",
        f'esxi_adapter_link_speed_bytes_per_second{{{job},host="esx01",adapter="vmk1"}}': "1250000000x20",
        f'esxi_datastore_info{{{job},host="esx01",datastore="nfs-a",type="nfs",remote_host="10.0.0.5",adapter="vmk1"}}': "1x20",
        f'esxi_datastore_info{{{job},host="esx01",datastore="nfs-b",type="nfs41",remote_host="10.0.0.6",adapter="vmk1"}}': "1x20",
        f'esxi_datastore_info{{{job},host="esx01",datastore="vmfs-1",type="vmfs",remote_host="",adapter=""}}': "1x20",
        f'esxi_datastore_read_bytes_total{{{job},host="esx01",datastore="nfs-a"}}': "0+30000000000x20",  # 500 MB/s
        f'esxi_datastore_written_bytes_total{{{job},host="esx01",datastore="nfs-a"}}': "0+6000000000x20",  # 100 MB/s
        f'esxi_datastore_read_bytes_total{{{job},host="esx01",datastore="nfs-b"}}': "0+7500000000x20",  # 125 MB/s
        f'esxi_datastore_written_bytes_total{{{job},host="esx01",datastore="nfs-b"}}': "0+0x20",
        f'esxi_datastore_read_bytes_total{{{job},host="esx01",datastore="vmfs-1"}}': "0+60000000000x20",
        f'esxi_datastore_written_bytes_total{{{job},host="esx01",datastore="vmfs-1"}}': "0+0x20",
    }
    # The panels read the alerts' recording rule: one direction over the payload capacity
    # (0.9 x link speed, exporter/configuration/thresholds.yaml), so the project's rule file is loaded.
    # In thousandths, rounded: promtool compares floats exactly.
    every = "round(1000 * " + link_use('host=~"esx01"', 'adapter=~".*"') + ")"
    only_vmk = "round(1000 * " + link_use('host=~"esx01"', 'adapter=~"vmk1"') + ")"
    payload = 0.9
    vmk1 = [
        {"labels": '{host="esx01",adapter="vmk1",direction="read"}', "value": round(1000 * 625e6 / (1.25e9 * payload))},
        {"labels": '{host="esx01",adapter="vmk1",direction="write"}', "value": round(1000 * 100e6 / (1.25e9 * payload))},
    ]
    tests = {
        "rule_files": [str(ROOT / "alerts" / "esxi-storage.rules.yml")],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": s, "values": v} for s, v in series.items()],
                "promql_expr_test": [
                    {
                        "expr": every,
                        "eval_time": "10m",
                        "exp_samples": [
                            {
                                "labels": '{host="esx01",adapter="vmhba1",direction="read"}',
                                "value": round(1000 * 50e6 / (250e6 * payload)),
                            },
                            {"labels": '{host="esx01",adapter="vmhba1",direction="write"}', "value": 0.0},
                            *vmk1,
                        ],
                    },
                    {"expr": only_vmk, "eval_time": "10m", "exp_samples": vmk1},
                ],
            }
        ],
    }
    path = tmp_path / "link_use.test.yml"
    path.write_text(yaml.safe_dump(tests, sort_keys=False))
    result = subprocess.run(["promtool", "test", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
