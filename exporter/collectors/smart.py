"""Local disks' health (exporter.smart): each SMART row's value, threshold, worst and raw as
separate gauges, Health Status as a state set, the NVMe health log in base units, temperatures
only where they are °C, how reading each went and when it last worked, and the rounds' own
health per host. See docs/smart.md."""

from __future__ import annotations

from exporter.collectors.textformat import counter, gauge, label_string
from exporter.store import model as m

ROW = ("host", "device", "parameter", "page")
NVME = ("host", "device", "adapter")
HEALTHY = "OK"

# NVMe log counter -> HELP of its esxi_disk_nvme_<name>_total
COUNTER_HELP = {
    "media_errors": "Unrecovered data integrity errors the NVMe controller reported (Media Errors).",
    "error_log_entries": "Entries in the NVMe controller's error information log (Number of Error Info Log Entries).",
    "unsafe_shutdowns": "Times the NVMe controller lost power without a shutdown notification (Unsafe Shutdowns).",
    "power_cycles": "NVMe controller power cycles (Power Cycles).",
    "power_on_seconds": "NVMe controller powered-on time (Power On Hours x 3600).",
    "read_bytes": "Bytes the host read from the NVMe controller (Data Units Read x 512,000).",
    "written_bytes": "Bytes the host wrote to the NVMe controller (Data Units Written x 512,000).",
    "host_read_commands": "Read commands the NVMe controller completed (Host Read Commands).",
    "host_write_commands": "Write commands the NVMe controller completed (Host Write Commands).",
    "controller_busy_seconds": "Time the NVMe controller was busy with I/O (Controller Busy Time, minutes x 60).",
    "warning_temperature_seconds": "Time above the drive's warning composite temperature (Warning Composite Temperature Time x 60).",
    "critical_temperature_seconds": "Time above the drive's critical composite temperature (Critical Composite Temperature Time x 60).",
}


def collect(store):
    value = gauge(
        "esxi_disk_smart_value",
        "SMART Value as esxcli prints it: page ata, the vendor's normalised figure (higher is better, failing at or "
        "below a non-zero threshold); page nvme, the raw figure (ESXi's SCSI page of an NVMe device).",
    )
    threshold = gauge("esxi_disk_smart_threshold", "SMART Threshold of the parameter (page ata: normalised; page nvme: a limit).")
    worst = gauge("esxi_disk_smart_worst", "SMART Worst: the lowest normalised value the parameter has had (page ata).")
    raw = gauge(
        "esxi_disk_smart_raw", "SMART Raw: the raw counter (sectors, hours, errors; vendor-packed for some), ESXi 8.0.3 on."
    )
    health = gauge("esxi_disk_smart_health_status", 'SMART Health Status: 1 for the status printed, 0 for "OK" when it is not.')
    status = gauge(
        "esxi_disk_smart_status",
        "Reading the device's SMART page: 1 for the current state, 0 for the others (unsupported: the device has none).",
    )
    last_read = gauge("esxi_disk_smart_last_read_timestamp_seconds", "When the device's SMART page was last read successfully.")
    temperature = gauge(
        "esxi_disk_temperature_celsius",
        "Disk temperature where it is degrees: nvme_log (composite), smart_page (an NVMe device's SCSI page), ata_raw "
        "(the low byte of an ATA Drive Temperature's raw).",
    )
    nvme_status = gauge(
        "esxi_disk_nvme_log_status", "Reading the NVMe controller's health log: 1 for the current state, 0 for the others."
    )
    nvme_last = gauge(
        "esxi_disk_nvme_log_last_read_timestamp_seconds", "When the NVMe controller's health log was last read successfully."
    )
    warning = gauge("esxi_disk_nvme_critical_warning", "NVMe critical-warning flag: 1 if set.")
    spare = gauge("esxi_disk_nvme_available_spare_ratio", "NVMe Available Spare: spare capacity left, 0-1.")
    spare_threshold = gauge(
        "esxi_disk_nvme_available_spare_threshold_ratio", "NVMe Available Spare Threshold: the drive warns below this, 0-1."
    )
    used = gauge(
        "esxi_disk_nvme_percentage_used_ratio",
        "NVMe Percentage Used / 100: the share of the drive's rated endurance used (may pass 1).",
    )
    counters = {name: counter(f"esxi_disk_nvme_{name}_total", text) for name, text in COUNTER_HELP.items()}
    up = gauge("esxi_disk_smart_up", "1 if the last SMART round listed the host's devices.")
    errors = counter(
        "esxi_disk_smart_errors_total",
        "SMART round errors by command and reason: failed (no device list), error (esxcli failed), unreadable "
        "(an answer refused), too_large (an answer over its cap), out_of_range, label_too_long, too_many_attributes "
        "(a value refused alone), bad_line, bad_value. Devices without SMART are not errors (esxi_disk_smart_status).",
    )
    for host, report in sorted(store.disk_health.items()):
        for device, disk in sorted(report.disks.items()):
            hd = (host, device)
            if disk.smart_status:
                for state in m.DISK_READ_STATES:
                    status.add(label_string(("host", "device", "status"), (*hd, state)), float(state == disk.smart_status))
            if disk.smart_read_at is not None:
                last_read.add(label_string(("host", "device"), hd), disk.smart_read_at)
            if disk.smart is not None:
                if disk.smart.health:
                    ok = disk.smart.health.upper() == HEALTHY
                    health.add(label_string(("host", "device", "status"), (*hd, HEALTHY)), float(ok))
                    if not ok:
                        health.add(label_string(("host", "device", "status"), (*hd, disk.smart.health)), 1.0)
                for parameter, row in sorted(disk.smart.attributes.items()):
                    labels = label_string(ROW, (*hd, parameter, disk.page))
                    for family, figure in ((value, row.value), (threshold, row.threshold), (worst, row.worst), (raw, row.raw)):
                        if figure is not None:
                            family.add(labels, figure)
            for source, celsius in sorted(disk.temperatures_celsius.items()):
                temperature.add(label_string(("host", "device", "source"), (*hd, source)), celsius)
            if disk.nvme_status:
                labels = label_string(NVME, (*hd, disk.adapter))
                for state in m.DISK_READ_STATES:
                    nvme_status.add(label_string((*NVME, "status"), (*hd, disk.adapter, state)), float(state == disk.nvme_status))
                if disk.nvme_read_at is not None:
                    nvme_last.add(labels, disk.nvme_read_at)
                _nvme(disk.nvme, hd, disk.adapter, labels, warning, spare, spare_threshold, used, counters)
    for (kind, host), record in sorted(store.health.items()):
        if kind != "smart":
            continue
        up.add(label_string(("host",), (host,)), float(record.up))
        for key, count in sorted(record.errors.items()):
            command, _, reason = key.rpartition("/")
            errors.add(label_string(("host", "command", "reason"), (host, command, reason)), float(count))
    return [
        value,
        threshold,
        worst,
        raw,
        health,
        status,
        last_read,
        temperature,
        nvme_status,
        nvme_last,
        warning,
        spare,
        spare_threshold,
        used,
        *counters.values(),
        up,
        errors,
    ]


def _nvme(log: m.NvmeHealthLog | None, hd, adapter, labels, warning, spare, spare_threshold, used, counters) -> None:
    if log is None:
        return
    for name in m.NVME_WARNINGS:
        if name in log.warnings:
            warning.add(label_string((*NVME, "warning"), (*hd, adapter, name)), float(log.warnings[name]))
    for family, ratio in (
        (spare, log.available_spare_ratio),
        (spare_threshold, log.available_spare_threshold_ratio),
        (used, log.percentage_used_ratio),
    ):
        if ratio is not None:
            family.add(labels, ratio)
    for name, count in log.counters.items():
        counters[name].add(labels, count)
