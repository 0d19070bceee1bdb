"""Every representative config compiled and loaded once per GPU test session."""

from __future__ import annotations

from typing import Any

import pytest

from tests.representative import REPRESENTATIVE
from tuner.families import parse_config


@pytest.fixture(scope="session")
def kernels() -> dict[str, tuple[Any, Any]]:
    from tuner.compile import NvrtcCompiler, compile_many, load_kernel
    from tuner.render import render
    from tuner.resources import live_device

    dev = live_device()
    names = [n for names in REPRESENTATIVE.values() for n in names]
    sources = [render(parse_config(n)) for n in names]
    results = compile_many(NvrtcCompiler(dev.arch), sources)
    loaded = {}
    for name, source, result in zip(names, sources, results, strict=True):
        assert not isinstance(result, Exception), f"{name}: {result}"
        loaded[name] = (load_kernel(result), source)
    return loaded
