"""What a scenario is, in base units: LUNs, hosts with adapters, paths and VMs, and phases.

Built by `schema` from YAML; read by the simulation. Nothing here knows about files or units.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class ScenarioError(ValueError):
    """A scenario that cannot be found or loaded; the message is one line naming file and field."""


# Link efficiency: the share of an adapter's nominal data rate left for payload once framing,
# flow control and the array's port are paid (the paper's Figure 5 flattens near 180 MB/s on 2 Gb/s FC).
DEFAULT_LINK_EFFICIENCY = 0.9
# While a host holds its own reservation its VMs' I/O is not refused, but the metadata updates made
# under it compete with them; this is the share of the hold time those updates cost its own I/O.
DEFAULT_SELF_RESERVATION_COST = 0.2
PATH_STATES = ("active", "standby", "disabled", "dead")
# Virtual disk controllers as vSphere names them, and the bus their disks sit on (scsi0:0, sata0:0 ...).
CONTROLLER_BUS = {
    "pvscsi": "scsi",
    "lsilogic": "scsi",
    "lsilogic-sas": "scsi",
    "buslogic": "scsi",
    "ahci": "sata",
    "nvme": "nvme",
    "ide": "ide",
}
PROVISIONING = ("thin", "thick_lazy", "thick_eager")


@dataclass(frozen=True, slots=True)
class LunSpec:
    device: str
    service_time: float  # seconds per command while the array is not saturated
    absorbs: int  # commands the LUN's disks work on at once (the paper's n); more wait in the array
    display_name: str = ""
    vendor: str = ""
    model: str = ""
    datastore: str = ""
    # Storage I/O Control on the LUN's datastore (manual mode): None reports no iormConfiguration.
    sioc: SiocSpec | None = None


# SIOC's congestion threshold as vCenter takes it (StorageIORMConfigSpec.congestionThreshold, ms).
SIOC_THRESHOLD_RANGE = (0.005, 0.100)
SIOC_DEFAULT_THRESHOLD = 0.030


@dataclass(frozen=True, slots=True)
class SiocSpec:
    enabled: bool
    threshold: float = SIOC_DEFAULT_THRESHOLD  # seconds


@dataclass(frozen=True, slots=True)
class AdapterSpec:
    name: str
    type: str
    model: str
    driver: str
    queue_depth: int  # AQLEN
    link_speed: float | None  # nominal payload bytes/s; None = not a bottleneck (local SAS, ...)
    link_efficiency: float
    cpu_per_command: float  # CPU seconds the host spends per command through this adapter


@dataclass(frozen=True, slots=True)
class HostLunSpec:
    device: str
    queue_depth: int  # DQLEN
    paths: tuple[tuple[str, str], ...]  # (runtime name, state)
    # What the host's configuration and health report for the device (vSphere API, esxcli), on
    # top of the simulated I/O: model.LunConfig fields, and path_states overriding reported states.
    config: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class VmSpec:
    name: str
    lun: str
    oio: int  # outstanding I/Os the VM keeps (closed loop)
    block_size: int  # bytes per command
    read_ratio: float  # 0..1
    start: float = 0.0  # seconds into the run when the VM starts its I/O
    stop: float | None = None
    # Its virtual disks, all on `lun` (on its datastore, or an RDM of it when it has none), sharing
    # the VM's I/O evenly: esxtop's Virtual Disk group and the inventory's VirtualDiskConfig.
    disks: int = 1
    controller: str = "pvscsi"
    provisioning: str = "thick_lazy"
    shares: int = 1000  # disk shares (storageIOAllocation: low 500, normal 1000, high 2000): SIOC's split

    @property
    def disk_names(self) -> tuple[str, ...]:
        """Controller slots as esxtop and vSphere name them: scsi0:0..scsi0:6, scsi0:8.. (unit 7 is
        the SCSI controller's own), ide0:0, ide0:1, ide1:0 ..."""
        bus = CONTROLLER_BUS[self.controller]
        if bus == "ide":
            return tuple(f"ide{k // 2}:{k % 2}" for k in range(self.disks))
        units = [u for u in range(self.disks + 1) if bus != "scsi" or u != 7][: self.disks]
        return tuple(f"{bus}0:{u}" for u in units)


# Local disks whose health the host reports (SMART pages, NVMe logs: exporter.smart); no_smart is
# a local device that has none (a USB boot stick: "CANNOT open device").
DISK_KINDS = ("ata_hdd", "ata_ssd", "nvme", "no_smart")


@dataclass(frozen=True, slots=True)
class DiskSpec:
    """A local disk of a host (one of its LUNs) and how its health evolves over simulated time."""

    device: str
    kind: str  # one of DISK_KINDS
    adapter: str = ""  # nvme: its controller (vmhbaN), one of the host's adapters
    temperature: float = 35.0  # °C
    power_on_hours: float = 10_000.0  # at the start of the run
    wear: float = 0.0  # endurance used, 0..1 (SSD Media Wearout Indicator, NVMe Percentage Used)
    reallocating_from: float | None = None  # seconds into the run when sectors start failing
    reallocations_per_hour: float = 0.0  # sectors remapped per hour from then
    pending_per_hour: float = 0.0  # sectors waiting to be remapped, growing per hour from then


@dataclass(frozen=True, slots=True)
class HostSpec:
    name: str
    cpus: int
    cpu_mhz: float
    base_cpu_util: float  # 0..1 utilisation with no storage I/O
    dsnro: int  # Disk.SchedNumReqOutstanding
    adapters: tuple[AdapterSpec, ...]
    luns: tuple[HostLunSpec, ...]
    vms: tuple[VmSpec, ...]
    cluster: str = ""  # vSphere cluster (esxi_host_info)
    disks: tuple[DiskSpec, ...] = ()  # local disks with SMART (exporter.smart)
    # VMFS locking settings the host reports through esxcli (hardware_locking, ats_heartbeat), where given
    vmfs: tuple[tuple[str, bool], ...] = ()


@dataclass(frozen=True, slots=True)
class VmfsOps:
    """VMFS administrative operations (create/delete VMs, snapshots...) that take SCSI reservations."""

    host: str
    lun: str
    reservations_per_second: float
    hold: float  # seconds the LUN stays reserved per reservation
    self_cost: float = DEFAULT_SELF_RESERVATION_COST


# VAAI primitives a scenario can drive, and the bytes one command moves by default: XCOPY's
# default transfer size (DataMover.MaxHWTransferSize, 4 MiB), WRITE SAME and UNMAP on VMFS6's 1 MiB blocks.
VAAI_PRIMITIVES = ("ats", "clone", "zero", "unmap")
VAAI_DEFAULT_BLOCK = {"clone": 4 * 1024 * 1024, "zero": 1024 * 1024, "unmap": 1024 * 1024}


@dataclass(frozen=True, slots=True)
class VaaiOps:
    """VAAI commands one host sends to one LUN: per primitive, commands per second, the share of
    them that fail, and (clone, zero, unmap) the bytes each moves. ATS is what VMFS 5/6 locking
    and heartbeats send in place of SCSI reservations; a clone copies within the LUN (it is its
    own source and destination). The queueing model adds no load for them: they show in the
    esxtop VAAI columns only."""

    host: str
    lun: str
    per_second: dict[str, float] = field(default_factory=dict)  # primitive -> commands per second
    failure_ratio: dict[str, float] = field(default_factory=dict)  # primitive -> 0..1 of them failing
    block: dict[str, int] = field(default_factory=dict)  # primitive -> bytes per command


@dataclass(frozen=True, slots=True)
class Phase:
    name: str
    duration: float
    vms: dict[str, dict[str, Any]] = field(default_factory=dict)  # VM name -> overrides
    luns: dict[str, dict[str, Any]] = field(default_factory=dict)  # device -> overrides
    vmfs_ops: tuple[VmfsOps, ...] = ()
    vaai_ops: tuple[VaaiOps, ...] = ()


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    description: str
    figure: str
    luns: dict[str, LunSpec]
    hosts: tuple[HostSpec, ...]
    phases: tuple[Phase, ...] = ()
    repeat: bool = False
    source: str = ""
    vaai_ops: tuple[VaaiOps, ...] = ()  # sent in every phase (ATS heartbeats), beside each phase's own
