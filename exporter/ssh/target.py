"""Where and how to reach one ESXi host over SSH: the target, its options and their validation.

We drive the system OpenSSH client (see README, Operations): it honours the operator's
~/.ssh/config, agent, ProxyJump and known_hosts exactly as an interactive `ssh` does, and it is the
most scrutinised SSH implementation there is. The esxtop stream and the esxcli runner both reach a
host through a target: the same key, known_hosts and askpass for both.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, replace

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SshTarget:
    host: str
    user: str | None = None
    port: int | None = None
    interval: float = 5.0
    identity_file: str | None = None
    known_hosts: str | None = None  # None: the ssh client's own known_hosts files
    password_file: str | None = None  # also answers a key passphrase prompt
    password_env: str | None = None  # name of the variable holding the password
    rc_file: str | None = None  # esxtop -c FILE (a path on the ESXi host)
    import_entity: str | None = None  # esxtop -import-entity FILE (a path on the ESXi host)
    stall_after: float | None = None  # None: 3 intervals + 10 s
    backoff_max: float = 60.0

    @property
    def label(self) -> str:
        return self.host

    @property
    def stall_seconds(self) -> float:
        return self.stall_after if self.stall_after is not None else 3 * self.interval + 10.0

    def ssh_argv(self, remote: str, ssh: str = "ssh", stdin: bool = False) -> list[str]:
        """The ssh client's arguments to run `remote` (a shell command line) on the host.
        stdin: the remote command reads the client's standard input (else it is /dev/null, -n)."""
        interactive_secret = bool(self.password_file or self.password_env)
        argv = [
            ssh,
            "-T",
            *(() if stdin else ("-n",)),
            "-o",
            f"BatchMode={'no' if interactive_secret else 'yes'}",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            "ConnectTimeout=10",
            "-o",
            f"ServerAliveInterval={max(5, int(self.interval))}",
            "-o",
            "ServerAliveCountMax=3",
            "-o",
            "NumberOfPasswordPrompts=1",
            "-o",
            "LogLevel=ERROR",
        ]
        if self.known_hosts:
            argv += ["-o", f"UserKnownHostsFile={self.known_hosts}"]
        if self.identity_file:
            argv += ["-i", self.identity_file, "-o", "IdentitiesOnly=yes"]
        if self.port:
            argv += ["-p", str(self.port)]
        if self.user:
            argv += ["-l", self.user]
        return argv + ["--", self.host, remote]


def parse_target(text: str) -> SshTarget:
    """'USER@HOST', 'HOST', 'USER@HOST:PORT' or 'USER@[v6addr]:PORT' -> SshTarget."""
    user, _, hostport = text.rpartition("@")
    host, port = hostport, None
    if hostport.startswith("["):
        host, _, rest = hostport[1:].partition("]")
        if rest:
            port = rest.lstrip(":")
    elif hostport.count(":") == 1:
        host, port = hostport.split(":")
    if not host or host.startswith("-") or any(ch.isspace() for ch in host):
        raise ValueError(f"not an SSH target: {text!r} (use USER@HOST or USER@HOST:PORT)")
    if port is not None and (not port.isdigit() or not 0 < int(port) < 65536):
        raise ValueError(f"not an SSH target: {text!r} (bad port {port!r})")
    return SshTarget(host=host, user=user or None, port=int(port) if port else None)


def _target_keys() -> dict:
    """Each key of an esxtop.ssh_targets entry and its parser (the configuration's one set)."""
    from exporter.configuration import parsers as parse

    texts = ("host", "user", "identity_file", "known_hosts", "password_file", "password_env", "rc_file", "import_entity")
    return {
        **{key: parse.text for key in texts},
        "port": parse.port,
        "interval": parse.duration,
        "stall_after": parse.duration,
        "backoff_max": parse.duration,
    }


def targets_from_settings(settings) -> list[SshTarget]:
    """Targets from `--esxtop-ssh` flags and the `esxtop.ssh_targets` config list, with the
    esxtop.ssh_* options as defaults. Raises ConfigError listing every bad entry."""
    from exporter.configuration import parsers as parse
    from exporter.configuration.config import ConfigError

    defaults = dict(
        interval=settings["esxtop.ssh_interval"],
        identity_file=settings["esxtop.ssh_identity_file"],
        known_hosts=settings["esxtop.ssh_known_hosts"],
        password_file=settings["esxtop.ssh_password_file"],
        password_env=settings["esxtop.ssh_password_env"],
        rc_file=settings["esxtop.ssh_rc_file"],
        import_entity=settings["esxtop.ssh_import_entity"],
        stall_after=settings["esxtop.ssh_stall_after"],
        backoff_max=settings["esxtop.ssh_backoff_max"],
    )
    problems, targets = [], []
    for text in settings["esxtop.ssh"]:
        try:
            targets.append(replace(parse_target(text), **defaults))
        except ValueError as err:
            problems.append(f"--esxtop-ssh: {err}")
    section = settings.get("esxtop.ssh_targets") or []
    if not isinstance(section, list):
        problems.append("esxtop.ssh_targets: must be a list of hosts")
        section = []
    for number, entry in enumerate(section, 1):
        where = f"esxtop.ssh_targets[{number}]"
        if isinstance(entry, str):
            entry = {"host": entry}
        if not isinstance(entry, dict) or "host" not in entry:
            problems.append(f"{where}: must be a host name or a mapping with a host key")
            continue
        before = len(problems)
        values = parse.section(entry, _target_keys(), where, problems)
        if len(problems) > before:
            continue
        try:
            base = parse_target(values.pop("host"))
        except ValueError as err:
            problems.append(f"{where}.host: {err}")
            continue
        targets.append(replace(base, **{**defaults, **values}))
    for target in targets:
        problems += _check_files(target)
    labels = [t.label for t in targets]
    problems += [f"esxtop ssh: host {h} is listed twice" for h in sorted({h for h in labels if labels.count(h) > 1})]
    if problems:
        raise ConfigError(problems)
    return targets


def _check_files(target: SshTarget) -> list[str]:
    problems = []
    for name in ("identity_file", "known_hosts", "password_file"):
        path = getattr(target, name)
        if path and not os.access(path, os.R_OK):
            problems.append(f"esxtop ssh {target.label}: {name} {path} is not readable")
    try:
        world_readable = bool(target.password_file and os.stat(target.password_file).st_mode & 0o004)
    except OSError:
        world_readable = False
    if world_readable:  # ssh refuses such a private key; a password file deserves the same care
        log.warning(
            "esxtop ssh %s: password file %s is readable by every user of this machine (chmod 600 it)",
            target.label,
            target.password_file,
        )
    if target.password_env and target.password_env not in os.environ:
        problems.append(f"esxtop ssh {target.label}: password_env names {target.password_env}, which is not set")
    if target.interval < 2:
        log.warning("esxtop ssh %s: esxtop's shortest delay is 2 s on real hosts; asked for %gs", target.label, target.interval)
    return problems
