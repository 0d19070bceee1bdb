"""The lab's scripts (``benchmarks/``), loaded as Python runs them.

``python benchmarks/NAME.py`` puts the lab folder first on the import path, so a script imports
its siblings by their bare names (``from odd_report import aligned_twin``) and the installed
package by its own. Tests load a script the same way: by path, with the lab folder on the import
path only while the script and its siblings load, each once.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import tuner

LAB = Path(__file__).resolve().parents[1] / "benchmarks"


def lab_script(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as a module, registered under ``name`` as its siblings see it."""
    path = LAB / f"{name}.py"
    loaded = sys.modules.get(name)
    if loaded is not None:
        if Path(loaded.__file__ or "") != path:
            raise RuntimeError(
                f"module {name!r} is already {loaded.__file__}, not the lab's {path}"
            )
        return loaded
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise FileNotFoundError(f"no lab script {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and sibling imports look the module up there
    sys.path.insert(0, str(LAB))
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    finally:
        sys.path.remove(str(LAB))
    return module


def run_lab_script(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python benchmarks/<name>.py ARGS`` against the package these tests import (which may
    be a checkout rather than what the environment installed), its output captured."""
    package_root = str(Path(tuner.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": package_root}
    return subprocess.run(
        [sys.executable, str(LAB / f"{name}.py"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
