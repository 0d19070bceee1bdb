"""A standing worker's spaces, walked before it says it is ready.

The first study of a family in a process walks the family's rule step and checks every valid
config against the device (``tuner.kernels.space``): seconds of pure Python on the first
shape, a fraction of that on the next, all of it before the study's first candidate. Both walks
are kept for the process, and neither depends on the shape beyond the pinned parameters (input
type, layout, type of C), so the warm-up checks every valid config, useful for its shape or
not. A worker does not know which shapes it will be given, so it walks the kinds of problem
people queue most, with the defaults (:data:`COMMON_SHAPES`): FP32 NN, and BF16 and FP16 in NN
and NT with C in the input type. A problem of another kind pays its own walk, as before.

The rule step needs no device: it runs in a thread while the GPU worker starts
(:func:`warm_rules`); the device checks, once the device is known (:func:`warm_spaces`).
"""

from __future__ import annotations

from tuner.core.shape import Shape
from tuner.kernels.resources import DeviceLimits
from tuner.kernels.space import check_every_valid
from tuner.run.request import TuneRequest
from tuner.run.runner import families_for
from tuner.run.tune import enumerate_request

# One shape of each common kind of problem: what is walked depends only on its kind.
COMMON_SHAPES: tuple[Shape, ...] = (
    Shape(4096, 4096, 4096),
    *(
        Shape(4096, 4096, 4096, dtype, layout)
        for dtype in ("bfloat16", "float16")
        for layout in ("NT", "NN")
    ),
)


def warm_rules() -> int:
    """Walk the rule step of the default families of every common shape; the configs kept."""
    return enumerate_request(TuneRequest(COMMON_SHAPES))


def warm_spaces(device: DeviceLimits) -> int:
    """Check every valid config of every common shape's default families against ``device``
    (the rule step too, where :func:`warm_rules` has not walked it); the configs that fit."""
    return sum(
        check_every_valid(family, shape, device)
        for shape in COMMON_SHAPES
        for family in families_for(shape)
    )
