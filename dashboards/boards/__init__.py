"""One module per dashboard; each has UID, FILE and build()."""
