import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# This interpreter's bin/ first on PATH, as an activated virtualenv has it: the README runs the suite
# as `.venv/bin/python -m pytest`, and the programs the test extra installs there (hadolint,
# docker-compose; go where .ci/install took it from PyPI) are looked up by name.
BIN = str(Path(sys.executable).parent)
if os.environ.get("PATH", "").split(os.pathsep)[0] != BIN:
    os.environ["PATH"] = BIN + os.pathsep + os.environ.get("PATH", "")


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False, help="rewrite golden exposition files")


KINDS = ("unit", "integration", "deployment")
# Run in parallel (`-n auto`, pytest-xdist with --dist loadgroup), a file's tests stay together on
# one worker, as its module-scoped servers need; the deployment files share one worker, so that
# no two of them build container images or bases at the same time.
SERIAL_GROUP = "deployment"


def pytest_collection_modifyitems(config, items):
    """Each test carries its folder's kind as a marker (tests/unit/ -> unit, ...), so `-m` selects
    kinds as the folders do, and its xdist group (its file, or the deployment group)."""
    for item in items:
        kind = item.path.parent.name
        if kind in KINDS:
            item.add_marker(kind)
        group = SERIAL_GROUP if kind == SERIAL_GROUP else str(item.path.relative_to(ROOT))
        item.add_marker(pytest.mark.xdist_group(group))


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: two workers a core. Most of the suite waits on servers (scrapes, rule
    evaluations, simulators' update cycles), not on the CPU."""
    return max(2, 2 * len(os.sched_getaffinity(0)))
