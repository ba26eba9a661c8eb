"""The project's rule file as the live alert tests run it: generated from alerts/, with some
values replaced (windows and `for:` shortened to seconds)."""

from __future__ import annotations

from pathlib import Path

from alerts import generate


def rule_file(path: Path, values: dict[str, str], scope_labels: list[str] | None = None) -> Path:
    """Writes alerts/'s rules to path, each value named in values replaced; returns path."""
    config = generate.load_config()
    config["values"] = {name: {**entry, "value": values.get(name, entry["value"])} for name, entry in config["values"].items()}
    if scope_labels is not None:
        config["scope_labels"] = scope_labels
    path.write_text(generate.rule_file(generate.render_groups(config)))
    return path
