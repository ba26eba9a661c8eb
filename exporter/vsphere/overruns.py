"""Runs of a periodic collection that took longer than its interval, counted per phase.

A collection that overruns its interval leaves the next one late and samples older than the
interval promises, while `up` stays 1 (a slow vCenter looks healthy). Any periodic collector of
a target uses one Overruns: the real-time collection every 20 s (phase "collection"), and another
loop on its own interval (a vSAN one every 5 min) under its own phase name. The counts reach
`esxi_vsphere_collection_overruns_total{target, phase}` through the target's SourceHealth.
"""

from __future__ import annotations

import logging
import threading

log = logging.getLogger(__name__)


class Overruns:
    def __init__(self, target: str, phases=("collection",)):
        self.target = target
        self.lock = threading.Lock()
        self.counts: dict[str, int] = dict.fromkeys(phases, 0)  # each phase's series exists from the start
        self._late: set[str] = set()  # phases whose last run overran: logged once per episode

    def check(self, phase: str, seconds: float, interval: float) -> bool:
        """Count a run of `phase` that took `seconds` if that is longer than its `interval`;
        say so once when runs start overrunning and once when they keep time again."""
        overran = seconds > interval
        with self.lock:
            if overran:
                self.counts[phase] = self.counts.get(phase, 0) + 1
            else:
                self.counts.setdefault(phase, 0)
            changed = overran != (phase in self._late)
            (self._late.add if overran else self._late.discard)(phase)
        if changed and overran:
            log.warning(
                "vsphere target %s: %s took %.1fs, longer than its %gs interval: samples fall behind",
                self.target,
                phase,
                seconds,
                interval,
            )
        elif changed:
            log.info("vsphere target %s: %s keeps its %gs interval again (%.1fs)", self.target, phase, interval, seconds)
        return overran

    def snapshot(self) -> dict[str, int]:
        with self.lock:
            return dict(self.counts)
