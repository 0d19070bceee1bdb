"""tuner.gpu.loaded's module cache: one module per launch site for families with counters."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import tuner.gpu.loaded as loaded_kernels
import tuner.gpu.nvrtc
from tuner.kernels.compile import cubin_copy
from tuner.kernels.families import FAMILIES, parse_config
from tuner.kernels.render import render
from tuner.kernels.representative import REPRESENTATIVE

STREAMK = "streamk_bm128_bn128_bk16_wm32_wn64_wni2_tm8_tn4_t256_smb2_stg0"
WARPTILE = "warptile_bm128_bn256_bk16_wm64_wn64_wni2_tm8_tn4_t256"


class _Compiler:
    def __init__(self, arch: str) -> None:
        self.arch = arch

    def compile(self, source: Any) -> Any:
        return SimpleNamespace(source=source)


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Fake compile and load (no GPU); returns the list of modules loaded so far."""
    loaded: list[tuple[str, int]] = []

    def load(compiled: Any, copy: int = 0) -> tuple[str, int]:
        loaded.append((compiled.source.entry, copy))
        return loaded[-1]

    monkeypatch.setattr(loaded_kernels, "_built", {})
    monkeypatch.setattr(loaded_kernels, "_kernels", {})
    monkeypatch.setattr(loaded_kernels, "_site_copies", {})
    monkeypatch.setattr(loaded_kernels, "current_arch", lambda: "sm_90")
    monkeypatch.setattr(tuner.gpu.nvrtc, "NvrtcCompiler", _Compiler)
    monkeypatch.setattr(tuner.gpu.nvrtc, "load_kernel", load)
    return loaded


def test_counter_families_get_a_module_per_launch_site(loads: list[tuple[str, int]]) -> None:
    first, source = loaded_kernels.compiled(STREAMK, (7, 1))
    assert source.entry == STREAMK
    assert loaded_kernels.compiled(STREAMK, (7, 1))[0] is first  # same stream and thread: reused
    other_stream = loaded_kernels.compiled(STREAMK, (8, 1))[0]
    other_thread = loaded_kernels.compiled(STREAMK, (7, 2))[0]
    assert loads == [(STREAMK, 0), (STREAMK, 1), (STREAMK, 2)]  # three cubin copies
    assert (first, other_stream, other_thread) == tuple(loads)


def test_other_families_share_one_module(loads: list[tuple[str, int]]) -> None:
    kernel, _ = loaded_kernels.compiled(WARPTILE, (7, 1))
    assert loaded_kernels.compiled(WARPTILE, (8, 2))[0] is kernel
    assert loaded_kernels.compiled(WARPTILE)[0] is kernel
    assert loads == [(WARPTILE, 0)]


@pytest.mark.parametrize("family", list(REPRESENTATIVE))
def test_the_flag_matches_the_templates_module_counters(family: str) -> None:
    # A template that declares module-scope device counters must say so in its family, or
    # tuner.matmul would share them between streams.
    # (skinny declares them only when it splits K.)
    codes = [render(parse_config(name)).code for name in REPRESENTATIVE[family]]
    declares = ["static __device__ unsigned int" in code for code in codes]
    assert any(declares) == FAMILIES[family].module_counters


def test_cubin_copies_sit_beside_the_cubin_with_the_same_bytes(tmp_path: Path) -> None:
    cubin = tmp_path / "kernel.cubin"
    cubin.write_bytes(b"\x7fELF cubin")
    assert cubin_copy(cubin, 0) == cubin
    copy = cubin_copy(cubin, 2)
    assert copy == tmp_path / "kernel.copy2.cubin" and copy.read_bytes() == cubin.read_bytes()
    copy.write_bytes(b"kept")  # an existing copy is reused, not rewritten
    assert cubin_copy(cubin, 2).read_bytes() == b"kept"
