"""serve's glibc malloc settings: set where the environment says nothing, left where it does."""

from __future__ import annotations

import platform

import pytest

from exporter.serving import allocator

glibc = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's mallopt only")


@glibc
def test_both_settings_are_made_on_glibc(monkeypatch):
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    assert allocator.tune() == {"MALLOC_MMAP_THRESHOLD_": 128 * 1024, "MALLOC_ARENA_MAX": 2}


@glibc
def test_a_setting_given_in_the_environment_is_left_as_given(monkeypatch):
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    assert allocator.tune() == {"MALLOC_MMAP_THRESHOLD_": 128 * 1024}


_HELD_UNDER_A_BLOCK = """
import json, sys
from exporter.serving import allocator

def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024

allocator.tune()
blocks = [bytes(4000) for _ in range(20000)]  # 80 MB from the heap (malloc: below the mmap threshold)
top = bytes(4000)  # above them: the heap cannot shrink past a block in use
del blocks
before = rss()
released = allocator.release() if sys.argv[1] == "release" else False
print(json.dumps({"before": before, "after": rss(), "released": released}))
"""


def _held(mode: str) -> dict:
    import json
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", _HELD_UNDER_A_BLOCK, mode], capture_output=True, text=True, check=True)
    return json.loads(run.stdout)


@glibc
def test_release_hands_back_freed_memory_held_under_a_block_in_use():
    """What the soak's hour-long runs showed: freed memory under a block still in use stays with
    the process (glibc gives back only from the heap's top) until release()."""
    kept, released = _held("keep"), _held("release")
    assert kept["after"] - kept["before"] > -8 * 2**20  # without release() the 80 MB stay
    assert released["released"] is True
    assert released["before"] - released["after"] > 60 * 2**20


@glibc
def test_release_every_runs_until_stopped():
    import threading

    stop = threading.Event()
    thread = allocator.release_every(stop, every=0.01)
    assert thread is not None and thread.name == "malloc-release" and thread.daemon
    stop.set()
    thread.join(2)
    assert not thread.is_alive()
