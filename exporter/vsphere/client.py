"""One vSphere session per target: logged in once, re-used, re-established once when it goes
stale, with a timeout on every call. Errors become VsphereError with a one-line message that
never carries the password."""

from __future__ import annotations

import http.client
import logging
import os
import socket
import ssl
import threading
import time

from pyVim.connect import Disconnect, SmartConnect
from pyVmomi import vim, vmodl

from exporter.vsphere import (
    deserializer,  # noqa: F401 - pyVmomi lets go of each answer once read (no cycle)
    xmlguard,  # guards every pyVmomi parser of the process, from its import on
)
from exporter.vsphere.settings import TargetConfig, read_password

log = logging.getLogger(__name__)


class VsphereError(Exception):
    """A vSphere call failed; str() is one line fit for a log or an error metric.
    server_fault: the server answered with a fault (as opposed to no answer at all); fault: its
    type as vSphere names it (ManagedObjectNotFound, NoPermission, ...), "" for no fault."""

    def __init__(self, message: str, server_fault: bool = False, fault: str = ""):
        super().__init__(message)
        self.server_fault = server_fault
        self.fault = fault


def describe(err: BaseException) -> str:
    """One line for any failure of a vSphere call."""
    if isinstance(err, VsphereError):
        return str(err)
    if isinstance(err, ssl.SSLCertVerificationError):
        return f"TLS certificate not trusted ({err.verify_message}); give the CA with --vsphere.ca-file"
    if isinstance(err, vim.fault.InvalidLogin):
        return "login refused: wrong user or password"
    if isinstance(err, vim.fault.NotAuthenticated):
        return "session not authenticated"
    if isinstance(err, vim.fault.NoPermission):
        return f"permission denied ({getattr(err, 'privilegeId', '') or 'a read-only role needs System.View and System.Read'})"
    # BrokenPipeError: Python 3.13 (Debian 13) writes the next request on a kept-alive connection
    # the server has closed and fails there, where 3.11 failed reading the answer.
    if isinstance(err, (ssl.SSLEOFError, ConnectionResetError, BrokenPipeError, http.client.RemoteDisconnected)):
        return "connection closed by the server"
    if isinstance(err, (socket.timeout, TimeoutError)):
        return "timed out"
    if isinstance(err, ConnectionRefusedError):
        return "connection refused"
    if isinstance(err, OSError):
        return err.strerror or type(err).__name__
    if isinstance(err, http.client.HTTPException):
        # An answer neither 200 nor a fault: pyVmomi's "STATUS REASON", soap.py's "METHOD answered
        # HTTP STATUS" (a vCenter whose vpxd restarts answers 503); the status says what happened.
        text = " ".join(str(err).split())[:120]
        if text[:3].isdigit():
            return f"HTTP {text}"
        return text if " answered HTTP " in text else f"HTTP error: {type(err).__name__}"
    if isinstance(err, vmodl.MethodFault) and not getattr(err, "msg", None):  # a fault without a message: its name, not its dump
        invalid = getattr(err, "invalidProperty", None)
        return f"{err._wsdlName} (invalid property {invalid})" if invalid else err._wsdlName
    msg = getattr(err, "msg", None) or str(err) or type(err).__name__
    return " ".join(str(msg).split())[:300]


# A refused login is retried after 30 s, then 60, 120, ... up to 30 min: vCenter SSO's default
# lockout policy locks an account after 5 failures in 180 s, and a shared service account locked
# by the exporter locks out every other user of it. Other faults (no answer, TLS) retry at once.
LOGIN_BACKOFF_FIRST = 30.0
LOGIN_BACKOFF_MAX = 1800.0


class Client:
    def __init__(self, config: TargetConfig):
        self.config = config
        self._si = None
        self._content = None
        self._lock = threading.Lock()
        self.backoff_first, self.backoff_max = LOGIN_BACKOFF_FIRST, LOGIN_BACKOFF_MAX
        self.login_refusals = 0  # logins the server refused, since start (a metric)
        self._refused_in_a_row = 0
        self._refusal: VsphereError | None = None  # the last refusal, repeated while backing off
        self._next_login = 0.0  # monotonic time before which a refused login is not tried again
        self._password_stamp = None  # the password file as it was when refused: a change retries at once
        xmlguard.limit_answers(config.max_answer_size)  # one setting for the process: every target has the same
        _warn_if_world_readable(config.password_file)
        if config.insecure:
            log.warning(
                "vsphere target %s: TLS certificate verification is OFF (insecure: true); the connection can be intercepted",
                config.name,
            )

    def _ssl_context(self) -> ssl.SSLContext:
        if self.config.insecure:
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            return context
        try:
            return ssl.create_default_context(cafile=self.config.ca_file)
        except (OSError, ssl.SSLError) as err:
            raise VsphereError(f"CA file {self.config.ca_file}: {getattr(err, 'strerror', None) or err}") from None

    def ssl_context(self) -> ssl.SSLContext:
        """The TLS settings of this target, for another endpoint of the same server (vSAN's)."""
        return self._ssl_context()

    def _login(self):
        cfg = self.config
        try:
            password = read_password(cfg.password_file)
        except OSError as err:
            raise VsphereError(f"password file {cfg.password_file}: {err.strerror}") from None
        try:
            self._probe()
            si = SmartConnect(
                host=cfg.host,
                port=cfg.port,
                path=cfg.path,
                user=cfg.user,
                pwd=password,
                sslContext=self._ssl_context(),
                httpConnectionTimeout=cfg.timeout,
                connectionPoolTimeout=-1,
            )
        except vim.fault.InvalidLogin as err:
            raise self._refused(f"cannot log in to {cfg.host}:{cfg.port}: {describe(err)}") from None
        except VsphereError:
            raise
        except Exception as err:  # noqa: BLE001 - pyVmomi raises many kinds; all become one line
            raise VsphereError(f"cannot log in to {cfg.host}:{cfg.port}: {describe(err)}") from None
        if self._refused_in_a_row:
            log.info("vsphere target %s: login accepted after %d refusal(s)", cfg.name, self._refused_in_a_row)
        self._refused_in_a_row, self._refusal = 0, None
        return si

    def _refused(self, message: str) -> VsphereError:
        """Count a refused login and back off exponentially; logged when the wait changes."""
        self.login_refusals += 1
        self._refused_in_a_row += 1
        wait = min(self.backoff_first * 2 ** (self._refused_in_a_row - 1), self.backoff_max)
        previous = min(self.backoff_first * 2 ** (self._refused_in_a_row - 2), self.backoff_max)
        self._next_login = time.monotonic() + wait
        self._password_stamp = _stamp(self.config.password_file)
        if self._refused_in_a_row == 1 or wait != previous:
            log.warning(
                "vsphere target %s: login refused (%d in a row); next login attempt in %gs, or when the password file changes",
                self.config.name,
                self._refused_in_a_row,
                wait,
            )
        self._refusal = VsphereError(message, server_fault=True)
        return self._refusal

    def _backing_off(self) -> bool:
        return (
            self._refusal is not None
            and time.monotonic() < self._next_login
            and _stamp(self.config.password_file) == self._password_stamp
        )

    def _probe(self) -> None:
        """SmartConnect first asks the server for vimServiceVersions.xml over a connection with
        no timeout, so a server that accepts and never answers would hang the login. Ask the
        same question first, with the call timeout: a silent server fails here."""
        cfg = self.config
        conn = http.client.HTTPSConnection(cfg.host, cfg.port, context=self._ssl_context(), timeout=cfg.timeout)
        try:
            conn.request("GET", cfg.path.rstrip("/") + "/vimServiceVersions.xml")
            xmlguard.read_answer(conn.getresponse(), xml=False)  # capped: a server cannot fill memory here either
        finally:
            conn.close()

    def content(self):
        """The service content of a live session, logging in if there is none."""
        with self._lock:
            if self._si is None:
                if self._backing_off():  # after a refused login: the server is not asked again yet
                    raise VsphereError(str(self._refusal), server_fault=True)
                si = self._login()
                self._si, self._content = si, si.RetrieveContent()  # si.content would be a call each time
            return self._content

    def call(self, fn, *args, **kwargs):
        """fn(content, *args): re-logs in once if the session went stale; other errors -> VsphereError."""
        content = self.content()
        try:
            return fn(content, *args, **kwargs)
        except vim.fault.NotAuthenticated:
            if self.reset(content):  # parallel calls that failed together log in once
                log.info("vsphere target %s: session expired, logging in again", self.config.name)
            content = self.content()
        except VsphereError:
            raise
        except Exception as err:  # noqa: BLE001
            if isinstance(err, (OSError, http.client.HTTPException)):
                self.reset(content)  # the connection is gone; the next call logs in afresh
            raise VsphereError(describe(err), isinstance(err, vmodl.MethodFault), getattr(err, "_wsdlName", "")) from None
        try:
            return fn(content, *args, **kwargs)
        except Exception as err:  # noqa: BLE001
            raise VsphereError(describe(err), isinstance(err, vmodl.MethodFault), getattr(err, "_wsdlName", "")) from None

    def reset(self, content=None) -> bool:
        """Drop the session (only if it is still the one `content` came from); True if dropped."""
        with self._lock:
            si = self._si
            if si is None or (content is not None and self._content is not content):
                return False
            self._si = None
        if si is not None:
            try:
                si._stub.DropConnections()
            except Exception:  # noqa: BLE001 - best effort on a dead connection
                pass
        return True

    def close(self):
        with self._lock:
            si, self._si = self._si, None
        if si is not None:
            try:
                Disconnect(si)
            except Exception:  # noqa: BLE001 - logging out of a dead session is best effort
                pass


def _stamp(path: str | None):
    try:
        info = os.stat(path)
    except (OSError, TypeError):
        return None
    return info.st_mtime_ns, info.st_size, info.st_ino


def _warn_if_world_readable(path: str | None) -> None:
    try:
        mode = os.stat(path).st_mode
    except (OSError, TypeError):
        return
    if mode & 0o004:
        log.warning("password file %s is readable by every user of this machine (chmod 600 it)", path)
