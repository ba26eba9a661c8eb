"""Every threshold and definition that judges storage health, from one file (thresholds.yaml).

The alert generator, the dashboard generator and `compare` read their numbers here, so a latency
line, a link's saturation or a queue overrun mean the same thing in a page, on a panel and in a
before/after report. ESXI_STORAGE_THRESHOLDS=FILE points every reader at another copy.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import yaml

DEFAULT = Path(__file__).resolve().with_name("thresholds.yaml")
ENV = "ESXI_STORAGE_THRESHOLDS"
SECTIONS = ("values", "compare", "dashboards")


class ThresholdsError(Exception):
    """A problem in the thresholds file, naming the file and the entry."""


def path(explicit: str | Path | None = None) -> Path:
    return Path(explicit or os.environ.get(ENV) or DEFAULT)


def load(source: str | Path | None = None) -> dict:
    """The whole file, checked: every entry of every section has a value and a reason."""
    where = path(source)
    try:
        with open(where, encoding="utf-8") as f:
            config = yaml.safe_load(f)
    except OSError as err:
        raise ThresholdsError(f"{where}: {err.strerror}") from None
    except yaml.YAMLError as err:
        raise ThresholdsError(f"{where}: not valid YAML: {str(err).splitlines()[0]}") from None
    if not isinstance(config, dict):
        raise ThresholdsError(f"{where}: expected a mapping with sections {', '.join(SECTIONS)}")
    for section in SECTIONS:
        entries = config.get(section)
        if not isinstance(entries, dict):
            raise ThresholdsError(f"{where}: {section}: missing or not a mapping")
        for name, entry in entries.items():
            if not isinstance(entry, dict) or "value" not in entry or not str(entry.get("why", "")).strip():
                raise ThresholdsError(f"{where}: {section}.{name}: needs a 'value' and a 'why'")
    return config


@dataclass(frozen=True)
class Thresholds:
    """The judging numbers in base units, for Python readers (dashboards, compare)."""

    latency_critical_seconds: float
    latency_warning_seconds: float
    link_payload_ratio: float  # payload a link carries, as a share of its nominal speed
    link_saturation_ratio: float  # share of that payload, one direction, at which the link is full
    shared_lun_max_queue_depth: float
    queue_overrun_share: float
    percentile: float
    path_share: float
    kernel_latency_bad_seconds: float
    vm_noisy_neighbour_share: float  # a VM's share of a queueing LUN's outstanding commands
    vm_iops_limit_ratio: float  # share of a disk's IOPS limit at which it is held at the limit
    vm_emulated_controller_iops: float  # IOPS through an emulated controller worth a PVSCSI one
    vsan_congestion_per_second: float  # sustained vSAN congestion worth a look
    vsan_write_buffer_free_min_ratio: float  # a disk group's write buffer this free or less is behind
    vsan_space_used_warning_ratio: float
    vsan_space_used_critical_ratio: float
    vsan_packet_loss_ratio: float  # share of packets a vSAN host or vmnic may lose
    vsan_tcp_retransmit_ratio: float  # share of vSAN's TCP segments sent again worth a look
    vsan_resync_over_vm_ratio: float  # resync bytes over the VMs' own at which resync competes
    vsan_resync_min_bytes_per_second: float
    datastore_space_used_warning_ratio: float = 0.75  # defaults: a thresholds file from before #43
    datastore_space_used_critical_ratio: float = 0.85
    datastore_overcommit_ratio: float = 1.5
    snapshot_max_age_seconds: float = 259200.0

    @property
    def link_saturated_share_of_speed(self) -> float:
        """Bytes per second in one direction, as a share of the link speed, that saturate the link."""
        return self.link_payload_ratio * self.link_saturation_ratio


def read(source: str | Path | None = None) -> Thresholds:
    config = load(source)

    def number(section: str, name: str) -> float:
        value = config[section].get(name, {}).get("value")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ThresholdsError(f"{path(source)}: {section}.{name}: needs a number, not {value!r}")
        return float(value)

    return Thresholds(
        latency_critical_seconds=number("values", "latency_critical_seconds"),
        latency_warning_seconds=number("values", "latency_warning_seconds"),
        link_payload_ratio=number("values", "link_payload_ratio"),
        link_saturation_ratio=number("values", "link_saturation_ratio"),
        shared_lun_max_queue_depth=number("values", "shared_lun_max_queue_depth"),
        queue_overrun_share=number("compare", "queue_overrun_share"),
        percentile=number("compare", "percentile"),
        path_share=number("compare", "path_share"),
        kernel_latency_bad_seconds=number("dashboards", "kernel_latency_bad_seconds"),
        vm_noisy_neighbour_share=number("values", "vm_noisy_neighbour_share"),
        vm_iops_limit_ratio=number("values", "vm_iops_limit_ratio"),
        vm_emulated_controller_iops=number("values", "vm_emulated_controller_iops"),
        vsan_congestion_per_second=number("values", "vsan_congestion_per_second"),
        vsan_write_buffer_free_min_ratio=number("values", "vsan_write_buffer_free_min_ratio"),
        vsan_space_used_warning_ratio=number("values", "vsan_space_used_warning_ratio"),
        vsan_space_used_critical_ratio=number("values", "vsan_space_used_critical_ratio"),
        vsan_packet_loss_ratio=number("values", "vsan_packet_loss_ratio"),
        vsan_tcp_retransmit_ratio=number("values", "vsan_tcp_retransmit_ratio"),
        vsan_resync_over_vm_ratio=number("values", "vsan_resync_over_vm_ratio"),
        vsan_resync_min_bytes_per_second=number("values", "vsan_resync_min_bytes_per_second"),
        datastore_space_used_warning_ratio=number("values", "datastore_space_used_warning_ratio"),
        datastore_space_used_critical_ratio=number("values", "datastore_space_used_critical_ratio"),
        datastore_overcommit_ratio=number("values", "datastore_overcommit_ratio"),
        snapshot_max_age_seconds=number("values", "snapshot_max_age_seconds"),
    )
