"""Every flag the README and docs/ mention exists, and every documented command line parses: a
documented flag can never be missing again (`--[no-]vsphere.esxcli` was, #23)."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

from exporter.cli import build_parser
from tests.support.cli import exporter_flags

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FLAG = re.compile(r"(?<![\w./-])--(\[no-\])?([a-z][a-z0-9_]*(?:[.-][a-zA-Z0-9_]+)*)")
# Flags of other programs the docs show, each with the program the same page names it with.
OTHER_TOOLS = {
    "--build": "docker compose",
    "--rm": "docker",
    "--from-file": "kubectl",
    "--now": "systemctl",
    "--storage.tsdb.path": "prometheus",
    "--storage.tsdb.retention.time": "prometheus",
    "--strict": "mkdocs",
    "--site-dir": "mkdocs",
    "--check": "python3 -m",
    "--range": "dashboards.",
    "--scrape-interval": "dashboards.",
    "--set": "dashboards.preview",
    "--update-golden": "pytest",
    "--dist": "pytest-xdist",
    "--offline": "kubernetes-validate",
    "--profile": "docker compose",
    "--server": "esxtop",
    "--repeat": "simulate",
    # Building the image where no registry can be reached (docs/deployment.md).
    "--format": "podman build",
    "--build-arg": "docker build",
    "--volume": "podman build",
    "--runtime": "podman",
    "--variant": "mmdebstrap",
    "--include": "mmdebstrap",
    "--hook-dir": "mmdebstrap",
    "--dpkgopt": "mmdebstrap",
    "--examples": "tests/fuzz/generate.py",  # growing the SMART fuzz corpus (docs/smart.md)
}
BENCH = "bench/"  # a page naming a benchmark may show its flags (read from bench/*.py)


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def mentioned() -> list[tuple[Path, int, str, str]]:
    """(file, line number, flag, the line) of every flag mentioned, --[no-]x as both forms."""
    out = []
    for path in DOCS:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for match in FLAG.finditer(line):
                no, name = match.groups()
                name = name.split(".NAME")[0].rstrip(".")
                for flag in [f"--{name}"] + ([f"--no-{name}"] if no else []):
                    out.append((path, number, flag, line))
    return out


def test_the_docs_mention_flags_at_all():
    flags = {flag for _, _, flag, _ in mentioned()}
    assert {"--vsphere.esxcli", "--no-vsphere.esxcli", "--esxtop-ssh", "--prometheus"} <= flags


def missing_flags() -> list[str]:
    """'file:line: flag' of each documented flag that neither the exporter nor the program the
    page names with it has."""
    known, missing = exporter_flags(), []
    for path, number, flag, _line in mentioned():
        if flag in known:
            continue
        if flag.startswith(("--collector", "--no-collector")) and flag.count(".") == 0:
            continue  # the pattern --[no-]collector.NAME itself
        page = path.read_text()
        if (flag in bench_flags() and BENCH in page) or (flag in OTHER_TOOLS and OTHER_TOOLS[flag] in page):
            continue
        missing.append(f"{_name(path)}:{number}: {flag}")
    return missing


def bench_flags() -> set[str]:
    source = "".join(path.read_text() for path in (ROOT / "bench").glob("*.py"))
    return set(re.findall(r'add_argument\(\s*"(--[\w.-]+)"', source))


def test_every_documented_flag_exists():
    assert missing_flags() == []


def test_a_made_up_flag_in_the_docs_would_be_caught(tmp_path, monkeypatch):
    page = tmp_path / "page.md"
    page.write_text("Turn it off with `--[no-]vsphere.made-up` or `--esxtop.not-a-flag 5s`; `--vsphere.esxcli` exists.\n")
    monkeypatch.setattr(sys.modules[__name__], "DOCS", [page])
    assert [entry.rsplit(" ", 1)[1] for entry in missing_flags()] == [
        "--vsphere.made-up",
        "--no-vsphere.made-up",
        "--esxtop.not-a-flag",
    ]


def commands() -> list[tuple[str, list[str]]]:
    """Every esxi-storage-exporter command line in the docs' code blocks, continuations joined,
    cut at a pipe, redirection or comment."""
    out = []
    for path in DOCS:
        text = path.read_text().replace("\\\n", " ")
        for number, line in enumerate(text.splitlines(), 1):
            start = line.find("esxi-storage-exporter ")
            if start < 0 or line.lstrip().startswith(("#", "|", "!", "[")) or "`esxi-storage-exporter" in line:
                continue
            command = re.split(r"\s(?:\||>|#|&&)\s|\s2>", line[start:])[0]
            command = re.sub(r"\[[^]]*\]", "", command)  # [--seed N]: an optional part of a synopsis
            try:
                words = shlex.split(command)
            except ValueError:
                continue
            if len(words) > 1 and not words[1].startswith("<"):
                out.append((f"{_name(path)}:{number}", words[1:]))
    return out


def test_every_documented_command_line_parses():
    parser = build_parser()
    found, failed = commands(), []
    for where, argv in found:
        if argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version"):
            argv = ["serve", *argv]  # as the program does: no command serves
        try:
            parser.parse_args(argv)
        except SystemExit as exit:
            if exit.code:
                failed.append(f"{where}: {' '.join(argv)}")
    assert len(found) >= 20
    assert failed == []
