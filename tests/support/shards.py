"""Which Prometheus shard scrapes a target, as the sharded deployment (deploy/sharded/) splits them."""

from __future__ import annotations

import hashlib


def hashmod(value: str, modulus: int) -> int:
    """Prometheus' hashmod relabel action: the low 8 bytes of the MD5, big-endian, mod modulus."""
    return int.from_bytes(hashlib.md5(value.encode()).digest()[8:], "big") % modulus
