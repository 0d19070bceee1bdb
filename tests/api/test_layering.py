"""``tuner`` never imports ``api`` (the library must not depend on the web service), and
``storage`` imports neither, save ``tuner.core`` (the vocabulary beneath both): read from the
source, so imports inside functions count too."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]  # the repository
FORBIDDEN = {"tuner": {"api"}, "storage": {"api", "tuner"}}
# Modules of a forbidden package that a package may still import.
ALLOWED = {"storage": ("tuner.core",)}


def imported_modules(path: Path) -> set[str]:
    """Modules a module imports, anywhere in it (relative imports excluded)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def imported_packages(path: Path, allowed: tuple[str, ...] = ()) -> set[str]:
    """Top-level packages a module imports, not counting the ``allowed`` modules and their
    submodules."""
    return {
        name.split(".")[0]
        for name in imported_modules(path)
        if not any(name == a or name.startswith(f"{a}.") for a in allowed)
    }


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_module_imports_a_package_above_it(package: str) -> None:
    modules = sorted((ROOT / package).rglob("*.py"))
    assert len(modules) > 5
    allowed = ALLOWED.get(package, ())
    offenders = {
        str(path.relative_to(ROOT)): sorted(imported_packages(path, allowed) & FORBIDDEN[package])
        for path in modules
        if imported_packages(path, allowed) & FORBIDDEN[package]
    }
    assert offenders == {}


def test_the_static_check_sees_imports_inside_functions(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from api.lookup import x\n    import api.app\n")
    assert imported_packages(module) == {"api"}


def test_only_the_allowed_modules_and_their_submodules_are_let_through(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("from tuner.core.dims import tflops\nfrom tuner.core import shape\n")
    assert imported_packages(module, ("tuner.core",)) == set()
    module.write_text("from tuner.core.dims import tflops\nimport tuner.coreish\n")
    assert imported_packages(module, ("tuner.core",)) == {"tuner"}


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
