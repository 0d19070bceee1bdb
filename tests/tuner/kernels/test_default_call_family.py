"""The default cuBLAS call as a family (``cublas``): one candidate without parameters on every
input type and layout, named by the family's name alone (and ``_pad4``/``_pad8`` padded), no
source, measured by every study beside cuBLASLt's ranks, screened padded on ragged shapes."""

from __future__ import annotations

import pytest

from tuner.core.errors import InputError
from tuner.core.shape import SUPPORTED_DTYPES, SUPPORTED_LAYOUTS, Shape
from tuner.kernels.families import (
    CUBLAS,
    CUBLASLT,
    FAMILIES,
    KERNEL_FAMILIES,
    checked_config,
    is_vendor,
    parse_config,
)
from tuner.kernels.render import render
from tuner.kernels.resources import DEVICE_TABLE
from tuner.kernels.space import Space
from tuner.run.default_families import VENDOR_FAMILIES
from tuner.run.runner import families_for

H100 = DEVICE_TABLE["sm_90"]


@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES)
@pytest.mark.parametrize("layout", SUPPORTED_LAYOUTS)
def test_one_candidate_on_every_input_type_and_layout(dtype: str, layout: str) -> None:
    configs = Space("cublas", Shape(4096, 333, 1000, dtype, layout), H100).candidates()
    assert [c.name for c in configs] == ["cublas"]


def test_the_name_is_the_family_s_and_reads_back_in_both_operand_modes() -> None:
    config = CUBLAS.config({})
    assert config.name == "cublas" and config.params == ()
    assert parse_config("cublas") == config == checked_config("cublas")
    for pad in (4, 8):
        padded = config.padded(pad)
        assert padded.name == f"cublas_pad{pad}"
        assert parse_config(padded.name) == padded and padded.direct == config
    # cuBLASLt's names are not read as the default call's, nor the other way round.
    assert parse_config("cublaslt_rk1") == CUBLASLT.config({"RANK": 1})
    with pytest.raises(InputError, match="family cublas takes parameters ; unknown: RANK"):
        parse_config("cublas_rk1")
    with pytest.raises(InputError, match="belongs to family cublas, not cublaslt"):
        parse_config("cublas", "cublaslt")


def test_it_is_the_library_s_and_has_no_source() -> None:
    assert is_vendor("cublas") and FAMILIES["cublas"].vendor == "cublas"
    assert FAMILIES["cublaslt"].vendor == "cublasLt"
    assert "cublas" not in KERNEL_FAMILIES
    with pytest.raises(InputError, match="vendor library cublas: it has no CUDA source"):
        render(CUBLAS.config({}))


def test_every_study_measures_it_beside_cublaslt() -> None:
    assert VENDOR_FAMILIES == ("cublaslt", "cublas")
    for shape in (Shape(1024, 1024, 1024), Shape(4096, 4096, 4096, "bfloat16", "NT")):
        assert families_for(shape)[-2:] == ("cublaslt", "cublas")


def test_it_is_screened_padded_on_ragged_shapes_only() -> None:
    from tuner.search.screening_mode import other_mode, padded_families

    for size, expected in ((4097, {"cublas"}), (4096, set())):
        shape = Shape(size, size, size, "float16")
        candidates = Space("cublas", shape, H100).built_candidates()
        assert padded_families(candidates, shape, H100) == expected
    assert other_mode(CUBLAS.config({}).padded(8), Shape(4097, 4097, 4097, "float16")) == (
        CUBLAS.config({})
    )
