"""esxcli's own health per host (up, errors by command and reason), whichever runner read it:
its own collector, so turning the device configuration off does not hide esxcli failing."""

from exporter.collectors.textformat import counter, gauge, label_string


def collect(store):
    errors = counter(
        "esxi_esxcli_errors_total",
        "esxcli commands that failed and lines or fields that could not be read, by command and reason.",
    )
    up = gauge("esxi_esxcli_up", "1 if the last esxcli refresh of the host's storage configuration succeeded.")
    for (kind, host), record in sorted(store.health.items()):
        if kind != "esxcli":
            continue
        up.add(label_string(("host",), (host,)), float(record.up))
        for key, count in sorted(record.errors.items()):
            command, _, reason = key.rpartition("/")
            errors.add(label_string(("host", "command", "reason"), (host, command, reason)), float(count))
    return [errors, up]
