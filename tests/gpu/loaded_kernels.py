"""Configs compiled (NVRTC, all at once) and loaded on the current GPU, for the GPU tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tuner.kernels.families import parse_config


def compile_and_load(names: Sequence[str]) -> dict[str, tuple[Any, Any]]:
    """Each config name -> (loaded kernel, its source); a compile error fails the test."""
    from tuner.gpu.device import live_device
    from tuner.gpu.nvrtc import NvrtcCompiler, load_kernel
    from tuner.kernels.compile import compile_many
    from tuner.kernels.render import render

    sources = [render(parse_config(name)) for name in names]
    results = compile_many(NvrtcCompiler(live_device().arch), sources)
    loaded = {}
    for name, source, result in zip(names, sources, results, strict=True):
        assert not isinstance(result, Exception), f"{name}: {result}"
        loaded[name] = (load_kernel(result), source)
    return loaded
