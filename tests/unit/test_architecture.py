"""One direction of flow, checked by import-linter (contracts in pyproject.toml, also run by
`.ci/run` as `lint-imports`): the layers from the command line down to the store, esxtop and
vSphere independent, the model importing only units, sources rendering nothing. Plus what a
contract cannot say: no circle anywhere in the package, and few modules left flat at its top."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.servers import ROOT

LINT = [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"]


def lint(root: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(root))
    return subprocess.run(LINT, cwd=root, env=env, capture_output=True, text=True, timeout=120)


def test_every_import_runs_the_right_way():
    done = lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "5 kept, 0 broken" in done.stdout


def _broken_copy(tmp_path: Path, module: str, line: str) -> subprocess.CompletedProcess:
    """import-linter on a copy of the package where `module` gets one more import."""
    shutil.copytree(ROOT / "exporter", tmp_path / "exporter", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    path = tmp_path / "exporter" / module
    path.write_text(path.read_text() + f"\n{line}  # noqa: E402\n")
    return lint(tmp_path)


@pytest.mark.parametrize(
    "module, line, contract, chain",
    [
        (
            "collectors/lun.py",
            "from exporter.esxtop import reader",
            "Layers: command line -> commands -> app -> sources -> collectors -> store and",
            "exporter.collectors.lun -> exporter.esxtop.reader",
        ),
        (
            "esxcli/ssh.py",
            "from exporter.esxtop.ssh import esxtop_command",
            "Layers: command line -> commands -> app -> sources -> collectors -> store and",
            "exporter.esxcli.ssh -> exporter.esxtop.ssh",
        ),
        (
            "vsphere/source.py",
            "from exporter.esxtop.reader import EsxtopReader",
            "The sources are independent: esxtop and vSphere import nothing of each other BROKEN",
            "exporter.vsphere.source -> exporter.esxtop.reader",
        ),
    ],
)
def test_a_wrong_way_import_breaks_a_contract(tmp_path, module, line, contract, chain):
    """The checks can fail: a collector reading a source, esxcli borrowing from the esxtop stream
    (the circle this layout removed), vSphere using the esxtop reader."""
    done = _broken_copy(tmp_path, module, line)
    assert done.returncode != 0
    assert contract in done.stdout and "BROKEN" in done.stdout
    assert chain in done.stdout


def _import_graph() -> dict[str, set[str]]:
    import grimp

    graph = grimp.build_graph("exporter", cache_dir=None)
    return {name: graph.find_modules_directly_imported_by(name) for name in graph.modules}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each a circle of imports."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_import_graph_of_the_package_has_no_circle():
    graph = _import_graph()
    # A package's face (__init__) re-exporting its own modules is not a circle between modules.
    graph = {n: {d for d in deps if not n.startswith(d + ".")} for n, deps in graph.items()}
    assert _circles(graph) == []
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]  # the check can see one


def test_at_most_six_modules_flat_at_the_top_of_the_package():
    flat = sorted(p.name for p in (ROOT / "exporter").glob("*.py"))
    assert len(flat) <= 6, flat


def test_a_source_that_imports_the_text_format_breaks_a_contract(tmp_path):
    """The check can fail: a copy of the package whose file follower renders metrics itself."""
    shutil.copytree(ROOT / "exporter", tmp_path / "exporter", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    streams = tmp_path / "exporter" / "esxtop" / "streams.py"
    streams.write_text(streams.read_text() + "\nfrom exporter.collectors.textformat import gauge  # noqa: E402\n")
    done = lint(tmp_path)
    assert done.returncode != 0
    assert "Sources produce model objects: they import nothing that renders or wires BROKEN" in done.stdout
    assert "exporter.esxtop.streams -> exporter.collectors.textformat" in done.stdout
