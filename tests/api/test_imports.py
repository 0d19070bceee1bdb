"""The API never imports CuPy; ``import tuner`` (the CLI) imports neither CuPy nor FastAPI."""

from __future__ import annotations

import subprocess
import sys


def modules_after(statement: str) -> set[str]:
    code = f"{statement}; import sys; print(' '.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_api_app_does_not_import_cupy() -> None:
    loaded = modules_after("import api.app, api.serve, tuner.client")
    assert "fastapi" in loaded
    assert not {m for m in loaded if m == "cupy" or m.startswith("cupy.")}


def test_tuner_and_cli_import_neither_cupy_nor_fastapi() -> None:
    loaded = modules_after("import tuner, tuner.cli")
    assert "cupy" not in loaded and "fastapi" not in loaded and "httpx" not in loaded


def test_matmul_is_exported_lazily() -> None:
    loaded = modules_after(
        "import tuner; f = tuner.matmul; assert callable(f); assert tuner.matmul is f"
    )
    assert "tuner.client" in loaded and "cupy" not in loaded
