"""Is a before/after difference larger than the sample-to-sample noise?

Test: Welch's t-test on block means (the batch-means method). esxtop samples 5 s apart are not
independent: a queue that is full now is full in 5 s, so a test on the raw samples (Welch or
Mann-Whitney U on 720 correlated values) counts the same burst many times and calls noise
significant. Cutting each series into blocks at least twice its integrated autocorrelation time
long gives block means that are close to independent and, by the central limit theorem, close to
normal, which is what Welch's test assumes; Welch rather than Student because a tuning change
usually changes the spread as well as the mean. Many metrics are tested at once, so the p-values
are corrected with Holm's method before a change is called significant.
"""

from __future__ import annotations

import math

import numpy as np

from exporter.analysis.tdist import t_cdf

MAX_BLOCKS = 30  # more blocks add power, but shorter blocks bring the correlation back
MIN_BLOCKS = 4  # below this there is no variance to speak of: no test
ALPHA = 0.05  # family-wise error rate over one report (Holm)


def autocorrelation_time(x: np.ndarray) -> float:
    """Integrated autocorrelation time (in samples): 1 + 2 * sum of the autocorrelations up to the
    first lag where they stop being positive."""
    n = len(x)
    scale = abs(float(x.mean())) if n else 0.0
    x = x - x.mean()
    var = float(x @ x)
    # constant up to rounding (a setting, or a rate rebuilt from counters): no correlation to speak of
    if n < 3 or var <= n * (1e-9 * scale) ** 2:
        return 1.0
    tau = 1.0
    for lag in range(1, n // 4):
        rho = float(x[:-lag] @ x[lag:]) / var
        if rho <= 0:
            break
        tau += 2 * rho
    return tau


def block_length(*series: np.ndarray) -> int:
    """One block length for every series compared, so their block means are alike."""
    longest = max(len(s) for s in series)
    tau = max(autocorrelation_time(np.asarray(s, dtype=float)) for s in series)
    return max(1, math.ceil(2 * tau), math.ceil(longest / MAX_BLOCKS))


def block_means(values: np.ndarray, length: int, weights: np.ndarray | None = None) -> np.ndarray:
    """Means of consecutive blocks (the tail shorter than a block is dropped); weighted where the
    metric is a per-command mean, so a block's mean latency is its commands' mean latency."""
    blocks = len(values) // length
    if blocks == 0:
        return np.empty(0)
    v = np.asarray(values[: blocks * length], dtype=float).reshape(blocks, length)
    if weights is None:
        return v.mean(axis=1)
    w = np.asarray(weights[: blocks * length], dtype=float).reshape(blocks, length)
    total = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = (v * w).sum(axis=1) / total
    return means[total > 0]


def welch_blocks(before: np.ndarray, after: np.ndarray, wb=None, wa=None) -> float | None:
    """Two-sided p-value of Welch's test on block means; None when a capture is too short."""
    length = block_length(before, after)
    mb, ma = block_means(before, length, wb), block_means(after, length, wa)
    if len(mb) < MIN_BLOCKS or len(ma) < MIN_BLOCKS:
        return None
    if mb.std() == 0 and ma.std() == 0:  # constant on both sides: the difference is exact
        return 1.0 if mb[0] == ma[0] else 0.0
    return welch_p(mb, ma)


def welch_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided p-value of Welch's t-test (what scipy.stats.ttest_ind(equal_var=False) computes,
    without its per-call overhead: a report runs it thousands of times)."""
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se2 = va + vb
    if se2 == 0:
        return 1.0 if a.mean() == b.mean() else 0.0
    t = (a.mean() - b.mean()) / math.sqrt(se2)
    df = se2**2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    return float(2 * t_cdf(-abs(t), df))


def holm(pvalues: list[float | None]) -> list[float | None]:
    """Holm-adjusted p-values (same order; None stays None)."""
    tested = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    adjusted: list[float | None] = [None] * len(pvalues)
    running, m = 0.0, len(tested)
    for rank, (p, i) in enumerate(tested):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted
