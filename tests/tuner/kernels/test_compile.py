"""nvcc compiles for sm_90 on a machine without a GPU: resources read from ptxas itself."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.tuner.kernel_usage import ARCH, SNAPSHOT, usage_record
from tuner.core.shape import Shape
from tuner.kernels.compile import (
    CompileError,
    NvccCompiler,
    compile_many,
    parse_ptxas_report,
)
from tuner.kernels.compiled_candidates import compile_candidates
from tuner.kernels.families import get_family, parse_config
from tuner.kernels.render import KernelSource, render
from tuner.kernels.representative import ALL_REPRESENTATIVE, REPRESENTATIVE
from tuner.kernels.resources import DEVICE_TABLE, static_check
from tuner.kernels.space import Space
from tuner.run.runner import DEFAULT_FAMILIES

H100 = DEVICE_TABLE["sm_90"]
RECORD_COMMAND = "if that is meant, run python -m tests.tuner.kernel_usage record"


@pytest.fixture(scope="module")
def compiled() -> dict[str, object]:
    sources = [render(parse_config(n)) for n in ALL_REPRESENTATIVE]
    results = compile_many(NvccCompiler("sm_90"), sources)
    return dict(zip(ALL_REPRESENTATIVE, results, strict=True))


@pytest.fixture(scope="module")
def recorded_usage() -> dict[str, Any]:
    """nvcc's report for every representative as committed (``tests.tuner.kernel_usage``)."""
    document: dict[str, Any] = json.loads(SNAPSHOT.read_text())
    if document["compiler"] != NvccCompiler(ARCH).version:
        pytest.skip(f"usage recorded with {document['compiler']}, not this machine's compiler")
    return document["kernels"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", ALL_REPRESENTATIVE)
def test_representative_config_compiles_without_spills(
    name: str, compiled: dict[str, object]
) -> None:
    kernel = compiled[name]
    assert not isinstance(kernel, CompileError), getattr(kernel, "log", "")
    usage = kernel.usage  # type: ignore[attr-defined]
    assert not usage.spills, usage
    config = parse_config(name)
    footprint = get_family(config.family).footprint(config.as_dict())
    expected_static = 0 if footprint.dynamic_smem else footprint.smem_bytes
    assert usage.smem_static_bytes == expected_static
    assert kernel.rejection(H100) is None  # type: ignore[attr-defined]
    # The pre-compile estimate is a pruning aid: it must not be wildly off the real count.
    estimate = static_check(config, H100).est_registers
    assert abs(estimate - usage.registers) <= 80, (estimate, usage.registers)


@pytest.mark.parametrize("name", ALL_REPRESENTATIVE)
def test_representative_uses_the_recorded_resources(
    name: str, compiled: dict[str, object], recorded_usage: dict[str, Any]
) -> None:
    """What nvcc makes of a representative changes only on purpose: a template or family change
    that moves registers, spills or shared memory rewrites the record (see kernel_usage.py)."""
    assert name in recorded_usage, f"{name} has no recorded usage: {RECORD_COMMAND}"
    kernel = compiled[name]
    assert not isinstance(kernel, CompileError), getattr(kernel, "log", "")
    usage = usage_record(kernel)  # type: ignore[arg-type]
    recorded = {key: recorded_usage[name][key] for key in usage}
    assert usage == recorded, f"{name}: compiled {usage}, recorded {recorded}; {RECORD_COMMAND}"


def test_a_config_that_must_spill_is_pruned() -> None:
    config = parse_config("blocktile_2d_bm256_bn256_bk8_tm16_tn16")  # 256 accumulators/thread
    assert not static_check(config, H100).fits  # the estimate already says so
    kernel = NvccCompiler("sm_90").compile(render(config))
    assert kernel.usage.spills
    reason = kernel.rejection(H100)
    assert reason is not None and reason.startswith("spills")


def test_cache_hit_and_key(tmp_path: object) -> None:
    source = render(parse_config("smem_tiling_bm16_bn64_bk8"))
    compiler = NvccCompiler("sm_90")
    first = compiler.compile(source)
    second = compiler.compile(source)
    assert second.cached and second.usage == first.usage and second.cubin == first.cubin
    assert second.cubin.read_bytes()[:4] == b"\x7fELF"
    assert compiler.cache_key(source) != NvccCompiler("sm_80").cache_key(source)


def test_compile_error_carries_the_log() -> None:
    good = render(parse_config("smem_tiling_bm16_bn64_bk8"))
    bad = KernelSource(
        good.config, good.code.replace("__syncthreads();", "syntax error here;", 1), good.threads, 0
    )
    results = compile_many(NvccCompiler("sm_90"), [bad, good], jobs=2)
    assert isinstance(results[0], CompileError) and "error" in results[0].log
    assert not isinstance(results[1], CompileError)


def test_compile_candidates_records_every_status() -> None:
    space = Space("vectorized", Shape(64, 64, 64), H100)
    candidates, counts = compile_candidates(space, NvccCompiler("sm_90"), limit=4)
    assert len(candidates) == min(4, counts.fits)
    assert all(c.status == "ok" and c.kernel is not None and c.occupancy for c in candidates)


def test_parse_ptxas_report_picks_the_right_entry() -> None:
    log = """ptxas info    : Compiling entry function 'other' for 'sm_90'
ptxas info    : Function properties for other
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 1024 bytes smem, 400 bytes cmem[0]
ptxas info    : Compiling entry function 'mine' for 'sm_90'
ptxas info    : Function properties for mine
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 96 registers, used 1 barriers, 16640 bytes smem, 400 bytes cmem[0]
"""
    usage = parse_ptxas_report(log, "mine")
    assert (usage.registers, usage.smem_static_bytes, usage.spills) == (96, 16640, False)
    assert parse_ptxas_report(log, "other").spills
    with pytest.raises(CompileError, match="no resource report"):
        parse_ptxas_report(log, "absent")


A100 = DEVICE_TABLE["sm_80"]
# The first representative of each default family that runs on sm_80 (the dmma ones need sm_90).
SM80_REPRESENTATIVES = [
    REPRESENTATIVE[f][0] for f in DEFAULT_FAMILIES if get_family(f).min_arch <= 80
]


@pytest.mark.parametrize("name", SM80_REPRESENTATIVES)
def test_default_families_compile_for_sm_80_without_spills(name: str) -> None:
    """The access-width paths (16-, 8- and 4-byte copies) build for the A100 too."""
    kernel = NvccCompiler("sm_80").compile(render(parse_config(name)))
    assert not kernel.usage.spills, kernel.usage
    assert kernel.rejection(A100) is None
