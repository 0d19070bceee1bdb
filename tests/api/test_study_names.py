"""Study keys as readable titles."""

from __future__ import annotations

import pytest

from api.study_names import study_title


@pytest.mark.parametrize(
    ("key", "title"),
    [
        (
            "NVIDIA H100 80GB HBM3|4096x4096x4096|float32|row-major|warptile+pipelined",
            "4096\u00d74096\u00d74096 on NVIDIA H100 80GB HBM3 · warptile, pipelined",
        ),
        (
            "NVIDIA H200|16x4096x4096|float32|row-major|skinny|finalists",
            "16\u00d74096\u00d74096 on NVIDIA H200 · finalists re-measured",
        ),
        (
            "h100-sweep-streamk-smallk-8192x8192x256",
            "8192\u00d78192\u00d7256 · sweep table h100-sweep-streamk-smallk",
        ),
        (
            "NVIDIA H100 80GB HBM3|4096x4096x4097|bfloat16|NT|hmma",
            "4096\u00d74096\u00d74097 bfloat16 NT on NVIDIA H100 80GB HBM3 · hmma",
        ),
        (
            "NVIDIA H100 80GB HBM3|64x64x64|float32|NN|warptile",
            "64\u00d764\u00d764 on NVIDIA H100 80GB HBM3 · warptile",
        ),
        ("my study", "my study"),
    ],
)
def test_study_title(key: str, title: str) -> None:
    assert study_title(key) == title
