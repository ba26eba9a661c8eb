"""The esxtop source's own health: samples read, newest sample time, lines rejected."""

from exporter.collectors.textformat import counter, gauge, label_string


def collect(store):
    samples = counter("esxi_esxtop_samples_total", "esxtop samples read.")
    last = gauge("esxi_esxtop_last_sample_timestamp_seconds", "Unix time of the newest esxtop sample (the capture's own clock).")
    for host in store.hosts.values():
        if host.source == "esxtop":
            labels = label_string(("host",), (host.host,))
            samples.add(labels, float(host.samples))
            last.add(labels, host.last_timestamp)
    errors = counter("esxi_esxtop_parse_errors_total", "esxtop lines rejected by the reader, by stream and reason.")
    for (stream, reason), count in sorted(store.parse_errors.items()):
        errors.add(label_string(("stream", "reason"), (stream, reason)), float(count))
    return [samples, last, errors]
