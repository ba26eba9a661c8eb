"""The ssh client's environment: a password or key passphrase reaches it only through SSH_ASKPASS,
a tiny script that reads a file or an environment variable, never a process argument."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading

from exporter.ssh.target import SshTarget

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
