"""Settings from flags, environment variables and a YAML file, validated in one pass.

Precedence: command-line flag > environment variable > config file > default. Every option has a
dotted key (`web.listen_address`), which is its place in the YAML file, its flag
(`--web.listen-address`) and its environment variable (`ESXI_EXPORTER_WEB_LISTEN_ADDRESS`).
Validation collects every bad entry and reports them all at once, one line each.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from exporter.configuration.parsers import (
    boolean,
    choice,
    count,
    duration,
    listen_address,
    regex,
    size,
    str_list,
)
from exporter.configuration.sharding import parse_shard

ENV_PREFIX = "ESXI_EXPORTER_"


class ConfigError(ValueError):
    """Bad settings. str() is one line per bad entry."""

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Option:
    key: str  # dotted: section.name
    parse: Callable[[Any], Any]
    default: Any
    help: str
    secret: bool = False  # never echoed in errors or logs
    aliases: tuple[str, ...] = ()  # more flags for the same option, declared with it

    @property
    def flag(self) -> str:
        section, _, name = self.key.rpartition(".")
        return "--" + (section + "." if section else "") + name.replace("_", "-")

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.key.replace(".", "_").upper()

    @property
    def dest(self) -> str:
        return self.key.replace(".", "__")


OPTIONS: list[Option] = [
    Option("web.listen_address", listen_address, ":10114", "Address to serve metrics on."),
    Option("web.telemetry_path", str, "/metrics", "Path under which to expose metrics."),
    Option("esxtop.stdin", boolean, False, "Read esxtop batch output from standard input.", aliases=("--esxtop-stdin",)),
    Option(
        "esxtop.follow", str_list, [], "Follow a growing esxtop capture like tail -F (repeatable).", aliases=("--esxtop-follow",)
    ),
    Option("esxtop.file", str_list, [], "Read a saved esxtop capture to the end (repeatable).", aliases=("--esxtop-file",)),
    Option("esxtop.stale_after", duration, 300.0, "Drop an object's series this long after it left the esxtop output."),
    Option(
        "simulate.scenario",
        str,
        None,
        "Serve a built-in simulated host running this scenario (see `simulate --list`).",
        aliases=("--simulate",),
    ),
    Option("simulate.seed", count, 0, "Seed of the simulation."),
    Option("simulate.interval", duration, 5.0, "Simulated esxtop interval, also the real pace of serve --simulate."),
    Option(
        "simulate.shard",
        parse_shard,
        None,
        "K/N: serve only shard K (0..N-1) of the scenario's hosts (the whole scenario is still simulated).",
    ),
    Option(
        "lun.include", regex, None, "Only LUNs whose device name matches this regular expression (their paths and worlds too)."
    ),
    Option(
        "lun.exclude",
        regex,
        None,
        "Leave out LUNs whose device name matches this regular expression (their paths and worlds too).",
    ),
    Option(
        "vsphere.url",
        str,
        None,
        "vCenter or standalone ESXi URL (https://HOST[:PORT]); more targets: vsphere.targets in the config file.",
        aliases=("--vsphere",),
    ),
    Option("vsphere.user", str, None, "vSphere user (a read-only role is enough)."),
    Option(
        "vsphere.password_file", str, None, "File whose first line is the vSphere password (never give it on the command line)."
    ),
    Option("vsphere.ca_file", str, None, "PEM CA bundle to verify the server's certificate (default: the system's CAs)."),
    Option("vsphere.insecure", boolean, False, "Do not verify the server's TLS certificate (logged as a warning)."),
    Option("vsphere.timeout", duration, 30.0, "Timeout of every vSphere call."),
    Option("vsphere.interval", duration, 20.0, "How often to read the real-time (20 s) counters."),
    Option(
        "vsphere.discovery_interval",
        duration,
        3600.0,
        "How often to walk the whole inventory again: a safety net while its changes are followed (--vsphere.updates), else the only refresh.",
    ),
    Option(
        "vsphere.max_query_metrics",
        count,
        256,
        "Most metric ids per QueryPerf call, under vCenter's config.vpxd.stats.maxQueryMetrics (0: no limit).",
    ),
    Option("vsphere.max_parallel_queries", count, 4, "QueryPerf calls in flight at once per target."),
    Option(
        "vsphere.max_answer_size",
        size,
        256 << 20,
        "Largest answer (decompressed) the exporter reads from a vSphere endpoint, for the whole process; larger ones are refused.",
    ),
    Option(
        "vsphere.host_include",
        str_list,
        [],
        "Only hosts whose inventory path matches one of these globs, Telegraf style (/DC1/**, /*/host/Prod/**; repeatable).",
    ),
    Option("vsphere.host_exclude", str_list, [], "Leave out hosts whose inventory path matches one of these globs (repeatable)."),
    Option(
        "vsphere.shard",
        str,
        None,
        "K/N: take shard K (0..N-1) of the hosts by a stable hash of their names; N exporters split a vCenter.",
    ),
    Option(
        "vsphere.esxcli",
        boolean,
        True,
        "Read per-device settings (DSNRO, adaptive queue depth, round robin limits) with esxcli through each host's API.",
    ),
    Option(
        "vsphere.vms",
        boolean,
        True,
        "Collect the powered-on VMs of the selected hosts: per virtual disk I/O, latency, outstanding I/O and backing.",
    ),
    Option(
        "vsphere.vm_include",
        str_list,
        [],
        "Only VMs whose inventory path matches one of these globs (/DC1/vm/prod/**, /**/db*; repeatable).",
    ),
    Option("vsphere.vm_exclude", str_list, [], "Leave out VMs whose inventory path matches one of these globs (repeatable)."),
    Option(
        "vsphere.vsan",
        boolean,
        True,
        "Read the vSAN clusters: performance service, health, space and resync (a target without vSAN costs no vSAN call).",
    ),
    Option("vsphere.vsan_interval", duration, 300.0, "How often to read vSAN (its performance service keeps 5-minute samples)."),
    # Following vCenter's changes between walks (exporter/vsphere/follow.py).
    Option(
        "vsphere.updates",
        boolean,
        True,
        "Follow the inventory's changes as vCenter reports them (property collector, WaitForUpdatesEx) between full walks.",
    ),
    Option(
        "vsphere.esxcli_interval",
        duration,
        3600.0,
        "How often to read every host's per-device settings with esxcli again, which no update reports (a host whose storage changed is read at once).",
    ),
    # ESXi's storage events from vCenter's event stream (exporter/events/vsphere.py).
    Option(
        "vsphere.events",
        boolean,
        True,
        "Count ESXi's storage events (APD, PDL, lost access to a volume, latency deteriorated, path redundancy) from the target's event stream.",
    ),
    Option("vsphere.events_interval", duration, 10.0, "How often to read the target's new storage events (ReadNextEvents)."),
    Option("log.level", lambda v: choice(v, ("debug", "info", "warning", "error")), "info", "Log level."),
]


# esxtop over SSH (exporter/esxtop/ssh.py); per-host overrides in the esxtop.ssh_targets section.
OPTIONS += [
    Option(
        "esxtop.ssh",
        str_list,
        [],
        "Run esxtop on USER@HOST[:PORT] over SSH and read it live (repeatable).",
        aliases=("--esxtop-ssh",),
    ),
    Option("esxtop.ssh_interval", duration, 5.0, "esxtop delay (-d) for SSH hosts."),
    Option("esxtop.ssh_identity_file", str, None, "SSH private key for the hosts (default: the ssh client's own)."),
    Option("esxtop.ssh_known_hosts", str, None, "known_hosts file to check host keys against (default: the ssh client's)."),
    Option("esxtop.ssh_password_file", str, None, "File whose first line is the SSH password or key passphrase."),
    Option("esxtop.ssh_password_env", str, None, "Name of an environment variable holding the SSH password."),
    Option("esxtop.ssh_rc_file", str, None, "esxtop field-set file on the host (esxtop -c FILE) instead of -a."),
    Option("esxtop.ssh_import_entity", str, None, "Entity file on the host (esxtop -import-entity FILE)."),
    Option("esxtop.ssh_stall_after", duration, None, "Restart a stream that sent no row this long (default 3 intervals + 10s)."),
    Option("esxtop.ssh_backoff_max", duration, 60.0, "Longest wait between reconnection attempts."),
    Option(
        "esxtop.ssh_esxcli",
        boolean,
        True,
        "Read the SSH hosts' storage configuration (DSNRO, queue depths, multipathing) with esxcli over the same SSH target.",
    ),
    Option(
        "esxtop.ssh_inventory_interval",
        lambda value: _interval(value, "to read no configuration over SSH: --no-esxtop.ssh-esxcli"),
        300.0,
        "How often to read the SSH hosts' storage configuration with esxcli, as --vsphere.discovery-interval does for vSphere.",
    ),
    Option(
        "esxtop.ssh_vobd",
        boolean,
        True,
        "Count the SSH hosts' storage events by following their vobd.log over the same SSH target.",
    ),
    Option(
        "esxtop.ssh_vobd_path", str, "/var/log/vobd.log", "The log of ESXi's VMkernel observations followed on the SSH hosts."
    ),
    Option("web.config_file", str, None, "exporter-toolkit web config file: TLS and basic auth.", aliases=("--web.config.file",)),
]


# Local disks' health (exporter.smart): SMART pages and NVMe logs over SSH and the vSphere API.
OPTIONS += [
    Option(
        "smart.read",
        boolean,
        True,
        "Read the local disks' SMART pages and NVMe health logs (SSH hosts; vSphere targets with vsphere.esxcli).",
    ),
    Option(
        "smart.interval",
        lambda value: _interval(value, "to read no SMART pages: --no-smart.read"),
        3600.0,
        "How often to read the local disks' SMART pages and NVMe health logs.",
    ),
]


def _at_least(least: int) -> Callable[[Any], int]:
    """A whole number's parser that refuses one under `least`."""

    def parse(value: Any) -> int:
        number = int(value)
        if number < least:
            raise ValueError(f"must be {least} or more: {value!r}")
        return number

    return parse


# Bounds on what a host or vCenter may make the exporter read and keep (docs/operations.md#limits):
# past one, the answer or value is refused and counted. The code's constants read these defaults.
OPTIONS += [
    Option(
        "smart.max_answer_size",
        size,
        1 << 20,
        "Largest SMART page or NVMe log read (over SSH or the API); a larger one is refused whole (too_large).",
    ),
    Option(
        "smart.max_attributes",
        _at_least(1),
        256,
        "Most SMART parameters read from one device's page; those past it are counted (too_many_attributes), not read.",
    ),
    Option(
        "esxtop.ssh_esxcli_max_answer_size",
        size,
        16 << 20,
        "Largest output of one esxcli command over SSH (SMART pages: --smart.max-answer-size); a larger one is refused whole.",
    ),
    Option(
        "limits.max_label_length",
        _at_least(100),  # ESXi's t10.* device names reach about 80 characters
        128,
        "Longest text from a host or vSAN kept as a label value (a SMART parameter, a device, a vSAN state or entity); longer is refused.",
    ),
]


def _interval(value: Any, off: str) -> float:
    """A duration longer than 0; for 0, the error says how to turn the thing off instead."""
    try:
        return duration(value)
    except ValueError as err:
        if str(value).strip() in ("0", "0s", "0m", "0h", "0.0"):
            raise ValueError(f"{err} ({off})") from None
        raise


def default(key: str) -> Any:
    """An option's default, written once in OPTIONS (TargetConfig and the SSH defaults read it here)."""
    return _DEFAULTS[key]


def collector_options(names_defaults: dict[str, bool]) -> list[Option]:
    return [
        Option(f"collector.{name}", boolean, default, f"Enable the {name} collector.") for name, default in names_defaults.items()
    ]


class Settings(dict):
    """Resolved settings by dotted key; `inventory` holds the raw inventory section."""

    source = ""  # the config file they came from, if any: section errors name it as options' do

    def file_problems(self, problems: list[str]) -> list[str]:
        """Problems of the file's own sections (vsphere.targets, esxtop.ssh_targets, inventory) in
        the form every option's has: `FILE: section.key: reason`."""
        if not self.source:
            return problems
        return [f"{self.source}: {p}" if p.startswith(FILE_SECTIONS) else p for p in problems]


FILE_SECTIONS = ("vsphere.targets", "esxtop.ssh_targets", "inventory")


def _flatten(data: dict, prefix: str = "") -> dict[str, Any]:
    flat = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and dotted not in _NESTED_SECTIONS:
            flat.update(_flatten(value, dotted + "."))
        else:
            flat[dotted] = value
    return flat


# Sections whose value is a whole structure, validated by their own code.
_NESTED_SECTIONS = {"inventory", "vsphere.targets", "esxtop.ssh_targets"}


def read_yaml(path: str) -> Any:
    """A YAML file's data; ConfigError naming the file (and line) if it cannot be read or parsed."""
    try:
        with open(path, encoding="utf-8") as handle:
            return yaml.safe_load(handle)
    except OSError as err:
        raise ConfigError([f"{path}: cannot read: {err.strerror}"]) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f":{mark.line + 1}" if mark else ""
        raise ConfigError([f"{path}{where}: not valid YAML: {getattr(err, 'problem', err)}"]) from None


def load(options: list[Option], flags: dict[str, Any], environ=None, config_file: str | None = None) -> Settings:
    """Resolve every option. flags: dest -> value, None where the flag was not given."""
    environ = os.environ if environ is None else environ
    problems: list[str] = []
    from_file: dict[str, Any] = {}
    source_name = config_file or ""
    if config_file:
        data = read_yaml(config_file) or {}
        if not isinstance(data, dict):
            raise ConfigError([f"{config_file}: the top level must be a mapping of sections"])
        from_file = _flatten(data)
    known = {o.key for o in options} | _NESTED_SECTIONS
    for key in sorted(set(from_file) - known):
        problems.append(f"{source_name}: {key}: unknown setting")
    settings = Settings()
    settings.source = source_name
    for option in options:
        raw, origin = option.default, None
        if option.key in from_file:
            raw, origin = from_file[option.key], f"{source_name}: {option.key}"
        if option.env in environ:
            raw, origin = environ[option.env], f"environment {option.env}"
        if flags.get(option.dest) is not None:
            raw, origin = flags[option.dest], f"flag {option.flag}"
        if origin is None:
            settings[option.key] = raw
            continue
        try:
            settings[option.key] = option.parse(raw)
        except (ValueError, TypeError) as err:
            shown = "(hidden)" if option.secret else err
            problems.append(f"{origin}: {shown}")
    for key in _NESTED_SECTIONS:
        settings[key] = from_file.get(key)
    if problems:
        raise ConfigError(problems)
    return settings


_DEFAULTS = {option.key: option.default for option in OPTIONS}
