"""What a simulated host's esxcli prints about its local disks, as real hosts print it, for the
real SMART reader (exporter.smart.parse): the five-column `storage core device smart get` table
(ESXi 8.0.3, every cell padded to its column), an NVMe device's short SCSI page, and
`nvme device log smart get`'s block in Kelvin, hexadecimal and percent.

The figures follow the disk's DiskSpec at a simulated time: power-on hours run on, and from
`reallocating_from` its sectors are remapped (and go pending) at their hourly rates, its
normalised Reallocated Sector Count falling from 100 as the count grows."""

from __future__ import annotations

from .spec import DiskSpec

NA = "N/A"
HEADER = ("Parameter", "Value", "Threshold", "Worst", "Raw")
KELVIN = 273  # as the drives count (exporter.store.units.KELVIN_AT_ZERO_CELSIUS)
SECTORS_PER_POINT = 20  # reallocated sectors per point the normalised value loses


def table(rows: list[tuple]) -> str:
    """esxcli's dashed table: each column as wide as its widest cell, two spaces between."""
    cells = [HEADER, *(tuple(str(c) for c in row) for row in rows)]
    widths = [max(len(r[i]) for r in cells) for i in range(len(HEADER))]

    def line(row) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(row, widths))

    return "\n".join([line(HEADER), "  ".join("-" * w for w in widths), *(line(r) for r in cells[1:])]) + "\n"


def sectors(disk: DiskSpec, t: float) -> tuple[int, int]:
    """(reallocated, pending) sectors at `t` seconds into the run."""
    if disk.reallocating_from is None or t < disk.reallocating_from:
        return 0, 0
    hours = (t - disk.reallocating_from) / 3600
    return int(disk.reallocations_per_hour * hours), int(disk.pending_per_hour * hours)


def smart_page(disk: DiskSpec, t: float) -> str:
    """`esxcli storage core device smart get -d DEV` for the disk at `t`."""
    hours = int(disk.power_on_hours + t / 3600)
    reallocated, pending = sectors(disk, t)
    celsius = int(round(disk.temperature))
    if disk.kind == "nvme":  # ESXi's SCSI page of an NVMe device: raw figures in Value
        return table(
            [
                ("Health Status", "OK", NA, NA, NA),
                ("Power-on Hours", hours, NA, NA, NA),
                ("Power Cycle Count", 28, NA, NA, NA),
                ("Reallocated Sector Count", reallocated, 100, NA, NA),
                ("Drive Temperature", celsius, 80, NA, NA),
            ]
        )
    normalised = max(1, 100 - reallocated // SECTORS_PER_POINT)
    packed = celsius | (celsius << 32)  # the current °C in the low byte, as many ATA drives pack it
    rows = [
        ("Health Status", "OK", NA, NA, NA),
        ("Read Error Count", 100, 16, 100, 0),
        ("Power-on Hours", max(1, 100 - hours // 1000), 0, max(1, 100 - hours // 1000), hours),
        ("Power Cycle Count", 100, 20, 100, 14),
        ("Reallocated Sector Count", normalised, 10, normalised, reallocated),
        ("Drive Temperature", 100 - celsius, 0, 100 - celsius - 10, packed),
    ]
    if disk.kind == "ata_ssd":
        wearout = max(1, round(100 * (1 - disk.wear)))
        rows[1:1] = [("Media Wearout Indicator", wearout, 5, wearout, round(disk.wear * 3000))]
        rows += [("Initial Bad Block Count", 100, 10, 100, 12), ("Program Fail Count", 100, 10, 100, 0)]
    else:
        rows.append(("Pending Sector Reallocation Count", 100, 0, 100, pending))
    return table(rows)


def nvme_log(disk: DiskSpec, t: float) -> str:
    """`esxcli nvme device log smart get -A ADAPTER` for an NVMe disk at `t`."""
    hours = int(disk.power_on_hours + t / 3600)
    written = int(2_000_000 + t * 40)  # data units: 512,000 bytes each
    fields = [
        ("Available Spare Space Below Threshold", "false"),
        ("Temperature Warning", "false"),
        ("NVM Subsystem Reliability Degradation", "false"),
        ("Read Only Mode", "false"),
        ("Volatile Memory Backup Device Failure", "false"),
        ("Composite Temperature", f"{int(round(disk.temperature)) + KELVIN} K"),
        ("Available Spare", "100 %"),
        ("Available Spare Threshold", "10 %"),
        ("Percentage Used", f"{round(disk.wear * 100)} %"),
        ("Data Units Read", hex(int(3_000_000 + t * 60))),
        ("Data Units Written", hex(written)),
        ("Host Read Commands", hex(int(900_000_000 + t * 3000))),
        ("Host Write Commands", hex(int(600_000_000 + t * 2000))),
        ("Controller Busy Time", hex(int(hours * 2))),
        ("Power Cycles", hex(28)),
        ("Power On Hours", hex(hours)),
        ("Unsafe Shutdowns", hex(3)),
        ("Media Errors", hex(0)),
        ("Number of Error Info Log Entries", hex(0)),
        ("Warning Composite Temperature Time", "0 Mins"),
        ("Critical Composite Temperature Time", "0 Mins"),
        ("Temperature Sensor 1", f"{int(round(disk.temperature)) + 3 + KELVIN} K"),
    ]
    return "SMART And Health Info:\n" + "".join(f"   {name}: {value}\n" for name, value in fields)
