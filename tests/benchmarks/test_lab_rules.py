"""The lab runs against the installed package: no script patches the import path, imports the
tests or shadows a module it runs beside; the package and the tests never import the lab; and
the lab keeps only the results a document cites."""

from __future__ import annotations

import ast
import fnmatch
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from tests.lab_scripts import LAB

ROOT = LAB.parent
OURS = {"tuner", "api", "storage", "tests", "benchmarks"}


def _imported(tree: ast.AST) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module


def _touches_sys_path(tree: ast.AST) -> bool:
    return any(
        isinstance(node, ast.Attribute)
        and node.attr == "path"
        and isinstance(node.value, ast.Name)
        and node.value.id == "sys"
        for node in ast.walk(tree)
    )


def test_no_lab_script_patches_the_import_path_or_imports_the_tests() -> None:
    scripts = sorted(LAB.glob("*.py"))
    assert scripts
    for path in scripts:
        tree = ast.parse(path.read_text(), str(path))
        assert not _touches_sys_path(tree), path
        wrong = [m for m in _imported(tree) if m.split(".")[0] in {"tests", "benchmarks"}]
        assert not wrong, (path, wrong)


def test_no_lab_script_shadows_a_module_it_runs_beside() -> None:
    """``python benchmarks/NAME.py`` puts the lab folder first on the import path, so a script
    named like one of our packages or a standard module would be imported in its place."""
    names = {path.stem for path in LAB.glob("*.py")}
    assert not names & (OURS | set(sys.stdlib_module_names))


def test_neither_the_package_nor_the_tests_import_the_lab() -> None:
    sources: list[Path] = [
        *(ROOT / "tuner").rglob("*.py"),
        *(ROOT / "api").rglob("*.py"),
        *(ROOT / "storage").rglob("*.py"),
        *(ROOT / "tests").rglob("*.py"),
    ]
    lab_names = {path.stem for path in LAB.glob("*.py")}
    for path in sources:
        tree = ast.parse(path.read_text(), str(path))
        roots = {module.split(".")[0] for module in _imported(tree)}
        assert not roots & ({"benchmarks"} | lab_names), path


# Where the lab's results are cited as evidence: the notes, the user documents, the comments of
# the package and the lab's own tests (which read the Nsight Compute exports).
CITING = ("README.md", "templates/README.md", "docs/**/*.md", "benchmarks/*.md")
CITING_CODE = ("tuner/**/*.py", "tests/benchmarks/*.py")
NAME = r"[\w./{},*-]+\.(?:jsonl|json|log|md|svg|txt|gz|patch|csv|mbox)(?!\w)"


def _expanded(pattern: str) -> list[str]:
    """``a-{b,c}-*.json`` -> ``["a-b-*.json", "a-c-*.json"]`` (braces nest)."""
    inner = re.search(r"\{([^{}]*)\}", pattern)
    if inner is None:
        return [pattern]
    return [
        name
        for choice in inner.group(1).split(",")
        for name in _expanded(pattern[: inner.start()] + choice + pattern[inner.end() :])
    ]


def _cited_patterns() -> set[str]:
    texts = [p.read_text() for glob in CITING + CITING_CODE for p in ROOT.glob(glob)]
    return {
        name.rsplit("/", 1)[-1]
        for cited in re.findall(NAME, "\n".join(texts))
        for name in _expanded(cited)
    }


def test_every_result_the_lab_keeps_is_cited() -> None:
    """What no document cites is an artifact of a past try: git history keeps it (tag
    ``lab-artifacts``), the tree does not."""
    patterns = _cited_patterns()
    kept = [p for p in (LAB / "results").rglob("*") if p.is_file()]
    assert kept
    uncited = [
        str(path.relative_to(LAB))
        for path in kept
        if not any(fnmatch.fnmatchcase(path.name, pattern) for pattern in patterns)
    ]
    assert not uncited, f"cited by no document, delete (git keeps them): {sorted(uncited)}"
