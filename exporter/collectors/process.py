"""The exporter's own process: client_python's process collector (resident and virtual memory,
CPU seconds, open and maximum file descriptors, start time), as node_exporter and every client
library export it, and its garbage collector's (python_gc_*: collections and objects collected
per generation; a full collection freeing much at once shows as a drop in resident memory),
rendered through the project's text format.

Unlike the storage collectors it reads no store: /metrics appends it fresh on every scrape, after
the cached body (dump and /probe leave it out: they describe hosts, not this process).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, GCCollector, ProcessCollector

from exporter.collectors.textformat import Family, label_string, render

# GCCollector registers itself (it takes no registry=None): a registry of its own, never served.
_COLLECTORS = (ProcessCollector(registry=None), GCCollector(registry=CollectorRegistry()))


def families() -> list[Family]:
    """One family per metric, named as its sample is (a counter's ends in _total, as ours do)."""
    out = []
    for metric in (metric for collector in _COLLECTORS for metric in collector.collect()):
        family = Family(metric.samples[0].name, metric.type, metric.documentation)
        for sample in metric.samples:
            family.add(label_string(sample.labels.keys(), sample.labels.values()) if sample.labels else "", sample.value)
        out.append(family)
    return out


def body() -> bytes:
    """The text of the process families ("" where /proc is not there: not Linux)."""
    return render(families())
