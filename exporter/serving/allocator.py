"""glibc malloc settings for the long-running serve process.

Two glibc defaults keep memory this process has freed from going back to the system, in its
pattern of vCenter answers and exposition buffers of tens of MiB, made and freed by a dozen
threads every 20 s:
- the mmap threshold rises to the largest block freed (up to 32 MiB), so later large buffers come
  from the heap, whose pages stay with the process once freed; a fixed threshold keeps them
  mmapped, returned to the system as each is freed;
- a thread may get an arena of its own (up to 8 per core), each keeping what was freed in it.
A setting given in the environment (MALLOC_ARENA_MAX, MALLOC_MMAP_THRESHOLD_) is left as given.
Elsewhere than glibc nothing is done.
"""

from __future__ import annotations

import ctypes
import os

M_MMAP_THRESHOLD = -3  # glibc's malloc.h
M_ARENA_MAX = -8
SETTINGS = ((M_MMAP_THRESHOLD, "MALLOC_MMAP_THRESHOLD_", 128 * 1024), (M_ARENA_MAX, "MALLOC_ARENA_MAX", 2))


def tune() -> dict[str, int]:
    """Sets what the environment does not; returns what was set (empty off glibc)."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (or no symbol table to look in)
        return {}
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    done = {}
    for option, variable, value in SETTINGS:
        if variable not in os.environ and mallopt(option, value) == 1:
            done[variable] = value
    return done
