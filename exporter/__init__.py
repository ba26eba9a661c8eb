"""esxi-storage-exporter: ESXi storage health (esxtop and vSphere) as Prometheus metrics."""

__version__ = "0.1.0"
