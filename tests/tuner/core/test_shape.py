from __future__ import annotations

import pytest

from tuner.core.errors import InputError
from tuner.core.shape import Shape, check_dtype, check_layout, parse_shape


def test_parse_accepts_mxnxk() -> None:
    assert parse_shape("4096x11008x4096") == Shape(4096, 11008, 4096)
    assert parse_shape(" 17 X 33 x 9 ") == Shape(17, 33, 9)
    assert Shape(2, 3, 4).flops == 48


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("4096x", "MxNxK"),
        ("0x1x1", "`M`"),
        ("1x-3x1", "N in shape"),
        ("1x1x2.5", "K in shape"),
        ("axbxc", "M in shape"),
        ("1x1x3000000000", "`K`"),
        ("", "MxNxK"),
    ],
)
def test_parse_rejects_bad_shapes_naming_the_value(text: str, named: str) -> None:
    with pytest.raises(InputError) as info:
        parse_shape(text)
    assert named in str(info.value)
    assert "\n" not in str(info.value)


def test_shape_rejects_unsupported_dtype_and_layout() -> None:
    with pytest.raises(
        InputError, match="`dtype` must be one of float32, float16, bfloat16, got 'float64'"
    ):
        Shape(1, 1, 1, dtype="float64")
    with pytest.raises(InputError, match=r"`layout` must be one of NN, NT, TN, TT .*'col-major'"):
        Shape(1, 1, 1, layout="col-major")
    with pytest.raises(InputError, match="`m`"):
        Shape(True, 1, 1)  # type: ignore[arg-type]


@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_every_dtype_and_layout_parses(dtype: str, layout: str) -> None:
    shape = parse_shape("3x5x7", dtype, layout)
    assert (shape.dtype, shape.layout) == (dtype, layout)
    assert shape.a_transposed == (layout[0] == "T")
    assert shape.b_transposed == (layout[1] == "T")


def test_row_major_is_the_old_name_of_nn() -> None:
    old = Shape(3, 5, 7, layout="row-major")
    assert old.layout == "NN"
    assert old == Shape(3, 5, 7) and hash(old) == hash(Shape(3, 5, 7))
    assert check_layout("row-major") == "NN"


def test_label_names_the_dtype_and_layout_unless_float32_nn() -> None:
    assert Shape(3, 5, 7).label() == "3x5x7"
    assert Shape(3, 5, 7, "bfloat16", "NT").label() == "3x5x7 bfloat16 NT"
    assert Shape(3, 5, 7, "float32", "TN").label() == "3x5x7 float32 TN"


@pytest.mark.parametrize("value", ["fp16", "half", "", None, 16])
def test_check_dtype_names_the_value_and_the_choices(value: object) -> None:
    with pytest.raises(InputError) as info:
        check_dtype(value)
    assert repr(value) in str(info.value) and "float16" in str(info.value)
