"""Dashboard builders -> the JSON Grafana stores, in two flavours:

- provisioned: the datasource variable defaults to the uid our provisioning file defines;
- import: the same, with `__inputs`/`__requires` as Grafana's "Export for sharing externally"
  writes them, so the UI's Import asks which Prometheus to use and puts its uid in place of
  `${DS_PROMETHEUS}`.
"""

from __future__ import annotations

import copy
import json

from grafana_foundation_sdk.builders import dashboard as db
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import dashboard as dm

TAG = "esxi-storage"
IMPORT_INPUT = "DS_PROMETHEUS"
# The Grafana release the pinned SDK and @grafana/schema describe (11.6).
GRAFANA_VERSION = "11.6.0"


def new_dashboard(uid: str, title: str, description: str, variables: list) -> db.Dashboard:
    d = (
        db.Dashboard(title)
        .uid(uid)
        .description(description)
        .tags([TAG])
        .editable()
        .time("now-1h", "now")
        .refresh("30s")
        .timezone("browser")
        .tooltip(dm.DashboardCursorSync.CROSSHAIR)
        .link(
            db.DashboardLink("ESXi storage")
            .type(dm.DashboardLinkType.DASHBOARDS)
            .tags([TAG])
            .as_dropdown(True)
            .include_vars(True)
            .keep_time(True)
        )
    )
    for v in variables:
        d = d.with_variable(v)
    return d


def to_json(dashboard: db.Dashboard) -> dict:
    """The provisioned flavour: the SDK's model, with panel ids numbered and the interval-only
    keys the SDK puts on every variable removed (Grafana's schema has them on no variable)."""
    model = json.loads(json.dumps(dashboard.build(), cls=JSONEncoder, sort_keys=True))
    next_id = 1
    for panel in model.get("panels", []):
        panel["id"] = next_id
        next_id += 1
        for inner in panel.get("panels", []):  # panels of a collapsed row
            inner["id"] = next_id
            next_id += 1
    for var in model.get("templating", {}).get("list", []):
        if var.get("type") != "interval":
            for key in ("auto", "auto_count", "auto_min"):
                var.pop(key, None)
    return model


def import_flavour(model: dict) -> dict:
    """The UI-import flavour of a provisioned model."""
    out = copy.deepcopy(model)
    for var in out["templating"]["list"]:
        if var["type"] == "datasource":
            var["current"] = {"text": "${%s}" % IMPORT_INPUT, "value": "${%s}" % IMPORT_INPUT}
    panel_types = sorted({p["type"] for p in all_panels(out) if p["type"] != "row"})
    head = {
        "__inputs": [
            {
                "name": IMPORT_INPUT,
                "label": "Prometheus",
                "description": "Prometheus that scrapes esxi-storage-exporter",
                "type": "datasource",
                "pluginId": "prometheus",
                "pluginName": "Prometheus",
            }
        ],
        "__requires": (
            [
                {"type": "grafana", "id": "grafana", "name": "Grafana", "version": GRAFANA_VERSION},
                {"type": "datasource", "id": "prometheus", "name": "Prometheus", "version": "1.0.0"},
            ]
            + [{"type": "panel", "id": t, "name": t, "version": ""} for t in panel_types]
        ),
    }
    return {**head, **out}


def all_panels(model: dict) -> list[dict]:
    """Every panel, including those inside collapsed rows."""
    out = []
    for p in model.get("panels", []):
        out.append(p)
        out.extend(p.get("panels", []))
    return out


def dumps(model: dict) -> str:
    return json.dumps(model, indent=2, sort_keys=False, ensure_ascii=False) + "\n"
