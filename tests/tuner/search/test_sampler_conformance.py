"""What every sampler in ``SAMPLERS`` owes a study, checked the same way for each (as Optuna's
``parametrize_sampler`` does): valid untried candidates only, the budget counted exactly, the
starting points first, a resumed study that repeats nothing, a seed that reproduces the run,
and a small space exhausted without a repeat."""

from __future__ import annotations

import importlib.util

import pytest

from tests.tuner.fakes import RuleEvaluator, rule_ms
from tuner.core.shape import Shape
from tuner.kernels.families import parse_config
from tuner.kernels.resources import table_device
from tuner.search.recorder import MemoryRecorder
from tuner.search.samplers import SAMPLERS
from tuner.search.study import Study

H100 = table_device("sm_90")
SHAPE = Shape(128, 128, 128)
FAMILIES = ("warptile",)
TRIALS = 8


def _available(name: str) -> bool:
    return name != "gp" or importlib.util.find_spec("torch") is not None


parametrize_sampler = pytest.mark.parametrize(
    "sampler",
    [
        pytest.param(
            name,
            marks=pytest.mark.skipif(not _available(name), reason="gp needs PyTorch"),
        )
        for name in SAMPLERS
    ],
)


def run(
    sampler: str,
    trials: int,
    seed: int = 3,
    recorder: MemoryRecorder | None = None,
    shape: Shape = SHAPE,
    families: tuple[str, ...] = FAMILIES,
    starts: tuple[str, ...] = (),
) -> tuple[Study, RuleEvaluator]:
    evaluator = RuleEvaluator(H100)
    study = Study(
        shape,
        families,
        evaluator,
        recorder if recorder is not None else MemoryRecorder(),
        sampler=sampler,
        seed=seed,
        starts=[parse_config(name) for name in starts],
    )
    study.run(trials=trials)
    return study, evaluator


@parametrize_sampler
def test_evaluates_exactly_the_budget_of_distinct_valid_candidates(sampler: str) -> None:
    study, evaluator = run(sampler, TRIALS)
    assert len(evaluator.asked) == TRIALS
    assert len(set(evaluator.asked)) == TRIALS  # never the same candidate twice
    assert set(evaluator.asked) <= set(study.candidates)  # only points of the valid space


@parametrize_sampler
def test_the_starting_points_are_measured_first_in_order(sampler: str) -> None:
    probe, _ = run("exhaustive", 2)
    starts = tuple(reversed(sorted(probe.candidates)[-2:]))  # two the sampler would not pick first
    _, evaluator = run(sampler, 5, starts=starts)
    assert tuple(evaluator.asked[:2]) == starts


@parametrize_sampler
def test_a_resumed_study_measures_only_new_candidates(sampler: str) -> None:
    recorder = MemoryRecorder()
    _, first = run(sampler, 5, recorder=recorder)
    _, second = run(sampler, 8, recorder=recorder, seed=4)
    assert len(second.asked) == 3  # the budget counts what the first run measured
    assert not set(first.asked) & set(second.asked)


@parametrize_sampler
def test_a_seed_reproduces_the_run(sampler: str) -> None:
    _, one = run(sampler, 6, seed=11)
    _, two = run(sampler, 6, seed=11)
    assert one.asked == two.asked


@parametrize_sampler
def test_a_small_space_is_exhausted_without_a_repeat(sampler: str) -> None:
    shape, families = Shape(64, 64, 64), ("warptile",)  # 12 candidates
    study, evaluator = run(sampler, 100, shape=shape, families=families)
    assert sorted(evaluator.asked) == sorted(study.candidates)


@parametrize_sampler
def test_the_finalists_are_the_fastest_screened_and_the_first_answer(sampler: str) -> None:
    probe, _ = run("exhaustive", 1)
    first = sorted(probe.candidates)[0]
    study, evaluator = run(sampler, TRIALS, starts=(first,))
    fastest = sorted(evaluator.asked, key=rule_ms)[: study._finalists]
    assert set(evaluator.compared[0]) == {*fastest, first}
    # Later rounds re-measure some of them (those near the first round's fastest), no others.
    assert all(set(later) <= set(evaluator.compared[0]) for later in evaluator.compared[1:])
