"""A tune's request (``tuner.run.request``): built once, checked in one place, each error naming
the value and what is allowed; and a bench's request, whose default families come from its
suite's first shape."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuner.core.errors import InputError
from tuner.core.shape import Shape
from tuner.run.bench import BenchRequest
from tuner.run.request import TuneRequest
from tuner.run.runner import DEFAULT_FAMILIES, DEFAULT_HALF_FAMILIES, VENDOR_FAMILIES

MID = Shape(1000, 1000, 1000)


def test_sequences_are_kept_as_tuples_and_the_request_is_frozen() -> None:
    request = TuneRequest(
        [MID],  # type: ignore[arg-type]
        ["warptile"],  # type: ignore[arg-type]
        replay_tables=[Path("a.jsonl")],  # type: ignore[arg-type]
    )
    assert request.shapes == (MID,) and request.families == ("warptile",)
    assert request.replay_tables == (Path("a.jsonl"),)
    with pytest.raises(AttributeError):
        request.trials = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    ("changes", "needles"),
    [
        ({"families": ("tiles",)}, ("'tiles'", "warptile")),
        ({"families": ("hmma_bf16x3",)}, ("hmma_bf16x3", "accuracy bf16x3")),
        ({"accuracy": "loose"}, ("`accuracy`", "'loose'", "exact")),
        ({"sampler": "annealing"}, ("'annealing'", "ranked")),
        ({"evaluator": "cpu"}, ("'cpu'", "gpu, replay")),
        ({"shapes": ()}, ("at least one shape",)),
        ({"trials": 0}, ("`trials`", "got 0")),
        ({"timeout": -1.0}, ("`timeout`", "got -1.0")),
        ({"warm_start": -2}, ("`warm_start`", "got -2")),
    ],
)
def test_a_bad_field_is_refused_naming_its_value(
    changes: dict[str, object], needles: tuple[str, ...]
) -> None:
    fields: dict[str, object] = {"shapes": (MID,), **changes}
    with pytest.raises(InputError) as refused:
        TuneRequest(**fields)  # type: ignore[arg-type]
    for needle in needles:
        assert needle in str(refused.value)


def test_the_seed_of_each_worker_that_joins_a_study() -> None:
    assert TuneRequest((MID,), seed=7).seed_for(2) == 9
    assert TuneRequest((MID,)).seed_for(2) is None


def test_a_bench_searches_the_default_families_of_its_first_shape() -> None:
    floats = BenchRequest(TuneRequest((MID, Shape(64, 64, 64))))
    assert floats.families == (*DEFAULT_FAMILIES, *VENDOR_FAMILIES)
    half = Shape(4096, 4096, 4096, "bfloat16", "NT", "float32")
    assert BenchRequest(TuneRequest((half,))).families == (*DEFAULT_HALF_FAMILIES, *VENDOR_FAMILIES)
    # A half C: the split-K families, which add slices into C, drop out.
    half_c = BenchRequest(TuneRequest((half.with_out("bfloat16"),))).families
    kernels = tuple(f for f in DEFAULT_HALF_FAMILIES if not f.endswith("_splitk"))
    assert half_c == (*kernels, *VENDOR_FAMILIES)
    named = BenchRequest(TuneRequest((MID,), ("warptile",)))
    assert named.families == ("warptile",)


def test_a_bench_refuses_families_that_do_not_compute_its_shapes() -> None:
    half = Shape(4096, 4096, 4096, "float16", "NN")
    with pytest.raises(InputError, match="no family of warptile computes float16"):
        BenchRequest(TuneRequest((half,), ("warptile",)))
    with pytest.raises(InputError, match="`rounds` must be at least 1, got 0"):
        BenchRequest(TuneRequest((MID,)), rounds=0)
