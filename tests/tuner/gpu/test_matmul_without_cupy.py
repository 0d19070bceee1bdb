"""tuner.matmul without CuPy: an ImportError that names the extra to install, not a bare
ModuleNotFoundError."""

from __future__ import annotations

import subprocess
import sys


def test_tuner_matmul_without_cupy_names_the_extra() -> None:
    code = "import sys; sys.modules['cupy'] = None\nimport tuner\ntuner.matmul([[1.0]], [[1.0]])\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: tuner.matmul needs CuPy")
    assert "pip install 'gemmtune[gpu]'" in last
