"""Real servers for integration tests: each started on 127.0.0.1 on a free port and stopped by PID."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

from simulators.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
CAPTURES = FIXTURES / "esxtop"  # real captures, copied with their provenance (PROVENANCE.md there)


def wait_http(url: str, timeout: float = 20.0, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before {url} answered")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError as err:
            last = err
        time.sleep(0.1)
    raise TimeoutError(f"{url} did not answer within {timeout}s: {last}")


def stop(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def stop_all(*servers) -> None:
    """Stop each server started (a test's finally: those it did not get to start are None), in order."""
    for server in servers:
        if server is not None:
            server.stop()


def exporter_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def launch(names: tuple[str, ...], args: list[str], tmp: Path, ready_url: str):
    """Start the first installed binary of `names` in `tmp`, logging to tmp/NAME.log; wait until ready."""
    binary = next((shutil.which(name) for name in names if shutil.which(name)), None)
    if not binary:
        raise RuntimeError(f"{names[0]} is not installed: run .ci/install")
    log = open(tmp / f"{names[0]}.log", "wb")
    proc = subprocess.Popen([binary, *args], stdout=log, stderr=subprocess.STDOUT, cwd=tmp)
    wait_http(ready_url, timeout=30, proc=proc)
    return proc, log


class Exporter:
    """`python -m exporter serve ...` on a free port."""

    def __init__(self, *args: str, stdin=None, log_path: Path | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        out = open(log_path, "wb") if log_path else subprocess.DEVNULL
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "exporter", "serve", f"--web.listen-address=127.0.0.1:{self.port}", *args],
            stdin=stdin,
            stdout=out,
            stderr=subprocess.STDOUT if log_path else subprocess.DEVNULL,
            env=exporter_env(),
            cwd=ROOT,
        )
        wait_http(self.url + "/-/healthy", proc=self.proc)

    def metrics(self) -> str:
        with urllib.request.urlopen(self.url + "/metrics", timeout=10) as response:
            return response.read().decode()

    def stop(self):
        if self.proc.stdin:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        stop(self.proc)


class Prometheus:
    """A real Prometheus server scraping the given targets (Debian package `prometheus`)."""

    def __init__(
        self,
        tmp: Path,
        targets: list[str],
        scrape_interval: str = "1s",
        rule_files=(),
        extra_config: str = "",
        config_text: str | None = None,
        args: tuple[str, ...] = (),
    ):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        tmp.mkdir(parents=True, exist_ok=True)
        config = tmp / "prometheus.yml"
        if config_text is None:
            config_text = (
                f"global:\n  scrape_interval: {scrape_interval}\n  evaluation_interval: {scrape_interval}\n"
                + (("rule_files:\n" + "".join(f"  - {Path(r).resolve()}\n" for r in rule_files)) if rule_files else "")
                + "scrape_configs:\n  - job_name: esxi\n    static_configs:\n      - targets: ["
                + ", ".join(f"'{t}'" for t in targets)
                + "]\n"
                + extra_config
            )
        config.write_text(config_text)
        self.proc, self.log = launch(
            ("prometheus",),
            [
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--web.enable-lifecycle",
                *args,
            ],
            tmp,
            self.url + "/-/ready",
        )

    def query(self, expr: str, at: float | None = None) -> list[dict]:
        params = {"query": expr}
        if at is not None:
            params["time"] = str(at)
        url = self.url + "/api/v1/query?" + urllib.parse.urlencode(params)
        with urllib.request.urlopen(url, timeout=10) as response:
            payload = json.load(response)
        assert payload["status"] == "success", payload
        return payload["data"]["result"]

    def wait_for(self, expr: str, predicate=lambda result: bool(result), timeout: float = 30.0) -> list[dict]:
        deadline = time.monotonic() + timeout
        result = []
        while time.monotonic() < deadline:
            result = self.query(expr)
            if predicate(result):
                return result
            time.sleep(0.5)
        raise AssertionError(f"{expr} never satisfied the condition within {timeout}s; last result {result}")

    def stop(self):
        stop(self.proc)
        self.log.close()


class Alertmanager:
    """A real Alertmanager (Debian package `prometheus-alertmanager`) running `config_text`, clustering off."""

    def __init__(self, tmp: Path, config_text: str):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        tmp.mkdir(parents=True, exist_ok=True)
        config = tmp / "alertmanager.yml"
        config.write_text(config_text)
        self.proc, self.log = launch(
            ("prometheus-alertmanager", "alertmanager"),
            [
                f"--config.file={config}",
                f"--storage.path={tmp / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--cluster.listen-address=",
            ],
            tmp,
            self.url + "/-/ready",
        )

    def stop(self):
        stop(self.proc)
        self.log.close()


class VictoriaMetrics:
    """Single-node VictoriaMetrics (Debian package victoria-metrics): the global store."""

    def __init__(self, tmp: Path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        tmp.mkdir(parents=True, exist_ok=True)
        self.proc, self.log = launch(
            ("victoria-metrics",),
            [
                f"-httpListenAddr=127.0.0.1:{self.port}",
                f"-storageDataPath={tmp / 'data'}",
                "-retentionPeriod=1d",
                "-search.latencyOffset=1s",  # a test reads what was written a second ago
                "-search.disableCache",
            ],
            tmp,
            self.url + "/health",
        )

    def query(self, expr: str) -> list[dict]:
        url = self.url + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        with urllib.request.urlopen(url, timeout=10) as response:
            return json.load(response)["data"]["result"]

    def stop(self):
        stop(self.proc)
        self.log.close()
