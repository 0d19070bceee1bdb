"""Answered configs as loaded kernels: compiled once per process and GPU architecture (NVRTC,
with the on-disk cubin cache underneath), loaded once per module they need.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Any

from tuner.gpu import nvrtc
from tuner.gpu.device import current_arch
from tuner.kernels.families import get_family, parse_config
from tuner.kernels.render import KernelSource, render

# (config name, architecture) -> the compiled kernel and whether its family keeps split-K
# counters in the module; (name, architecture, module copy) -> loaded kernel. The copy is 0
# except for those families, which get one copy per launch site (see :func:`compiled`).
_built: dict[tuple[str, str], tuple[Any, bool]] = {}
_kernels: dict[tuple[str, str, int], tuple[Any, KernelSource]] = {}
_site_copies: dict[tuple[str, str], dict[Hashable, int]] = {}
_lock = threading.Lock()


def compiled(name: str, site: Hashable = 0) -> tuple[Any, KernelSource]:
    """The loaded kernel and its source for a config name, compiled on first use.

    The split-K families (``Family.module_counters``) keep their ticket counters in the loaded
    module, so two of their launches must not overlap: for them each launch ``site`` (what
    :func:`tuner.matmul` passes: the CUDA stream handle and the calling thread) gets a module of its
    own, loaded from its own copy of the cubin (:func:`tuner.gpu.nvrtc.load_kernel`). Launches
    from one site run one after the other on one stream, which the counters allow. Other
    families share one module per process.
    """
    arch = current_arch()
    with _lock:
        built = _built.get((name, arch))
        if built is None:  # first use: render and compile (or find the cached cubin) once
            config = parse_config(name)
            binary = nvrtc.NvrtcCompiler(arch).compile(render(config))
            built = _built[(name, arch)] = (binary, get_family(config.family).module_counters)
        binary, counters = built
        copy = 0
        if counters:
            copies = _site_copies.setdefault((name, arch), {})
            copy = copies.setdefault(site, len(copies))
        key = (name, arch, copy)
        if key not in _kernels:
            _kernels[key] = (nvrtc.load_kernel(binary, copy), binary.source)
        return _kernels[key]
