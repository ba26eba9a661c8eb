"""Which hosts of a vSphere inventory this exporter collects.

- Inventory paths, in the style of Telegraf's vsphere input: a host's path is its place in the
  vCenter tree, `/<datacenter>/host/<cluster or compute resource>/<host>` (folders included where
  there are some). `*` matches within one path element, `**` across elements:
  `/DC1/**` (a datacenter), `/*/host/Prod/**` (a cluster in any datacenter), `/**/esx0[1-4]*` (hosts).
  A host is kept if it matches an include pattern (none given: every host) and no exclude pattern.
- A share of the hosts by a stable hash of the host's name (`--vsphere.shard K/N`, see
  exporter.configuration.sharding): N exporters with shards 0..N-1 take every host exactly once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from exporter.configuration.sharding import shard_of


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
