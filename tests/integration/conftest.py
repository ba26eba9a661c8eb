"""Fixtures shared by the integration test files: a real sshd per test (simulators/esxi_ssh/sshd.py) and
exporters streaming esxtop from it over SSH, each stopped after its test."""

from __future__ import annotations

import pytest

from simulators.esxi_ssh.sshd import Sshd
from tests.support.ssh_exporter import start_exporter


@pytest.fixture
def sshd(tmp_path):
    server = Sshd(tmp_path)
    yield server
    server.stop()


@pytest.fixture
def exporter_for(sshd):
    started = []

    def start(*extra, target=None):
        started.append(start_exporter(sshd, *extra, target=target))
        return started[-1]

    yield start
    for exporter in started:
        exporter.stop()
