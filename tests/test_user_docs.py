"""The documentation a user reads (README.md and docs/*.md) points only at things that exist:
every relative link reaches a file (and, with an anchor, a heading of it), and every path into
the package it names in code (``tuner/search/priors.py``, ``templates/hmma.cu.j2``) is in the
tree. The README stays short and keeps
the block of test commands that ``.ci/run`` extracts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]  # the repository
USER_DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README_LIMIT_BYTES = 12_000

_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
# A path into what the package is made of (a library module, a template, a container recipe),
# as the docs write one: the folder, then a file with a suffix.
_SOURCE_PATH = re.compile(r"^(?:tuner|storage|api|templates|docker)/[\w./-]*\.\w+$")


def heading_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: lower case, punctuation dropped, spaces
    to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    """Every heading anchor of a Markdown text (headings inside code fences are not headings)."""
    text = _FENCE.sub("", markdown)
    return {heading_anchor(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, re.MULTILINE)}


def broken_links(doc: Path) -> list[str]:
    """The relative links of ``doc`` whose file, or heading, does not exist."""
    text = doc.read_text(encoding="utf-8")
    broken = []
    for target in _LINK.findall(_FENCE.sub("", text)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path_part, _, anchor = target.partition("#")
        linked = (doc.parent / path_part).resolve() if path_part else doc
        if not linked.exists() or (
            anchor
            and linked.suffix == ".md"
            and anchor not in anchors(linked.read_text(encoding="utf-8"))
        ):
            broken.append(target)
    return broken


def missing_source_paths(doc: Path, root: Path) -> list[str]:
    """Source paths that ``doc`` names in code spans and that the tree does not hold."""
    text = _FENCE.sub("", doc.read_text(encoding="utf-8"))
    named = {span for span in _CODE_SPAN.findall(text) if _SOURCE_PATH.match(span)}
    return sorted(path for path in named if not (root / path).exists())


@pytest.mark.parametrize("doc", USER_DOCS, ids=lambda path: path.name)
def test_every_relative_link_resolves(doc: Path) -> None:
    assert broken_links(doc) == []


@pytest.mark.parametrize("doc", USER_DOCS, ids=lambda path: path.name)
def test_every_source_path_named_exists(doc: Path) -> None:
    assert missing_source_paths(doc, ROOT) == []


def test_the_docs_folder_holds_the_reference() -> None:
    names = {path.name for path in USER_DOCS}
    expected = {"tuning.md", "kernels.md", "service.md", "data.md", "architecture.md"}
    assert expected | {"results.md", "README.md"} <= names


def test_the_readme_is_short() -> None:
    assert len((ROOT / "README.md").read_bytes()) <= README_LIMIT_BYTES


def test_the_readme_keeps_the_ci_test_block() -> None:
    """``.ci/run`` runs the lines between ``<!-- ci:test -->`` and the end of the code fence
    that follows it: that block must be there, and hold the install and the test run."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    start = lines.index("<!-- ci:test -->")
    assert lines[start + 1].startswith("```")
    end = lines.index("```", start + 2)
    command = "\n".join(lines[start + 2 : end])
    assert "pip install -e '.[dev,postgres,gp]'" in command  # gp: PyTorch, for gp and tuner.torch
    assert "pytest" in command


def test_a_broken_link_or_anchor_is_reported(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# A heading\n\n## Split-K through C (`x.j2`), and more\n")
    doc = tmp_path / "doc.md"
    doc.write_text(
        "[ok](other.md) [ok](other.md#a-heading) [ok](other.md#split-k-through-c-xj2-and-more)\n"
        "[gone](missing.md) [no heading](other.md#nowhere) [web](https://example.org/x)\n"
        "```\n[in a fence](fenced.md)\n```\n"
    )
    assert broken_links(doc) == ["missing.md", "other.md#nowhere"]


def test_a_missing_source_path_is_reported(tmp_path: Path) -> None:
    (tmp_path / "tuner").mkdir()
    (tmp_path / "tuner" / "here.py").write_text("")
    doc = tmp_path / "doc.md"
    doc.write_text("`tuner/here.py` `tuner/gone.py` `gemmtune tune` `h100-suite.json`\n")
    assert missing_source_paths(doc, tmp_path) == ["tuner/gone.py"]
