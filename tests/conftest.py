import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False, help="rewrite golden exposition files")


KINDS = ("unit", "integration", "deployment")


def pytest_collection_modifyitems(config, items):
    """Each test carries its folder's kind as a marker (tests/unit/ -> unit, ...), so `-m` selects
    kinds as the folders do."""
    for item in items:
        kind = item.path.parent.name
        if kind in KINDS:
            item.add_marker(kind)
