"""One module per subcommand; each exposes register(subparsers) and sets `run` on its parser."""
