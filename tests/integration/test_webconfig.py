"""The metrics endpoint locked down with an exporter-toolkit web config: real certificates made
with openssl, the exporter as a process, urllib as a real TLS client."""

from __future__ import annotations

import base64
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import bcrypt
import pytest

from exporter.serving import webconfig
from tests.support.servers import ROOT, exporter_env, free_port, stop

USER, PASSWORD = "prometheus", "correct horse battery staple"


@pytest.fixture(scope="module")
def cert(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tls")
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            str(folder / "server.key"),
            "-out",
            str(folder / "server.crt"),
            "-days",
            "2",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    return folder


@pytest.fixture(scope="module")
def password_hash() -> str:
    return bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(10)).decode()


def web_config(folder: Path, text: str) -> Path:
    path = folder / "web.yml"
    path.write_text(text)
    return path


class Serve:
    """`python -m exporter serve` with the given flags, waited for until it logs where it serves."""

    def __init__(self, tmp: Path, *args: str, listen: str = "127.0.0.1"):
        self.port = free_port()
        self.log = tmp / f"exporter-{self.port}.log"
        # A followed file that does not exist yet: a live source that needs nothing else.
        source = f"--esxtop-follow={tmp / 'esxtop.csv'}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "exporter", "serve", f"--web.listen-address={listen}:{self.port}", source, *args],
            stdout=open(self.log, "wb"),
            stderr=subprocess.STDOUT,
            env=exporter_env(),
            cwd=ROOT,
        )
        deadline = time.monotonic() + 20
        while "serving metrics on" not in self.log.read_text():
            assert self.proc.poll() is None, self.log.read_text()
            assert time.monotonic() < deadline, self.log.read_text()
            time.sleep(0.05)

    def get(self, path="/metrics", scheme="https", auth=None, context=None):
        request = urllib.request.Request(f"{scheme}://127.0.0.1:{self.port}{path}")
        if auth:
            request.add_header("Authorization", "Basic " + base64.b64encode(":".join(auth).encode()).decode())
        with urllib.request.urlopen(request, timeout=10, context=context) as response:
            return response.status, response.read().decode()

    def stop(self):
        stop(self.proc)


@pytest.fixture
def serve(tmp_path):
    started = []

    def start(*args, **kwargs):
        started.append(Serve(tmp_path, *args, **kwargs))
        return started[-1]

    yield start
    for server in started:
        server.stop()


def client(cert: Path, maximum=None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(cert / "server.crt"))
    if maximum:
        context.maximum_version = maximum
    return context


def test_tls_and_basic_auth(serve, cert, password_hash, tmp_path):
    config = web_config(
        cert,
        f"tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\nbasic_auth_users:\n  {USER}: {password_hash}\n",
    )
    server = serve(f"--web.config.file={config}")
    status, body = server.get(auth=(USER, PASSWORD), context=client(cert))
    assert status == 200 and "esxi_exporter_build_info" in body
    for auth in ((USER, "wrong"), ("nobody", PASSWORD), None):
        with pytest.raises(urllib.error.HTTPError) as refused:
            server.get(auth=auth, context=client(cert))
        assert refused.value.code == 401
        assert refused.value.headers["WWW-Authenticate"].startswith("Basic ")
    with pytest.raises(urllib.error.HTTPError) as plain:  # plain HTTP to the TLS port
        server.get(scheme="http", auth=(USER, PASSWORD))
    assert plain.value.code == 400 and b"HTTPS server" in plain.value.read()
    with pytest.raises(urllib.error.URLError) as untrusted:  # a client that does not trust the cert
        server.get(auth=(USER, PASSWORD), context=ssl.create_default_context())
    assert "CERTIFICATE_VERIFY_FAILED" in str(untrusted.value)
    assert "serving metrics on https://" in server.log.read_text()


def test_min_tls_version_is_enforced(serve, cert):
    config = web_config(cert, "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  min_version: TLS13\n")
    server = serve(f"--web.config.file={config}")
    assert server.get(context=client(cert))[0] == 200
    with pytest.raises(urllib.error.URLError) as old:
        server.get(context=client(cert, maximum=ssl.TLSVersion.TLSv1_2))
    assert "VERSION" in str(old.value).upper() or "PROTOCOL" in str(old.value).upper()


def test_basic_auth_without_tls(serve, tmp_path, password_hash):
    config = web_config(tmp_path, f"basic_auth_users:\n  {USER}: {password_hash}\n")
    server = serve(f"--web.config.file={config}")
    assert server.get(scheme="http", auth=(USER, PASSWORD))[0] == 200
    with pytest.raises(urllib.error.HTTPError) as refused:
        server.get(scheme="http", path="/", auth=(USER, PASSWORD[:-1]))
    assert refused.value.code == 401


def test_warning_when_plain_http_beyond_localhost(serve, cert):
    exposed = serve(listen="0.0.0.0")
    local = serve(listen="127.0.0.1")
    config = web_config(cert, "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n")
    tls = serve(f"--web.config.file={config}", listen="0.0.0.0")
    warning = (
        "WARNING exporter.serving.webconfig: serving metrics over plain HTTP on all addresses, reachable from other machines"
    )
    assert warning in exposed.log.read_text()
    assert "plain HTTP" not in local.log.read_text()
    assert "plain HTTP" not in tls.log.read_text()


def run_exporter(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "exporter", "serve", f"--web.listen-address=127.0.0.1:{free_port()}", *args],
        capture_output=True,
        text=True,
        env=exporter_env(),
        cwd=ROOT,
        timeout=30,
    )


def test_bad_web_config_is_one_clear_line_and_exit_2(tmp_path):
    secret = "hunter2-plain-password"
    config = web_config(
        tmp_path,
        f"tls_server_config:\n  cert_file: nope.crt\n  cipher_suites: [TLS_AES_128_GCM_SHA256]\n"
        f"basic_auth_users:\n  alice: {secret}\nextra: 1\n",
    )
    result = run_exporter(f"--web.config.file={config}")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and secret not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert any(f"{config}: basic_auth_users.alice: not a bcrypt hash" in line for line in lines)
    assert any("tls_server_config.cipher_suites:" in line for line in lines)
    assert any("tls_server_config.cert_file:" in line and "not readable" in line for line in lines)
    assert any("tls_server_config.key_file: required" in line for line in lines)
    assert any(f"{config}: extra: unknown setting" in line for line in lines)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: SSL3\n", "min_version: 'SSL3' is not one of"),
        ("tls_server_config: [1]\n", "tls_server_config: must be a mapping"),
        ("tls_server_config:\n  client_auth_type: RequireAnyClientCert\n", "client_auth_type: 'RequireAnyClientCert'"),
        ("http_server_config:\n  headers:\n    Set-Cookie: x\n", "headers.Set-Cookie: not one of"),
        ("basic_auth_users: [a, b]\n", "basic_auth_users: must be a mapping"),
        ("- a\n", "the top level must be a mapping"),
        ("a: [\n", "not valid YAML"),
    ],
)
def test_bad_web_config_messages(tmp_path, text, expected):
    with pytest.raises(webconfig.WebConfigError if "YAML" not in expected else webconfig.ConfigError) as err:
        webconfig.load(str(web_config(tmp_path, text)))
    assert expected in str(err.value)


def test_auth_header_parsing(password_hash):
    config = webconfig.WebConfig(users={USER: password_hash.encode()})
    good = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    assert config.authorized(good) and config.authorized(good)  # the second from the cache
    for header in (
        None,
        "",
        "Bearer x",
        "Basic !!!",
        "Basic " + base64.b64encode(b"no-colon").decode(),
        "Basic " + base64.b64encode(b"\xff\xfe:x").decode(),
        good[:-2],
    ):
        assert not config.authorized(header)
