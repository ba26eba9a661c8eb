"""Configuration: the options (flags and YAML), their parsers, filters, sharding, the static inventory and the thresholds file."""
