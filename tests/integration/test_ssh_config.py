"""SSH targets from flags and the esxtop.ssh_targets config section: parsing, validation, the ssh
and esxtop command lines, and why a session ended. Plus several hosts from one config file
against the real sshd: each host is supervised on its own."""

from __future__ import annotations

import pytest

from exporter.configuration import config
from exporter.configuration.flags import exporter_options as options
from exporter.esxtop.ssh import esxtop_command
from exporter.ssh.process import classify
from exporter.ssh.target import SshTarget, parse_target, targets_from_settings
from simulators.esxi_ssh.sshd import Sshd
from tests.support.promtext import eventually, value
from tests.support.servers import Exporter, free_port


@pytest.mark.parametrize(
    "text, host, user, port",
    [
        ("root@esx01", "esx01", "root", None),
        ("esx01.example.com", "esx01.example.com", None, None),
        ("root@esx01:2222", "esx01", "root", 2222),
        ("root@[fe80::1]:22", "fe80::1", "root", 22),
        ("fe80::1", "fe80::1", None, None),
    ],
)
def test_parse_target(text, host, user, port):
    target = parse_target(text)
    assert (target.host, target.user, target.port) == (host, user, port)


@pytest.mark.parametrize("text", ["", "root@", "root@-oProxyCommand=x", "root@esx:99999", "root@esx:abc", "a b"])
def test_parse_target_rejects(text):
    with pytest.raises(ValueError, match="not an SSH target"):
        parse_target(text)


def test_command_lines():
    target = SshTarget(host="esx01", user="root", port=2222, interval=5.0, known_hosts="/etc/kh", identity_file="/k")
    argv = target.ssh_argv(esxtop_command(target))
    assert argv[-3:] == ["--", "esx01", "esxtop -b -a -d 5 -n 0"]
    assert "StrictHostKeyChecking=yes" in argv and "BatchMode=yes" in argv and "UserKnownHostsFile=/etc/kh" in argv
    assert argv[argv.index("-p") + 1] == "2222" and argv[argv.index("-l") + 1] == "root"
    with_rc = SshTarget(host="esx01", rc_file="/tmp/storage rc", import_entity="/tmp/ents", password_file="/pw")
    assert esxtop_command(with_rc) == "esxtop -b -c '/tmp/storage rc' -import-entity /tmp/ents -d 5 -n 0"
    assert "BatchMode=no" in with_rc.ssh_argv("esxcli storage core device list")  # the askpass answers the prompt
    assert not any(
        "/pw" in arg for arg in with_rc.ssh_argv(esxtop_command(with_rc))
    )  # the password file is not an argument either


@pytest.mark.parametrize(
    "code, stderr, delivered, reason",
    [
        (255, "@@@ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @@@\nHost key verification failed.", False, "host_key"),
        (
            255,
            "No ED25519 host key is known for x and you have requested strict checking.\nHost key verification failed.",
            False,
            "host_key",
        ),
        (255, "root@x: Permission denied (publickey,password).", False, "auth"),
        (255, "ssh: connect to host x port 22: Connection refused", False, "refused"),
        (255, "ssh: Could not resolve hostname nope: Name or service not known", False, "unreachable"),
        (255, "Connection to x closed by remote host.", True, "dropped"),
        (1, "", True, "esxtop_exited"),
        (127, "sh: esxtop: not found", False, "esxtop_exited"),
    ],
)
def test_classify(code, stderr, delivered, reason):
    assert classify(code, stderr, delivered)[0] == reason


def settings_from(tmp_path, text: str, **flags):
    path = tmp_path / "config.yml"
    path.write_text(text)
    return config.load(options(), flags, environ={}, config_file=str(path))


def test_config_section_with_overrides(tmp_path):
    (tmp_path / "pw").write_text("x\n")
    settings = settings_from(
        tmp_path,
        f"""
esxtop:
  ssh_interval: 10s
  ssh_targets:
    - esx01
    - host: root@esx02:2222
      interval: 20s
      password_file: {tmp_path / "pw"}
      rc_file: /etc/esxtop-storage.rc
""",
        esxtop__ssh=["admin@esx03"],
    )
    targets = {t.host: t for t in targets_from_settings(settings)}
    assert set(targets) == {"esx01", "esx02", "esx03"}
    assert targets["esx01"].interval == 10.0 and targets["esx03"].user == "admin"
    assert (targets["esx02"].interval, targets["esx02"].port, targets["esx02"].user) == (20.0, 2222, "root")
    assert targets["esx02"].rc_file == "/etc/esxtop-storage.rc"


def test_config_section_reports_every_bad_entry(tmp_path):
    settings = settings_from(
        tmp_path,
        """
esxtop:
  ssh_targets:
    - host: esx01
      colour: blue
    - port: 22
    - host: esx02
      interval: -5s
    - host: esx03
      password_file: /nonexistent/pw
    - esx03
""",
    )
    with pytest.raises(config.ConfigError) as err:
        targets_from_settings(settings)
    problems = err.value.problems
    assert any(p.startswith("esxtop.ssh_targets[1].colour: unknown setting (known: backoff_max, host,") for p in problems)
    assert "esxtop.ssh_targets[2]: must be a host name or a mapping with a host key" in problems
    assert any(p.startswith("esxtop.ssh_targets[3].interval: ") for p in problems)
    assert "esxtop ssh esx03: password_file /nonexistent/pw is not readable" in problems
    assert "esxtop ssh: host esx03 is listed twice" in problems


@pytest.mark.integration
def test_several_hosts_from_the_config_file(tmp_path):
    sshd = Sshd(tmp_path)
    sshd.set_control(devices=["naa.600000000000000000000000000000a1"])
    down = free_port()
    (tmp_path / "config.yml").write_text(f"""
esxtop:
  ssh_interval: 1s
  ssh_backoff_max: 1s
  ssh_identity_file: {tmp_path / "client_key"}
  ssh_known_hosts: {sshd.known_hosts}
  ssh_targets:
    - host: {sshd.user}@127.0.0.1:{sshd.port}
      rc_file: /etc/esxtop-storage.rc
    - host: {sshd.user}@localhost:{down}
""")
    exporter = Exporter(f"--config.file={tmp_path / 'config.yml'}", log_path=tmp_path / "exporter.log")
    try:
        eventually(lambda: value(exporter.metrics(), "esxi_esxtop_up", host="127.0.0.1") == 1, what="first host up")
        text = eventually(
            lambda: (
                lambda t: t if (value(t, "esxi_esxtop_restarts_total", host="localhost", reason="refused") or 0) >= 1 else None
            )(exporter.metrics()),
            what="second host refused",
        )
        assert value(text, "esxi_esxtop_up", host="localhost") == 0
        assert value(text, "esxi_esxtop_up", host="127.0.0.1") == 1
        assert sshd.runs()[0]["argv"] == ["-b", "-c", "/etc/esxtop-storage.rc", "-d", "1", "-n", "0"]
    finally:
        exporter.stop()
        sshd.stop()


@pytest.mark.parametrize("key", ["esxtop.ssh_inventory_interval", "vsphere.discovery_interval"])
@pytest.mark.parametrize("text", ["0", "0s", "-1s", "nan", "inf"])
def test_the_two_inventory_intervals_refuse_zero_alike(tmp_path, key, text):
    """How often each source re-reads the storage configuration: a duration longer than 0 for
    both (#27; the SSH one took 0 for "never"). Turning esxcli off is a switch of its own, as for
    vSphere: --no-esxtop.ssh-esxcli, --no-vsphere.esxcli."""
    section, name = key.split(".")
    with pytest.raises(config.ConfigError) as refused:
        settings_from(tmp_path, f"{section}:\n  {name}: '{text}'\n")
    assert name in str(refused.value)
    if key.startswith("esxtop") and text.startswith("0"):
        assert "--no-esxtop.ssh-esxcli" in str(refused.value)


def test_the_inventory_intervals_and_esxcli_switches(tmp_path):
    settings = settings_from(tmp_path, "esxtop:\n  ssh_inventory_interval: 10m\n  ssh_esxcli: false\n")
    assert settings["esxtop.ssh_inventory_interval"] == 600.0 and settings["esxtop.ssh_esxcli"] is False
    defaults = settings_from(tmp_path, "{}\n")
    assert defaults["esxtop.ssh_esxcli"] is True and defaults["vsphere.esxcli"] is True
    # esxcli over SSH every 5 minutes; through the API every hour, and at once for a host whose
    # storage changed (the vSphere inventory follows vCenter's changes, a full walk hourly)
    assert defaults["esxtop.ssh_inventory_interval"] == 300.0
    assert defaults["vsphere.esxcli_interval"] == 3600.0 == defaults["vsphere.discovery_interval"]


def test_a_password_file_readable_by_everyone_is_warned_about(tmp_path, caplog):
    secret = tmp_path / "password"
    secret.write_text("x\n")
    secret.chmod(0o644)
    targets_from_settings(settings_from(tmp_path, f"esxtop:\n  ssh: [root@esx01]\n  ssh_password_file: {secret}\n"))
    assert "readable by every user" in caplog.text
    caplog.clear()
    secret.chmod(0o600)
    targets_from_settings(settings_from(tmp_path, f"esxtop:\n  ssh: [root@esx01]\n  ssh_password_file: {secret}\n"))
    assert "readable by every user" not in caplog.text


@pytest.mark.parametrize("switch, threads", [("true", 1), ("false", 0)])
def test_the_esxcli_switch_decides_whether_esxcli_runs_over_ssh(tmp_path, switch, threads):
    from exporter.app import App

    settings = settings_from(tmp_path, f"esxtop:\n  ssh: [root@127.0.0.1:1]\n  ssh_esxcli: {switch}\n")
    app = App(settings)
    app.stop.set()  # the runners end at once: only whether they are started is looked at
    started = app._start_esxcli_over_ssh(app.ssh.streams)
    for thread in started:
        thread.join(5)
    assert len(started) == threads
