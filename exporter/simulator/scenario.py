"""Finding scenarios: the built-in YAML files shipped in `scenarios/`, or a user's file."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from . import events, space, vsan
from .schema import parse
from .spec import Scenario, ScenarioError

_PACKAGE = "exporter.simulator.scenarios"
_TEMPLATE_PARAM = "N"


def _builtin_files() -> dict[str, Any]:
    return {p.name[:-5]: p for p in resources.files(_PACKAGE).iterdir() if p.name.endswith(".yaml")}


def list_scenarios() -> list[tuple[str, str]]:
    """(name, one-line description) of every built-in scenario, sorted by name."""
    out = []
    for name, path in sorted(_builtin_files().items()):
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        out.append((name, str(doc.get("description", "")).strip()))
    return out


# The scenario kinds that drive the vSphere simulator and write no esxtop, as load_scenario names them.
_NOT_ESXTOP = {"vsan": "a vSAN scenario", "storage-events": "a storage-events scenario", "space": "a datastore space scenario"}


def _kind(text: str) -> str | None:
    """The document's `kind` (None for an esxtop scenario, which has none, or for YAML that does not
    parse: the esxtop parser then says what is wrong)."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    return doc.get("kind") if isinstance(doc, dict) else None


def load_scenario(name_or_path: str) -> Scenario:
    """A built-in scenario by name (`shared-lun-12-hosts` fills the `N` of `shared-lun-N-hosts`),
    or a YAML file by path."""
    text, name, file, n = _find(name_or_path)
    kind = _kind(text)
    if kind in _NOT_ESXTOP:
        raise ScenarioError(
            f"{name_or_path} is {_NOT_ESXTOP[kind]}: it writes no esxtop; serve it with `serve --simulate {name_or_path}`"
        )
    return parse(text, name, file) if n is None else parse(text, name, file, n)


def load_vsan_scenario(name_or_path: str) -> vsan.VsanScenario | None:
    """The scenario if it is a vSAN one (`kind: vsan`), else None."""
    text, name, file, _ = _find(name_or_path)
    return vsan.parse(text, name, file) if _kind(text) == "vsan" else None


def load_events_scenario(name_or_path: str) -> events.EventsScenario | None:
    """The scenario if it is a storage-events one (`kind: storage-events`), else None."""
    text, name, file, _ = _find(name_or_path)
    return events.parse(text, name, file) if _kind(text) == "storage-events" else None


def load_space_scenario(name_or_path: str) -> space.SpaceScenario | None:
    """The scenario if it is a datastore space one (`kind: space`), else None."""
    text, name, file, _ = _find(name_or_path)
    return space.parse(text, name, file) if _kind(text) == "space" else None


def _find(name_or_path: str) -> tuple[str, str, str, int | None]:
    """(text, name, file, N) of a built-in scenario or a YAML file; N fills a template's `N`."""
    builtin = _builtin_files()
    if name_or_path in builtin:
        return builtin[name_or_path].read_text(encoding="utf-8"), name_or_path, f"{name_or_path}.yaml", None
    for template, path in builtin.items():
        if f"-{_TEMPLATE_PARAM}-" not in template:
            continue
        head, tail = template.split(f"-{_TEMPLATE_PARAM}-", 1)
        pattern = f"^{re.escape(head)}-([0-9]+)-{re.escape(tail)}$"
        m = re.match(pattern, name_or_path)
        if m:
            return path.read_text(encoding="utf-8"), name_or_path, f"{template}.yaml", int(m.group(1))
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or p.exists():
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as e:
            raise ScenarioError(f"{name_or_path}: cannot read scenario file: {e.strerror}") from None
        return text, p.stem, str(p), None
    raise ScenarioError(f"unknown scenario {name_or_path!r}: not a built-in scenario (see `simulate --list`) nor a YAML file")


def scenario_from_text(text: str, name: str = "scenario", file: str = "<text>") -> Scenario:
    """A scenario from YAML text (`file` only names it in error messages)."""
    return parse(text, name, file)
