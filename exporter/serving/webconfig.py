"""`--web.config.file`: TLS and basic auth for the metrics endpoint, in the file format of
Prometheus's exporter-toolkit (the same file works for node_exporter and us):

    tls_server_config: {cert_file, key_file, min_version, max_version, client_auth_type, client_ca_file}
    http_server_config: {headers: {...}}
    basic_auth_users: {USER: BCRYPT_HASH}

Relative paths are relative to the file, as in exporter-toolkit. What Python's ssl cannot honour
(Go cipher-suite and curve names, unverified client certificates) is refused with a clear error
rather than silently ignored: a security setting that does nothing is worse than none.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import ipaddress
import logging
import os
import ssl
import threading
from dataclasses import dataclass, field

from exporter.configuration.config import ConfigError, read_yaml

log = logging.getLogger(__name__)

TLS_VERSIONS = {
    "TLS10": ssl.TLSVersion.TLSv1,
    "TLS11": ssl.TLSVersion.TLSv1_1,
    "TLS12": ssl.TLSVersion.TLSv1_2,
    "TLS13": ssl.TLSVersion.TLSv1_3,
}
CLIENT_AUTH = {
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
_TLS_KEYS = {
    "cert_file",
    "key_file",
    "min_version",
    "max_version",
    "client_auth_type",
    "client_ca_file",
    "prefer_server_cipher_suites",
}
_REFUSED_TLS_KEYS = {
    "cipher_suites": "Go cipher-suite names have no exact OpenSSL equivalent here; OpenSSL's defaults apply",
    "curve_preferences": "not supported; OpenSSL's defaults apply",
    "cert": "inline certificates are not supported; use cert_file",
    "key": "inline keys are not supported; use key_file",
    "client_allowed_sans": "not supported",
}
_HEADERS = {
    "Strict-Transport-Security",
    "X-Frame-Options",
    "X-Content-Type-Options",
    "X-XSS-Protection",
    "Content-Security-Policy",
}


class WebConfigError(ConfigError):
    """A bad web config file. str() is one line per problem, naming the file and key; never a secret."""


@dataclass
class WebConfig:
    tls: ssl.SSLContext | None = None
    users: dict[str, bytes] = field(default_factory=dict)  # user -> bcrypt hash
    headers: dict[str, str] = field(default_factory=dict)
    _good: set[bytes] = field(default_factory=set)  # digests of credentials already verified
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _dummy: bytes = b""  # checked when the user is unknown: a wrong user costs as much as a wrong password

    def authorized(self, header: str | None) -> bool:
        """Checks an Authorization header; True when no users are configured."""
        if not self.users:
            return True
        if not header or not header[:6].lower() == "basic ":
            return False
        try:
            user, sep, password = base64.b64decode(header[6:].strip(), validate=True).decode("utf-8").partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return False
        if not sep:
            return False
        hashed = self.users.get(user)
        # bcrypt is deliberately slow (~0.1 s): remember credentials that passed, by digest only.
        digest = hashlib.sha256(b"\0".join((user.encode(), password.encode(), hashed or b""))).digest()
        with self._lock:
            if hashed is not None and digest in self._good:
                return True
        import bcrypt

        if hashed is None and not self._dummy:
            self._dummy = bcrypt.hashpw(b"-", bcrypt.gensalt(int(next(iter(self.users.values()))[4:6])))
        ok = bcrypt.checkpw(password.encode(), hashed or self._dummy) and hashed is not None
        if ok:
            with self._lock:
                if len(self._good) > 1024:
                    self._good.clear()
                self._good.add(digest)
        return ok


def load(path: str) -> WebConfig:
    data = read_yaml(path)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise WebConfigError([f"{path}: the top level must be a mapping"])
    problems: list[str] = []
    config = WebConfig()
    base = os.path.dirname(os.path.abspath(path))
    for key in sorted(set(map(str, data)) - {"tls_server_config", "http_server_config", "basic_auth_users"}):
        problems.append(f"{path}: {key}: unknown setting")
    tls = data.get("tls_server_config")
    if tls is not None:
        config.tls = _tls_context(path, tls, base, problems)
    config.users = _users(path, data.get("basic_auth_users"), problems)
    config.headers = _headers(path, data.get("http_server_config"), problems)
    if problems:
        raise WebConfigError(problems)
    return config


def _tls_context(path: str, tls, base: str, problems: list[str]) -> ssl.SSLContext | None:
    where = f"{path}: tls_server_config"
    if not isinstance(tls, dict):
        problems.append(f"{where}: must be a mapping")
        return None
    before = len(problems)
    for key in sorted(map(str, tls)):
        if key in _REFUSED_TLS_KEYS:
            problems.append(f"{where}.{key}: {_REFUSED_TLS_KEYS[key]}")
        elif key not in _TLS_KEYS:
            problems.append(f"{where}.{key}: unknown setting")
    versions = {}
    for key, default in (("min_version", "TLS12"), ("max_version", "TLS13")):
        name = tls.get(key) or default
        if not isinstance(name, str) or name not in TLS_VERSIONS:
            problems.append(f"{where}.{key}: {name!r} is not one of {', '.join(TLS_VERSIONS)}")
        versions[key] = TLS_VERSIONS.get(name) if isinstance(name, str) else None
    auth_name = tls.get("client_auth_type") or "NoClientCert"
    if not isinstance(auth_name, str) or auth_name not in CLIENT_AUTH:
        problems.append(f"{where}.client_auth_type: {auth_name!r} is not one of {', '.join(CLIENT_AUTH)}")
        auth_name = "NoClientCert"  # reported above; go on to report the rest
    files = {}
    for key in ("cert_file", "key_file", "client_ca_file"):
        value = tls.get(key)
        if value in (None, ""):
            continue
        if not isinstance(value, str):
            problems.append(f"{where}.{key}: must be a file name")
            continue
        files[key] = os.path.join(base, value)
        if not os.access(files[key], os.R_OK):
            problems.append(f"{where}.{key}: {files[key]} is not readable")
    for key in ("cert_file", "key_file"):
        if key not in files and tls.get(key) in (None, ""):
            problems.append(f"{where}.{key}: required when tls_server_config is set")
    if CLIENT_AUTH.get(auth_name, ssl.CERT_NONE) != ssl.CERT_NONE and "client_ca_file" not in files:
        problems.append(f"{where}.client_ca_file: required for client_auth_type {auth_name}")
    if len(problems) > before:
        return None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.minimum_version = versions["min_version"]
        context.maximum_version = versions["max_version"]
    except (ValueError, ssl.SSLError) as err:
        problems.append(f"{where}: TLS versions not available here: {err}")
        return None
    if versions["min_version"] > versions["max_version"]:
        problems.append(f"{where}: min_version is above max_version")
        return None
    if tls.get("prefer_server_cipher_suites", True):
        context.options |= ssl.OP_CIPHER_SERVER_PREFERENCE
    try:
        context.load_cert_chain(files["cert_file"], files["key_file"])
    except (ssl.SSLError, OSError) as err:
        problems.append(
            f"{where}: cannot load cert_file/key_file ({getattr(err, 'reason', None) or err.__class__.__name__}): "
            "a PEM certificate and its unencrypted PEM key are needed"
        )
        return None
    context.verify_mode = CLIENT_AUTH[auth_name]
    if "client_ca_file" in files:
        try:
            context.load_verify_locations(files["client_ca_file"])
        except (ssl.SSLError, OSError) as err:
            problems.append(f"{where}.client_ca_file: cannot load ({getattr(err, 'reason', None) or err.__class__.__name__})")
            return None
    return context


def _users(path: str, users, problems: list[str]) -> dict[str, bytes]:
    if users is None:
        return {}
    if not isinstance(users, dict):
        problems.append(f"{path}: basic_auth_users: must be a mapping of user: bcrypt hash")
        return {}
    result = {}
    for user, hashed in users.items():
        text = hashed if isinstance(hashed, str) else ""
        if not (len(text) == 60 and text[:4] in ("$2a$", "$2b$", "$2y$")):
            # Name the user, never the value: it may be a plain password pasted by mistake.
            problems.append(f"{path}: basic_auth_users.{user}: not a bcrypt hash (make one with htpasswd -nBC 10 USER)")
            continue
        result[str(user)] = text.encode()
    return result


def _headers(path: str, http, problems: list[str]) -> dict[str, str]:
    if http is None:
        return {}
    if not isinstance(http, dict):
        problems.append(f"{path}: http_server_config: must be a mapping")
        return {}
    for key in sorted(set(map(str, http)) - {"headers", "http2"}):
        problems.append(f"{path}: http_server_config.{key}: unknown setting")
    headers = http.get("headers") or {}
    if not isinstance(headers, dict):
        problems.append(f"{path}: http_server_config.headers: must be a mapping")
        return {}
    result = {}
    for name, value in headers.items():
        if name not in _HEADERS:
            problems.append(f"{path}: http_server_config.headers.{name}: not one of {', '.join(sorted(_HEADERS))}")
        elif not isinstance(value, str) or "\n" in value or "\r" in value:
            problems.append(f"{path}: http_server_config.headers.{name}: must be a one-line string")
        else:
            result[name] = value
    return result


def is_local(host: str) -> bool:
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def warn_if_exposed(host: str, web: WebConfig | None) -> None:
    """Storage topology and load are for the monitoring system, not for anyone on the network."""
    if is_local(host) or (web is not None and web.tls is not None):
        return
    log.warning(
        "serving metrics over plain HTTP on %s, reachable from other machines: anyone on the network can "
        "read them. Set --web.config.file with tls_server_config (and basic_auth_users), or listen on 127.0.0.1",
        "all addresses" if host in ("", "0.0.0.0", "::") else host,
    )
