"""The vendor library as a family (``cublaslt``): its space on every input type and layout, its
config names, the model's figure for it, and what keeps it a candidate beside our kernels
rather than one of them (no source, not counted as computing a layout, not a default alone)."""

from __future__ import annotations

import pytest

from tuner.answers.best import computed
from tuner.core.errors import InputError
from tuner.core.shape import SUPPORTED_DTYPES, SUPPORTED_LAYOUTS, Shape
from tuner.kernels.candidate import build_candidate
from tuner.kernels.families import (
    CUBLASLT,
    HEURISTIC_RANKS,
    KERNEL_FAMILIES,
    checked_config,
    is_vendor,
    parse_config,
)
from tuner.kernels.render import render
from tuner.kernels.resources import DEVICE_TABLE
from tuner.kernels.space import Space
from tuner.model.cost_model import estimate
from tuner.run.runner import check_families_compute, families_for

H100 = DEVICE_TABLE["sm_90"]


@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES)
@pytest.mark.parametrize("layout", SUPPORTED_LAYOUTS)
def test_every_rank_is_a_candidate_on_every_input_type_and_layout(dtype: str, layout: str) -> None:
    shape = Shape(4097, 333, 1000, dtype, layout)
    configs = Space("cublaslt", shape, H100).candidates()
    assert [c["RANK"] for c in configs] == list(range(HEURISTIC_RANKS))
    assert all(c.family == "cublaslt" and not c.pad for c in configs)


def test_names_read_back_in_both_operand_modes() -> None:
    for rank in (0, HEURISTIC_RANKS - 1):
        config = CUBLASLT.config({"RANK": rank})
        assert config.name == f"cublaslt_rk{rank}"
        assert checked_config(config.name) == config == parse_config(f"RANK={rank}", "cublaslt")
        for pad in (4, 8):
            padded = config.padded(pad)
            assert padded.name == f"cublaslt_rk{rank}_pad{pad}"
            assert checked_config(padded.name) == padded and padded.direct == config
    with pytest.raises(InputError, match="RANK must be an integer >= 0"):
        CUBLASLT.config({"RANK": -1})
    with pytest.raises(InputError, match="takes parameters RANK; unknown: BM"):
        CUBLASLT.config({"RANK": 0, "BM": 64})


def test_a_padded_candidate_plans_whole_vector_dimensions() -> None:
    shape = Shape(4097, 4097, 4097, "bfloat16", "NN")
    candidate = build_candidate(CUBLASLT.config({"RANK": 0}).padded(8), shape, H100)
    assert candidate.padding is not None
    # Without leading dimensions the library runs the padded product itself (pad, then GEMM).
    assert candidate.padding.run_shape == Shape(4097, 4104, 4104, "bfloat16", "NN")


def test_there_is_no_source_to_render() -> None:
    assert is_vendor("cublaslt") and not is_vendor("warptile") and not is_vendor("nope")
    assert "cublaslt" not in KERNEL_FAMILIES
    with pytest.raises(InputError, match="vendor library cublaslt: it has no CUDA source"):
        render(CUBLASLT.config({"RANK": 0}))


def test_the_model_takes_the_chip_s_peak_for_the_input_type() -> None:
    config = CUBLASLT.config({"RANK": 0})
    half = estimate(config, Shape(8192, 8192, 8192, "bfloat16"), H100)
    single = estimate(config, Shape(8192, 8192, 8192, "float32"), H100)
    # The FP32 product runs on the FMA pipes, the BF16 one on the tensor cores: many times faster.
    assert single.ms > 10 * half.ms
    # A memory-bound product is charged its traffic: 16 rows cost about as much as 32.
    thin = estimate(config, Shape(16, 8192, 8192, "bfloat16"), H100)
    thinner = estimate(config, Shape(32, 8192, 8192, "bfloat16"), H100)
    assert thin.ms == pytest.approx(thinner.ms, rel=0.05)
    assert estimate(config, Shape(8192, 8192, 8192, "bfloat16"), H100).ms > thin.ms


def test_the_vendor_rides_beside_kernels_and_never_alone() -> None:
    nn = Shape(1024, 1024, 1024)
    assert families_for(nn)[-2:] == ("cublaslt", "cublas")
    # float32 NT at exact: none of our kernels computes it, so neither does the vendor alone.
    nt = Shape(64, 64, 64, "float32", "NT")
    assert families_for(nt) == () and not computed("float32", "NT")
    check_families_compute(nn, ("cublaslt",))  # our kernels compute float32 NN
    check_families_compute(nt, ("cublaslt",))  # the emulated ones compute float32 NT
    assert computed("bfloat16", "TT")


def test_the_vendor_is_screened_padded_on_ragged_shapes_only() -> None:
    from tuner.search.screening_mode import other_mode, padded_families

    cases = [(4097, {"cublaslt"}), (4096, set())]
    for size, expected in cases:
        shape = Shape(size, size, size, "bfloat16")
        candidates = Space("cublaslt", shape, H100).built_candidates()
        assert padded_families(candidates, shape, H100) == expected
    ragged = Shape(4097, 4097, 4097, "bfloat16")
    padded = CUBLASLT.config({"RANK": 3}).padded(8)
    assert other_mode(padded, ragged) == CUBLASLT.config({"RANK": 3})
