"""Captures from the Prometheus history: the exporter's own series over a time range, turned back
into the per-sample model fields a capture holds, so `compare` judges stored data exactly as it
judges esxtop files.

Raw samples are read (`name[range]` through /api/v1/query, in pieces), not query_range's
resampled grid: a grid repeats the last value through a missed scrape, which would read as an
interval with no I/O. Here a missed scrape is simply a longer interval, and rates and latencies
come from counter differences between the samples that exist: the mean over that interval, as
esxtop's own CSV gives for its. A counter that goes down (an exporter restart) leaves that one
interval out; it is never read as zero. Works the same against VictoriaMetrics.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import json
import math
import ssl
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

import numpy as np
import pandas as pd

from exporter.analysis.capture import Capture, CaptureError
from exporter.analysis.progress import Progress
from exporter.collectors import adapter, cpu, datastore, io, lun, vm, vsan, world
from exporter.store import model as m
from exporter.store.units import parse_duration

BOARD_UID = "esxi-before-after"  # dashboards/boards/before_after.py
PIECE = 3600.0  # seconds of raw samples per request: large ranges come in pieces


class HistoryError(CaptureError):
    """A range that cannot be read from Prometheus; one line naming the flag, URL or series."""


# --- the exporter's series, family by family ------------------------------------------------------


@dataclass(frozen=True)
class FamilySpec:
    """How one model family is exported: its object labels, and metric name -> (kind, field, weight).
    kind: "rate" (a counter of the field integrated over time), "latency" (a counter of latency x
    weight, divided by the weight counter's difference) or "gauge" (the value at the sample)."""

    family: str
    labels: tuple[str, ...]  # the object's labels after host, in key order
    metrics: dict[str, tuple[str, str, str]]
    # The capture the series go to: the value of this label, with this suffix ("esx01 vSAN"). vSAN's
    # series are the performance service's 5-minute samples, a capture of their own (one row per sample).
    scope: str = "host"
    suffix: str = ""


def _io_metrics(prefix: str) -> dict[str, tuple[str, str, str]]:
    out = {f"{prefix}_{stem}_total": ("rate", field, "") for field, stem, _ in io.RATE_COUNTERS}
    weights = {m.GAVG_READ: "reads", m.GAVG_WRITE: "writes"}
    for field, stem, _ in io.LATENCIES:
        out[f"{prefix}_{stem}_total"] = ("latency", field, f"{prefix}_{weights.get(field, 'commands')}_total")
    return out


def _gauges(prefix: str, fields) -> dict[str, tuple[str, str, str]]:
    return {f"{prefix}_{stem}": ("gauge", field, "") for field, stem, _ in fields}


def _vm_metrics(prefix: str) -> dict[str, tuple[str, str, str]]:
    out = {f"{prefix}_{stem}_total": ("rate", field, "") for field, stem, _ in vm.RATES}
    for field, stem, weight in vm.LATENCIES:
        out[f"{prefix}_{stem}_total"] = ("latency", field, f"{prefix}_{weight}_total")
    return out


FAMILIES = (
    FamilySpec("luns", ("device",), {**_io_metrics("esxi_lun"), **_gauges("esxi_lun", lun.QUEUE_GAUGES[:3])}),
    FamilySpec("adapters", ("adapter",), {**_io_metrics("esxi_adapter"), **_gauges("esxi_adapter", adapter.GAUGES)}),
    FamilySpec("paths", ("path",), _io_metrics("esxi_path")),
    FamilySpec("datastores", ("datastore",), {**_io_metrics("esxi_datastore"), **_gauges("esxi_datastore", datastore.GAUGES)}),
    FamilySpec("worlds", ("device", "world"), _gauges("esxi_lun_world", world.GAUGES)),
    FamilySpec("vdisks", ("vm", "disk"), _vm_metrics("esxi_vm_disk")),
    FamilySpec("cpus", ("cpu",), _gauges("esxi_cpu", cpu.GAUGES)),
    FamilySpec("vsan_hosts", ("cluster",), _gauges("esxi_vsan_host", vsan.DOM_CLIENT), suffix=" vSAN"),
    FamilySpec("vsan_vms", ("vm",), _gauges("esxi_vsan_vm", vsan.IO), scope="cluster", suffix=" vSAN VMs"),
    FamilySpec("vsan_esa_disks", ("device", "tier"), _gauges("esxi_vsan_disk_tier", vsan.ESA_TIER), suffix=" vSAN"),
    FamilySpec("vsan_nics", ("vmnic",), _gauges("esxi_vsan_nic", vsan.NIC), suffix=" vSAN"),
)
VSAN_SAMPLE_TIME = "esxi_vsan_sample_timestamp_seconds"
VSAN_LAG = 900.0  # seconds a vSAN sample may be scraped after its own time (service 300 + exporter 300, and slack)


# --- time ranges ---------------------------------------------------------------------------------


def parse_time(text: str, flag: str) -> float:
    """RFC 3339 (2026-11-25T08:00:00Z) or Unix seconds -> Unix seconds."""
    value = text.strip()
    try:
        return float(value)
    except ValueError:
        pass
    try:
        stamp = dt.datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise HistoryError(f"{flag} {text!r}: not a time (RFC 3339, e.g. 2026-11-25T08:00:00Z, or Unix seconds)") from None
    if stamp.tzinfo is None:
        raise HistoryError(f"{flag} {text!r}: give the time zone (Z or +01:00): the range must not depend on this machine's")
    return stamp.timestamp()


def parse_window(text: str, flag: str) -> float:
    """A positive duration (30m, 1h) -> seconds."""
    try:
        seconds = parse_duration(text)
    except ValueError:
        raise HistoryError(f"{flag} {text!r}: not a duration (e.g. 30m, 1h)") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise HistoryError(f"{flag} {text!r}: the duration must be positive")
    return seconds


def parse_range(text: str, flag: str) -> tuple[float, float]:
    """'START/DURATION' or 'START..END' (as the before/after board writes it) -> (start, end) in
    Unix seconds."""
    if ".." in text:
        first, _, last = text.partition("..")
        begin, end = parse_time(first, flag), parse_time(last, flag)
        if end <= begin:
            raise HistoryError(f"{flag} {text!r}: the range ends before it starts")
        return begin, end
    start, sep, duration = text.partition("/")
    if not sep:
        raise HistoryError(f"{flag} {text!r}: use START/DURATION, e.g. 2026-11-25T08:00:00Z/1h, or START..END")
    begin = parse_time(start, flag)
    return begin, begin + parse_window(duration, flag)


def board_link(grafana: str, before: tuple[float, float], after: tuple[float, float]) -> str:
    """The before/after board showing these two ranges: its time range is the after range, its
    shift how far the before range starts earlier."""
    query = urllib.parse.urlencode(
        {"from": int(after[0] * 1000), "to": int(after[1] * 1000), "var-shift": f"{round(after[0] - before[0])}s"}
    )
    return f"{grafana.rstrip('/')}/d/{BOARD_UID}?{query}"


def around(change: float, window: str, flag: str = "--window") -> tuple[tuple[float, float], tuple[float, float]]:
    """The window up to a change and the window from it."""
    width = parse_window(window, flag)
    # Ranges hold (start, end]: a sample at the change's own second is the first "after" one.
    edge = change - 1e-3
    return (edge - width, edge), (edge, edge + width)


# --- the Prometheus HTTP API ---------------------------------------------------------------------


class Prometheus:
    """The query API of Prometheus or VictoriaMetrics, with basic auth, a bearer token or a CA file.
    Secrets are read from files and never appear in an error."""

    def __init__(self, url: str, user=None, password_file=None, token_file=None, ca_file=None, timeout: float = 120.0):
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise HistoryError(f"--prometheus {url!r}: not an http(s) URL")
        if parsed.username or parsed.password:
            raise HistoryError(
                "--prometheus: put no credentials in the URL; use --prometheus.user and --prometheus.password-file"
            )
        self.url, self.timeout, self.headers = url.rstrip("/"), timeout, {}
        if token_file:
            self.headers["Authorization"] = "Bearer " + _secret(token_file, "--prometheus.bearer-token-file")
        elif user:
            password = _secret(password_file, "--prometheus.password-file") if password_file else ""
            self.headers["Authorization"] = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        self.context = None
        if parsed.scheme == "https":
            try:
                self.context = ssl.create_default_context(cafile=ca_file)
            except (OSError, ssl.SSLError) as err:
                raise HistoryError(f"--prometheus.ca-file {ca_file}: {getattr(err, 'strerror', None) or err}") from None

    def query(self, expr: str, at: float) -> list[dict]:
        """An instant query; the result list (a matrix for a range selector)."""
        body = urllib.parse.urlencode({"query": expr, "time": f"{at:.3f}"}).encode()
        request = urllib.request.Request(f"{self.url}/api/v1/query", data=body, headers=self.headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout, context=self.context) as response:
                answer = json.load(response)
        except urllib.error.HTTPError as err:
            raise HistoryError(f"{self.url}: {err.code} {_api_error(err)}") from None
        except (urllib.error.URLError, OSError) as err:
            reason = getattr(err, "reason", err)
            raise HistoryError(f"{self.url}: cannot reach the server: {reason}") from None
        except ValueError:
            raise HistoryError(f"{self.url}: the answer is not JSON: is this the Prometheus API?") from None
        if answer.get("status") != "success":
            raise HistoryError(f"{self.url}: {answer.get('error', 'query failed')}")
        return answer["data"]["result"]


def _secret(path: str, flag: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError as err:
        raise HistoryError(f"{flag} {path}: {err.strerror}") from None


def _api_error(err: urllib.error.HTTPError) -> str:
    try:
        return json.loads(err.read()).get("error", err.reason)
    except (ValueError, OSError):
        return str(err.reason)


def _matcher(values: list[str]) -> str:
    """A PromQL regex matching any of these names exactly."""
    return "|".join(_regex_quote(v) for v in values)


_REGEX_SPECIAL = set(".^$|?*+()[]{}")


def _regex_quote(value: str) -> str:
    """A literal for an RE2 regex inside a PromQL double-quoted string (both escape with a backslash)."""
    out = []
    for c in value:
        if c == "\\":
            out.append("\\" * 4)
        elif c in _REGEX_SPECIAL:
            out.append("\\" * 2 + c)
        elif c == '"':
            out.append('\\"')
        else:
            out.append(c)
    return "".join(out)


def raw_samples(prom: Prometheus, names: list[str], selector: str, start: float, end: float, progress=None):
    """{(name, labels): (times, values)} of every series of these names in (start, end], read in
    pieces of PIECE seconds."""
    out: dict[tuple[str, tuple], tuple[list, list]] = {}
    matchers = f'__name__=~"{_matcher(names)}"' + (f",{selector}" if selector else "")
    piece_end = end
    while piece_end > start:
        width = min(PIECE, piece_end - start)
        for series in prom.query(f"{{{matchers}}}[{int(math.ceil(width * 1000))}ms]", piece_end):
            labels = dict(series["metric"])
            name = labels.pop("__name__", "")
            key = (name, tuple(sorted(labels.items())))
            times, values = out.setdefault(key, ([], []))
            for stamp, value in series.get("values", ()):
                if start < stamp <= end:
                    times.append(float(stamp))
                    values.append(float(value))
        if progress is not None:
            progress.advance(int(width))
        piece_end -= width
    return {key: _sorted(times, values) for key, (times, values) in out.items()}


def _sorted(times: list, values: list) -> tuple[np.ndarray, np.ndarray]:
    t, v = np.array(times), np.array(values)
    order = np.argsort(t, kind="stable")
    t, v = t[order], v[order]
    keep = np.concatenate(([True], np.diff(t) > 0)) if len(t) else np.array([], dtype=bool)
    return t[keep], v[keep]


# --- series -> captures ------------------------------------------------------------------------


def _object(spec: FamilySpec, labels: dict[str, str]):
    values = tuple(labels.get(name, "") for name in spec.labels)
    return values[0] if len(values) == 1 else values


def captures(
    prom: Prometheus, start: float, end: float, hosts: list[str] | None = None, what: str = "range", show_progress=None
) -> dict[str, Capture]:
    """One Capture per host with samples in (start, end]: the model's rate, latency and level
    fields per sample, from the exporter's counters and gauges."""
    names = sorted({name for spec in FAMILIES for name in spec.metrics if not spec.family.startswith("vsan_")})
    vsan_names = sorted({name for spec in FAMILIES for name in spec.metrics if spec.family.startswith("vsan_")})
    selector = f'host=~"{_matcher(hosts)}"' if hosts else ""
    progress = Progress(f"{what} from {prom.url}", int(end - start), enabled=show_progress)
    try:
        raw = raw_samples(prom, [*names, "esxi_path_info"], selector, start, end, progress)
        # A vSAN sample is scraped after its own time (up to an interval of the service and one of
        # the exporter later): read past the end, keep the samples whose own time is in the range.
        vsan_raw = raw_samples(prom, vsan_names, selector, start, end + VSAN_LAG)
        if vsan_raw:
            vsan_raw.update(raw_samples(prom, [VSAN_SAMPLE_TIME], "", start, end + VSAN_LAG))
        raw.update(vsan_raw)
    finally:
        progress.close()
    by_name = {name: (spec, metric) for spec in FAMILIES for name, metric in spec.metrics.items()}
    sample_times = {dict(items).get("cluster", ""): series for (name, items), series in raw.items() if name == VSAN_SAMPLE_TIME}
    per_host: dict[str, dict] = {}
    path_devices: dict[str, dict[str, str]] = {}
    for (name, label_items), (times, values) in raw.items():
        labels = dict(label_items)
        host = labels.get("host", "")
        if name == "esxi_path_info":
            path_devices.setdefault(host, {})[labels.get("path", "")] = labels.get("device", "")
            continue
        if name == VSAN_SAMPLE_TIME:
            continue
        spec, _ = by_name[name]
        if spec.family.startswith("vsan_"):
            times, values = per_sample(times, values, sample_times.get(labels.get("cluster", "")))
            inside = (times > start) & (times <= end)
            times, values = times[inside], values[inside]
        series = per_host.setdefault(labels.get(spec.scope, "") + spec.suffix, {})
        key = (spec.family, _object(spec, labels), name)
        # Two series for one object (two exporters scraping one host): the one with more samples.
        if key not in series or len(series[key][0]) < len(times):
            series[key] = (times, values, labels)
    out = {}
    for host, series in sorted(per_host.items()):
        capture = _capture(host, series, by_name, path_devices.get(host, {}), start, end)
        if capture is not None:
            out[host] = capture
    return out


def per_sample(times: np.ndarray, values: np.ndarray, stamps) -> tuple[np.ndarray, np.ndarray]:
    """A vSAN gauge, scraped many times per performance-service sample, as one value per sample at
    the sample's own time (esxi_vsan_sample_timestamp_seconds at each scrape). Without the sample
    times: one value per change of value, at its first scrape."""
    if stamps is None or not len(stamps[0]):
        keep = np.concatenate(([True], np.diff(values) != 0)) if len(values) else np.array([], dtype=bool)
        return times[keep], values[keep]
    stamp_times, stamp_values = stamps
    at = np.searchsorted(stamp_times, times, side="right") - 1
    known = at >= 0
    sample = np.where(known, stamp_values[np.clip(at, 0, None)], np.nan)
    first = known & np.concatenate(([True], sample[1:] != sample[:-1]))
    return sample[first], values[first]


def _capture(host: str, series: dict, by_name: dict, path_devices: dict, start: float, end: float) -> Capture | None:
    stamps = np.unique(np.concatenate([times for times, _, _ in series.values()]))
    if len(stamps) < 3:
        return None  # two samples give one interval: nothing to test
    index = {t: i for i, t in enumerate(stamps)}
    intervals = np.concatenate(([np.nan], np.diff(stamps)))
    columns: dict[tuple, np.ndarray] = {}
    world_vms: dict[str, str] = {}
    aligned: dict[tuple, np.ndarray] = {}
    for (family, obj, name), (times, values, labels) in series.items():
        full = np.full(len(stamps), np.nan)
        full[[index[t] for t in times]] = values
        aligned[(family, obj, name)] = full
        if family == "worlds" and labels.get("vm"):
            world_vms[obj[1]] = labels["vm"]
    for (family, obj, name), full in aligned.items():
        kind, field, weight = by_name[name][1]
        if kind == "gauge":
            columns[(family, obj, field)] = full
        elif kind == "rate":
            columns[(family, obj, field)] = _per_second(full, stamps)
        else:
            weights = aligned.get((family, obj, weight))
            if weights is not None:
                columns[(family, obj, field)] = _latency(full, weights)
    if not columns:
        return None
    for (family, obj, field), reads in list(columns.items()):
        if family.startswith("vsan_") and field == m.READS and (family, obj, m.WRITES) in columns:
            columns[(family, obj, m.COMMANDS)] = reads + columns[(family, obj, m.WRITES)]  # vSAN gives no total
    frame = pd.DataFrame(columns)
    frame.columns = pd.MultiIndex.from_tuples(list(columns), names=["family", "object", "field"])
    return Capture(
        path=f"{iso(start)}/{iso(end)}",
        host=host,
        timestamps=stamps,
        intervals=intervals,
        frame=frame,
        world_vms=world_vms,
        path_devices=dict(path_devices),
    )


def _differences(counter: np.ndarray) -> np.ndarray:
    """Counter increase since the previous sample; NaN where either side is missing or the
    counter went down (a restart: that interval's increase is unknown, not zero)."""
    step = np.concatenate(([np.nan], np.diff(counter)))
    step[step < 0] = np.nan
    return step


def _per_second(counter: np.ndarray, stamps: np.ndarray) -> np.ndarray:
    return _differences(counter) / np.concatenate(([np.nan], np.diff(stamps)))


def _latency(total: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Mean latency per command in each interval; 0 in an interval without commands (it weighs
    nothing, as esxtop's own zero there)."""
    sums, counts = _differences(total), _differences(weight)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = sums / counts
    mean[(counts == 0) & np.isfinite(sums)] = 0.0
    return mean


def iso(stamp: float) -> str:
    return dt.datetime.fromtimestamp(stamp, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- settings: the configuration diff and the last change ----------------------------------------

# metric -> (object kind, field): the value of the setting; info families carry theirs in labels.
SETTING_VALUES = {
    "esxi_lun_configured_queue_depth": ("lun", "configured_queue_depth"),
    "esxi_lun_dsnro": ("lun", "dsnro"),
    "esxi_lun_queue_full_sample_size": ("lun", "queue_full_sample_size"),
    "esxi_lun_queue_full_threshold": ("lun", "queue_full_threshold"),
    "esxi_lun_psp_iops_limit": ("lun", "psp_iops_limit"),
    "esxi_lun_psp_bytes_limit_bytes": ("lun", "psp_bytes_limit"),
    "esxi_host_dsnro": ("host", "dsnro"),
    "esxi_adapter_driver_queue_depth": ("adapter", "queue_depth_parameter_value"),
    "esxi_adapter_link_speed_bytes_per_second": ("adapter", "link_speed_bytes_per_second"),
    "esxi_vm_disk_iops_limit": ("vdisk", "iops_limit"),
    "esxi_vm_disk_shares": ("vdisk", "shares"),
}
# info metric -> (object kind, label -> field): 1 for the current label values
SETTING_LABELS = {
    "esxi_lun_multipath_info": ("lun", {"plugin": "plugin", "satp": "satp", "psp": "psp", "psp_limit_type": "psp_limit_type"}),
    "esxi_vm_disk_info": ("vdisk", {"controller": "controller", "provisioning": "provisioning"}),
    "esxi_path_state": ("path", {"state": "state"}),
}
SETTING_NAMES = sorted([*SETTING_VALUES, *SETTING_LABELS])
# What --last-change also watches: DQLEN as esxtop and vSphere report it live (a tuned queue depth
# shows there first, and a capture backfilled without an inventory has nothing else).
CHANGE_NAMES = sorted([*SETTING_NAMES, "esxi_lun_queue_depth"])


def _setting_object(inv: m.Inventory, kind: str, labels: dict[str, str]):
    if kind == "host":
        return inv
    if kind == "lun":
        return inv.luns.setdefault(labels.get("device", ""), m.LunConfig())
    if kind == "adapter":
        return inv.adapters.setdefault(labels.get("adapter", ""), m.AdapterConfig(type=""))
    if kind == "path":
        return inv.paths.setdefault(
            labels.get("path", ""), m.PathConfig(device=labels.get("device", ""), adapter=labels.get("adapter", ""))
        )
    return inv.vdisks.setdefault((labels.get("vm", ""), labels.get("disk", "")), m.VirtualDiskConfig())


def settings(prom: Prometheus, start: float, end: float, hosts: list[str] | None = None) -> dict[str, m.Inventory]:
    """Each host's settings as the range ends (the last sample of each setting series in it)."""
    selector = f'host=~"{_matcher(hosts)}"' if hosts else ""
    raw = raw_samples(prom, SETTING_NAMES, selector, start, end)
    newest = _newest(raw)
    out: dict[str, m.Inventory] = {}
    for (name, label_items), (times, values) in sorted(raw.items()):
        if not len(times):
            continue
        labels = dict(label_items)
        host = labels.get("host", "")
        inv = out.setdefault(host, m.Inventory(host=host))
        if name in SETTING_VALUES:
            kind, field = SETTING_VALUES[name]
            setattr(_setting_object(inv, kind, labels), field, float(values[-1]))
        elif values[-1] == 1 and times[-1] >= newest[host]:  # an info series that stopped earlier is a former value
            kind, fields = SETTING_LABELS[name]
            target = _setting_object(inv, kind, labels)
            for label, field in fields.items():
                setattr(target, field, labels.get(label, ""))
    return out


def _newest(raw: dict) -> dict[str, float]:
    """host -> the newest sample time of any of its setting series."""
    out: dict[str, float] = {}
    for (_, items), (times, _) in raw.items():
        if len(times):
            host = dict(items).get("host", "")
            out[host] = max(out.get(host, 0.0), float(times[-1]))
    return out


def last_change(prom: Prometheus, end: float, lookback: float, hosts: list[str] | None = None) -> tuple[float, str] | None:
    """(time, what) of the latest setting change in (end - lookback, end]: a value that moved, or
    an info series (a new PSP, a path state) that appeared after the first sample of its host."""
    selector = f'host=~"{_matcher(hosts)}"' if hosts else ""
    raw = raw_samples(prom, CHANGE_NAMES, selector, end - lookback, end)
    first_seen: dict[str, float] = {}
    for (_, items), (times, _) in raw.items():
        if len(times):
            host = dict(items).get("host", "")
            first_seen[host] = min(first_seen.get(host, math.inf), float(times[0]))
    latest: tuple[float, str] | None = None
    for (name, items), (times, values) in raw.items():
        if not len(times):
            continue
        labels = dict(items)
        what = f"{labels.get('host', '')} {name}{{{', '.join(f'{k}={v!r}' for k, v in items if k not in ('host', 'job', 'instance'))}}}"
        moved = np.nonzero(np.diff(values) != 0)[0]
        candidates = [(float(times[i + 1]), f"{what} {values[i]:g} -> {values[i + 1]:g}") for i in moved[-1:]]
        if name in SETTING_LABELS and times[0] > first_seen.get(labels.get("host", ""), math.inf) and values[0] == 1:
            candidates.append((float(times[0]), f"{what} appeared"))
        for candidate in candidates:
            if latest is None or candidate[0] > latest[0]:
                latest = candidate
    return latest


def keep_luns(capture: Capture, lun_filter) -> Capture:
    """The capture without the LUNs the filter leaves out (their worlds and paths too)."""
    if not lun_filter:
        return capture

    def kept(column) -> bool:
        family, obj, _ = column
        if family == "luns":
            return lun_filter.keeps(obj)
        if family == "worlds":
            return lun_filter.keeps(obj[0])
        if family == "paths":
            return lun_filter.keeps(capture.path_devices.get(obj, ""))
        return True

    frame = capture.frame[[column for column in capture.frame.columns if kept(column)]]
    return dataclasses.replace(capture, frame=frame)
