"""Studies as readable titles, from what their rows were measured on."""

from __future__ import annotations

import pytest

from api.study_names import study_title
from storage import StudyShape
from tuner.core.phases import Phase

H100 = "NVIDIA H100 80GB HBM3"
CUBE = StudyShape(4096, 4096, 4096, "float32", "NN")


@pytest.mark.parametrize(
    ("name", "phase", "device", "shape", "families", "title"),
    [
        (
            f"{H100}|4096x4096x4096|float32|NN|warptile+pipelined",
            Phase.SCREENING,
            H100,
            CUBE,
            ("pipelined", "warptile"),  # first measured first: the title keeps the usual order
            "4096\u00d74096\u00d74096 on NVIDIA H100 80GB HBM3 · warptile, pipelined",
        ),
        (
            "NVIDIA H200|16x4096x4096|float32|NN|skinny",
            Phase.FINAL,
            "NVIDIA H200",
            StudyShape(16, 4096, 4096, "float32", "NN"),
            ("skinny", "streamk"),
            "16\u00d74096\u00d74096 on NVIDIA H200 · finalists re-measured",
        ),
        (
            "h100-sweep-streamk-smallk-8192x8192x256",
            Phase.SCREENING,
            H100,
            StudyShape(8192, 8192, 256, "float32", "NN"),
            ("streamk",),
            "8192\u00d78192\u00d7256 · sweep table h100-sweep-streamk-smallk",
        ),
        (
            f"{H100}|4096x4096x4097|bfloat16|NT->bfloat16|hmma",
            Phase.SCREENING,
            H100,
            StudyShape(4096, 4096, 4097, "bfloat16", "NT", "bfloat16"),
            ("hmma",),
            "4096\u00d74096\u00d74097 bfloat16 NT on NVIDIA H100 80GB HBM3 · hmma",
        ),
        (  # a study from before C had a type: float32 C, said in its title
            f"{H100}|4096x4096x4097|bfloat16|NT|hmma",
            Phase.SCREENING,
            H100,
            StudyShape(4096, 4096, 4097, "bfloat16", "NT"),
            ("hmma",),
            "4096\u00d74096\u00d74097 bfloat16 NT -> float32 on NVIDIA H100 80GB HBM3 · hmma",
        ),
        ("my study", Phase.SCREENING, None, CUBE, ("warptile",), "my study"),  # several devices
        ("mixed", Phase.SCREENING, H100, None, ("warptile",), "mixed"),  # several shapes
    ],
)
def test_study_title(
    name: str,
    phase: Phase,
    device: str | None,
    shape: StudyShape | None,
    families: tuple[str, ...],
    title: str,
) -> None:
    assert study_title(name, phase, device, shape, families) == title
