"""Every representative config compiled and loaded once per GPU test session."""

from __future__ import annotations

from typing import Any

import pytest

from tests.gpu.loaded_kernels import compile_and_load
from tests.representative import REPRESENTATIVE


@pytest.fixture(scope="session")
def kernels() -> dict[str, tuple[Any, Any]]:
    """The representatives of every family the GPU runs (``wgmma`` only on sm_90, the dmma
    families from sm_90: a family's architecture range, ``Family.min_arch``/``max_arch``)."""
    from tuner.families import get_family
    from tuner.resources import arch_number, live_device

    arch = arch_number(live_device().arch)
    names = []
    for family, configs in REPRESENTATIVE.items():
        fam = get_family(family)
        if fam.min_arch <= arch and (fam.max_arch is None or arch <= fam.max_arch):
            names += configs
    return compile_and_load(names)
