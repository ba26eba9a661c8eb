"""exporter.vsphere.gcpause: the collector is off inside a pause, back on when the last one ends,
whichever thread ends first, and left off if it was off before."""

from __future__ import annotations

import gc
import threading

from exporter.vsphere import gcpause


def test_nested_pauses_across_threads_restore_the_collector_once_the_last_ends():
    assert gc.isenabled()
    inside, release = threading.Event(), threading.Event()

    def other():
        with gcpause.paused():
            inside.set()
            release.wait(5)

    thread = threading.Thread(target=other)
    with gcpause.paused():
        assert not gc.isenabled()
        thread.start()
        assert inside.wait(5)
    assert not gc.isenabled()  # the other thread's pause is still running
    release.set()
    thread.join(5)
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off():
    gc.disable()
    try:
        with gcpause.paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_collector_comes_back_after_an_exception():
    try:
        with gcpause.paused():
            raise RuntimeError("collection failed")
    except RuntimeError:
        pass
    assert gc.isenabled()
