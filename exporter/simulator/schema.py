"""Scenario YAML -> Scenario, validated completely: any problem raises ScenarioError with one line
naming the file and the field (`queue-ok.yaml: hosts[0].vms[1].oio: expected ...`). Values are
converted to base units here (seconds, bytes, bytes/s) so the model never sees a unit string.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

import yaml

from . import units
from .spec import (
    CONTROLLER_BUS,
    DEFAULT_LINK_EFFICIENCY,
    DEFAULT_SELF_RESERVATION_COST,
    DISK_KINDS,
    PATH_STATES,
    PROVISIONING,
    SIOC_DEFAULT_THRESHOLD,
    SIOC_THRESHOLD_RANGE,
    VAAI_DEFAULT_BLOCK,
    VAAI_PRIMITIVES,
    AdapterSpec,
    DiskSpec,
    HostLunSpec,
    HostSpec,
    LunSpec,
    Phase,
    Scenario,
    ScenarioError,
    SiocSpec,
    VaaiOps,
    VmfsOps,
    VmSpec,
)

_ADAPTER_QUEUE_DEPTH = {"fc": 2176, "iscsi": 1024, "sas": 600, "block": 128}  # AQLEN by type
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")  # host and VM names (':' would break Vcpu(gid:vm:..))
_DEVICE = re.compile(r"^(naa|eui|t10|mpx)\.[A-Za-z0-9._:-]+$")
_ADAPTER = re.compile(r"^vmhba[0-9]+$")
_PATH = re.compile(r"^(vmhba[0-9]+):C[0-9]+:T[0-9]+:L[0-9]+$")


class _Node:
    """A mapping being validated: takes keys one by one and reports leftovers as unknown fields."""

    def __init__(self, value: Any, where: str, file: str):
        if not isinstance(value, dict):
            raise ScenarioError(f"{file}: {where or 'top level'}: expected a mapping, got {_kind(value)}")
        self.data, self.where, self.file = dict(value), where, file

    def _at(self, key: str | int) -> str:
        if isinstance(key, int):
            return f"{self.where}[{key}]"
        return f"{self.where}.{key}" if self.where else str(key)

    def fail(self, key: str, msg: str) -> ScenarioError:
        return ScenarioError(f"{self.file}: {self._at(key)}: {msg}")

    def take(self, key: str, convert=None, default: Any = ..., *, check=None, check_msg: str = ""):
        if key not in self.data:
            if default is ...:
                typo = difflib.get_close_matches(key, [str(k) for k in self.data], n=1)
                hint = f" (is {typo[0]!r} a typo?)" if typo else ""
                raise self.fail(key, f"missing required field{hint}")
            return default
        raw = self.data.pop(key)
        try:
            value = convert(raw) if convert else raw
        except (TypeError, ValueError) as e:
            raise self.fail(key, str(e)) from None
        if check is not None and not check(value):
            raise self.fail(key, f"{check_msg}, got {raw!r}")
        return value

    def node(self, key: str, default: Any = ...) -> _Node:
        return _Node(self.take(key, default=default), self._at(key), self.file)

    def items(self, key: str, default: Any = ...) -> list[tuple[str, Any]]:
        value = self.take(key, default=default)
        if not isinstance(value, list):
            raise self.fail(key, f"expected a list, got {_kind(value)}")
        return [(f"{self._at(key)}[{i}]", v) for i, v in enumerate(value)]

    def done(self) -> None:
        if self.data:
            key = next(iter(self.data))
            raise self.fail(str(key), "unknown field")


def _kind(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", type(None): "nothing"}.get(type(value), f"{value!r}")


def _int(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"expected an integer, got {v!r}")
    return v


def _number(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"expected a number, got {v!r}")
    return float(v)


def _text(v: Any) -> str:
    if not isinstance(v, (str, int, float)) or isinstance(v, bool):
        raise ValueError(f"expected a string, got {_kind(v)}")
    return str(v)


def _matching(regex: re.Pattern, what: str):
    def convert(v: Any) -> str:
        s = _text(v)
        if not regex.match(s):
            raise ValueError(f"not a valid {what}: {s!r}")
        return s

    return convert


def _positive(v: float) -> bool:
    return v > 0


def _substitute(value: Any, n: int | None, file: str) -> Any:
    """Replace the template parameter `${N}` (a whole value becomes an int)."""
    if isinstance(value, dict):
        return {k: _substitute(v, n, file) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, n, file) for v in value]
    if isinstance(value, str) and "${N}" in value:
        if n is None:
            raise ScenarioError(f"{file}: uses ${{N}} but was not loaded through a name like shared-lun-8-hosts")
        return n if value == "${N}" else value.replace("${N}", str(n))
    return value


def parse(text: str, name: str, file: str, n: int | None = None) -> Scenario:
    """The scenario in `text`; `n` fills the `${N}` of a template (None: its default)."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "?"
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ScenarioError(f"{file}: {where}: invalid YAML: {problem}") from None
    top = _Node(doc, "", file)
    param = top.node("parameter", default={})
    if n is not None:
        lo = param.take("min", _int, 1)
        hi = param.take("max", _int, 1000)
        param.take("default", default=None)
        if not lo <= n <= hi:
            raise ScenarioError(f"{file}: parameter N={n} is outside {lo}..{hi}")
    else:
        param.take("min", default=None), param.take("max", default=None)
        n = param.take("default", _int, None)
    param.done()
    top.data = _substitute(top.data, n, file)

    description = top.take("description", _text)
    figure = top.take("figure", _text, "")
    luns = {}
    for where, raw in top.items("luns"):
        lun = _lun(_Node(raw, where, file))
        if lun.device in luns:
            raise ScenarioError(f"{file}: {where}.device: duplicate device {lun.device!r}")
        luns[lun.device] = lun
    hosts: list[HostSpec] = []
    for where, raw in top.items("hosts"):
        hosts.extend(_hosts(_Node(raw, where, file), luns))
    _check_unique(file, "hosts", [h.name for h in hosts])
    _check_unique(file, "VM names", [v.name for h in hosts for v in h.vms])
    host_luns = {h.name: {hl.device for hl in h.luns} for h in hosts}
    vm_names = {v.name for h in hosts for v in h.vms}
    phases = tuple(_phase(_Node(raw, where, file), luns, host_luns, vm_names) for where, raw in top.items("phases", []))
    repeat = top.take("repeat", lambda v: v if isinstance(v, bool) else _fail_bool(v), False)
    vaai = tuple(_vaai_ops(_Node(raw, where, file), host_luns) for where, raw in top.items("vaai_ops", []))
    top.done()
    if not hosts:
        raise ScenarioError(f"{file}: hosts: at least one host is needed")
    return Scenario(
        name=name,
        description=description,
        figure=figure,
        luns=luns,
        hosts=tuple(hosts),
        phases=phases,
        repeat=repeat,
        source=file,
        vaai_ops=vaai,
    )


def _fail_bool(v: Any) -> bool:
    raise ValueError(f"expected true or false, got {v!r}")


def _check_unique(file: str, what: str, names: list[str]) -> None:
    seen = set()
    for name in names:
        if name in seen:
            raise ScenarioError(f"{file}: {what}: duplicate name {name!r}")
        seen.add(name)


def _lun(node: _Node) -> LunSpec:
    lun = LunSpec(
        device=node.take("device", _matching(_DEVICE, "device name (naa.*, eui.*, t10.*, mpx.*)")),
        service_time=node.take("service_time", units.duration, check=_positive, check_msg="must be above zero"),
        absorbs=node.take("absorbs", _int, check=_positive, check_msg="must be above zero"),
        display_name=node.take("display_name", _text, ""),
        vendor=node.take("vendor", _text, ""),
        model=node.take("model", _text, ""),
        datastore=node.take("datastore", _text, ""),
        sioc=_sioc(node.node("sioc")) if "sioc" in node.data else None,
    )
    node.done()
    if lun.sioc is not None and not lun.datastore:
        raise node.fail("sioc", "Storage I/O Control is a datastore's: the LUN needs a datastore")
    return lun


def _bool(v: Any) -> bool:
    return v if isinstance(v, bool) else _fail_bool(v)


def _sioc(node: _Node) -> SiocSpec:
    """A datastore's SIOC in manual mode, the threshold in vCenter's range (5-100 ms)."""
    lo, hi = SIOC_THRESHOLD_RANGE
    sioc = SiocSpec(
        enabled=node.take("enabled", _bool),
        threshold=node.take(
            "threshold",
            units.duration,
            SIOC_DEFAULT_THRESHOLD,
            check=lambda v: lo - 1e-12 <= v <= hi + 1e-12,
            check_msg="must be 5ms..100ms (vCenter refuses others)",
        ),
    )
    node.done()
    return sioc


def _hosts(node: _Node, luns: dict[str, LunSpec]) -> list[HostSpec]:
    """One host entry; `count: K` repeats it K times with `{i}` (1..K) formatted into names."""
    count = node.take("count", _int, 1, check=lambda v: v >= 1, check_msg="must be at least 1")
    name_pattern = node.take("name", _text)
    cpus = node.take("cpus", _int, 8, check=_positive, check_msg="must be above zero")
    cpu_mhz = node.take("cpu_mhz", _number, 2660.0, check=_positive, check_msg="must be above zero")
    base_util = node.take("base_cpu_util", _number, 0.05, check=lambda v: 0 <= v < 1, check_msg="must be in 0..1")
    dsnro = node.take("dsnro", _int, 32, check=_positive, check_msg="must be above zero")
    cluster = node.take("cluster", _text, "")
    vmfs = _vmfs_settings(node.node("vmfs")) if "vmfs" in node.data else ()
    adapters = {}
    for where, raw in node.items("adapters"):
        a = _adapter(_Node(raw, where, node.file))
        if a.name in adapters:
            raise ScenarioError(f"{node.file}: {where}.name: duplicate adapter {a.name!r}")
        adapters[a.name] = a
    host_luns = {}
    for where, raw in node.items("luns"):
        hl = _host_lun(_Node(raw, where, node.file), luns, adapters)
        if hl.device in host_luns:
            raise ScenarioError(f"{node.file}: {where}.device: duplicate device {hl.device!r}")
        host_luns[hl.device] = hl
    raw_vms = node.items("vms", [])
    disks = tuple(_disk(_Node(raw, where, node.file), host_luns, adapters) for where, raw in node.items("disks", []))
    _check_unique(node.file, f"{node._at('disks')} devices", [d.device for d in disks])
    node.done()
    hosts = []
    for i in range(1, count + 1):
        vms = tuple(_vm(_Node(raw, where, node.file), host_luns, i) for where, raw in raw_vms)
        hosts.append(
            HostSpec(
                name=_format_name(node, "name", name_pattern, i),
                cpus=cpus,
                cpu_mhz=cpu_mhz,
                base_cpu_util=base_util,
                dsnro=dsnro,
                adapters=tuple(adapters.values()),
                luns=tuple(host_luns.values()),
                vms=vms,
                cluster=cluster,
                disks=disks,
                vmfs=vmfs,
            )
        )
    return hosts


def _vmfs_settings(node: _Node) -> tuple[tuple[str, bool], ...]:
    """A host's VMFS locking settings as esxcli reports them: {hardware_locking, ats_heartbeat}
    (/VMFS3/HardwareAcceleratedLocking, /VMFS3/UseATSForHBOnVMFS5), each true unless given."""
    out = tuple(
        (key, node.take(key, lambda v: v if isinstance(v, bool) else _fail_bool(v), True))
        for key in ("hardware_locking", "ats_heartbeat")
    )
    node.done()
    return out


def _disk(node: _Node, host_luns: dict[str, HostLunSpec], adapters: dict[str, AdapterSpec]) -> DiskSpec:
    """A local disk with SMART: one of the host's LUNs, its kind and how its health evolves."""
    kind = node.take("kind", _text, check=DISK_KINDS.__contains__, check_msg=f"must be one of {', '.join(DISK_KINDS)}")
    disk = DiskSpec(
        device=node.take("device", _text, check=lambda d: d in host_luns, check_msg="not one of this host's luns"),
        kind=kind,
        adapter=node.take(
            "adapter",
            _text,
            "" if kind != "nvme" else ...,
            check=lambda a: a in adapters,
            check_msg="not one of this host's adapters",
        ),
        temperature=node.take("temperature", _number, 35.0, check=lambda v: 0 < v < 100, check_msg="must be in 1..99 °C"),
        power_on_hours=node.take("power_on_hours", _number, 10_000.0, check=lambda v: v >= 0, check_msg="must not be negative"),
        wear=node.take("wear", _number, 0.0, check=lambda v: 0 <= v <= 2, check_msg="must be in 0..2"),
        reallocating_from=node.take("reallocating_from", units.duration, None),
        reallocations_per_hour=node.take(
            "reallocations_per_hour", _number, 0.0, check=lambda v: v >= 0, check_msg="must not be negative"
        ),
        pending_per_hour=node.take("pending_per_hour", _number, 0.0, check=lambda v: v >= 0, check_msg="must not be negative"),
    )
    node.done()
    return disk


def _format_name(node: _Node, key: str, pattern: str, i: int) -> str:
    try:
        name = pattern.format(i=i)
    except (KeyError, IndexError, ValueError) as e:
        raise ScenarioError(f"{node.file}: {node._at(key)}: bad name pattern {pattern!r} (only {{i}} may be used): {e}") from None
    if not _NAME.match(name):
        raise ScenarioError(f"{node.file}: {node._at(key)}: not a valid name: {name!r} (letters, digits, '.', '_', '-')")
    return name


def _adapter(node: _Node) -> AdapterSpec:
    name = node.take("name", _matching(_ADAPTER, "adapter name (vmhbaN)"))
    kind = node.take("type", _text, "fc")
    link = node.take("link_speed", units.rate, None, check=_positive, check_msg="must be above zero")
    a = AdapterSpec(
        name=name,
        type=kind,
        model=node.take("model", _text, ""),
        driver=node.take("driver", _text, ""),
        queue_depth=node.take(
            "queue_depth", _int, _ADAPTER_QUEUE_DEPTH.get(kind, 1024), check=_positive, check_msg="must be above zero"
        ),
        link_speed=link,
        link_efficiency=node.take(
            "link_efficiency", _number, DEFAULT_LINK_EFFICIENCY, check=lambda v: 0 < v <= 1, check_msg="must be in (0, 1]"
        ),
        cpu_per_command=node.take(
            "cpu_per_command", units.duration, 10e-6, check=lambda v: v >= 0, check_msg="must not be negative"
        ),
    )
    node.done()
    return a


def _host_lun(node: _Node, luns: dict[str, LunSpec], adapters: dict[str, AdapterSpec]) -> HostLunSpec:
    device = node.take("device", _text, check=lambda d: d in luns, check_msg="not one of the scenario's luns")
    qd = node.take("queue_depth", _int, 32, check=_positive, check_msg="must be above zero")
    paths_node = node.node("paths")
    paths = []
    for runtime, state in list(paths_node.data.items()):
        m = _PATH.match(str(runtime))
        if not m:
            raise paths_node.fail(str(runtime), "not a path runtime name like vmhba1:C0:T0:L1")
        if m.group(1) not in adapters:
            raise paths_node.fail(str(runtime), f"adapter {m.group(1)} is not one of this host's adapters")
        paths_node.take(
            runtime, _text, check=lambda s: s in PATH_STATES, check_msg=f"state must be one of {', '.join(PATH_STATES)}"
        )
        paths.append((str(runtime), str(state)))
    if not any(state == "active" for _, state in paths):
        raise node.fail("paths", "at least one path must be active")
    config = _lun_config(node.node("config", {}), {p for p, _ in paths}) if "config" in node.data else ()
    node.done()
    return HostLunSpec(device=device, queue_depth=qd, paths=tuple(paths), config=config)


# config: of a host's LUN: what its configuration and health report (model.LunConfig fields).
_LUN_CONFIG_NUMBERS = ("configured_queue_depth", "dsnro", "queue_full_sample_size", "queue_full_threshold", "psp_iops_limit")
_LUN_CONFIG_TEXTS = ("plugin", "satp", "psp", "psp_limit_type", "status", "operational_state")


VAAI_STATUSES = ("supported", "unsupported", "unknown")
_VAAI_STATUS_MSG = f"must be one of {', '.join(VAAI_STATUSES)}"


def _lun_config(node: _Node, paths: set[str]) -> tuple[tuple[str, Any], ...]:
    out = []
    for key in _LUN_CONFIG_NUMBERS:
        if key in node.data:
            out.append((key, float(node.take(key, _int, check=lambda v: v >= 0, check_msg="must not be negative"))))
    for key in _LUN_CONFIG_TEXTS:
        if key in node.data:
            out.append((key, node.take(key, _text)))
    if "vaai_status" in node.data:  # what esxcli storage core device vaai status get reports
        statuses = node.node("vaai_status")
        out.append(
            (
                "vaai_status",
                tuple(
                    (primitive, statuses.take(primitive, _text, check=lambda s: s in VAAI_STATUSES, check_msg=_VAAI_STATUS_MSG))
                    for primitive in VAAI_PRIMITIVES
                    if primitive in statuses.data
                ),
            )
        )
        statuses.done()
    if "path_states" in node.data:
        states = node.node("path_states")
        reported = []
        for runtime in list(states.data):
            if str(runtime) not in paths:
                raise states.fail(str(runtime), "not one of this LUN's paths")
            state = states.take(
                runtime, _text, check=lambda s: s in PATH_STATES, check_msg=f"state must be one of {', '.join(PATH_STATES)}"
            )
            reported.append((str(runtime), state))
        out.append(("path_states", tuple(reported)))
    node.done()
    return tuple(out)


_MAX_DISKS = {"scsi": 15, "sata": 30, "nvme": 15, "ide": 4}  # disks one controller of each bus takes
_VM_OVERRIDES = {
    "oio": (_int, lambda v: v >= 0, "must not be negative"),
    "block_size": (units.size, _positive, "must be above zero"),
    "read_ratio": (_number, lambda v: 0 <= v <= 1, "must be in 0..1"),
}
_LUN_OVERRIDES = {
    "service_time": (units.duration, _positive, "must be above zero"),
    "absorbs": (_int, _positive, "must be above zero"),
    "sioc_enabled": (_bool, None, ""),  # Storage I/O Control turned on or off (the LUN's sioc section)
}


def _vm(node: _Node, host_luns: dict[str, HostLunSpec], i: int) -> VmSpec:
    name = _format_name(node, "name", node.take("name", _text), i)
    lun = node.take("lun", _text, check=lambda d: d in host_luns, check_msg="not one of this host's luns")
    fields = {
        k: node.take(k, conv, ..., check=chk, check_msg=msg) for k, (conv, chk, msg) in _VM_OVERRIDES.items() if k != "read_ratio"
    }
    fields["read_ratio"] = node.take(
        "read_ratio", _number, 1.0, check=_VM_OVERRIDES["read_ratio"][1], check_msg=_VM_OVERRIDES["read_ratio"][2]
    )
    start = node.take("start", units.duration, 0.0)
    stop = node.take("stop", units.duration, None)
    controller = node.take(
        "controller", _text, "pvscsi", check=CONTROLLER_BUS.__contains__, check_msg=f"must be one of {', '.join(CONTROLLER_BUS)}"
    )
    most = _MAX_DISKS[CONTROLLER_BUS[controller]]
    disks = node.take(
        "disks", _int, 1, check=lambda v: 1 <= v <= most, check_msg=f"must be 1..{most} on one {controller} controller"
    )
    provisioning = node.take(
        "provisioning",
        _text,
        "thick_lazy",
        check=PROVISIONING.__contains__,
        check_msg=f"must be one of {', '.join(PROVISIONING)}",
    )
    shares = node.take("shares", _int, 1000, check=_positive, check_msg="must be above zero")
    node.done()
    return VmSpec(
        name=name,
        lun=lun,
        shares=shares,
        start=start,
        stop=stop,
        disks=disks,
        controller=controller,
        provisioning=provisioning,
        **fields,
    )


def _overrides(node: _Node, allowed: dict) -> dict[str, Any]:
    out = {key: node.take(key, conv, check=chk, check_msg=msg) for key, (conv, chk, msg) in allowed.items() if key in node.data}
    node.done()
    return out


def _named_overrides(node: _Node, known: set[str], unknown_msg: str, allowed: dict) -> dict:
    """{name: {field: value}} for a phase's `vms:` or `luns:` section."""
    out = {}
    for name in list(node.data):
        if name not in known:
            raise node.fail(str(name), unknown_msg)
        out[name] = _overrides(node.node(name), allowed)
    node.done()
    return out


def _phase(node: _Node, luns: dict[str, LunSpec], hosts: dict[str, set[str]], vms: set[str]) -> Phase:
    name = node.take("name", _text)
    dur = node.take("duration", units.duration, check=_positive, check_msg="must be above zero")
    vm_over = _named_overrides(node.node("vms", {}), vms, "no VM of that name in the scenario", _VM_OVERRIDES)
    lun_over = _named_overrides(node.node("luns", {}), set(luns), "not one of the scenario's luns", _LUN_OVERRIDES)
    for dev, over in lun_over.items():
        if "sioc_enabled" in over and luns[dev].sioc is None:
            raise node.fail(f"luns.{dev}.sioc_enabled", "the LUN has no sioc section to turn on or off")
    ops = []
    for where, raw in node.items("vmfs_ops", []):
        op = _Node(raw, where, node.file)
        host = op.take("host", _text, check=lambda h: h in hosts, check_msg="no host of that name")
        ops.append(
            VmfsOps(
                host=host,
                lun=op.take(
                    "lun", _text, check=lambda d, host=host: d in hosts[host], check_msg=f"not one of host {host}'s luns"
                ),
                reservations_per_second=op.take(
                    "reservations_per_second", _number, check=_positive, check_msg="must be above zero"
                ),
                hold=op.take("hold", units.duration, check=_positive, check_msg="must be above zero"),
                self_cost=op.take(
                    "self_cost", _number, DEFAULT_SELF_RESERVATION_COST, check=lambda v: 0 <= v <= 1, check_msg="must be in 0..1"
                ),
            )
        )
        op.done()
    for dev in {op.lun for op in ops}:
        held = sum(op.reservations_per_second * op.hold for op in ops if op.lun == dev)
        if held >= 0.9:
            raise node.fail("vmfs_ops", f"reservations would hold {dev} {held:.0%} of the time (rate x hold must stay under 90%)")
    vaai = tuple(_vaai_ops(_Node(raw, where, node.file), hosts) for where, raw in node.items("vaai_ops", []))
    node.done()
    return Phase(name=name, duration=dur, vms=vm_over, luns=lun_over, vmfs_ops=tuple(ops), vaai_ops=vaai)


def _vaai_ops(op: _Node, hosts: dict[str, set[str]]) -> VaaiOps:
    """{host, lun, ats_per_second, ats_failure_ratio, clone_per_second, clone_block, ...}: each
    primitive's rate (default 0), failure ratio (default 0) and bytes per command."""
    host = op.take("host", _text, check=lambda h: h in hosts, check_msg="no host of that name")
    lun = op.take("lun", _text, check=lambda d: d in hosts[host], check_msg=f"not one of host {host}'s luns")
    rates, ratios, blocks = {}, {}, {}
    for primitive in VAAI_PRIMITIVES:
        rates[primitive] = op.take(f"{primitive}_per_second", _number, 0.0, check=lambda v: v >= 0, check_msg="must be 0 or more")
        ratios[primitive] = op.take(
            f"{primitive}_failure_ratio", _number, 0.0, check=lambda v: 0 <= v <= 1, check_msg="must be in 0..1"
        )
        if primitive in VAAI_DEFAULT_BLOCK:
            blocks[primitive] = op.take(
                f"{primitive}_block", units.size, VAAI_DEFAULT_BLOCK[primitive], check=_positive, check_msg="must be above zero"
            )
    if not any(rates.values()):
        raise op.fail("ats_per_second", "a vaai_ops entry needs at least one primitive's rate above zero")
    op.done()
    return VaaiOps(host=host, lun=lun, per_second=rates, failure_ratio=ratios, block=blocks)
