from __future__ import annotations

import re

import jinja2
import pytest

from tuner.core.errors import InputError
from tuner.core.shape import Shape
from tuner.kernels.families import KERNEL_FAMILIES, get_family, parse_config
from tuner.kernels.render import _environment, render
from tuner.kernels.representative import ALL_REPRESENTATIVE, REPRESENTATIVE
from tuner.kernels.resources import DEVICE_TABLE
from tuner.kernels.space import Space
from tuner.run.runner import DEFAULT_FAMILIES


def _several(family: str) -> list[str]:
    # A shape each family has candidates for (the streaming family is only for small M).
    fam = get_family(family)
    m = 16 if family == "skinny" else 4096
    shape = Shape(m, 4096, 4096, fam.dtypes[-1], fam.layouts[-1], fam.out_dtypes[-1])
    configs = Space(family, shape, DEVICE_TABLE["sm_90"]).candidates()
    picks = {configs[0], configs[len(configs) // 2], configs[-1]}
    return sorted(c.name for c in picks)


@pytest.mark.parametrize(
    "name", ALL_REPRESENTATIVE + [n for f in KERNEL_FAMILIES for n in _several(f)]
)
def test_every_family_renders_a_kernel_named_after_its_config(name: str) -> None:
    config = parse_config(name)
    source = render(config)
    threads = get_family(config.family).threads(config.as_dict())
    if config.family == "streamk":  # a register cap instead (CUDA allows one or the other)
        assert 'extern "C" __global__ void __maxnreg__(' in source.code
    else:
        assert f'extern "C" __global__ void __launch_bounds__({threads}' in source.code
    assert re.search(rf"\b{name}\s*\(\s*int M, int N, int K, float alpha", source.code)
    assert "{{" not in source.code and "{%" not in source.code
    assert "#include" not in source.code
    assert source.entry == name and len(source.digest) == 64


def test_launch_geometry_covers_ragged_shapes() -> None:
    source = render(parse_config("blocktile_2d_bm128_bn128_bk8_tm8_tn8"))
    launch = source.launch(Shape(17, 300, 9))
    assert launch.grid == (3, 1, 1) and launch.block == (256, 1, 1)
    assert launch.dynamic_smem_bytes == 0
    piped = render(parse_config("pipelined_bm128_bn128_bk16_wm64_wn64_wni4_tm8_tn4_t128_s3"))
    assert piped.launch(Shape(4097, 4097, 4097)).grid == (33, 33, 1)


def test_missing_template_variable_fails_loudly() -> None:
    family = get_family("warptile")
    values = family.template_values(
        parse_config("warptile_bm128_bn128_bk16_wm64_wn64_wni4_tm8_tn4_t128")
    )
    del values["WMITER"]
    template = _environment().get_template(family.template)
    with pytest.raises(jinja2.UndefinedError, match="WMITER"):
        template.render(KERNEL_NAME="k", **values)


@pytest.mark.parametrize("family", list(KERNEL_FAMILIES))
def test_each_template_uses_no_undeclared_names(family: str) -> None:
    """Every name a template reads (with the templates it extends, includes and imports) is a
    family constant or KERNEL_NAME: nothing else leaks in; and every constant the family derives
    for it is read."""
    from jinja2 import meta, nodes

    env = _environment()
    fam = get_family(family)
    names: set[str] = set()
    imported: set[str] = set()  # a child's top-level imports, which its blocks read
    pending, seen = [fam.template], set()
    while pending:
        template_name = pending.pop()
        seen.add(template_name)
        ast = env.parse(env.loader.get_source(env, template_name)[0])  # type: ignore[union-attr]
        names |= meta.find_undeclared_variables(ast)
        imported |= {node.target for node in ast.find_all(nodes.Import)}
        pending += [t for t in meta.find_referenced_templates(ast) if t and t not in seen]
    names -= imported
    assert "_common.cuh.j2" in seen
    params = parse_config(_several(family)[0]).as_dict()
    allowed = set(params) | {"THREADS", "KERNEL_NAME"} | set(fam.derive(params))
    assert names <= allowed, names - allowed
    # And the other way: the family derives nothing its template does not read.
    assert set(fam.derive(params)) <= names, set(fam.derive(params)) - names


def test_render_refuses_invalid_configs() -> None:
    with pytest.raises(InputError, match="at most 1024"):
        render(parse_config("smem_tiling_bm64_bn64_bk8"))
    with pytest.raises(InputError, match="positive integer"):
        get_family("smem_tiling").config({"BM": True, "BN": 8, "BK": 8})


@pytest.mark.parametrize("family", ["pipelined", "splitk", "dmma_pipelined"])
def test_cp_async_families_keep_unaligned_rows_on_the_interior_path(family: str) -> None:
    """Odd row lengths and unaligned views (issue 20): whole interior chunks of such rows are
    copied by four 4-byte ``cp.async`` each, unchecked, instead of going down the checked
    edge path with the whole operand."""
    for name in REPRESENTATIVE[family]:
        code = render(parse_config(name)).code
        copies = code.count("cp_async_4x4(st")
        assert copies > 0 and copies % 2 == 0, name  # A's chunks and B's, in each load step
        assert "a_rows_full = a_vec" not in code and "b_cols_full = b_vec" not in code, name


@pytest.mark.parametrize("family", DEFAULT_FAMILIES)
def test_default_families_decide_vector_rows_from_the_pointers(family: str) -> None:
    """Odd row lengths and unaligned views (issue 20): every family of the default search takes
    its 16-byte path for an operand only where that operand's row length and actual base pointer
    allow it, decided at run time, so neither is assumed."""
    for name in REPRESENTATIVE[family]:
        source = render(parse_config(name))
        a, b = ("lda", "ldb") if source.leading_dims else ("K", "N")  # the row pitches
        assert f"rows_are_float4(A, {a})" in source.code, name
        assert f"rows_are_float4(B, {b})" in source.code, name
