"""The paper's rules ("Scalable Storage Performance", ESX 3.5), checked on each capture and put
side by side: which problems a change resolved, which it caused, which persist.

The numbers and definitions come from exporter/configuration/thresholds.yaml, the file the alert rules and the
dashboards read too: a queue overrun is QUED > 0, latency is judged against the alerts' critical
line, and a link is saturated when one direction carries more than link_saturation_ratio of its
payload capacity (link_payload_ratio x speed), as EsxiAdapterLinkSaturated says.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from exporter.analysis import stats as st
from exporter.analysis.capture import Capture
from exporter.configuration import thresholds
from exporter.store import model as m

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


def latency_rule(limits: thresholds.Thresholds) -> str:
    return f"guest latency above {limits.latency_critical_seconds * 1e3:g} ms"


def _lun_checks(capture: Capture, device, dsnro, limits: thresholds.Thresholds) -> dict[str, tuple[bool, str]]:
    out = {}
    qued = st.series(capture, "luns", device, st.QUED)
    if qued is not None and len(qued.values):
        share = float((qued.values > 0).mean())
        out["queue overrun (QUED > 0)"] = (
            share >= limits.queue_overrun_share,
            f"QUED>0 in {share:.0%} of samples, mean QUED {qued.values.mean():.1f}",
        )
    gavg = st.series(capture, "luns", device, st.GAVG)
    if gavg is not None and gavg.weights is not None and gavg.weights.sum() > 0:
        q = st.weighted_quantile(gavg.values, gavg.weights, limits.percentile)
        out[latency_rule(limits)] = (
            q >= limits.latency_critical_seconds,
            f"p{limits.percentile * 100:g} GAVG {q * 1e3:.1f} ms",
        )
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


def _paths_with_io(capture: Capture, device, share: float) -> list[str]:
    paths = [p for p, d in capture.path_devices.items() if d == device]
    rates = {}
    for path in paths:
        s = st.series(capture, "paths", path, st.IOPS)
        if s is not None:
            rates[path] = float(s.values.mean()) if len(s.values) else 0.0
    total = sum(rates.values())
    return sorted(p for p, r in rates.items() if total > 0 and r / total > share)


def _adapters_with_io(capture: Capture, share: float) -> list[str]:
    rates = {}
    for adapter in capture.objects("adapters"):
        s = st.series(capture, "adapters", adapter, st.IOPS)
        if s is not None:
            rates[adapter] = float(s.values.mean()) if len(s.values) else 0.0
    total = sum(rates.values())
    return sorted(a for a, r in rates.items() if total > 0 and r / total > share)


def _adapter_checks(capture: Capture, adapter, link_speeds, limits: thresholds.Thresholds) -> dict[str, tuple[bool, str]]:
    """Saturated: one direction (links are full duplex) above the alert's line at the percentile."""
    speed = link_speeds.get(adapter, link_speeds.get("*"))
    if speed is None:
        return {}
    line = limits.link_saturated_share_of_speed * speed
    busiest = None
    for direction, field in (("read", m.READ_BYTES), ("write", m.WRITTEN_BYTES)):
        values = st.rate_values(capture, "adapters", adapter, field)
        if values is not None and len(values):
            q = float(np.quantile(values, limits.percentile))
            if busiest is None or q > busiest[1]:
                busiest = (direction, q)
    if busiest is None:
        return {}
    direction, q = busiest
    return {
        "link saturation": (
            q > line,
            f"p{limits.percentile * 100:g} {direction} {q / st.MIB:.0f} MiB/s, line {line / st.MIB:.0f} MiB/s "
            f"({limits.link_saturation_ratio:g} x {limits.link_payload_ratio:g} x {speed / st.MIB:.0f} MiB/s)",
        )
    }


def evaluate(
    before: Capture,
    after: Capture,
    link_speeds: dict[str, float],
    dsnro: float | None,
    limits: thresholds.Thresholds | None = None,
) -> list[Finding]:
    limits = limits or thresholds.read()
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
            _lun_checks(before, device, dsnro, limits) if device in before.objects("luns") else {},
            _lun_checks(after, device, dsnro, limits) if device in after.objects("luns") else {},
        )
        pb, pa = _paths_with_io(before, device, limits.path_share), _paths_with_io(after, device, limits.path_share)
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
    ab, aa = _adapters_with_io(before, limits.path_share), _adapters_with_io(after, limits.path_share)
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
            _adapter_checks(before, adapter, link_speeds, limits) if adapter in before.objects("adapters") else {},
            _adapter_checks(after, adapter, link_speeds, limits) if adapter in after.objects("adapters") else {},
        )
    return [x for x in found if x.before or x.after or x.rule in SPREAD_RULES]
