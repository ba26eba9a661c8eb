"""Settings are validated one way (#23): one set of parsers and one section validator for the
options, the vSphere targets, the esxtop-over-SSH hosts and the hand-written inventory; every bad
entry of every section at once, each named `FILE: section.key: reason`; each default written once."""

from __future__ import annotations

import re

from exporter.configuration import config
from exporter.configuration.flags import exporter_options
from exporter.vsphere.settings import TargetConfig, targets
from tests.support.cli import REAL, run_cli

LINE = re.compile(r"^esxi-storage-exporter: (?P<file>[^:]+): (?P<key>[\w.\[\]-]+): (?P<reason>.+)$")


def problems(tmp_path, text: str) -> list[dict]:
    path = tmp_path / "exporter.yml"
    path.write_text(text)
    done = run_cli("dump", "--config.file", path, "--esxtop-file", REAL)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    found = [LINE.match(line) for line in lines]
    assert all(found), lines  # every line has the one form
    assert {m["file"] for m in found} == {str(path)}
    return [m.groupdict() for m in found]


def test_a_bad_value_in_every_section_reads_the_same_and_all_come_at_once(tmp_path):
    sections = problems(
        tmp_path,
        """
vsphere:
  user: monitor
  password_file: /etc/hostname
  targets:
    vc: {url: "https://vc.example.com", timeout: soon, colour: blue}
esxtop:
  ssh_targets:
    - {host: esx01, interval: soon}
inventory:
  esx01:
    luns:
      naa.1: {queue_depth: soon}
""",
    )
    by_key = {p["key"]: p["reason"] for p in sections}
    assert set(by_key) == {
        "vsphere.targets.vc.timeout",
        "vsphere.targets.vc.colour",
        "esxtop.ssh_targets[1].interval",
        "inventory.esx01.luns.naa.1.queue_depth",
    }
    assert by_key["vsphere.targets.vc.colour"].startswith("unknown setting (known: ")
    assert by_key["inventory.esx01.luns.naa.1.queue_depth"] == "a number of 0 or more, not 'soon'"
    [option] = problems(tmp_path, "vsphere:\n  timeout: soon\n")
    assert option["key"] == "vsphere.timeout"
    # one parser: the same reason for the same bad duration wherever it is written
    assert option["reason"] == by_key["vsphere.targets.vc.timeout"] == by_key["esxtop.ssh_targets[1].interval"]


def test_the_vsphere_timeout_default_is_one_value_from_flags_and_from_the_file(tmp_path):
    default = next(o.default for o in exporter_options() if o.key == "vsphere.timeout")
    from_flags = config.load(
        exporter_options(), {"vsphere__url": "https://vc.example.com", "vsphere__user": "u", "vsphere__password_file": "/p"}
    )
    path = tmp_path / "exporter.yml"
    path.write_text('vsphere:\n  user: u\n  password_file: /p\n  targets:\n    vc: {url: "https://vc.example.com"}\n')
    from_file = config.load(exporter_options(), {}, config_file=str(path))
    built_by_hand = targets({"vsphere.url": "https://vc.example.com", "vsphere.user": "u", "vsphere.password_file": "/p"})
    timeouts = {t.timeout for t in targets(from_flags) + targets(from_file) + built_by_hand}
    assert timeouts == {default} == {TargetConfig(name="x", url="https://x").timeout}
    assert default == 30.0
