"""Every representative config compiled and loaded once per GPU test session."""

from __future__ import annotations

from typing import Any

import pytest

from tests.gpu.loaded_kernels import compile_and_load
from tests.representative import REPRESENTATIVE


@pytest.fixture(scope="session")
def kernels() -> dict[str, tuple[Any, Any]]:
    return compile_and_load([n for names in REPRESENTATIVE.values() for n in names])
