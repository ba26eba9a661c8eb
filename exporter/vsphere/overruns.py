"""Runs of a periodic collection that took longer than its interval, counted per phase.

A collection that overruns its interval leaves the next one late and samples older than the
interval promises, while `up` stays 1 (a slow vCenter looks healthy). Any periodic collector of
a target uses one Overruns: the real-time collection every 20 s (phase "collection"), and another
loop on its own interval (a vSAN one every 5 min) under its own phase name. The counts reach
`esxi_vsphere_collection_overruns_total{target, phase}` through the target's SourceHealth.
"""

from __future__ import annotations

import logging

from exporter.store.faultlog import FaultLog

log = logging.getLogger(__name__)
_LATE = "overran"  # the one cause per phase: an episode of overruns is logged once, its end once


class Overruns:
    def __init__(self, target: str, phases=("collection",)):
        self.target = target
        self.faults = FaultLog(log)  # phase -> runs that overran
        for phase in phases:
            self.faults.answered(phase)  # each phase's series exists from the start

    def check(self, phase: str, seconds: float, interval: float) -> bool:
        """Count a run of `phase` that took `seconds` if that is longer than its `interval`;
        say so once when runs start overrunning and once when they keep time again."""
        if seconds > interval:
            line = (
                f"vsphere target {self.target}: {phase} took {seconds:.1f}s, longer than its {interval:g}s interval: "
                "samples fall behind"
            )
            self.faults.failed(phase, _LATE, line)
            return True
        self.faults.answered(
            phase, f"vsphere target {self.target}: {phase} keeps its {interval:g}s interval again ({seconds:.1f}s)"
        )
        return False

    def snapshot(self) -> dict[str, int]:
        return self.faults.snapshot()
