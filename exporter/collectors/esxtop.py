"""The esxtop source's own health: samples read, newest sample time, lines rejected."""
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily


def collect(store):
    samples = CounterMetricFamily("esxi_esxtop_samples", "esxtop samples read.", labels=["host"])
    last = GaugeMetricFamily("esxi_esxtop_last_sample_timestamp_seconds",
                             "Unix time of the newest esxtop sample (the capture's own clock).", labels=["host"])
    for host in store.hosts.values():
        if host.source == "esxtop":
            samples.add_metric([host.host], host.samples)
            last.add_metric([host.host], host.last_timestamp)
    errors = CounterMetricFamily("esxi_esxtop_parse_errors",
                                 "esxtop lines rejected by the reader, by stream and reason.", labels=["stream", "reason"])
    for (stream, reason), count in sorted(store.parse_errors.items()):
        errors.add_metric([stream, reason], count)
    return [samples, last, errors]
