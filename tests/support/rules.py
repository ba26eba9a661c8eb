"""The project's rule file as the live alert tests run it: generated from alerts/, with some
values replaced (windows and `for:` shortened to seconds)."""

from __future__ import annotations

from pathlib import Path

from alerts import generate

# Production windows divided by about 60 (5m -> 5s); the rate window stays at 15 samples so the
# simulator's 3% jitter cannot tip a 52 ms mean under 50 ms.
FAST = {
    "rate_window": "15s",
    "capacity_window": "60s",
    "interval_estimate_window": "30s",
    "interval_memory": "1h",
    "for_queue_overrun": "5s",
    "for_latency_critical": "5s",
    # The 20 ms warning waits out the rate window and the page's wait, with margin: until the
    # window fills, a mean over a few samples can dip under 50 ms (52 ms on shared-lun-9-hosts, 3 %
    # jitter a sample) and restart the page's wait, and a warning that fires before its page is
    # notified before the page can inhibit it. Production keeps this order too (10m against 5m + 5m).
    "for_latency_warning": "30s",
    "for_array_oversubscribed": "10s",
    "for_reservation_conflicts": "10s",
    "for_link_saturation": "10s",
    "for_configuration": "15s",
    "for_capacity": "30s",
    "for_stale": "10s",
    "for_vsphere_down": "5s",
    "for_parse_errors": "15s",
    "for_collector_failing": "10s",
    "for_path_dead": "5s",
    "for_no_active_path": "5s",
    "for_device_state": "5s",
    "for_queue_throttled": "10s",
    "for_datastore_mounts": "15s",
    "for_vm_iops_limited": "10s",
    "for_vm_noisy_neighbour": "10s",
    "for_vm_emulated_controller": "30s",
}


def rule_file(path: Path, values: dict[str, str], scope_labels: list[str] | None = None) -> Path:
    """Writes alerts/'s rules to path, each value named in values replaced; returns path."""
    config = generate.load_config()
    config["values"] = {name: {**entry, "value": values.get(name, entry["value"])} for name, entry in config["values"].items()}
    if scope_labels is not None:
        config["scope_labels"] = scope_labels
    path.write_text(generate.rule_file(generate.render_groups(config)))
    return path
