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
    if obj == "lun" and stem in RECORDED_LUN_LATENCY and window == RATE and not by:
        return sel(RECORDED_LUN_LATENCY[stem], *matchers)  # the series the latency alerts judge
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


# The alerts' recording rules (alerts/rules.src.yml): a panel reads the same series an alert
# judges, so the two cannot disagree on a definition.
LINK_UTILIZATION = "host_adapter:esxi_adapter_link_utilization:ratio"
RECORDED_LUN_LATENCY = {stem: f"host_device:esxi_lun_{stem}_latency_seconds:mean" for stem in LATENCIES}


def link_use(*matchers: str, window: str = RATE) -> str:
    """One direction's bytes per second over the link's payload capacity (0-1), per host, adapter
    and direction: the series EsxiAdapterLinkSaturated judges (an NFS vmknic carries its
    datastores' bytes). Over the whole range (tables), its mean per adapter, busiest direction."""
    recorded = sel(LINK_UTILIZATION, *matchers)
    if window == RATE:
        return recorded
    return f"max by (host, adapter) (avg_over_time({recorded}[{window}]))"


def world_outstanding(*matchers: str, window: str = RATE) -> str:
    """Commands one world (VM) has outstanding on one LUN: active plus queued, averaged over the window."""
    return (
        f"{gauge('esxi_lun_world_active_commands', *matchers, window=window)} + "
        f"{gauge('esxi_lun_world_queued_commands', *matchers, window=window)}"
    )
