"""Every representative config compiled and loaded once per GPU test session."""

from __future__ import annotations

from typing import Any

import pytest

from tests.gpu.loaded_kernels import compile_and_load
from tuner.kernels.representative import REPRESENTATIVE


@pytest.fixture(scope="session")
def kernels() -> dict[str, tuple[Any, Any]]:
    """The representatives of every family the GPU runs (``Family.arch_problem``: ``wgmma``
    only on sm_90, the dmma families from sm_90)."""
    from tuner.gpu.device import live_device
    from tuner.kernels.families import get_family
    from tuner.kernels.resources import arch_number

    arch = arch_number(live_device().arch)
    names = [
        name
        for family, configs in REPRESENTATIVE.items()
        if get_family(family).arch_problem(arch) is None
        for name in configs
    ]
    return compile_and_load(names)
