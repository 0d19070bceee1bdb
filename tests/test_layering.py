"""The dependency rule of the package (docs/architecture.md): an import only runs down the list of
layers, no import circle, CuPy only under ``tuner/gpu/``, and nothing imports the tests or the
lab. Read from the source, so imports inside functions count too."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]  # the repository
PACKAGES = ("tuner", "api", "storage")
# Top first: a module may import its own layer and the layers below it, never one above.
LAYERS = (
    "tuner.cli",
    "api",
    "tuner.report",
    "tuner.run",
    "tuner.torch",
    "tuner.client",
    "tuner.gpu",
    "tuner.search",
    "tuner.data",
    "tuner.answers",
    "tuner.model",
    "tuner.kernels",
    "storage",
    "tuner.core",
)
# The package root holds the version and the lazy ``tuner.matmul``: every module may read it.
ROOT_MODULE = "tuner"
GPU_LIBRARIES = {"cupy", "cupy_backends", "cupyx"}
NOT_PACKAGE = {"tests", "benchmarks"}


def module_name(path: Path, root: Path) -> str:
    return ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")


def imports_of(path: Path, name: str) -> set[str]:
    """Every module ``path`` (module ``name``) imports, anywhere in it, relative ones resolved."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the modules of the project it imports (names that are not modules dropped)."""
    paths = {
        module_name(path, root): path
        for package in PACKAGES
        if (root / package).is_dir()
        for path in sorted((root / package).rglob("*.py"))
    }
    return {
        name: {m for m in imports_of(path, name) if m in paths and m != name}
        for name, path in paths.items()
    }


def layer_of(module: str) -> int | None:
    """Index of the module's layer in :data:`LAYERS` (0 is the top); None for the package root."""
    if module == ROOT_MODULE:
        return None
    for index, layer in enumerate(LAYERS):
        if module == layer or module.startswith(layer + "."):
            return index
    raise AssertionError(f"{module} is in no layer: add its wing to LAYERS and to the docs")


def upward_arrows(graph: dict[str, set[str]]) -> list[str]:
    arrows = []
    for module, imported in sorted(graph.items()):
        here = layer_of(module)
        for target in sorted(imported):
            there = layer_of(target)
            if here is not None and there is not None and there < here:
                arrows.append(f"{module} -> {target}")
    return arrows


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles (strongly connected groups of more than one module)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def external_imports(root: Path, forbidden: set[str]) -> dict[str, list[str]]:
    """Modules that import a top-level package in ``forbidden``."""
    offenders = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            name = module_name(path, root)
            tops = {m.split(".")[0] for m in imports_of(path, name) if m}
            if tops & forbidden:
                offenders[name] = sorted(tops & forbidden)
    return offenders


def test_every_arrow_runs_down_the_layers() -> None:
    graph = import_graph(ROOT)
    assert len(graph) > 100
    assert upward_arrows(graph) == []


def test_there_is_no_import_circle() -> None:
    assert circles(import_graph(ROOT)) == []


def test_cupy_is_imported_only_under_tuner_gpu() -> None:
    offenders = external_imports(ROOT, GPU_LIBRARIES)
    assert offenders, "no module imports CuPy at all: the check reads nothing"
    assert {name for name in offenders if not name.startswith("tuner.gpu.")} == set()


def test_the_package_imports_neither_the_tests_nor_the_lab() -> None:
    assert external_imports(ROOT, NOT_PACKAGE) == {}


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, code in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(code)
    return tmp_path


def test_the_checks_see_an_upward_arrow_inside_a_function(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "tuner/__init__.py": "",
            "tuner/core/__init__.py": "",
            "tuner/core/shape.py": "def f():\n    from tuner.search import study\n",
            "tuner/search/__init__.py": "",
            "tuner/search/study.py": "from ..core import shape\n",
        },
    )
    graph = import_graph(root)
    assert graph["tuner.search.study"] == {"tuner.core", "tuner.core.shape"}
    assert upward_arrows(graph) == [
        "tuner.core.shape -> tuner.search",
        "tuner.core.shape -> tuner.search.study",
    ]
    assert circles(graph) == [["tuner.core.shape", "tuner.search.study"]]


def test_the_checks_see_cupy_and_the_lab(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {"tuner/__init__.py": "", "tuner/kernels/x.py": "import cupy\nfrom tests import fakes\n"},
    )
    assert external_imports(root, GPU_LIBRARIES) == {"tuner.kernels.x": ["cupy"]}
    assert external_imports(root, NOT_PACKAGE) == {"tuner.kernels.x": ["tests"]}


@pytest.mark.parametrize("module", ["pkg.unknown", "tunerx.core"])
def test_a_module_outside_every_layer_is_named(module: str) -> None:
    with pytest.raises(AssertionError, match=module):
        layer_of(module)


def test_importing_every_tuner_module_loads_no_api_module() -> None:
    """At run time too: every tuner module that imports without CuPy (and, for tuner.torch,
    without torch) leaves ``api`` unloaded."""
    names = [
        module_name(path, ROOT)
        for path in sorted((ROOT / "tuner").rglob("*.py"))
        if path.name != "__main__.py"
    ]
    code = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except ImportError as exc:\n"
        "        if 'cupy' not in str(exc) and \"'torch'\" not in str(exc): raise\n"
        "print(' '.join(m for m in sys.modules if m == 'api' or m.startswith('api.')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.split() == []
