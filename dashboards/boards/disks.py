"""Disks: the local disks' health from their SMART pages and NVMe logs (exporter.smart): the
drives' own verdicts, wear, temperature, bad sectors and error counters, how each was read and how
long ago, and every attribute of the selected disks. The lines are the alerts' (thresholds.yaml)."""

from __future__ import annotations

from exporter.configuration import thresholds

from .. import variables as v
from ..panels import Column, Q, row, stat_panel, table_panel, timeseries_panel
from ..promql import HOST, gauge, sel
from ..render import new_dashboard
from .overview import LUN_URL

UID = "esxi-disks"
FILE = "disks.json"
DISK = 'device=~"$disk"'
WHO = "{{host}} {{device}}"
_VALUES = thresholds.load()["values"]
ATA_HOT = float(_VALUES["disk_temperature_celsius"]["value"])
NVME_HOT = float(_VALUES["disk_nvme_temperature_celsius"]["value"])
WORN = float(_VALUES["disk_nvme_percentage_used_ratio"]["value"])
HOT_STEPS = ((None, "green"), (ATA_HOT, "orange"), (NVME_HOT, "red"))
WORN_STEPS = ((None, "green"), (WORN, "red"))
OK_STEPS = ((None, "red"), (1, "green"))  # 1: the state holds
BAD_COUNT_STEPS = ((None, "green"), (1, "red"))
# The alerts' recording rules (alerts/rules.src.yml): the counts EsxiDiskSectorsReallocating judges.
HEALTH_OK = sel("esxi_disk_smart_health_status", HOST, 'status="OK"')
UNSUPPORTED = sel("esxi_disk_smart_status", HOST, 'status="unsupported"')
NOT_READ = sel("esxi_disk_smart_status", HOST, 'status!="ok"')
REALLOCATED = "host_device:esxi_disk_reallocated_sectors:max"
PENDING = "host_device:esxi_disk_pending_sectors:max"
WRITTEN = "host_device:esxi_disk_nvme_written_bytes:rate"  # over a whole SMART round: the counter steps once a round


def per_disk(expr: str) -> str:
    return f"max by (host, device) ({expr})"


def build():
    d = new_dashboard(
        UID,
        "ESXi disks",
        "The hosts' local disks (SATA, SAS, NVMe; vSAN devices included) from their SMART pages and NVMe "
        "health logs: the drives' own verdicts, wear, temperature, bad sectors, and how long ago each was read.",
        [v.datasource(), v.host(), v.disk()],
    )
    d = d.with_row(row("At a glance (the selected hosts)"))
    for panel in (
        stat_panel(
            "Disks not OK",
            "Disks whose SMART Health Status is not OK: the drive predicts its own failure "
            "(EsxiDiskHealthNotOk pages). Anything above zero needs a replacement.",
            "short",
            Q(f"count({per_disk(HEALTH_OK)} == 0) or vector(0)", instant=True),
            thresholds=BAD_COUNT_STEPS,
        ),
        stat_panel(
            "NVMe critical warnings",
            "NVMe critical-warning flags set over all controllers (spare, temperature, reliability, read only, "
            "backup): each is a page (EsxiDiskNvmeCriticalWarning).",
            "short",
            Q(f"sum({sel('esxi_disk_nvme_critical_warning', HOST)}) or vector(0)", instant=True),
            thresholds=BAD_COUNT_STEPS,
        ),
        stat_panel(
            "Hottest disk",
            f"Highest disk temperature in °C where it is degrees (NVMe log or SCSI page, ATA raw). Orange above "
            f"{ATA_HOT:g} °C (the ATA line), red above {NVME_HOT:g} °C (the NVMe line).",
            "celsius",
            Q(f"max({sel('esxi_disk_temperature_celsius', HOST)})", instant=True),
            thresholds=HOT_STEPS,
        ),
        stat_panel(
            "Most worn NVMe device",
            f"Highest NVMe Percentage Used: the share of rated write endurance spent. Red from {WORN:.0%} "
            "(EsxiDiskNvmeWearHigh).",
            "percentunit",
            Q(f"max({sel('esxi_disk_nvme_percentage_used_ratio', HOST)})", instant=True),
            thresholds=WORN_STEPS,
        ),
        stat_panel(
            "Sectors remapped in a day",
            "Reallocated sectors gained over the last day, summed over disks (ATA raw, an NVMe SCSI page's "
            "Value). Any growth is a disk failing somewhere (EsxiDiskSectorsReallocating).",
            "short",
            Q(f"sum({sel(REALLOCATED, HOST)} - min_over_time({sel(REALLOCATED, HOST)}[1d])) or vector(0)", instant=True),
            thresholds=BAD_COUNT_STEPS,
        ),
        stat_panel(
            "Disks without SMART",
            'Local devices that answer without SMART (USB boot media, RAID volumes: "CANNOT open device"). A '
            "state, not an error; they are listed below.",
            "short",
            Q(f"count({UNSUPPORTED} == 1) or vector(0)", instant=True),
        ),
    ):
        d = d.with_panel(panel)
    d = d.with_row(row("Disks"))
    d = d.with_panel(
        table_panel(
            "Disk health",
            "One row per local disk: its own verdict (Health Status OK: 1), temperature, wear (NVMe Percentage "
            "Used; a SATA SSD's normalised Media Wearout Indicator, 100 = new), remapped and pending sectors, "
            "NVMe media errors, and the time since its SMART page was last read (old: reads fail, see below). "
            "Click a disk for its LUN detail.",
            ("host", "device"),
            [
                Column("health OK", per_disk(HEALTH_OK), thresholds=OK_STEPS),
                Column("temperature", per_disk(sel("esxi_disk_temperature_celsius", HOST)), "celsius", HOT_STEPS),
                Column("NVMe used", per_disk(sel("esxi_disk_nvme_percentage_used_ratio", HOST)), "percentunit", WORN_STEPS),
                Column(
                    "SSD wearout",
                    per_disk(sel("esxi_disk_smart_value", HOST, 'parameter="media_wearout_indicator"', 'page="ata"')),
                ),
                Column("reallocated", sel(REALLOCATED, HOST)),
                Column("pending", sel(PENDING, HOST), thresholds=BAD_COUNT_STEPS),
                Column("media errors", per_disk(sel("esxi_disk_nvme_media_errors_total", HOST)), thresholds=BAD_COUNT_STEPS),
                Column("since read", f"time() - {per_disk(sel('esxi_disk_smart_last_read_timestamp_seconds', HOST))}", "s"),
            ],
            sort_by="temperature",
            links={"device": ("LUN detail", LUN_URL)},
            h=9,
        )
    )
    d = d.with_panel(
        table_panel(
            "Disks not read",
            "Local devices whose SMART page was not read this round: unsupported (the device has none: USB "
            "media, RAID volumes), failed (esxcli gave no answer) or unreadable (its answer was refused; the "
            "exporter's log names the device and the line). A failed or refused disk keeps its last reading.",
            ("host", "device", "status"),
            [Column("state", f"max by (host, device, status) ({NOT_READ}) == 1")],
            w=12,
            h=7,
        )
    )
    d = d.with_panel(
        table_panel(
            "SMART attributes of the selected disks",
            "Every row of each selected disk's SMART page. Page ata: the vendor's normalised Value (higher is better) "
            "fails at or below a non-zero Threshold; Raw is the counter behind it (ESXi 8.0.3 on). Page nvme: "
            "ESXi's SCSI page of an NVMe device, whose Value is the raw figure and Threshold its limit.",
            ("host", "device", "page", "parameter"),
            [
                Column("value", sel("esxi_disk_smart_value", HOST, DISK)),
                Column("threshold", sel("esxi_disk_smart_threshold", HOST, DISK)),
                Column("worst", sel("esxi_disk_smart_worst", HOST, DISK)),
                Column("raw", sel("esxi_disk_smart_raw", HOST, DISK)),
            ],
            w=12,
            h=7,
        )
    )
    d = d.with_row(row("Over time"))
    d = d.with_panel(
        timeseries_panel(
            "Temperature",
            f"Each disk's temperature in °C, where it is degrees (source: nvme_log, smart_page, ata_raw). The alert "
            f"lines: {ATA_HOT:g} °C for ATA disks, {NVME_HOT:g} °C for NVMe devices. Several disks of a host rising "
            "together point at fans or the room.",
            "celsius",
            [Q(gauge("esxi_disk_temperature_celsius", HOST, DISK, fn="max"), f"{WHO} {{{{source}}}}")],
            line_at=((None, "transparent"), (ATA_HOT, "orange"), (NVME_HOT, "red")),
            minimum=None,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "Reallocated and pending sectors",
            "Sectors each disk has remapped (reallocated) and is waiting to remap (pending), read once per SMART "
            "round. A count that steps up is a failing medium; one that stays is an old scar.",
            "short",
            [
                Q(sel(REALLOCATED, HOST, DISK), f"reallocated {WHO}"),
                Q(sel(PENDING, HOST, DISK), f"pending {WHO}"),
            ],
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "NVMe wear and spare",
            f"Percentage Used (endurance spent; red line at {WORN:.0%}) and Available Spare of each NVMe device. "
            "Spare falling toward its threshold raises the drive's own critical warning.",
            "percentunit",
            [
                Q(gauge("esxi_disk_nvme_percentage_used_ratio", HOST, DISK, fn="max"), f"used {WHO}"),
                Q(gauge("esxi_disk_nvme_available_spare_ratio", HOST, DISK, fn="min"), f"spare {WHO}"),
            ],
            line_at=((None, "transparent"), (WORN, "red")),
            maximum=1,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "NVMe bytes written",
            "Bytes per second the host writes to each NVMe device (Data Units Written, 512,000 bytes each), "
            "averaged over a SMART round (the counter moves once a round; in a host's first hour the window is "
            "not full yet and it reads low): what wears it out.",
            "Bps",
            [Q(sel(WRITTEN, HOST, DISK), WHO)],
        )
    )
    return d
