"""Running the ssh client: one supervised process per session or command, why a session ended,
and the backoff between attempts. Every process started here is killed when the exporter exits."""

from __future__ import annotations

import atexit
import os
import random
import selectors
import subprocess
import threading
import time

from exporter.ssh.environment import ssh_environment
from exporter.ssh.target import SshTarget

_running: set[subprocess.Popen] = set()
_running_lock = threading.Lock()
_exiting = False  # set by the kill at exit: no process is started after it
# What a short command's stderr may keep (its end: the error is on the last line).
STDERR_KEPT = 64 * 1024
_CHUNK = 1 << 16


class OutputTooLarge(Exception):
    """A short command printed more than its cap: it was killed and nothing it printed is kept."""


@atexit.register
def _kill_running() -> None:
    # Source threads are daemons: at exit, end their ssh processes too, or the remote command
    # would run on until its next write fails.
    global _exiting
    with _running_lock:
        _exiting = True
        procs = list(_running)
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
    deadline = time.monotonic() + 1.0  # reaped: a SIGKILL takes effect when the process next runs
    for proc in procs:
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass


def _popen(argv: list[str], stdin, env: dict) -> subprocess.Popen:
    """subprocess.Popen with stdout and stderr piped, registered to be killed at exit. Once the
    exporter is exiting, a (daemon) thread asking for a process starts none and waits for the
    interpreter to end it: started after the kill at exit, a process would outlive the exporter
    (seen: a SMART round's `esxcli ... smart get` over ssh, orphaned after a SIGTERM)."""
    with _running_lock:
        if not _exiting:
            proc = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
            _running.add(proc)
            return proc
    threading.Event().wait()  # never set: the interpreter's exit ends this thread
    raise AssertionError("unreachable")


def dies_with_session(command: str) -> str:
    """`command` (one simple command) wrapped so that it ends when the SSH session ends.

    Without a pty, sshd sends no hangup when the connection goes: a remote esxtop that is not
    writing (a stalled stream, the very case we restart) would run on for ever, one more after
    each restart. The session's stdin is our pipe, never written and never closed while the
    session lives; when the session ends, sshd closes it, the watcher's `read` sees end of file
    and kills the command. POSIX sh only (ESXi's shell is busybox ash): fd 3 keeps the stdin
    for the watcher (a background list's own stdin is /dev/null), the command's exit status is
    the session's, and a command that ends on its own takes its watcher with it. Chosen over
    `ssh -tt` (a pty, whose hangup would also kill it): a pty merges esxtop's stderr into the
    data and turns each LF into CRLF."""
    return (
        f"exec 3<&0 </dev/null; {command} 3<&- & p=$!; "
        "{ while read -r _ <&3; do :; done; kill $p; } >/dev/null 2>&1 & w=$!; "
        "wait $p; s=$?; kill $w 2>/dev/null; exit $s"
    )


def spawn(target: SshTarget, remote: str, ssh: str = "ssh") -> subprocess.Popen:
    """A long-running remote command with its stdout and stderr piped, that ends with its session
    (see dies_with_session); end it with `release`. Raises OSError when the client cannot be started."""
    # stdin held open, never written: its end is the remote side's hangup
    return _popen(target.ssh_argv(dies_with_session(remote), ssh, stdin=True), subprocess.PIPE, ssh_environment(target))


def release(proc: subprocess.Popen) -> int:
    """Kill the process if it still runs, reap it, close its pipes; its exit status."""
    if proc.poll() is None:
        proc.kill()
    returncode = proc.wait()
    with _running_lock:
        _running.discard(proc)
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()
    return returncode


def run(
    target: SshTarget, remote: str, timeout: float, ssh: str = "ssh", max_output: int | None = None
) -> subprocess.CompletedProcess:
    """A short remote command run to its end, its output read as it comes: stdout up to
    max_output bytes (one byte more and the command is killed and OutputTooLarge raised, so what
    is kept is bounded by the cap, not by what the host sends), the last STDERR_KEPT bytes of
    stderr. Both decoded (decode: the parser then refuses a byte that is not UTF-8 in one line,
    never a UnicodeDecodeError). Raises subprocess.TimeoutExpired after `timeout`."""
    proc = _popen(target.ssh_argv(remote, ssh), subprocess.DEVNULL, ssh_environment(target))
    try:
        deadline = time.monotonic() + timeout
        out, err = _read_capped(proc, deadline, max_output)
        returncode = proc.wait(max(0.0, deadline - time.monotonic()))
    finally:
        release(proc)
    return subprocess.CompletedProcess(proc.args, returncode, decode(out), decode(err[-STDERR_KEPT:]))


def decode(data: bytes) -> str:
    """What a host printed, as text: UTF-8, a byte that is not shown as U+FFFD (never an error)."""
    return data.decode("utf-8", "replace")


def _read_capped(proc: subprocess.Popen, deadline: float, max_output: int | None) -> tuple[bytes, bytes]:
    out, err = bytearray(), bytearray()
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ, out)
        selector.register(proc.stderr, selectors.EVENT_READ, err)
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(proc.args, 0)
            for key, _ in selector.select(left):
                data = os.read(key.fd, _CHUNK)
                if not data:
                    selector.unregister(key.fileobj)
                    continue
                kept = key.data
                kept += data
                if kept is out and max_output is not None and len(out) > max_output:
                    raise OutputTooLarge(f"answer larger than {max_output} bytes: refused")
                if kept is err and len(err) > 2 * STDERR_KEPT:
                    del err[:-STDERR_KEPT]
    return bytes(out), bytes(err)


class Backoff:
    """Exponential backoff with jitter: `initial` after a session that delivered, doubled after
    each one that did not, capped at `maximum`."""

    def __init__(self, initial: float, maximum: float):
        self.initial, self.maximum = initial, maximum
        self.delay = initial

    def next(self, delivered: bool) -> float:
        """The delay before the next attempt (without jitter: what the log says)."""
        self.delay = self.initial if delivered else min(self.delay * 2, self.maximum)
        return self.delay

    def jittered(self) -> float:
        return self.delay * random.uniform(0.8, 1.2)


def classify(returncode: int | None, stderr: str, delivered: bool, command: str = "esxtop") -> tuple[str, str]:
    """(reason, one-line explanation) of why a session of `command` ended."""
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
    # The reason label keeps its historical name: esxi_esxtop_restarts_total{reason="esxtop_exited"}.
    return f"{command}_exited", f"{command} exited with status {returncode}" + (f": {last}" if last else "")
