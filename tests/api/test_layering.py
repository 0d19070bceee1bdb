"""``tuner`` never imports ``api`` (the library must not depend on the web service), and
``storage`` imports neither, but for the vocabulary of ``tuner.core``: read from the source, so
imports inside functions count too."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]  # the repository
FORBIDDEN = {"tuner": {"api"}, "storage": {"api", "tuner"}}
# Modules of a forbidden package a package may import all the same.
ALLOWED = {"storage": ("tuner.core",)}


def imported_modules(path: Path) -> set[str]:
    """Modules a module imports, anywhere in it, by dotted name (relative imports excluded)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def forbidden_imports(path: Path, package: str) -> list[str]:
    allowed = ALLOWED.get(package, ())
    return sorted(
        name
        for name in imported_modules(path)
        if name.split(".")[0] in FORBIDDEN[package]
        and not any(name == a or name.startswith(a + ".") for a in allowed)
    )


def imported_packages(path: Path) -> set[str]:
    """Top-level packages a module imports, anywhere in it (relative imports excluded)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_module_imports_a_package_above_it(package: str) -> None:
    modules = sorted((ROOT / package).rglob("*.py"))
    assert len(modules) > 5
    offenders = {
        str(path.relative_to(ROOT)): forbidden_imports(path, package)
        for path in modules
        if forbidden_imports(path, package)
    }
    assert offenders == {}


def test_the_static_check_sees_imports_inside_functions(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from api.lookup import x\n    import api.app\n")
    assert imported_packages(module) == {"api"}


def test_storage_may_import_the_core_vocabulary_and_nothing_else_of_tuner(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("from tuner.core.statuses import STATUSES\nimport tuner.search.study\n")
    assert forbidden_imports(module, "storage") == ["tuner.search.study"]


def test_importing_every_tuner_module_loads_no_api_module() -> None:
    """At run time too: every tuner module that imports without CuPy."""
    names = [
        ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for path in sorted((ROOT / "tuner").rglob("*.py"))
        if path.name != "__main__.py"
    ]
    code = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except ImportError as exc:\n"
        "        if 'cupy' not in str(exc): raise\n"
        "print(' '.join(m for m in sys.modules if m == 'api' or m.startswith('api.')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.split() == []
