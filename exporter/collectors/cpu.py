"""Physical CPU utilisation, for CPU cost per I/O."""

from exporter.collectors.io import gauge_families, labels_of
from exporter.collectors.textformat import gauge, label_string
from exporter.store import model as m

GAUGES = (
    (
        m.CPU_UTIL,
        "utilization_ratio",
        'Physical CPU utilisation over the last interval (% Util Time / 100); cpu="_Total" is the host mean.',
    ),
)


def collect(store):
    rows = [
        (labels_of(obj, ("host", "cpu"), (host.host, cpu)), obj)
        for host in store.hosts.values()
        for cpu, obj in host.objects["cpus"].items()
    ]
    yield from gauge_families("esxi_cpu", rows, GAUGES)
    hertz = gauge("esxi_host_cpu_usage_hertz", "Host CPU in use over the last interval (vSphere cpu.usagemhz).")
    for host in store.hosts.values():
        value = host.values.get(m.CPU_USAGE_HERTZ)
        if value is not None:
            hertz.add(label_string(("host",), (host.host,)), value)
    yield hertz
