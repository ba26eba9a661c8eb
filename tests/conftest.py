import os
import sys
from pathlib import Path

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


def pytest_collection_modifyitems(config, items):
    """Each test carries its folder's kind as a marker (tests/unit/ -> unit, ...), so `-m` selects
    kinds as the folders do."""
    for item in items:
        kind = item.path.parent.name
        if kind in KINDS:
            item.add_marker(kind)


def pytest_xdist_auto_num_workers(config):
    """`-n auto` (pytest-xdist; `--dist loadfile` keeps a file's tests on one worker, as its
    module-scoped servers need): two workers a core. Most of the suite waits on servers (scrapes,
    rule evaluations, simulators' update cycles), not on the CPU."""
    return max(2, 2 * len(os.sched_getaffinity(0)))
