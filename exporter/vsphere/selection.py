"""Which hosts of a vSphere inventory this exporter collects.

- Inventory paths, in the style of Telegraf's vsphere input: a host's path is its place in the
  vCenter tree, `/<datacenter>/host/<cluster or compute resource>/<host>` (folders included where
  there are some). `*` matches within one path element, `**` across elements:
  `/DC1/**` (a datacenter), `/*/host/Prod/**` (a cluster in any datacenter), `/**/esx0[1-4]*` (hosts).
  A host is kept if it matches an include pattern (none given: every host) and no exclude pattern.
- A share of the hosts by a stable hash of the host's name (`--vsphere.shard K/N`): N exporters
  with shards 0..N-1 take every host exactly once. SHA-256 of the lower-cased name, so the split
  is the same on every restart and machine (Python's own hash() is salted per process), and a
  host keeps its shard across vCenter reconnects and moid changes; the name is the `host` label,
  so `esxi-storage-exporter` users can tell where a host went.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache


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


@lru_cache(maxsize=256)
def path_regex(pattern: str) -> re.Pattern:
    """An inventory-path glob as an anchored regular expression ('**' any depth, '*' one element)."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[":
            end = pattern.find("]", i + 1)
            if end < 0:
                raise ValueError(f"{pattern!r}: '[' without ']'")
            out.append(pattern[i : end + 1])
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


@dataclass(frozen=True)
class HostSelection:
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    shard: tuple[int, int] | None = None  # (K, N)

    def __post_init__(self):
        for pattern in (*self.include, *self.exclude):
            path_regex(pattern)  # a bad pattern fails at configuration time

    @property
    def everything(self) -> bool:
        return not self.include and not self.exclude and self.shard is None

    def keeps(self, path: str, host: str) -> bool:
        if self.include and not any(path_regex(p).match(path) for p in self.include):
            return False
        if any(path_regex(p).match(path) for p in self.exclude):
            return False
        return self.shard is None or shard_of(host, self.shard[1]) == self.shard[0]
