"""A call the follower makes while settling a change (a host added to a list view, a host's storage
read again) that the server refuses because the session ended (an expiry, a vCenter restart) is the
stream failing, as when the wait itself fails: the source walks again, with a WARNING naming the
cause, and no ERROR with a traceback (the churn soak, #45, saw one at a session expiry)."""

from __future__ import annotations

import http.client
import logging
import threading
import time
from types import SimpleNamespace

import pytest
from pyVmomi import vim

from exporter.vsphere.follow import Follower
from exporter.vsphere.mirror import LUNS, Delta, Wants


class Session:
    """An update stream whose first answer is a change, and whose view changes the server refuses."""

    def __init__(self, refusal: BaseException):
        self.refusal = refusal
        self.answered = False

    def wait(self, max_wait, max_objects=None, timeout=None):
        if self.answered:
            time.sleep(0.01)
            return None
        self.answered = True
        return SimpleNamespace(updates=[], truncated=False)

    def add_to(self, view, kind, moids):
        raise self.refusal

    def interrupt(self):
        pass

    def close(self):
        pass


class Mirror:
    """Wants a new host's LUNs listed (a host added), as the real mirror does."""

    following = True
    unread = False  # no host's re-read waits for a retry

    def apply(self, updates):
        pass

    def retry_unread(self):
        return False

    def settle(self):
        return Delta(), Wants(list_luns=["host-99"])


@pytest.mark.parametrize(
    ("refusal", "said"),
    [
        (vim.fault.NotAuthenticated(), "session not authenticated"),
        (ConnectionResetError(104, "Connection reset by peer"), "connection closed by the server"),
        (http.client.HTTPException("503 Service Unavailable"), "HTTP 503 Service Unavailable"),
    ],
)
def test_a_refused_call_while_settling_fails_the_stream_without_a_traceback(refusal, said, caplog):
    config = SimpleNamespace(name="vc", timeout=30.0, max_parallel_queries=4)
    follower = Follower(client=None, config=config, publish=lambda delta, mirror: None)
    follower.mirror = Mirror()
    session = Session(refusal)
    follower.hosts = session
    follower._views[LUNS] = object()
    with caplog.at_level(logging.WARNING):
        follower.follow(session, until=time.monotonic() + 5, stop=threading.Event())
    assert follower.failure == said
    assert follower.closed.is_set()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
