"""Shape lists whose rows name their own dtype, layout and C (the shipped grid mixes problems)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuner.core.errors import InputError
from tuner.data.shape_lists import read_shapes, read_suite


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "shapes.csv"
    path.write_text(text)
    return path


def test_a_row_naming_its_problem_overrides_the_commands(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "class,M,N,K,dtype,layout,out_dtype\n"
        "llm_qkv,128,6144,4096,bfloat16,NT\n"
        "llm_o,16,4096,4096,float16,NN,float32\n"
        "square,512,512,512\n",
    )
    first, second, third = read_suite(path, "float32", "TN")
    assert first.label == "llm_qkv"
    assert (first.shape.dtype, first.shape.layout, first.shape.out) == (
        "bfloat16",
        "NT",
        "bfloat16",
    )
    assert (second.shape.dtype, second.shape.layout, second.shape.out) == (
        "float16",
        "NN",
        "float32",
    )
    # A row without its own problem takes the command's.
    assert (third.shape.m, third.shape.dtype, third.shape.layout) == (512, "float32", "TN")


@pytest.mark.parametrize(
    ("row", "needle"),
    [
        ("x,64,64,64,bfloat16", "class,M,N,K,dtype,layout"),
        ("x,64,64,64,int8,NN", "int8"),
        ("x,64,64,64,bfloat16,NX", "NX"),
        ("x,64,64,64,float32,NN,bfloat16", "bfloat16"),
    ],
)
def test_a_bad_problem_in_a_row_is_named_with_its_line(
    tmp_path: Path, row: str, needle: str
) -> None:
    path = _write(tmp_path, f"# a comment\n{row}\n")
    with pytest.raises(InputError) as info:
        read_shapes(path)
    assert "shapes.csv line 2" in str(info.value) and needle in str(info.value)
