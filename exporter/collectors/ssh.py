"""esxtop-over-SSH streams' own health, from the SourceHealth records each stream pushes into the
store: whether rows flow, and why sessions ended."""

from __future__ import annotations

from exporter.collectors.textformat import counter, gauge, label_string


def collect(store):
    up = gauge("esxi_esxtop_up", "1 while esxtop over SSH delivers rows from the host, else 0.")
    restarts = counter("esxi_esxtop_restarts_total", "esxtop SSH sessions that ended and were restarted, by why.")
    for (kind, name), record in sorted(store.health.items()):
        if kind != "esxtop_ssh":
            continue
        up.add(label_string(("host",), (name,)), float(record.up))
        for reason, count in record.restarts.items():
            restarts.add(label_string(("host", "reason"), (name, reason)), float(count))
    return [up, restarts]
