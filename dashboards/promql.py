"""PromQL building blocks over the metric names in README.md's metrics reference.

Every range query uses Grafana's `$__rate_interval` (at least four scrapes, so a rate never has
fewer than two points); tables that summarise the whole dashboard range use `$__range`.
"""

from __future__ import annotations

RATE = "$__rate_interval"
RANGE = "$__range"

HOST = 'host=~"$host"'
LUN = 'device=~"$lun"'
ADAPTER = 'adapter=~"$adapter"'

# Latency counter stem -> esxtop name; each counter is "seconds of latency x commands".
LATENCIES = {"device": "DAVG", "kernel": "KAVG", "queue": "QAVG", "guest": "GAVG"}


def sel(metric: str, *matchers: str) -> str:
    """`metric{m1,m2}`; matchers are written out ('host=~"$host"')."""
    return f"{metric}{{{','.join(matchers)}}}" if matchers else metric


def rate(metric: str, *matchers: str, window: str = RATE, offset: str = "") -> str:
    shifted = f" offset {offset}" if offset else ""
    return f"rate({sel(metric, *matchers)}[{window}]{shifted})"


def mean_latency(obj: str, stem: str, *matchers: str, window: str = RATE, by: str = "") -> str:
    """Command-weighted mean latency per command over the window: the latency counter's rate over
    the commands counter's rate (for read/write latency, over reads/writes).

    obj is 'lun', 'adapter' or 'path'; stem is device|kernel|queue|guest|read|write.
    by: aggregate first (e.g. 'host' for a host's mean over its LUNs), still weighted by commands.
    """
    weight = {"read": "reads", "write": "writes"}.get(stem, "commands")
    num = rate(f"esxi_{obj}_{stem}_latency_seconds_total", *matchers, window=window)
    den = rate(f"esxi_{obj}_{weight}_total", *matchers, window=window)
    if by:
        num, den = f"sum by ({by}) ({num})", f"sum by ({by}) ({den})"
    return f"{num} / {den}"


def gauge(metric: str, *matchers: str, fn: str = "avg", window: str = RATE) -> str:
    """A gauge smoothed over the window, so no sample between two steps is lost."""
    return f"{fn}_over_time({sel(metric, *matchers)}[{window}])"


def bytes_per_second(obj: str, *matchers: str, window: str = RATE) -> str:
    """Read plus written bytes per second (read and written are separate counters)."""
    return (
        f"{rate(f'esxi_{obj}_read_bytes_total', *matchers, window=window)} + "
        f"{rate(f'esxi_{obj}_written_bytes_total', *matchers, window=window)}"
    )


def one_per(labels: str, expr: str) -> str:
    """One series per label set, for the right-hand side of a join: the same host can be scraped
    twice (two exporters, an HA pair), which would make the join many-to-many and fail."""
    return f"max by ({labels}) ({expr})"


def path_to_device(expr: str, *info_matchers: str) -> str:
    """Attach the `device` label of esxi_path_info to a per-path expression. esxi_path_info comes
    from the same esxtop stream as the path counters, so the join includes the scrape's instance."""
    info = one_per("instance, host, path, device", sel("esxi_path_info", *info_matchers))
    return f"({expr}) * on (instance, host, path) group_left (device) {info}"


def link_use(*matchers: str, window: str = RATE) -> str:
    """Adapter throughput as a share of its link speed (0-1); an NFS vmknic's is its datastores'."""
    speed = one_per("host, adapter", sel("esxi_adapter_link_speed_bytes_per_second", *matchers))
    return (
        f"(({bytes_per_second('adapter', *matchers, window=window)}) or {nfs_bytes_per_second(*matchers, window=window)})"
        f" / on (host, adapter) group_left () {speed}"
    )


def nfs_bytes_per_second(*matchers: str, window: str = RATE) -> str:
    """Read plus written bytes per second of the NFS datastores on each vmknic (vSphere source: an
    NFS datastore has no storage adapter; esxi_datastore_info names the vmknic that carries it),
    as the alerts' link recording rules count them. Adapter matchers select the vmknic."""
    on_datastore = [m for m in matchers if not m.startswith("adapter")]
    info = one_per(
        "instance, host, datastore, adapter", sel("esxi_datastore_info", 'type=~"nfs|nfs41"', 'adapter!=""', *matchers)
    )
    return (
        f"sum by (instance, host, adapter) (({bytes_per_second('datastore', *on_datastore, window=window)})"
        f" * on (instance, host, datastore) group_left (adapter) {info})"
    )


def world_outstanding(*matchers: str, window: str = RATE) -> str:
    """Commands one world (VM) has outstanding on one LUN: active plus queued, averaged over the window."""
    return (
        f"{gauge('esxi_lun_world_active_commands', *matchers, window=window)} + "
        f"{gauge('esxi_lun_world_queued_commands', *matchers, window=window)}"
    )
