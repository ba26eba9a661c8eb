"""The store and its model: per-interval snapshots in base units, the Store every source pushes into."""
