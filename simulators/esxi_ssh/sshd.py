"""A real OpenSSH server (Debian openssh-server) on 127.0.0.1 for the esxtop-over-SSH tests.

Everything lives in a temp dir: host key, authorized_keys, a client key and a known_hosts file
that trusts this server. Every session runs the stand-in esxtop (simulators/esxi_ssh/esxtop.py)
through a ForceCommand wrapper that puts it first on PATH, so `esxtop -b ...` resolves as on ESXi.
The test can kill the sessions (a dropped connection or a rebooting host), stop and restart the
server on the same port, or restart it with a new host key.

tests/integration/conftest.py makes it the fixture `sshd`, and `exporter_for` starts exporters on it
(tests/support/ssh_exporter.py); bench/soak_ssh.py and bench/smart_flood.py run it too.
"""

from __future__ import annotations

import functools
import getpass
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from simulators.ports import free_port

ROOT = Path(__file__).resolve().parents[2]  # the repository: the stand-ins run as modules of it

SSHD = "/usr/sbin/sshd"


def keygen(path: Path, passphrase: str = "") -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-C", "test", "-f", str(path)],
        check=True,
        stdin=subprocess.DEVNULL,
    )


@functools.cache
def can_fake_shadow() -> bool:
    """Password auth needs the user's password in /etc/shadow: root can give sshd its own copy in a
    private mount namespace, leaving the machine's file alone."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    return probe.returncode == 0


class Sshd:
    def __init__(self, tmp: Path, password: str | None = None):
        self.tmp = tmp
        self.password = password
        self.port = free_port()
        self.user = getpass.getuser()
        self.proc: subprocess.Popen | None = None
        keygen(tmp / "host_key")
        keygen(tmp / "client_key")
        (tmp / "authorized_keys").write_text((tmp / "client_key.pub").read_text())
        self.control = tmp / "control.json"
        self.set_control()
        bin_dir = tmp / "bin"
        bin_dir.mkdir()
        esxtop = bin_dir / "esxtop"
        esxtop.write_text(f'#!/bin/sh\nexec {sys.executable} -m simulators.esxi_ssh.esxtop "$@"\n')
        esxtop.chmod(0o755)
        esxcli = bin_dir / "esxcli"
        esxcli.write_text(f'#!/bin/sh\nexec {sys.executable} -m simulators.esxi_ssh.esxcli "$@"\n')
        esxcli.chmod(0o755)
        session = tmp / "session"
        session.write_text(
            "#!/bin/sh\n"
            f"export PATH={bin_dir}:$PATH PYTHONPATH={ROOT} FAKE_ESXTOP_CONTROL={self.control}\n"
            f"cd {ROOT}\n"
            'exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"\n'
        )
        session.chmod(0o755)
        if os.geteuid() == 0:
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege-separation dir
        self.trust_current_key()
        self.start()

    @property
    def target(self) -> str:
        return f"{self.user}@127.0.0.1:{self.port}"

    @property
    def known_hosts(self) -> Path:
        return self.tmp / "known_hosts"

    def trust_current_key(self) -> None:
        key = (self.tmp / "host_key.pub").read_text().split()
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {key[0]} {key[1]}\n")

    def set_control(self, **control) -> None:
        self.control.write_text(json.dumps(control))

    def runs(self) -> list[dict]:
        path = self.tmp / "runs.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def config(self) -> Path:
        path = self.tmp / "sshd_config"
        path.write_text(f"""ListenAddress 127.0.0.1:{self.port}
HostKey {self.tmp / "host_key"}
PidFile {self.tmp / "sshd.pid"}
AuthorizedKeysFile {self.tmp / "authorized_keys"}
UsePAM no
StrictModes no
PubkeyAuthentication yes
PasswordAuthentication {"yes" if self.password else "no"}
KbdInteractiveAuthentication no
PermitRootLogin {"yes" if self.password else "prohibit-password"}
ForceCommand {self.tmp / "session"}
AllowTcpForwarding no
X11Forwarding no
PrintMotd no
MaxStartups 100
LogLevel INFO
""")
        return path

    def start(self) -> None:
        self.log = open(self.tmp / "sshd.log", "ab")
        argv = [SSHD, "-D", "-e", "-f", str(self.config())]
        if can_fake_shadow():
            # sshd runs the session through the user's login shell; bash would read ~/.bashrc, and a
            # session the test kills mid-rc can leave that rc's state behind (a stale pyenv rehash
            # lock made every later login wait 60 s). ESXi's shell is a plain sh: give sshd that.
            binds = [f'mount --bind "{self.fake_passwd()}" /etc/passwd']
            if self.password:
                binds.append(f'mount --bind "{self.fake_shadow()}" /etc/shadow')
            argv = ["unshare", "-m", "sh", "-c", " && ".join(binds) + ' && exec "$@"', "sshd", *argv]
        elif self.password:
            raise RuntimeError("password authentication needs root and unshare (see can_fake_shadow)")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sshd exited with {self.proc.returncode}: {(self.tmp / 'sshd.log').read_text()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise TimeoutError("sshd did not listen")

    def fake_passwd(self) -> Path:
        """A copy of /etc/passwd with this user's login shell set to /bin/sh (reads no rc file for -c)."""
        lines = []
        for line in Path("/etc/passwd").read_text().splitlines():
            fields = line.split(":")
            if fields[0] == self.user and len(fields) == 7:
                fields[6] = "/bin/sh"
            lines.append(":".join(fields))
        path = self.tmp / "passwd"
        path.write_text("\n".join(lines) + "\n")
        path.chmod(0o644)
        return path

    def fake_shadow(self) -> Path:
        """A copy of /etc/shadow with this user's password set (hashed by openssl, fed on stdin)."""
        hashed = subprocess.run(
            ["openssl", "passwd", "-6", "-stdin"], input=self.password + "\n", capture_output=True, text=True, check=True
        ).stdout.strip()
        lines = []
        for line in Path("/etc/shadow").read_text().splitlines():
            fields = line.split(":")
            if fields[0] == self.user:
                fields[1] = hashed
            lines.append(":".join(fields))
        path = self.tmp / "shadow"
        path.write_text("\n".join(lines) + "\n")
        path.chmod(0o600)
        return path

    def sessions(self) -> list[int]:
        """PIDs of everything the server started (connection handlers, shells, esxtop)."""
        if self.proc is None:
            return []
        children: dict[int, list[int]] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    stat = Path(f"/proc/{entry}/stat").read_text()
                except OSError:
                    continue
                ppid = int(stat.rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry))
        found, todo = [], [self.proc.pid]
        while todo:
            for child in children.get(todo.pop(), []):
                found.append(child)
                todo.append(child)
        return found

    def kill_sessions(self) -> None:
        """Cut every open connection at once, as a host that loses power would."""
        for pid in self.sessions():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def stop(self) -> None:
        self.kill_sessions()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        self.proc = None
        self.log.close()

    def new_host_key(self) -> None:
        """Restart with a different host key (a reinstalled host, or someone in the middle)."""
        self.stop()
        for name in ("host_key", "host_key.pub"):
            (self.tmp / name).unlink()
        keygen(self.tmp / "host_key")
        self.start()
