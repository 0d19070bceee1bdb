from __future__ import annotations

import pytest

from tuner.errors import InputError
from tuner.shape import Shape, parse_shape


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
    with pytest.raises(InputError, match="float32"):
        Shape(1, 1, 1, dtype="float16")
    with pytest.raises(InputError, match="row-major"):
        Shape(1, 1, 1, layout="col-major")
    with pytest.raises(InputError, match="`m`"):
        Shape(True, 1, 1)  # type: ignore[arg-type]
