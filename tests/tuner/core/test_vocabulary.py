"""The shared vocabulary stands on the standard library alone, and phases are checked by name."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from tuner.core.errors import InputError
from tuner.core.phases import PHASES, Phase, check_phase

CORE = Path(__file__).resolve().parents[3] / "tuner" / "core"


def outside_imports(path: Path) -> set[str]:
    """Modules ``path`` imports that are neither the standard library's nor ``tuner.core``'s."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return {
        name
        for name in found
        if name.split(".")[0] not in sys.stdlib_module_names
        and not (name == "tuner.core" or name.startswith("tuner.core."))
    }


def test_core_imports_only_the_standard_library_and_itself() -> None:
    modules = sorted(CORE.glob("*.py"))
    assert len(modules) > 5
    assert {p.name: outside_imports(p) for p in modules if outside_imports(p)} == {}


def test_the_check_sees_an_import_of_storage(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import enum\nfrom storage.inputs import ShapeIn\n")
    assert outside_imports(module) == {"storage.inputs"}


def test_phases_are_screening_then_final() -> None:
    assert PHASES == ("screening", "final")
    assert check_phase("final") is Phase.FINAL


@pytest.mark.parametrize("value", ["Final", "", None, 1, "finalists"])
def test_an_unknown_phase_is_refused_by_name(value: object) -> None:
    with pytest.raises(InputError, match=r"`phase` must be one of screening, final"):
        check_phase(value)
