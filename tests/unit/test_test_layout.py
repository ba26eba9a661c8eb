"""Shared test helpers stay in tests/support/ (#38): no module under tests/ or bench/ imports from a
test module of tests/unit, tests/integration or tests/deployment, so each test file can move, split
or go without breaking another."""

from __future__ import annotations

import ast

import pytest

from tests.support.servers import ROOT

TEST_PACKAGES = ("tests.unit", "tests.integration", "tests.deployment")


def imported(tree: ast.AST) -> list[tuple[int, list[str]]]:
    """(line, modules) of every import statement, `from a import b` naming both a and a.b."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, [alias.name]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]))
    return found


def imports_of_test_modules(source: str) -> list[str]:
    """'line: module' of each import statement in source that reaches into a test module."""
    return [
        f"{line}: {modules[0]}"
        for line, modules in imported(ast.parse(source))
        if any(module.startswith(package + ".") for module in modules for package in TEST_PACKAGES)
    ]


def test_no_module_under_tests_or_bench_imports_a_test_module():
    files = sorted([*(ROOT / "tests").rglob("*.py"), *(ROOT / "bench").rglob("*.py")])
    assert any(path.name.startswith("test_") for path in files)
    wrong = [f"{path.relative_to(ROOT)}:{found}" for path in files for found in imports_of_test_modules(path.read_text())]
    assert wrong == [], "move what they share into tests/support/: " + ", ".join(wrong)


@pytest.mark.parametrize(
    "source",
    [
        "from tests.unit.test_esxcli import GOLD",
        "from tests.integration import test_ssh",
        "import tests.deployment.test_deploy_kubernetes",
        "def f():\n    from tests.deployment.test_scale_stack import VictoriaMetrics",
    ],
)
def test_an_import_of_a_test_module_is_found(source):
    assert len(imports_of_test_modules(source)) == 1


@pytest.mark.parametrize("source", ["from tests.support.cli import run_cli", "import tests.unit", "from . import x"])
def test_an_import_of_support_is_not(source):
    assert imports_of_test_modules(source) == []
