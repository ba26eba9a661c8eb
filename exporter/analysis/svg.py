"""Inline SVG charts for the HTML report: no JavaScript, no network, no plotting library."""

from __future__ import annotations

from html import escape

import numpy as np

W, H, PAD_L, PAD_R, PAD_T, PAD_B = 640, 220, 56, 12, 26, 34
COLORS = {"before": "#d95f02", "after": "#1b9e77"}
MAX_POINTS = 600  # per line; more only adds bytes


def _ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    if hi <= lo:
        hi = lo + 1.0
    step = (hi - lo) / count
    magnitude = 10 ** np.floor(np.log10(step))
    step = min((s * magnitude for s in (1, 2, 2.5, 5, 10) if s * magnitude >= step), default=step)
    start = np.floor(lo / step) * step
    return [float(v) for v in np.arange(start, hi + step * 0.5, step)]


def _frame(title: str, x_label: str, y_label: str, xlo, xhi, ylo, yhi, body: list[str], legend) -> str:
    def sx(x):
        return PAD_L + (x - xlo) / ((xhi - xlo) or 1) * (W - PAD_L - PAD_R)

    def sy(y):
        return H - PAD_B - (y - ylo) / ((yhi - ylo) or 1) * (H - PAD_T - PAD_B)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img">',
        f"<title>{escape(title)}</title>",
        f'<text x="{PAD_L}" y="16" class="t">{escape(title)}</text>',
    ]
    for y in _ticks(ylo, yhi):
        if ylo <= y <= yhi:
            parts.append(
                f'<line x1="{PAD_L}" x2="{W - PAD_R}" y1="{sy(y):.1f}" y2="{sy(y):.1f}" class="g"/>'
                f'<text x="{PAD_L - 4}" y="{sy(y) + 4:.1f}" class="a" text-anchor="end">{y:g}</text>'
            )
    for x in _ticks(xlo, xhi, 6):
        if xlo <= x <= xhi:
            parts.append(f'<text x="{sx(x):.1f}" y="{H - PAD_B + 14}" class="a" text-anchor="middle">{x:g}</text>')
    parts.append(f'<text x="{(W + PAD_L) / 2}" y="{H - 4}" class="a" text-anchor="middle">{escape(x_label)}</text>')
    parts.append(
        f'<text x="12" y="{(H - PAD_B + PAD_T) / 2}" class="a" text-anchor="middle" '
        f'transform="rotate(-90 12 {(H - PAD_B + PAD_T) / 2})">{escape(y_label)}</text>'
    )
    parts.extend(body(sx, sy))
    for i, name in enumerate(legend):
        x = W - PAD_R - 150 + i * 75
        parts.append(
            f'<rect x="{x}" y="7" width="10" height="10" fill="{COLORS[name]}"/><text x="{x + 14}" y="16" class="a">{name}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _thin(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if len(x) <= MAX_POINTS:
        return x, y
    step = int(np.ceil(len(x) / MAX_POINTS))
    n = len(x) // step * step
    return x[:n:step], y[:n].reshape(-1, step).mean(axis=1)


def lines(title: str, y_label: str, series: dict[str, tuple[np.ndarray, np.ndarray]]) -> str:
    """series: name ('before'/'after') -> (seconds from the capture's start, values)."""
    series = {k: _thin(np.asarray(x, float), np.asarray(y, float)) for k, (x, y) in series.items() if len(x)}
    if not series:
        return ""
    xhi = max(float(x.max()) for x, _ in series.values()) or 1.0
    yhi = max(float(np.nanmax(y)) for _, y in series.values())
    yhi = yhi * 1.1 if yhi > 0 else 1.0

    def body(sx, sy):
        for name, (x, y) in series.items():
            points = " ".join(f"{sx(a):.1f},{sy(b):.1f}" for a, b in zip(x, y) if b == b)
            yield f'<polyline fill="none" stroke="{COLORS[name]}" stroke-width="1.4" points="{points}"/>'

    return _frame(title, "minutes from the start of each capture", y_label, 0.0, xhi, 0.0, yhi, body, list(series))


def histogram(title: str, x_label: str, series: dict[str, tuple[np.ndarray, np.ndarray | None]], bins: int = 40) -> str:
    """Distributions of the same metric before and after, weighted (by commands) where given."""
    series = {k: (np.asarray(v, float), w) for k, (v, w) in series.items() if len(v)}
    if not series:
        return ""
    lo = min(float(v.min()) for v, _ in series.values())
    hi = max(float(v.max()) for v, _ in series.values())
    if hi <= lo:
        hi = lo + 1.0
    edges = np.linspace(lo, hi, bins + 1)
    shares = {}
    for name, (values, weights) in series.items():
        counts, _ = np.histogram(values, edges, weights=weights)
        total = counts.sum()
        shares[name] = counts / total if total > 0 else counts
    top = max(float(s.max()) for s in shares.values()) * 1.1 or 1.0

    def body(sx, sy):
        for name, share in shares.items():
            for left, right, value in zip(edges[:-1], edges[1:], share):
                if value > 0:
                    yield (
                        f'<rect x="{sx(left):.1f}" y="{sy(value):.1f}" width="{max(sx(right) - sx(left) - 0.5, 0.5):.1f}" '
                        f'height="{sy(0) - sy(value):.1f}" fill="{COLORS[name]}" fill-opacity="0.55"/>'
                    )

    return _frame(title, x_label, "share", lo, hi, 0.0, top, body, list(shares))
