"""vSphere targets from the resolved settings: `--vsphere URL` (one target) and/or the config
file's `vsphere.targets` section (several named targets, each inheriting the vsphere.* defaults).

Passwords are read from files at login time, never from flags or the environment, so they stay
out of process arguments; every error names the file, never its content.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass, replace

from exporter.configuration import parsers as parse
from exporter.configuration.config import ConfigError, default
from exporter.configuration.sharding import parse_shard
from exporter.vsphere.selection import HostSelection

# Per-target keys in vsphere.targets.NAME, and the parser of each.
TARGET_KEYS = {
    "url": parse.text,
    "user": parse.text,
    "password_file": parse.text,
    "ca_file": parse.text,
    "insecure": parse.boolean,
    "timeout": parse.duration,
    "interval": parse.duration,
    "discovery_interval": parse.duration,
    "max_query_metrics": parse.count,
    "max_parallel_queries": parse.count,
    "host_include": parse.str_list,
    "host_exclude": parse.str_list,
    "shard": parse_shard,
    "esxcli": parse.boolean,
    "vms": parse.boolean,
    "vm_include": parse.str_list,
    "vm_exclude": parse.str_list,
    "vsan": parse.boolean,
    "vsan_interval": parse.duration,
    "updates": parse.boolean,
    "esxcli_interval": parse.duration,
    "events": parse.boolean,
    "events_interval": parse.duration,
}
_SELECTION_KEYS = ("host_include", "host_exclude", "shard")
_VM_SELECTION_KEYS = ("vm_include", "vm_exclude")


@dataclass(frozen=True)
class TargetConfig:
    name: str
    url: str
    user: str | None = None
    password_file: str | None = None
    ca_file: str | None = None
    insecure: bool = default("vsphere.insecure")
    timeout: float = default("vsphere.timeout")
    interval: float = default("vsphere.interval")
    discovery_interval: float = default("vsphere.discovery_interval")
    max_query_metrics: int = default("vsphere.max_query_metrics")  # 0 = no limit (standalone ESXi has none)
    max_parallel_queries: int = default("vsphere.max_parallel_queries")
    selection: HostSelection = HostSelection()  # which hosts: inventory paths and shard
    esxcli: bool = default("vsphere.esxcli")  # read per-device settings with esxcli through the host's method executer
    vms: bool = default("vsphere.vms")  # collect the powered-on VMs of the selected hosts (virtual disks)
    vm_selection: HostSelection = HostSelection()  # which VMs of those hosts: inventory paths (no shard: a VM follows its host)
    vsan: bool = default("vsphere.vsan")  # read the target's vSAN clusters (exporter.vsan)
    vsan_interval: float = default("vsphere.vsan_interval")
    max_answer_size: int = default("vsphere.max_answer_size")  # one process-wide cap (xmlguard), not per target
    updates: bool = default("vsphere.updates")  # follow the inventory's changes between walks
    esxcli_interval: float = default("vsphere.esxcli_interval")  # every host's esxcli read again
    events: bool = default("vsphere.events")  # count ESXi's storage events (exporter.events)
    events_interval: float = default("vsphere.events_interval")

    @property
    def host(self) -> str:
        return urllib.parse.urlsplit(self.url).hostname or ""

    @property
    def port(self) -> int:
        return urllib.parse.urlsplit(self.url).port or 443

    @property
    def path(self) -> str:
        return urllib.parse.urlsplit(self.url).path.rstrip("/") or "/sdk"


def read_password(path: str) -> str:
    """The first line of the password file. Raises OSError (the file name, never the content)."""
    with open(path, encoding="utf-8") as handle:
        return handle.readline().rstrip("\r\n")


def _check_url(url: str) -> str | None:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        return f"not a vSphere URL: {url!r} (use https://HOST[:PORT])"
    if parts.username or parts.password:
        return "credentials do not belong in the URL (use user and password_file)"
    return None


def _selection(values: dict, where: str, problems: list[str]) -> HostSelection | None:
    """The host selection of these settings; None (and a problem line) if a pattern or shard is bad."""
    shard = values.get("shard")
    if isinstance(shard, str):
        try:
            shard = parse_shard(shard)
        except ValueError as err:
            problems.append(f"{where}.shard: {err}")
            return None
    try:
        return HostSelection(tuple(values.get("host_include") or ()), tuple(values.get("host_exclude") or ()), shard)
    except ValueError as err:
        problems.append(f"{where}: host_include/host_exclude: {err}")
        return None


def _vm_selection(values: dict, where: str, problems: list[str]) -> HostSelection | None:
    """The VM selection of these settings (inventory paths only); None (and a problem line) if a pattern is bad."""
    try:
        return HostSelection(tuple(values.get("vm_include") or ()), tuple(values.get("vm_exclude") or ()))
    except ValueError as err:
        problems.append(f"{where}: vm_include/vm_exclude: {err}")
        return None


def _setting(settings, key: str):
    """The resolved setting, or its one default where the caller built settings by hand."""
    value = settings.get(key)
    return default(key) if value is None else value


def targets(settings) -> list[TargetConfig]:
    """Every configured target; raises ConfigError listing every bad entry at once."""
    problems: list[str] = []
    selection = _selection(
        {
            "host_include": settings.get("vsphere.host_include") or [],
            "host_exclude": settings.get("vsphere.host_exclude") or [],
            "shard": settings.get("vsphere.shard"),
        },
        "vsphere",
        problems,
    )
    vm_selection = _vm_selection(
        {"vm_include": settings.get("vsphere.vm_include") or [], "vm_exclude": settings.get("vsphere.vm_exclude") or []},
        "vsphere",
        problems,
    )
    defaults = TargetConfig(
        name="",
        selection=selection or HostSelection(),
        vm_selection=vm_selection or HostSelection(),
        url="",
        user=settings.get("vsphere.user"),
        password_file=settings.get("vsphere.password_file"),
        ca_file=settings.get("vsphere.ca_file"),
        insecure=_setting(settings, "vsphere.insecure"),
        timeout=_setting(settings, "vsphere.timeout"),
        interval=_setting(settings, "vsphere.interval"),
        discovery_interval=_setting(settings, "vsphere.discovery_interval"),
        max_query_metrics=_setting(settings, "vsphere.max_query_metrics"),
        max_parallel_queries=_setting(settings, "vsphere.max_parallel_queries"),
        esxcli=_setting(settings, "vsphere.esxcli"),
        vms=_setting(settings, "vsphere.vms"),
        vsan=_setting(settings, "vsphere.vsan"),
        vsan_interval=_setting(settings, "vsphere.vsan_interval"),
        max_answer_size=_setting(settings, "vsphere.max_answer_size"),
        updates=_setting(settings, "vsphere.updates"),
        esxcli_interval=_setting(settings, "vsphere.esxcli_interval"),
        events=_setting(settings, "vsphere.events"),
        events_interval=_setting(settings, "vsphere.events_interval"),
    )
    found: list[TargetConfig] = []
    if settings.get("vsphere.url"):
        url = settings["vsphere.url"]
        if "://" not in url:
            url = "https://" + url
        problem = _check_url(url)
        if problem:
            problems.append(f"vsphere.url: {problem}")
        else:
            found.append(replace(defaults, name=urllib.parse.urlsplit(url).hostname, url=url))
    section = settings.get("vsphere.targets") or {}
    if not isinstance(section, dict):
        problems.append("vsphere.targets: must be a mapping of target name to its settings")
        section = {}
    for name, entry in section.items():
        where = f"vsphere.targets.{name}"
        if not isinstance(entry, dict):
            problems.append(f"{where}: must be a mapping (url, user, password_file, ...)")
            continue
        values = parse.section(entry, TARGET_KEYS, where, problems)
        if any(key in values for key in _SELECTION_KEYS):
            own = {key: values.pop(key, None) for key in _SELECTION_KEYS}
            base = defaults.selection
            merged = {
                "host_include": own["host_include"] if own["host_include"] is not None else list(base.include),
                "host_exclude": own["host_exclude"] if own["host_exclude"] is not None else list(base.exclude),
                "shard": own["shard"] if own["shard"] is not None else base.shard,
            }
            values["selection"] = _selection(merged, where, problems) or base
        if any(key in values for key in _VM_SELECTION_KEYS):
            base = defaults.vm_selection
            own = {key: values.pop(key, None) for key in _VM_SELECTION_KEYS}
            merged = {
                "vm_include": own["vm_include"] if own["vm_include"] is not None else list(base.include),
                "vm_exclude": own["vm_exclude"] if own["vm_exclude"] is not None else list(base.exclude),
            }
            values["vm_selection"] = _vm_selection(merged, where, problems) or base
        url = values.get("url")
        if not url:
            problems.append(f"{where}.url: missing")
            continue
        problem = _check_url(url)
        if problem:
            problems.append(f"{where}.url: {problem}")
            continue
        found.append(replace(defaults, name=str(name), **values))
    names = [t.name for t in found]
    for name in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"vsphere target {name!r}: defined twice")
    for target in found:
        if not target.user:
            problems.append(f"vsphere target {target.name!r}: no user (--vsphere.user or user:)")
        if not target.password_file:
            problems.append(f"vsphere target {target.name!r}: no password file (--vsphere.password-file or password_file:)")
    if problems:
        raise ConfigError(problems)
    return found
