"""Live esxtop over SSH: one supervised `ssh HOST esxtop -b ...` per host, restarted with backoff.

We drive the system OpenSSH client (see README, Operations): it honours the operator's
~/.ssh/config, agent, ProxyJump and known_hosts exactly as an interactive `ssh` does, and it is the
most scrutinised SSH implementation there is. Passwords (or key passphrases) reach it only through
SSH_ASKPASS: a tiny script that reads a file or an environment variable, never a process argument.

Each session gets a fresh EsxtopReader, so the header esxtop prints after a restart is read anew
(the column set can change between runs). A stream that delivers no row for `stall_after` seconds
is killed and restarted; when a session ends, the host's gauges are dropped (counters stay) and
`esxi_esxtop_up{host}` reads 0 until rows flow again.
"""

from __future__ import annotations

import atexit
import logging
import os
import random
import selectors
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass, replace

from exporter.esxtop.reader import EsxtopReader
from exporter.esxtop.streams import pump
from exporter.store import model as m

log = logging.getLogger(__name__)

# Why a session ended: the `reason` label of esxi_esxtop_restarts_total.
REASONS = ("refused", "unreachable", "host_key", "auth", "dropped", "esxtop_exited", "stalled")
MAX_LINE = 64 << 20  # a header of a very large host is a few MB; past this the stream is garbage


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

    def remote_command(self) -> str:
        args = ["esxtop", "-b"]
        if self.rc_file:
            args += ["-c", self.rc_file]
        else:
            args.append("-a")  # every counter: the reservation, abort and per-direction ones need it
        if self.import_entity:
            args += ["-import-entity", self.import_entity]
        args += ["-d", f"{self.interval:g}", "-n", "0"]
        return " ".join(shlex.quote(a) for a in args)

    def ssh_argv(self, ssh: str = "ssh", remote: str | None = None) -> list[str]:
        """The ssh client's arguments; remote: another command than esxtop (esxcli)."""
        interactive_secret = bool(self.password_file or self.password_env)
        argv = [
            ssh,
            "-T",
            "-n",
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
        return argv + ["--", self.host, remote if remote is not None else self.remote_command()]


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


_TARGET_KEYS = {
    "host",
    "user",
    "port",
    "interval",
    "identity_file",
    "known_hosts",
    "password_file",
    "password_env",
    "rc_file",
    "import_entity",
    "stall_after",
    "backoff_max",
}


def targets_from_settings(settings) -> list[SshTarget]:
    """Targets from `--esxtop-ssh` flags and the `esxtop.ssh_targets` config list, with the
    esxtop.ssh_* options as defaults. Raises ConfigError listing every bad entry."""
    from exporter.configuration.config import ConfigError
    from exporter.store.units import parse_duration

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
        unknown = sorted(str(k) for k in entry if k not in _TARGET_KEYS)
        if unknown:
            problems.append(f"{where}: unknown setting(s) {', '.join(unknown)}")
            continue
        try:
            base = parse_target(str(entry["host"]))
            values = {k: v for k, v in entry.items() if k != "host" and v is not None}
            for key in ("interval", "stall_after", "backoff_max"):
                if key in values:
                    values[key] = parse_duration(values[key])
                    if not values[key] > 0:
                        raise ValueError(f"{key} must be longer than 0")
            if "port" in values:
                values["port"] = int(values["port"])
            for key in ("user", "identity_file", "known_hosts", "password_file", "password_env", "rc_file", "import_entity"):
                if key in values:
                    values[key] = str(values[key])
            targets.append(replace(base, **{**defaults, **values}))
        except (ValueError, TypeError) as err:
            problems.append(f"{where}: {err}")
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
    if target.password_env and target.password_env not in os.environ:
        problems.append(f"esxtop ssh {target.label}: password_env names {target.password_env}, which is not set")
    if target.interval < 2:
        log.warning("esxtop ssh %s: esxtop's shortest delay is 2 s on real hosts; asked for %gs", target.label, target.interval)
    return problems


# -- askpass ------------------------------------------------------------------------------------
# A POSIX sh script: `read` and `printf` are builtins, so the secret is never in any argv.
_ASKPASS = """#!/bin/sh
if [ -n "${ESXI_EXPORTER_SSH_PASSWORD_FILE:-}" ]; then
  IFS= read -r secret < "$ESXI_EXPORTER_SSH_PASSWORD_FILE"
  printf '%s\\n' "$secret"
else
  printf '%s\\n' "${ESXI_EXPORTER_SSH_PASSWORD:-}"
fi
"""
_askpass_lock = threading.Lock()
_askpass_path: str | None = None


def askpass_script() -> str:
    global _askpass_path
    with _askpass_lock:
        if _askpass_path is None:
            folder = tempfile.mkdtemp(prefix="esxi-exporter-askpass-")
            path = os.path.join(folder, "askpass")
            with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o700), "w") as handle:
                handle.write(_ASKPASS)
            atexit.register(shutil.rmtree, folder, True)
            _askpass_path = path
        return _askpass_path


def ssh_environment(target: SshTarget) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ESXI_EXPORTER_SSH_PASSWORD")}
    if target.password_file or target.password_env:
        env.update(SSH_ASKPASS=askpass_script(), SSH_ASKPASS_REQUIRE="force", DISPLAY=env.get("DISPLAY", ":0"))
        if target.password_file:
            env["ESXI_EXPORTER_SSH_PASSWORD_FILE"] = os.path.abspath(target.password_file)
        else:
            env["ESXI_EXPORTER_SSH_PASSWORD"] = os.environ.get(target.password_env, "")
    return env


# -- one host's supervised stream ---------------------------------------------------------------
_running: set[subprocess.Popen] = set()


@atexit.register
def _kill_running() -> None:
    # Stream threads are daemons: at exit, end their ssh processes too, or the remote esxtop
    # would run on until its next write fails.
    for proc in list(_running):
        if proc.poll() is None:
            proc.kill()


def classify(returncode: int | None, stderr: str, delivered: bool) -> tuple[str, str]:
    """(reason, one-line explanation) of why a session ended."""
    last = next((line.strip().rstrip(".") for line in reversed(stderr.splitlines()) if line.strip()), "")
    if returncode == 255:
        if "REMOTE HOST IDENTIFICATION HAS CHANGED" in stderr:
            return "host_key", (
                "the host key CHANGED since it was recorded in known_hosts: refusing to connect "
                "(a reinstalled host or a man-in-the-middle; if expected, remove the old key with ssh-keygen -R)"
            )
        if "Host key verification failed" in stderr or "No matching host key" in stderr:
            return (
                "host_key",
                "the host key is not in known_hosts: refusing to connect (add it with ssh-keyscan after checking it)",
            )
        if "Permission denied" in stderr or "Too many authentication failures" in stderr:
            return "auth", f"authentication failed: {last}"
        if "Connection refused" in stderr:
            return "refused", f"connection refused: {last}"
        if not delivered:
            return "unreachable", f"cannot connect: {last or 'ssh exited with 255'}"
        return "dropped", f"connection lost: {last or 'ssh exited with 255'}"
    if returncode is not None and returncode < 0:
        return ("dropped" if delivered else "unreachable"), f"ssh was killed by signal {-returncode}"
    return "esxtop_exited", f"esxtop exited with status {returncode}" + (f": {last}" if last else "")


class SshStream:
    """Runs esxtop on one host over SSH until `stop` is set, restarting it when it ends."""

    def __init__(
        self,
        target: SshTarget,
        store,
        stop: threading.Event,
        per_world: bool = True,
        ssh: str = "ssh",
        backoff_initial: float = 1.0,
    ):
        self.target, self.store, self.stop, self.per_world = target, store, stop, per_world
        self.ssh, self.backoff_initial = ssh, backoff_initial
        self.up = 0
        self.restarts = dict.fromkeys(REASONS, 0)
        self.lock = threading.Lock()
        self._sample_hosts: set[str] = set()  # host names esxtop used (the header's, not ours)
        self._last_row = 0.0
        self._delivered = 0  # samples this stream has read
        self._stalled = False
        self._announce = True
        self._stderr: deque[str] = deque(maxlen=40)

    # health: a SourceHealth record in the store after every change
    def _set_up(self, value: int) -> None:
        with self.lock:
            changed, self.up = self.up != value, value
        if changed:
            self.publish()

    def _count_restart(self, reason: str) -> None:
        with self.lock:
            self.restarts[reason] += 1
        self.publish()

    def publish(self) -> None:
        with self.lock:
            record = m.SourceHealth(kind="esxtop_ssh", name=self.target.label, up=self.up, restarts=dict(self.restarts))
        self.store.set_health(record)

    # the loop
    def run(self) -> None:
        delay = self.backoff_initial
        last_reason = None
        while not self.stop.is_set():
            delivered, reason, message = self._session()
            self._announce = delivered
            if self.stop.is_set():
                break
            self._set_up(0)
            self._drop_gauges()
            self._count_restart(reason)
            delay = self.backoff_initial if delivered else min(delay * 2, self.target.backoff_max)
            level = logging.ERROR if reason in ("host_key", "auth") else logging.WARNING
            if reason == last_reason and not delivered:
                level = logging.DEBUG  # the same failure again: said once, not on every retry
            log.log(level, "esxtop ssh %s: %s; retrying in %.1fs", self.target.label, message, delay)
            last_reason = reason
            self.stop.wait(delay * random.uniform(0.8, 1.2))

    def _session(self) -> tuple[bool, str, str]:
        """One ssh run: (delivered at least one sample, reason it ended, message)."""
        self._stderr.clear()
        self._stalled = False
        self._last_row = time.monotonic()
        delivered = False
        try:
            proc = subprocess.Popen(
                self.target.ssh_argv(self.ssh),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=ssh_environment(self.target),
            )
        except OSError as err:
            return False, "unreachable", f"cannot start {self.ssh}: {err.strerror}"
        _running.add(proc)
        # Said at info level when a session starts after one that worked; retries while the host
        # stays unreachable are at debug level, so an outage costs one log line, not one a minute.
        log.log(
            logging.INFO if self._announce else logging.DEBUG,
            "esxtop ssh %s: started %s",
            self.target.label,
            self.target.remote_command(),
        )
        reader = EsxtopReader(f"ssh:{self.target.label}", per_world=self.per_world)
        delivered_before = self._delivered
        try:
            pump(self._lines(proc), reader, self._on_sample, self.store.count_parse_error, self.stop)
        finally:
            if proc.poll() is None:
                proc.kill()
            returncode = proc.wait()
            _running.discard(proc)
            proc.stdout.close()
            proc.stderr.close()
        delivered = self._delivered > delivered_before
        if self._stalled:
            return delivered, "stalled", f"no esxtop row for {self.target.stall_seconds:g}s: stream stalled, restarting it"
        reason, message = classify(returncode, "\n".join(self._stderr), delivered)
        return delivered, reason, message

    def _lines(self, proc: subprocess.Popen):
        """Complete lines of esxtop's output; ssh's stderr is kept for the error message.
        Ends when the process ends, when stop is set, or when the stream stalls (then kills ssh)."""
        selector = selectors.DefaultSelector()
        selector.register(proc.stdout, selectors.EVENT_READ, "out")
        selector.register(proc.stderr, selectors.EVENT_READ, "err")
        pending = bytearray()
        errors = bytearray()
        open_pipes = 2
        try:
            while open_pipes and not self.stop.is_set():
                if time.monotonic() - self._last_row > self.target.stall_seconds:
                    self._stalled = True
                    return
                for key, _ in selector.select(timeout=0.25):
                    data = os.read(key.fd, 1 << 16)
                    if not data:
                        selector.unregister(key.fileobj)
                        open_pipes -= 1
                        continue
                    if key.data == "err":
                        errors += data
                        *done, rest = errors.split(b"\n")
                        self._stderr.extend(line.decode("utf-8", "replace")[:500] for line in done)
                        errors = bytearray(rest[-4096:])
                        continue
                    pending += data
                    if b"\n" not in data:
                        if len(pending) > MAX_LINE:
                            self.store.count_parse_error(f"ssh:{self.target.label}", "line_too_long")
                            return
                        continue
                    *done, rest = pending.split(b"\n")
                    pending = bytearray(rest)
                    for line in done:
                        yield line.decode("utf-8", "replace") + "\n"
        finally:
            selector.close()
            if errors:
                self._stderr.append(errors.decode("utf-8", "replace")[:500])
            if pending.strip() and not self.stop.is_set():
                # The connection died mid-row: the fragment is not a row. Counted, not fed.
                self.store.count_parse_error(f"ssh:{self.target.label}", "partial_line")

    def _on_sample(self, sample) -> None:
        self._delivered += 1
        self._last_row = time.monotonic()
        self._sample_hosts.add(sample.host)
        self.store.ingest(sample)
        self._set_up(1)

    def host_name(self) -> str | None:
        """The host's name as esxtop reports it (its header), once a sample has arrived."""
        return next(iter(sorted(self._sample_hosts)), None)

    def _drop_gauges(self) -> None:
        for host in self._sample_hosts:
            self.store.drop_gauges(host)


class SshStreams:
    """All SSH streams of the exporter."""

    def __init__(
        self,
        targets: list[SshTarget],
        store,
        stop: threading.Event,
        per_world: bool = True,
        inventory_interval: float = 300.0,
        **kwargs,
    ):
        self.streams = [SshStream(t, store, stop, per_world, **kwargs) for t in targets]
        self.inventory_interval = inventory_interval  # esxcli storage configuration; 0: not read

    def start(self) -> list[threading.Thread]:
        from exporter.esxtop.streams import start_thread

        threads = []
        for stream in self.streams:
            stream.publish()  # down (0) until rows flow: visible from the first scrape
            threads.append(start_thread(f"esxtop-ssh:{stream.target.label}", stream.run))
            if self.inventory_interval > 0:
                from exporter.esxcli.ssh import EsxcliOverSsh

                esxcli = EsxcliOverSsh(
                    stream.target, stream.store, stream.stop, stream.host_name, self.inventory_interval, stream.ssh
                )
                threads.append(start_thread(f"esxcli-ssh:{stream.target.label}", esxcli.run))
        return threads
