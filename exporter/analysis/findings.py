"""The paper's rules ("Scalable Storage Performance", ESX 3.5), checked on each capture and put
side by side: which problems a change resolved, which it caused, which persist.

Every threshold lives here, with the reason for its value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from exporter.analysis import stats as st
from exporter.analysis.capture import Capture

# QUED > 0 means every slot of the device queue (DQLEN) is taken and commands wait in the VMkernel.
# A queue full in 1 sample in 20 is a standing overrun, not a passing burst.
QUEUE_OVERRUN_SHARE = 0.05
# The paper treats guest latency beyond 50 ms as the point where the array is overcommitted; the
# command-weighted 95th percentile keeps one odd interval from deciding.
LATENCY_LIMIT = 0.050
# Fibre Channel framing leaves about 85-90% of the nominal rate for data (a 2 Gb/s link tops out
# near 180 MB/s, the paper's Figure 5), so 85% at the 95th percentile is a full link.
LINK_SATURATION = 0.85
# A path "carries" a LUN's I/O when it takes more than 5% of the LUN's commands.
PATH_SHARE = 0.05
SPREAD_RULES = ("paths carrying I/O", "adapters carrying I/O")  # facts about a change, not problems


@dataclass
class Finding:
    rule: str
    name: str
    before: bool | None  # the problem in the before capture (None: cannot tell)
    after: bool | None
    detail_before: str
    detail_after: str
    verdict: str = ""  # worse | better | "" (unchanged)

    @property
    def state(self) -> str:
        if self.before and not self.after:
            return "resolved"
        if self.after and not self.before:
            return "new"
        if self.before and self.after:
            return "persists"
        return "changed" if self.rule in SPREAD_RULES else "absent"

    @property
    def text(self) -> str:
        return f"{self.rule} on {self.name}: {self.state} (before: {self.detail_before}; after: {self.detail_after})"


def _lun_checks(capture: Capture, device, dsnro) -> dict[str, tuple[bool, str]]:
    out = {}
    qued = st.series(capture, "luns", device, st.QUED)
    if qued is not None and len(qued.values):
        share = float((qued.values > 0).mean())
        out["queue overrun (QUED > 0)"] = (
            share >= QUEUE_OVERRUN_SHARE,
            f"QUED>0 in {share:.0%} of samples, mean QUED {qued.values.mean():.1f}",
        )
    gavg = st.series(capture, "luns", device, st.GAVG)
    if gavg is not None and gavg.weights is not None and gavg.weights.sum() > 0:
        p95 = st.weighted_quantile(gavg.values, gavg.weights, 0.95)
        out["guest latency above 50 ms"] = (p95 >= LATENCY_LIMIT, f"p95 GAVG {p95 * 1e3:.1f} ms")
    cons = st.series(capture, "luns", device, st.CONS)
    if cons is not None:
        total = float((cons.values * cons.weights).sum())
        out["SCSI reservation conflicts"] = (total >= 1, f"{total:.0f} conflicts")
    if dsnro is not None:
        dqlen = st.series(capture, "luns", device, st.DQLEN)
        busy = _busy_worlds(capture, device)
        if dqlen is not None:
            depth = st.config_value(dqlen)
            out["DSNRO differs from DQLEN"] = (
                busy >= 2 and depth != dsnro,
                f"DQLEN {depth:.0f}, DSNRO {dsnro:.0f}, {busy} worlds with I/O",
            )
    return out


def _busy_worlds(capture: Capture, device) -> int:
    """Worlds with outstanding commands on the device in at least one sample."""
    count = 0
    for dev, world in capture.objects("worlds"):
        if dev == device:
            s = st.series(capture, "worlds", (dev, world), st.OUTSTANDING)
            count += bool(s is not None and (s.values > 0).any())
    return count


def _paths_with_io(capture: Capture, device) -> list[str]:
    paths = [p for p, d in capture.path_devices.items() if d == device]
    rates = {}
    for path in paths:
        s = st.series(capture, "paths", path, st.IOPS)
        if s is not None:
            rates[path] = float(s.values.mean()) if len(s.values) else 0.0
    total = sum(rates.values())
    return sorted(p for p, r in rates.items() if total > 0 and r / total > PATH_SHARE)


def _adapters_with_io(capture: Capture) -> list[str]:
    rates = {}
    for adapter in capture.objects("adapters"):
        s = st.series(capture, "adapters", adapter, st.IOPS)
        if s is not None:
            rates[adapter] = float(s.values.mean()) if len(s.values) else 0.0
    total = sum(rates.values())
    return sorted(a for a, r in rates.items() if total > 0 and r / total > PATH_SHARE)


def _adapter_checks(capture: Capture, adapter, link_speeds) -> dict[str, tuple[bool, str]]:
    speed = link_speeds.get(adapter, link_speeds.get("*"))
    s = st.series(capture, "adapters", adapter, st.MBPS)
    if speed is None or s is None or not len(s.values):
        return {}
    p95 = float(np.quantile(s.values, 0.95))
    return {"link saturation": (p95 >= LINK_SATURATION * speed, f"p95 {p95 / st.MIB:.0f} MiB/s of {speed / st.MIB:.0f} MiB/s")}


def evaluate(before: Capture, after: Capture, link_speeds: dict[str, float], dsnro: float | None) -> list[Finding]:
    found: list[Finding] = []

    def add(name, checks_b, checks_a):
        for rule in dict.fromkeys([*checks_b, *checks_a]):
            b, a = checks_b.get(rule), checks_a.get(rule)
            finding = Finding(
                rule,
                name,
                b[0] if b else None,
                a[0] if a else None,
                b[1] if b else "not in this capture",
                a[1] if a else "not in this capture",
            )
            if b and a:
                finding.verdict = "worse" if a[0] and not b[0] else "better" if b[0] and not a[0] else ""
            found.append(finding)

    for device in dict.fromkeys([*before.objects("luns"), *after.objects("luns")]):
        add(
            device,
            _lun_checks(before, device, dsnro) if device in before.objects("luns") else {},
            _lun_checks(after, device, dsnro) if device in after.objects("luns") else {},
        )
        pb, pa = _paths_with_io(before, device), _paths_with_io(after, device)
        if (pb or pa) and pb != pa:
            found.append(
                Finding(
                    "paths carrying I/O",
                    device,
                    None,
                    None,
                    f"{len(pb)} ({', '.join(pb) or 'none'})",
                    f"{len(pa)} ({', '.join(pa) or 'none'})",
                )
            )
    ab, aa = _adapters_with_io(before), _adapters_with_io(after)
    if (ab or aa) and ab != aa:  # the host's I/O spread over more (or fewer) links
        found.append(
            Finding(
                "adapters carrying I/O",
                after.host,
                None,
                None,
                f"{len(ab)} ({', '.join(ab) or 'none'})",
                f"{len(aa)} ({', '.join(aa) or 'none'})",
            )
        )
    for adapter in dict.fromkeys([*before.objects("adapters"), *after.objects("adapters")]):
        add(
            adapter,
            _adapter_checks(before, adapter, link_speeds) if adapter in before.objects("adapters") else {},
            _adapter_checks(after, adapter, link_speeds) if adapter in after.objects("adapters") else {},
        )
    return [x for x in found if x.before or x.after or x.rule in SPREAD_RULES]
