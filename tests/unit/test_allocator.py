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
