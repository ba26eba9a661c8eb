"""Collectors: one module per object family, each `collect(store) -> iterable of metric families`.

`COLLECTORS` is the registry: name -> (collect function, enabled by default). Each name becomes a
`--collector.NAME` / `--no-collector.NAME` flag and a `collector` label on the self-metrics.
"""

from exporter.collectors import adapter, cpu, datastore, esxtop, inventory, lun, path, world

COLLECTORS = {
    "lun": (lun.collect, True),
    "adapter": (adapter.collect, True),
    "path": (path.collect, True),
    "datastore": (datastore.collect, True),
    "world": (world.collect, True),
    "cpu": (cpu.collect, True),
    "inventory": (inventory.collect, True),
    "esxtop": (esxtop.collect, True),
}
