"""README.md lives outside the MkDocs site, so the strict docs build does not see its links: every
relative link and #anchor in it must resolve to a file in the repository and a heading there."""

import re
from pathlib import Path

import pytest
from markdown.extensions.toc import slugify

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)  # no headings inside code blocks
    return {slugify(m.group(1).strip(), "-") for m in re.finditer(r"^#{1,6}\s+(.+)$", text, flags=re.M)}


def readme_links() -> list[str]:
    return [t for t in LINK.findall((ROOT / "README.md").read_text()) if not re.match(r"[a-z]+://|mailto:", t)]


def test_readme_has_relative_links():
    assert len(readme_links()) >= 10


@pytest.mark.parametrize("target", readme_links())
def test_readme_link_resolves(target):
    file, _, anchor = target.partition("#")
    path = ROOT / file if file else ROOT / "README.md"
    assert path.exists(), f"README.md links to {file}, which is not in the repository"
    if anchor:
        assert anchor in anchors(path), f"README.md links to #{anchor}, not a heading of {path.name}"
