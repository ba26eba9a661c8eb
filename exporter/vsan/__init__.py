"""vSAN clusters as a source: the performance service, health, space and resync of every vSAN
cluster of a vSphere target, read over the target's own session (see source.py)."""
