"""Which of N exporters takes a host: a stable hash of the host's name (--vsphere.shard K/N,
--simulate.shard K/N). SHA-256 of the lower-cased name, so the split is the same on every restart
and machine (Python's own hash() is salted per process), a host keeps its shard across vCenter
reconnects and moid changes, and the name is the `host` label users see."""

from __future__ import annotations

import hashlib
import re


def parse_shard(text: str) -> tuple[int, int]:
    """'K/N' -> (K, N) with 0 <= K < N; ValueError with the reason."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(text))
    if not match:
        raise ValueError(f"{text!r} is not K/N (this exporter's shard K of N, counted from 0, e.g. 0/3)")
    k, n = int(match.group(1)), int(match.group(2))
    if n < 1 or k >= n:
        raise ValueError(f"{text!r}: the shard K must be 0 to N-1 and N at least 1")
    return k, n


def shard_of(host: str, total: int) -> int:
    """The shard (0..total-1) a host belongs to."""
    digest = hashlib.sha256(host.lower().encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % total
