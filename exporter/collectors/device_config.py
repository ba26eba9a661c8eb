"""Per-device tuning and health (esxcli, or the vSphere API's standard properties): DSNRO's source,
adaptive queue depth, multipathing, device flags and states, the HBA driver's queue-depth parameter.
The values a tuning change moves, so a before/after can say what was changed."""

from __future__ import annotations

from exporter.collectors.textformat import gauge, label_string
from exporter.store import model as m

LUN_STATUSES = ("on", "off", "dead", "degraded", "other")  # esxcli Status
OPERATIONAL_STATES = ("ok", "degraded", "lostCommunication", "off", "error", "quiesced", "timeout", "unknownState")
DSNRO_SOURCES = ("device", "host_option", "none")
HD = ("host", "device")


def collect(store):
    sample_size = gauge(
        "esxi_lun_queue_full_sample_size", "Adaptive queue depth: QUEUE FULL answers counted before DQLEN is halved (0: off)."
    )
    threshold = gauge("esxi_lun_queue_full_threshold", "Adaptive queue depth: good completions needed to raise DQLEN again.")
    multipath = gauge(
        "esxi_lun_multipath_info",
        "Multipath plugin (NMP, HPP), array type (SATP) and path selection policy of the device. Always 1.",
    )
    iops_limit = gauge("esxi_lun_psp_iops_limit", "Round robin: I/Os sent down a path before the next.")
    bytes_limit = gauge("esxi_lun_psp_bytes_limit_bytes", "Round robin: bytes sent down a path before the next.")
    ssd = gauge("esxi_lun_ssd", "1 if the device is flash (Is SSD).")
    local = gauge("esxi_lun_local", "1 if the device is local to the host (Is Local).")
    vvol_pe = gauge("esxi_lun_vvol_pe", "1 if the device is a vVol protocol endpoint (its own DSNRO, Scsi.ScsiVVolPESNRO).")
    status = gauge("esxi_lun_status", "esxcli device status, 1 for the current and 0 for the others (other: a value not listed).")
    state = gauge("esxi_lun_operational_state", "ScsiLun.operationalState, 1 for the current and 0 for the others.")
    driver_qd = gauge(
        "esxi_adapter_driver_queue_depth",
        "The HBA driver's LUN queue-depth module parameter (ql2xmaxqdepth, lpfc_lun_queue_depth, ...), where set.",
    )
    source = gauge(
        "esxi_host_dsnro_source",
        "Where the host's DSNRO comes from: device (esxcli), host_option (Disk.SchedNumReqOutstanding) or none.",
    )
    for host, inv in sorted(store.inventories.items()):
        if inv.dsnro_source:
            for name in DSNRO_SOURCES:
                source.add(label_string(("host", "source"), (host, name)), float(inv.dsnro_source == name))
        for device, lun in sorted(inv.luns.items()):
            labels = label_string(HD, (host, device))
            for family, value in (
                (sample_size, lun.queue_full_sample_size),
                (threshold, lun.queue_full_threshold),
                (iops_limit, lun.psp_iops_limit),
                (bytes_limit, lun.psp_bytes_limit),
            ):
                if value is not None:
                    family.add(labels, value)
            for family, flag in ((ssd, lun.is_ssd), (local, lun.is_local), (vvol_pe, lun.is_vvol_pe)):
                if flag is not None:
                    family.add(labels, float(flag))
            if lun.plugin or lun.psp or lun.satp:
                multipath.add(
                    label_string(
                        ("host", "device", "plugin", "satp", "psp", "psp_limit_type"),
                        (host, device, lun.plugin, lun.satp, lun.psp, lun.psp_limit_type),
                    ),
                    1.0,
                )
            if lun.status:
                current = lun.status.lower() if lun.status.lower() in LUN_STATUSES else "other"
                for name in LUN_STATUSES:
                    status.add(label_string(("host", "device", "status"), (host, device, name)), float(name == current))
            if lun.operational_state:
                for name in OPERATIONAL_STATES:
                    state.add(
                        label_string(("host", "device", "state"), (host, device, name)), float(name == lun.operational_state)
                    )
        for name, adapter in sorted(inv.adapters.items()):
            if adapter.queue_depth_parameter and adapter.queue_depth_parameter_value is not None:
                driver_qd.add(
                    label_string(
                        ("host", "adapter", "driver", "parameter"), (host, name, adapter.driver, adapter.queue_depth_parameter)
                    ),
                    adapter.queue_depth_parameter_value,
                )
    return [
        *vaai_config(store),
        sample_size,
        threshold,
        multipath,
        iops_limit,
        bytes_limit,
        ssd,
        local,
        vvol_pe,
        status,
        state,
        driver_qd,
        source,
    ]


def vaai_config(store):
    """VAAI support per device and VMFS locking per host and volume (esxcli, over SSH or the API)."""
    supported = gauge(
        "esxi_lun_vaai_supported",
        "1 if the device supports the VAAI primitive (ats, clone, zero, unmap), 0 if not; absent while the host says unknown.",
    )
    heartbeat = gauge(
        "esxi_host_vmfs_ats_heartbeat_enabled",
        "1 if VMFS heartbeats use ATS (/VMFS3/UseATSForHBOnVMFS5), 0 if SCSI reads and writes.",
    )
    locking = gauge(
        "esxi_host_vmfs_hardware_locking_enabled",
        "1 if VMFS locks with ATS where the device supports it (/VMFS3/HardwareAcceleratedLocking), 0 if with SCSI reservations.",
    )
    lock_mode = gauge(
        "esxi_datastore_vmfs_lock_mode",
        "VMFS volume's locking mode (esxcli storage vmfs lockmode list), 1 for the current and 0 for the others.",
    )
    for host, inv in sorted(store.inventories.items()):
        for family, flag in ((heartbeat, inv.vmfs_ats_heartbeat), (locking, inv.vmfs_hardware_locking)):
            if flag is not None:
                family.add(label_string(("host",), (host,)), float(flag))
        for volume, mode in sorted(inv.vmfs_lock_modes.items()):
            for name in m.VMFS_LOCK_MODES:
                lock_mode.add(label_string(("host", "datastore", "mode"), (host, volume, name)), float(name == mode))
        for device, lun in sorted(inv.luns.items()):
            for primitive, status in sorted(lun.vaai_status.items()):
                if status != "unknown":
                    supported.add(
                        label_string(("host", "device", "primitive"), (host, device, primitive)), float(status == "supported")
                    )
    return [supported, heartbeat, locking, lock_mode]
