"""Shared test setup: GPU tests skip cleanly without a device; kernels compile into a temp cache."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


def gpu_available() -> bool:
    try:
        import cupy

        return bool(cupy.cuda.runtime.getDeviceCount() > 0)
    except Exception:
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU with CuPy (none found)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True, scope="session")
def kernel_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Every test session compiles into its own cache, so compile tests really compile."""
    folder = tmp_path_factory.mktemp("kernel-cache")
    mp = pytest.MonkeyPatch()
    mp.setenv("GEMMTUNE_CACHE_DIR", str(folder))
    yield folder
    mp.undo()
