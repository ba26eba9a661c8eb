"""glibc malloc settings for the long-running serve process.

Two glibc defaults keep memory this process has freed from going back to the system, in its
pattern of vCenter answers and exposition buffers of tens of MiB, made and freed by a dozen
threads every 20 s:
- the mmap threshold rises to the largest block freed (up to 32 MiB), so later large buffers come
  from the heap, whose pages stay with the process once freed; a fixed threshold keeps them
  mmapped, returned to the system as each is freed;
- a thread may get an arena of its own (up to 8 per core), each keeping what was freed in it.
A setting given in the environment (MALLOC_ARENA_MAX, MALLOC_MMAP_THRESHOLD_) is left as given.

And freed heap memory goes back to the system only from the heap's top: one block still in use
above the free ones holds them all. In #45's churn soak 53 MiB of the walks' freed memory stayed
that way for 57 minutes (RSS 102 MiB), until the block above was freed and glibc gave it back at
once (51 MiB): the "drop" every hour-long run showed. release_every() hands freed whole pages
back every RELEASE_EVERY seconds (malloc_trim, 0.3-0.5 ms there): RSS 48.5 MiB from the first
minute. Elsewhere than glibc nothing is done.
"""

from __future__ import annotations

import ctypes
import functools
import os
import threading

M_MMAP_THRESHOLD = -3  # glibc's malloc.h
M_ARENA_MAX = -8
SETTINGS = ((M_MMAP_THRESHOLD, "MALLOC_MMAP_THRESHOLD_", 128 * 1024), (M_ARENA_MAX, "MALLOC_ARENA_MAX", 2))
RELEASE_EVERY = 60.0  # seconds: once every three collections at the default 20 s interval


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


@functools.cache
def _malloc_trim():
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    trim.argtypes, trim.restype = (ctypes.c_size_t,), ctypes.c_int
    return trim


def release() -> bool:
    """Hand the heap's free whole pages back to the system (glibc's malloc_trim(0), which also
    releases those below blocks still in use); True if any went back, False off glibc."""
    trim = _malloc_trim()
    return bool(trim is not None and trim(0))


def release_every(stop: threading.Event, every: float = RELEASE_EVERY) -> threading.Thread | None:
    """release() every `every` seconds until stop, in a thread of its own (None off glibc)."""
    if _malloc_trim() is None:
        return None

    def loop() -> None:
        while not stop.wait(every):
            release()

    thread = threading.Thread(target=loop, name="malloc-release", daemon=True)
    thread.start()
    return thread
