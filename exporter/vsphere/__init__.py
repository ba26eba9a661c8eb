"""The vSphere API source: real-time per-LUN, per-adapter and per-path counters and the storage
configuration, from vCenter or a standalone ESXi host."""

from exporter.vsphere.settings import TargetConfig, targets
from exporter.vsphere.source import VsphereTarget

__all__ = ["TargetConfig", "VsphereTarget", "targets"]
