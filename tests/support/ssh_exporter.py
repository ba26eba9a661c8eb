"""`serve` streaming esxtop from the test sshd (simulators/esxi_ssh/sshd.py)."""

from __future__ import annotations

from simulators.esxi_ssh.sshd import Sshd
from tests.support.servers import Exporter


def start_exporter(sshd: Sshd, *extra: str, target: str | None = None) -> Exporter:
    """The exporter streaming esxtop from this server over SSH, trusting it, retrying every second."""
    return Exporter(
        "--esxtop-ssh",
        target or sshd.target,
        f"--esxtop.ssh-identity-file={sshd.tmp / 'client_key'}",
        f"--esxtop.ssh-known-hosts={sshd.known_hosts}",
        "--esxtop.ssh-interval=1s",
        "--esxtop.ssh-backoff-max=1s",
        *extra,
        log_path=sshd.tmp / "exporter.log",
    )
