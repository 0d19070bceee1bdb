"""A half C in the half families' templates: OUT pinned by the shape, names that say it (and
names from before it read as float32 C), the split-K families refusing it, and the rendered
epilogues compiling for sm_80 (hmma) and sm_90a (wgmma) without spills."""

from __future__ import annotations

import pytest

from tuner.core.errors import InputError
from tuner.core.shape import Shape
from tuner.kernels.compile import CompileError, NvccCompiler, compile_many
from tuner.kernels.families import FAMILIES, checked_config, parse_config, repinned
from tuner.kernels.render import render
from tuner.kernels.resources import DEVICE_TABLE
from tuner.kernels.space import Space

H100 = DEVICE_TABLE["sm_90"]
HALF_FAMILIES = ("hmma", "hmma_splitk", "wgmma", "wgmma_splitk")
HMMA_NAME = "hmma_bm128_bn128_bk32_wpm2_wpn2_s4_sw8_dt1_ly1"
WGMMA_NAME = "wgmma_bm128_bn256_bk64_wgm2_s4_sw8_dt0_ly0"


def test_a_name_without_an_out_token_is_float32_c_and_keeps_its_name() -> None:
    old = parse_config(HMMA_NAME)
    assert old["OUT"] == 0 and old.name == HMMA_NAME
    assert parse_config(HMMA_NAME + "_out0").name == HMMA_NAME
    half = parse_config(HMMA_NAME + "_out2")
    assert half["OUT"] == 2 and half.name == HMMA_NAME + "_out2" and half != old


@pytest.mark.parametrize(
    ("dtype", "out_dtype", "code"),
    [("bfloat16", "float32", 0), ("float16", "float16", 1), ("bfloat16", "bfloat16", 2)],
)
def test_the_shape_pins_out(dtype: str, out_dtype: str, code: int) -> None:
    shape = Shape(1000, 1000, 1000, dtype, "NT", out_dtype)
    for family in ("hmma", "wgmma"):
        configs = Space(family, shape, H100).candidates()
        assert configs and {c["OUT"] for c in configs} == {code}


@pytest.mark.parametrize("family", ["hmma_splitk", "wgmma_splitk"])
def test_split_k_families_write_float32_c_only(family: str) -> None:
    fam = FAMILIES[family]
    assert fam.out_dtypes == ("float32",)
    assert [p.values for p in fam.params if p.name == "OUT"] == [(0,)]
    why = fam.unsupported(Shape(256, 256, 65536, "float16", "NN"))
    assert why == f"{family} writes C in float32, not float16"
    assert Space(family, Shape(256, 256, 65536, "float16", "NN", "float32"), H100).candidates()


def test_a_split_k_template_refuses_a_half_c_at_compile_time() -> None:
    name = "hmma_splitk_bm64_bn64_bk64_wpm2_wpn2_s3_sw4_sk4_dt1_ly0"
    assert "#error" not in render(checked_config(name)).code
    assert "#error" in render(parse_config(name + "_out2")).code


def test_repinned_moves_a_config_to_another_type_of_c_or_refuses() -> None:
    shape = Shape(64, 64, 64, "bfloat16", "NT", "bfloat16")
    moved = repinned(parse_config(HMMA_NAME).padded(8), shape)
    assert moved is not None and moved.name == HMMA_NAME + "_out2_pad8"
    split = parse_config("hmma_splitk_bm64_bn64_bk64_wpm2_wpn2_s3_sw4_sk4_dt1_ly1")
    assert repinned(split, shape) is None


@pytest.mark.parametrize("family", ["hmma", "wgmma"])
@pytest.mark.parametrize("out", [1, 2])
def test_half_c_renders_its_stores(family: str, out: int) -> None:
    base = HMMA_NAME if family == "hmma" else WGMMA_NAME
    code = render(checked_config(f"{base}_out{out}")).code
    cvt = "f16" if out == 1 else "bf16"
    assert "typedef half_bits c_elem;" in code
    assert f"cvt.rn.{cvt}.f32" in code and f"cvt.rn.{cvt}x2.f32" in code
    assert f"{['FP32', 'FP16', 'BF16'][out]} C" in code
    float_c = render(checked_config(base)).code
    assert "typedef float c_elem;" in float_c and 'asm("cvt.rn' not in float_c


def test_shape_validation_names_the_value_and_the_choices() -> None:
    with pytest.raises(InputError, match=r"`out_dtype` must be one of float32 for float32 "):
        Shape(8, 8, 8, "float32", "NN", "bfloat16")
    with pytest.raises(InputError, match=r"float32, float16 for float16 inputs, got 'int8'"):
        Shape(8, 8, 8, "float16", "NN", "int8")
    # No cross type: cuBLAS has no FP16-in, BF16-out GEMM to check it against.
    with pytest.raises(InputError, match=r"float32, bfloat16 for bfloat16 inputs, got 'float16'"):
        Shape(8, 8, 8, "bfloat16", "NN", "float16")
    assert Shape(8, 8, 8, "float16").out_dtype == "float16"
    assert Shape(8, 8, 8).out_dtype == "float32"
    assert Shape(8, 8, 8, "bfloat16", "NN", "float32").label() == "8x8x8 bfloat16 NN -> float32"


def test_half_c_compiles_for_sm80_and_sm90a_without_spills() -> None:
    names = [f"{HMMA_NAME}_out1", f"{HMMA_NAME}_out2", f"{WGMMA_NAME}_out1", f"{WGMMA_NAME}_out2"]
    sources = [render(checked_config(name)) for name in names]
    for arch, picked in (("sm_80", sources[:2]), ("sm_90", sources[2:])):
        for source, result in zip(picked, compile_many(NvccCompiler(arch), picked), strict=True):
            assert not isinstance(result, CompileError), getattr(result, "log", "")
            assert not result.usage.spills, (source.config.name, result.usage)
