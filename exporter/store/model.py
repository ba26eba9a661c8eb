"""The contract between sources and collectors: one interval of one host, in base units.

Every source (esxtop reader and streams, SSH, vSphere client, simulator via the esxtop reader)
produces `Sample`s, `Inventory`s and its own `SourceHealth`, and nothing else; collectors and
analysis read them. This module imports only exporter.store.units. Units are converted
before a value enters a Sample (see `exporter.store.units`): seconds, bytes, ratios 0..1, per-second
rates. A field absent from a stats dict means "this source/capture does not have it", which is
not the same as zero; collectors then export no series for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# --- field names used in the per-object stats dicts -------------------------------------------
# Rates over the interval (per second).
COMMANDS = "commands_per_second"
READS = "reads_per_second"
WRITES = "writes_per_second"
READ_BYTES = "read_bytes_per_second"
WRITTEN_BYTES = "written_bytes_per_second"
RESERVATIONS = "reservations_per_second"
CONFLICTS = "reservation_conflicts_per_second"
ABORTS = "aborts_per_second"
RESETS = "resets_per_second"
FAILED = "failed_commands_per_second"
# Mean latency per command over the interval (seconds).
DAVG = "device_latency_seconds"
KAVG = "kernel_latency_seconds"
GAVG = "guest_latency_seconds"
QAVG = "queue_latency_seconds"
# Mean guest latency per read / per write (seconds), weighted by reads / writes.
GAVG_READ = "read_latency_seconds"
GAVG_WRITE = "write_latency_seconds"
# Instantaneous or configuration values.
QUEUE_DEPTH = "queue_depth"  # DQLEN on a LUN, AQLEN on an adapter
ACTIVE = "active_commands"  # ACTV
QUEUED = "queued_commands"  # QUED
USED = "used_ratio"  # %USD / 100
LOAD = "load"  # LOAD = (ACTV + QUED) / DQLEN
CPU_UTIL = "utilization_ratio"  # % Util Time / 100
CPU_USAGE_HERTZ = "cpu_usage_hertz"  # host CPU in use (vSphere cpu.usagemhz), a host-level value
# Outstanding I/O of one virtual disk now (vSphere virtualDisk.readOIO/writeOIO.latest; esxtop's
# Virtual Disk group has none). A VM's `a` on a LUN is their sum over its disks on that LUN.
OUTSTANDING_READS = "outstanding_reads"
OUTSTANDING_WRITES = "outstanding_writes"

# Storage I/O Control as one host sees one datastore (vSphere's host-level datastore.* SIOC
# counters; they carry values only where SIOC statistics are on): the size-normalized latency SIOC
# judges congestion by, the device queue depth SIOC allows this host, the share of the interval
# SIOC was throttling, the latency the host's VMs observe, and the datastore's IOPS and outstanding
# I/O as SIOC counts them.
SIOC_NORMALIZED_LATENCY = "sioc_normalized_latency_seconds"
SIOC_QUEUE_DEPTH = "sioc_queue_depth"
SIOC_ACTIVE = "sioc_active_ratio"
VM_OBSERVED_LATENCY = "vm_observed_latency_seconds"
SIOC_IOPS = "sioc_iops"
SIOC_READ_IOPS = "sioc_read_iops"
SIOC_WRITE_IOPS = "sioc_write_iops"
SIOC_OUTSTANDING_READS = "sioc_outstanding_reads"
SIOC_OUTSTANDING_WRITES = "sioc_outstanding_writes"

RATE_FIELDS = (COMMANDS, READS, WRITES, READ_BYTES, WRITTEN_BYTES, RESERVATIONS, CONFLICTS, ABORTS, RESETS, FAILED)
LATENCY_FIELDS = (DAVG, KAVG, GAVG, QAVG)
# Each per-direction latency is weighted by the rate of its own direction.
DIRECTIONAL_LATENCY_WEIGHT = {GAVG_READ: READS, GAVG_WRITE: WRITES}
# Values that are configuration, not measurements: valid even in esxtop's first sample.
CONFIG_FIELDS = (QUEUE_DEPTH,)

# VAAI (esxtop's `Physical Disk SCSI Device` group with -a). The command counts are totals the
# device has kept since it was registered (the host's boot), not per interval: see docs/esxtop.md,
# "VAAI counts are totals". The store folds them into counters by their differences (TOTAL_FIELDS).
VAAI_COMMAND_PRIMITIVES = ("ats", "clone_read", "clone_write", "zero", "unmap")
VAAI_FAILURE_PRIMITIVES = ("ats", "clone", "zero", "unmap")
VAAI_BYTE_PRIMITIVES = ("clone_read", "clone_write", "zero", "unmap")  # MBytes .../sec: rates
VAAI_LATENCY_PRIMITIVES = ("ats", "clone", "zero")
VAAI_OUTCOMES = ("success", "failure")


def vaai_commands(primitive: str) -> str:
    return f"vaai_{primitive}_commands"


def vaai_failures(primitive: str) -> str:
    return f"vaai_{primitive}_failures"


def vaai_bytes(primitive: str) -> str:
    return f"vaai_{primitive}_bytes_per_second"


def vaai_latency(primitive: str, outcome: str) -> str:
    """Mean latency of one primitive's commands of one outcome over the interval (seconds)."""
    return f"vaai_{primitive}_{outcome}_latency_seconds"


# Counts a source reports as running totals: the store adds their increase, and takes a fall
# (the host rebooted, the device came back) for a restart of the count from zero.
TOTAL_FIELDS = tuple(vaai_commands(p) for p in VAAI_COMMAND_PRIMITIVES) + tuple(vaai_failures(p) for p in VAAI_FAILURE_PRIMITIVES)
RATE_FIELDS += tuple(vaai_bytes(p) for p in VAAI_BYTE_PRIMITIVES)


@dataclass(slots=True)
class Sample:
    """One interval of one host.

    interval: seconds since this stream's previous sample; None for a stream's first sample,
    whose esxtop rates and latencies are all 0.00 and are not a measurement (only CONFIG_FIELDS
    are taken from it).
    """

    host: str
    timestamp: float  # unix seconds at the end of the interval
    interval: float | None
    luns: dict[str, dict[str, float]] = field(default_factory=dict)  # device -> stats
    adapters: dict[str, dict[str, float]] = field(default_factory=dict)  # vmhbaN -> stats
    paths: dict[str, dict[str, float]] = field(default_factory=dict)  # runtime name -> stats
    worlds: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)  # (device, world id) -> stats
    cpus: dict[str, dict[str, float]] = field(default_factory=dict)  # "0".."N-1", "_Total" -> stats
    # Datastore-level I/O: an NFS volume (esxtop's NFS Volume object, vSphere's datastore.*
    # counters) and, from vSphere, VMFS datastores as the host sees them. name -> stats
    datastores: dict[str, dict[str, float]] = field(default_factory=dict)
    host_values: dict[str, float] = field(default_factory=dict)  # host-level values (CPU_USAGE_HERTZ)
    path_devices: dict[str, str] = field(default_factory=dict)  # path -> device, where known
    world_vms: dict[str, str] = field(default_factory=dict)  # world id -> VM name, where known
    # Virtual disks (vSphere virtualDisk.*, esxtop's `Virtual Disk(vm:scsi0:0)`): (vm, disk) -> stats,
    # disk being the controller instance (scsi0:0, sata0:1, nvme0:0, ide0:0). Fields: READS, WRITES,
    # READ_BYTES, WRITTEN_BYTES, COMMANDS, GAVG_READ, GAVG_WRITE, OUTSTANDING_READS/WRITES.
    vdisks: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)
    # Per-VM totals over its disks (esxtop's `Virtual Disk(vm)`): vm -> stats, the same fields.
    # A separate family from vdisks, so no sum over disks ever counts a VM twice.
    vms: dict[str, dict[str, float]] = field(default_factory=dict)
    source: str = "esxtop"  # which source produced it: esxtop | vsphere


def device_kind(device: str, lun: LunConfig | None = None) -> str:
    """What queue semantics a device has: nvme (HPP, may bypass the kernel queue), vvol_pe
    (a vVol protocol endpoint, its own DSNRO) or scsi (the paper's LUN)."""
    if lun is not None and lun.is_vvol_pe:
        return "vvol_pe"
    if device.startswith(("eui.", "uuid.", "t10.NVMe")):
        return "nvme"
    return "scsi"


def path_adapter(path: str) -> str:
    """The adapter of a runtime path name: 'vmhba2:C0:T1:L4' -> 'vmhba2'."""
    return path.split(":", 1)[0]


# --- storage configuration (vSphere inventory, the simulator's own config, or the YAML config) --
@dataclass(slots=True)
class LunConfig:
    display_name: str = ""
    vendor: str = ""
    model: str = ""
    datastore: str = ""  # VMFS datastore on this LUN (through its extents), "" if none
    configured_queue_depth: float | None = None  # the device's configured max queue depth
    dsnro: float | None = None  # per-device "outstanding IOs with competing worlds"
    # Per-device tuning and health (esxcli storage core/nmp/hpp device list, or the standard API).
    queue_full_sample_size: float | None = None  # adaptive queue depth: 0 = off
    queue_full_threshold: float | None = None
    plugin: str = ""  # multipath plugin: NMP | HPP | "" unknown
    satp: str = ""  # storage array type plugin (VMW_SATP_ALUA ...), NMP only
    psp: str = ""  # path selection policy (VMW_PSP_RR ...) or HPP scheme
    psp_limit_type: str = ""  # round robin: Default | Iops | Bytes | Latency
    psp_iops_limit: float | None = None  # round robin: I/Os per path before switching
    psp_bytes_limit: float | None = None  # round robin: bytes per path before switching
    is_ssd: bool | None = None
    is_local: bool | None = None
    is_vvol_pe: bool | None = None  # a vVol protocol endpoint
    status: str = ""  # esxcli Status: on | off | dead | degraded | ...
    operational_state: str = ""  # ScsiLun.operationalState: ok | degraded | lostCommunication | off | error ...
    # VAAI primitive (ats, clone, zero, unmap) -> supported | unsupported | unknown (esxcli
    # storage core device vaai status get); a primitive absent was not reported.
    vaai_status: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class AdapterConfig:
    type: str = ""  # fc | iscsi | sas | block | nfs ...
    model: str = ""
    driver: str = ""
    link_speed_bytes_per_second: float | None = None
    queue_depth_parameter: str = ""  # the driver module's LUN queue-depth parameter (ql2xmaxqdepth ...)
    queue_depth_parameter_value: float | None = None  # None while the driver's default is in force


@dataclass(slots=True)
class DatastoreConfig:
    type: str = ""  # vmfs | nfs | nfs41 | vsan | vvol ...
    remote_host: str = ""  # NFS server, "" for block datastores
    adapter: str = ""  # the adapter carrying an NFS datastore's traffic (its vmknic), "" if none
    sioc: SiocConfig | None = None  # Datastore.iormConfiguration; None: not asked (esxtop, a source without it)


# Datastore.iormConfiguration's congestionThresholdMode (StorageIORMThresholdMode).
SIOC_MODES = ("automatic", "manual")


@dataclass(frozen=True, slots=True)
class SiocConfig:
    """A datastore's Storage I/O Control configuration (vSphere Datastore.iormConfiguration,
    deprecated from 8.0 U3 with no replacement). reported False: the server was asked and sent
    none (a fault, an empty answer): every other field is then None, never a guess."""

    reported: bool
    enabled: bool | None = None
    stats_enabled: bool | None = None  # statsCollectionEnabled
    mode: str = ""  # one of SIOC_MODES, or what the server said; "" not reported
    threshold_seconds: float | None = None  # congestionThreshold (ms on the wire, 5-100)
    peak_throughput_ratio: float | None = None  # percentOfPeakThroughput / 100 (50-100 %)


# A datastore's maintenance mode as vSphere reports it (DatastoreSummary.maintenanceMode).
DATASTORE_MAINTENANCE_MODES = ("normal", "enteringMaintenance", "inMaintenance")


@dataclass(frozen=True, slots=True)
class DatastoreSpace:
    """One datastore's space, once per datastore whatever number of hosts mount it (vSphere's
    Datastore.summary, or a host's `esxcli storage filesystem list`). url identifies it across
    hosts and sources: ds:///vmfs/volumes/<uuid or NFS id>/."""

    name: str
    url: str
    type: str  # vmfs | nfs | nfs41 | vsan | vvol ... (lower case)
    capacity_bytes: float | None = None  # None: not shown (capacity 0, or inaccessible)
    free_bytes: float | None = None
    uncommitted_bytes: float | None = None  # None: not reported (esxcli has none)
    accessible: bool = True
    maintenance_mode: str = ""  # one of DATASTORE_MAINTENANCE_MODES, "" not reported
    updated: float | None = None  # unix seconds: when vCenter last refreshed the figures (info.timestamp)
    source: str = "vsphere"  # vsphere | esxcli: where both see a datastore, vSphere's is shown


@dataclass(frozen=True, slots=True)
class VmSnapshots:
    """A VM's snapshots (vSphere: its snapshot tree and layoutEx). bytes: size on disk of its
    snapshot files and delta-disk extents; by_datastore splits them by the datastore they are on."""

    host: str
    vm: str
    count: int = 0
    oldest: float | None = None  # unix seconds: the oldest snapshot's createTime
    bytes: float = 0.0
    by_datastore: tuple[tuple[str, float], ...] = ()  # (datastore name, bytes)
    consolidation_needed: bool | None = None  # runtime.consolidationNeeded; None: not reported


@dataclass(slots=True)
class VirtualDiskConfig:
    """What backs one virtual disk (vSphere only: esxtop has no backing)."""

    datastore: str = ""  # the datastore holding the disk's file (an RDM's mapping file), "" unknown
    datastore_type: str = ""  # vmfs | nfs | nfs41 | vvol | vsan | ""
    devices: tuple[str, ...] = ()  # LUN canonical names: a VMFS datastore's extents, or the RDM's LUN
    backing: str = ""  # flat | rdm | sparse | other
    compatibility_mode: str = ""  # an RDM's mode: physical | virtual; "" for other backings
    controller: str = ""  # pvscsi | lsilogic | lsilogic-sas | buslogic | ahci | nvme | ide | ""
    provisioning: str = ""  # thin | thick_lazy | thick_eager | ""
    iops_limit: float | None = None  # storageIOAllocation.limit; None: unlimited (-1)
    shares: float | None = None  # storageIOAllocation.shares.shares


@dataclass(slots=True)
class PathConfig:
    device: str = ""
    adapter: str = ""
    state: str = "active"  # one of PATH_STATES


PATH_STATES = ("active", "standby", "disabled", "dead", "unknown")


@dataclass(slots=True)
class Inventory:
    """One host's storage configuration, refreshed far less often than Samples."""

    host: str
    luns: dict[str, LunConfig] = field(default_factory=dict)
    adapters: dict[str, AdapterConfig] = field(default_factory=dict)
    paths: dict[str, PathConfig] = field(default_factory=dict)
    dsnro: float | None = None  # host-wide Disk.SchedNumReqOutstanding (gone from ESXi 6.0U3 on)
    dsnro_source: str = ""  # where DSNRO came from: device (esxcli) | host_option | none; "" not asked
    cluster: str = ""  # vSphere cluster of the host, "" standalone or unknown
    datacenter: str = ""
    cpu_core_hertz: float | None = None  # nominal clock of one physical core (esxtop has none)
    datastore_hosts: dict[str, int] = field(default_factory=dict)  # datastore -> hosts mounting it
    datastores: dict[str, DatastoreConfig] = field(default_factory=dict)  # datastore -> type and adapter
    vdisks: dict[tuple[str, str], VirtualDiskConfig] = field(default_factory=dict)  # (vm, disk) -> backing
    # VMFS locking (esxcli): /VMFS3/UseATSForHBOnVMFS5 and /VMFS3/HardwareAcceleratedLocking on or
    # off (None: not read), and each VMFS volume's locking mode.
    vmfs_ats_heartbeat: bool | None = None
    vmfs_hardware_locking: bool | None = None
    vmfs_lock_modes: dict[str, str] = field(default_factory=dict)  # volume (datastore) name -> one of VMFS_LOCK_MODES


# A VMFS volume's locking mode (esxcli storage vmfs lockmode list prints ATS-only, ATS+SCSI, ATS
# upgrade pending, ATS downgrade pending); other: a mode not listed here.
VMFS_LOCK_MODES = ("ats_only", "ats_scsi", "ats_upgrade_pending", "ats_downgrade_pending", "other")


# A host's runtime.connectionState as vCenter reports it (vim.HostSystem.ConnectionState).
HOST_CONNECTION_STATES = ("connected", "disconnected", "notResponding")


@dataclass(frozen=True, slots=True)
class HostStatus:
    """A host as vCenter lists it, whether or not it can be read: its connection state and
    whether it is in maintenance mode (None: not reported)."""

    connection_state: str  # one of HOST_CONNECTION_STATES, or what the server said
    maintenance: bool | None = None


@dataclass(slots=True)
class SourceHealth:
    """A source's own health, pushed into the store whole on every change (sources keep no
    exporter-facing state): one vSphere target, or one esxtop-over-SSH stream."""

    kind: str  # vsphere | esxtop_ssh | esxcli
    name: str  # the target name, the SSH host as configured, or (esxcli) the host it describes
    origin: str = ""  # the vSphere target that produced it ("" for SSH): its /probe shows it
    up: int = 0
    durations: dict[str, float] = field(default_factory=dict)  # phase -> seconds of its last run
    errors: dict[str, int] = field(default_factory=dict)  # phase -> failures so far
    dropped: dict[str, int] = field(default_factory=dict)  # reason -> series that could not be placed
    restarts: dict[str, int] = field(default_factory=dict)  # reason -> sessions ended and restarted
    objects: dict[str, int] = field(default_factory=dict)  # kind -> objects found by the last discovery
    samples: dict[str, int] = field(default_factory=dict)  # host -> samples ingested
    last_timestamp: dict[str, float] = field(default_factory=dict)  # host -> newest sample time
    overruns: dict[str, int] = field(default_factory=dict)  # phase -> runs longer than their interval
    changes: dict[str, int] = field(default_factory=dict)  # kind -> inventory changes applied as they came (vSphere)
    walks: dict[str, int] = field(default_factory=dict)  # reason -> full inventory walks (vSphere)
    host_status: dict[str, HostStatus] = field(default_factory=dict)  # host -> as vCenter lists it (vSphere)


# --- physical disk health (exporter.smart): SMART pages and NVMe health logs ------------------
# What the SMART page's Value column holds: `ata`, the vendor's normalised figure (1-253, higher is
# better; failing at or below a non-zero Threshold); `nvme`, ESXi's SCSI translation of an NVMe
# device's health log, where Value is the raw figure and Threshold its limit.
SMART_PAGES = ("ata", "nvme")
# How reading a device's SMART page (or an NVMe controller's health log) went: `unsupported` is a
# device that has none (USB media, RAID volumes: "CANNOT open device", "not supported"), a state
# and not an error; `failed` esxcli gave no answer; `unreadable` its answer was refused.
DISK_READ_STATES = ("ok", "unsupported", "failed", "unreadable")
# The NVMe critical-warning flags, in the order of the log's first five lines.
NVME_WARNINGS = ("available_spare", "temperature", "reliability_degraded", "read_only", "volatile_backup_failed")
# The NVMe log's counters, in base units (bytes, seconds, counts).
NVME_COUNTERS = (
    "media_errors",
    "error_log_entries",
    "unsafe_shutdowns",
    "power_cycles",
    "power_on_seconds",
    "read_bytes",
    "written_bytes",
    "host_read_commands",
    "host_write_commands",
    "controller_busy_seconds",
    "warning_temperature_seconds",
    "critical_temperature_seconds",
)


@dataclass(slots=True)
class SmartAttribute:
    """One row of `esxcli storage core device smart get`, each cell None where esxcli prints N/A."""

    value: float | None = None  # as printed: normalised (ata page) or the raw figure (nvme page)
    threshold: float | None = None
    worst: float | None = None
    raw: float | None = None  # ESXi 8.0.3's fifth column; None on older builds


@dataclass(slots=True)
class SmartPage:
    health: str = ""  # the Health Status row as printed ("OK", ...); "" if the page has none
    attributes: dict[str, SmartAttribute] = field(default_factory=dict)  # snake_case parameter -> row


@dataclass(slots=True)
class NvmeHealthLog:
    """`esxcli nvme device log smart get -A vmhbaN`, in base units (°C, ratios 0-1, bytes, seconds)."""

    warnings: dict[str, bool] = field(default_factory=dict)  # NVME_WARNINGS -> set
    temperature_celsius: float | None = None  # the composite temperature
    sensors_celsius: dict[str, float] = field(default_factory=dict)  # "1".."8" -> °C (0 K: absent)
    available_spare_ratio: float | None = None
    available_spare_threshold_ratio: float | None = None
    percentage_used_ratio: float | None = None  # endurance used (may pass 1)
    counters: dict[str, float] = field(default_factory=dict)  # NVME_COUNTERS -> value


@dataclass(slots=True)
class DiskHealth:
    """One local device's health: its SMART page and, for an NVMe namespace, its controller's log.
    A reading that failed keeps the last good one (its *_read_at says how old it is)."""

    page: str = "ata"  # one of SMART_PAGES
    adapter: str = ""  # NVMe: the controller (vmhbaN) whose health log this is
    smart_status: str = ""  # one of DISK_READ_STATES; "" not asked
    smart_problem: str = ""  # why the page was not read this round (failed, unreadable): for the log
    smart: SmartPage | None = None
    smart_read_at: float | None = None  # unix time of the last good SMART page
    nvme_status: str = ""  # one of DISK_READ_STATES; "" not an NVMe namespace
    nvme_problem: str = ""  # why the log was not read this round
    nvme: NvmeHealthLog | None = None
    nvme_read_at: float | None = None
    temperatures_celsius: dict[str, float] = field(default_factory=dict)  # reliable readings: where -> °C


@dataclass(slots=True)
class DiskHealthReport:
    """One host's local disks, replaced whole after each SMART round."""

    host: str
    timestamp: float  # unix time the round ended
    disks: dict[str, DiskHealth] = field(default_factory=dict)  # device (as the LUN families name it) -> health


# --- vSAN (exporter.vsan): the performance service's 5-minute samples and the cluster's health ---
# Fields of the vSAN stats dicts, beside the shared ones above (READS, WRITES, READ_BYTES,
# WRITTEN_BYTES, GAVG_READ, GAVG_WRITE, DAVG, GAVG, OUTSTANDING_WRITES). Every value is the
# service's mean over the sample's interval, already in base units.
VSAN_OUTSTANDING_IO = "outstanding_io"  # DOM client outstanding I/O (oio)
VSAN_CONGESTION = "congestion_per_second"  # congestion raised per second of the interval
VSAN_CLIENT_CACHE_HIT = "client_cache_hit_ratio"  # reads served by the host's client cache, 0..1
VSAN_WRITE_BUFFER_FREE = "write_buffer_free_ratio"  # disk group write buffer free, 0..1
VSAN_READ_CACHE_HIT = "read_cache_hit_ratio"  # disk group read cache hits, 0..1
VSAN_SCHEDULER_LATENCY = "scheduler_latency_seconds"  # mean latency of I/O delayed in vSAN's scheduler queues
VSAN_SCHEDULER_OPS = "scheduler_operations_per_second"  # I/O per second delayed in vSAN's scheduler queues
VSAN_SCHEDULER_DELAYED = "scheduler_delayed_ratio"  # share of I/O that went through the scheduler queues, 0..1
VSAN_DEVICE_READ_LATENCY = "device_read_latency_seconds"  # a disk's physical-layer read latency
VSAN_DEVICE_WRITE_LATENCY = "device_write_latency_seconds"  # a disk's physical-layer write latency
# Congestion of each disk group layer, as f"{layer}_{VSAN_CONGESTION}".
VSAN_CONGESTION_LAYERS = ("ssd", "log", "mem", "slab", "comp", "iops")


def vsan_layer_congestion(layer: str) -> str:
    return f"{layer}_{VSAN_CONGESTION}"


# vSAN ESA disks: the device layer (vsan-esa-disk-scsifw) in the disk's plain fields (READS, ...,
# DAVG, KAVG, GAVG), the vSAN layer (vsan-esa-disk-layer) per tier as vsan_tier_field(tier, field).
VSAN_UNMAPS = "unmaps_per_second"
VSAN_UNMAP_BYTES = "unmap_bytes_per_second"
VSAN_UNMAP_LATENCY = "unmap_latency_seconds"
VSAN_OUTSTANDING_COMMANDS = "outstanding_commands"  # the device's outstanding commands (outstandingCmdCount)
VSAN_ESA_TIERS = ("performance", "capacity")  # the service's ...Perf and ...Capacity labels


def vsan_tier_field(tier: str, field: str) -> str:
    return f"{tier}_tier_{field}"


# vSAN network (vsan-host-net per host, vsan-pnic-net per vmnic, vsan-vnic-net per vmknic; the TCP
# ratios from vsan-tcpip-stats, per host and netstack).
VSAN_RX_BYTES = "received_bytes_per_second"
VSAN_TX_BYTES = "transmitted_bytes_per_second"
VSAN_RX_PACKETS = "received_packets_per_second"
VSAN_TX_PACKETS = "transmitted_packets_per_second"
VSAN_RX_LOSS = "received_packet_loss_ratio"  # share of received packets lost, 0..1
VSAN_TX_LOSS = "transmitted_packet_loss_ratio"
VSAN_PORT_RX_DROPS = "port_received_drop_ratio"  # share dropped at the vSwitch port, 0..1
VSAN_PORT_TX_DROPS = "port_transmitted_drop_ratio"
VSAN_TCP_RETRANSMITS = "tcp_retransmit_ratio"  # share of TCP segments sent again, 0..1
VSAN_TCP_RX_ERRORS = "tcp_receive_error_ratio"
VSAN_RX_CRC_ERRORS = "received_crc_error_ratio"  # share of received frames with a bad CRC, 0..1
VSAN_RX_ERRORS = "received_error_ratio"
VSAN_TX_ERRORS = "transmitted_error_ratio"
VSAN_PAUSE = "pause_frame_ratio"  # 802.3x pause frames, per frame, 0..1
# The NIC's counters since the host booted (the service's ...Raw labels).
VSAN_RX_CRC_ERRORS_TOTAL = "received_crc_errors_total"
VSAN_RX_ERRORS_TOTAL = "received_errors_total"
VSAN_TX_ERRORS_TOTAL = "transmitted_errors_total"
VSAN_PAUSE_TOTAL = "pause_frames_total"
VSAN_PFC_TOTAL = "pfc_frames_total"

# vSAN backend (host-/cluster-domcompmgr, cluster-domowner): the VMs' I/O in the shared fields,
# beside vSAN's own recovery (resync) writes and resync reads.
VSAN_RECOVERY_WRITES = "recovery_writes_per_second"
VSAN_RECOVERY_WRITE_BYTES = "recovery_written_bytes_per_second"
VSAN_RECOVERY_WRITE_LATENCY = "recovery_write_latency_seconds"
VSAN_RESYNC_READS = "resync_reads_per_second"
VSAN_RESYNC_READ_BYTES = "resync_read_bytes_per_second"
VSAN_RESYNC_READ_LATENCY = "resync_read_latency_seconds"
VSAN_RESYNC_PARALLELISM = "resync_parallelism"  # resync jobs running at once, on average
VSAN_OUTSTANDING_RECOVERY_WRITES = "outstanding_recovery_writes"  # the component manager's resync writes in flight
VSAN_OUTSTANDING_RESYNC_READS = "outstanding_resync_reads"
# The owners' resync jobs per state (cluster-domowner: all but blocked; host-domowner: all), as
# vsan_resync_jobs(state); the component manager's queue depth per I/O class and operation
# (host-domcompmgr), as vsan_queue_depth(io_class, op).
VSAN_RESYNC_JOB_STATES = ("pending", "running", "suspended", "blocked")
VSAN_QUEUE_CLASSES = ("vmdisk", "namespace", "metadata", "resync")
VSAN_QUEUE_OPS = ("read", "write")


def vsan_resync_jobs(state: str) -> str:
    return f"resync_jobs_{state}"


def vsan_queue_depth(io_class: str, op: str) -> str:
    return f"{io_class}_{op}_queue_depth"


@dataclass(slots=True)
class VsanSample:
    """One sample of a vSAN cluster's performance service (every entity at one sample time)."""

    timestamp: float  # unix seconds: the service's own sample time
    interval: float  # seconds the sample averages over (the service's collect interval, 300)
    cluster: dict[str, float] = field(default_factory=dict)  # cluster-domclient
    hosts: dict[str, dict[str, float]] = field(default_factory=dict)  # host -> host-domclient
    disk_groups: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)  # (host, cache device) -> stats
    disks: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)  # (host, device) -> stats
    vms: dict[str, dict[str, float]] = field(default_factory=dict)  # VM name -> stats
    host_networks: dict[str, dict[str, float]] = field(default_factory=dict)  # host -> vsan-host-net
    tcpip: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)  # (host, netstack) -> vsan-tcpip-stats
    nics: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)  # (host, vmnic) -> vsan-pnic-net
    vmknics: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)  # (host, vmknic) -> vsan-vnic-net
    host_backends: dict[str, dict[str, float]] = field(default_factory=dict)  # host -> host-domcompmgr
    cluster_backend: dict[str, float] = field(default_factory=dict)  # cluster-domcompmgr
    cluster_owner: dict[str, float] = field(default_factory=dict)  # cluster-domowner
    host_owners: dict[str, dict[str, float]] = field(default_factory=dict)  # host -> host-domowner


@dataclass(frozen=True, slots=True)
class VsanDisk:
    host: str
    device: str  # canonical name, the `device` label of the LUN families
    disk_group: str  # the disk group's cache device ("" on vSAN ESA: no disk groups)
    tier: str  # cache | capacity | storage_pool (ESA)
    uuid: str  # vsanDiskInfo.vsanUuid: the perf service's entity id
    mounted: bool | None = None  # ESA: the storage pool disk is mounted (isMounted); None: not said
    fault: str = ""  # ESA: the fault vSAN reports on the storage pool disk (its error's type), "" none


@dataclass(slots=True)
class VsanCluster:
    """One vSAN cluster as its collector last read it: membership, performance, health, space."""

    name: str
    uuid: str = ""
    esa: bool = False  # vSAN Express Storage Architecture: no disk groups
    hosts: dict[str, str] = field(default_factory=dict)  # host -> node uuid
    disks: dict[tuple[str, str], VsanDisk] = field(default_factory=dict)  # (host, device) -> disk
    vms: dict[str, tuple[str, str]] = field(default_factory=dict)  # VM name -> (instance uuid, host)
    sample: VsanSample | None = None  # the newest complete performance sample; None before the first
    health: str = ""  # overall health: green | yellow | red | what vSAN says; "" not read
    health_timestamp: float | None = None  # when vSAN's health service computed the summary
    objects: dict[str, int] = field(default_factory=dict)  # object health state -> objects
    objects_refused: set[str] = field(default_factory=set)  # states whose count vSAN sent was refused: not shown, not even as 0
    capacity_bytes: float | None = None
    free_bytes: float | None = None
    resync_bytes: float | None = None  # bytes left to resynchronise
    resync_objects: float | None = None  # objects resynchronising
    resync_eta_seconds: float | None = None
    # (host, vmnic) -> its link speed in bytes per second (config.network.pnic linkSpeed); a vmnic whose
    # link is down has none
    nic_speeds: dict[tuple[str, str], float] = field(default_factory=dict)
    unnamed_disks: int = 0  # vSAN disks the discovery's disk query gave no device for (counted, not dropped)


# --- ESXi's storage events (exporter.events): vCenter's event stream, or a host's vobd.log ------
@dataclass(slots=True)
class StorageEvents:
    """One origin's storage events counted since the exporter started, replaced whole on every
    change: (host, event id, device, datastore) -> (count, newest event's time)."""

    origin: str  # the vSphere target, or the SSH host as configured
    source: str  # vsphere | vobd
    up: int = 0  # 1 while the origin's events are followed
    counts: dict[tuple[str, str, str, str], tuple[int, float]] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)  # reason -> events counted under empty labels, or not at all
    errors: dict[str, int] = field(default_factory=dict)  # fault -> times it happened
    followed_ids: int = 0  # event ids followed (the known ones and the server's catalog)
