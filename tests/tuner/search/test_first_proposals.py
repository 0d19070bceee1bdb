"""A study compiles its sampler's first proposals while it is prepared
(``CandidateSampler.likely_first``): the ranked sampler's guess is exactly what it proposes first,
and nothing is guessed for a study already begun (by another worker, or an earlier run)."""

from __future__ import annotations

from tests.tuner.fakes import RuleEvaluator
from tuner.core.shape import Shape
from tuner.kernels.families.registry import parse_config
from tuner.kernels.resources import table_device
from tuner.search.compile_order import expected_compile_s
from tuner.search.recorder import MemoryRecorder
from tuner.search.study import Study

SHAPE = Shape(2048, 2048, 2048)
FAMILIES = ("warptile", "pipelined")


def quickest_names(names: list[str]) -> list[str]:
    """Config names in the order a study tells a round of them to its sampler."""
    return sorted(names, key=lambda name: expected_compile_s(parse_config(name)))


def _study(recorder: MemoryRecorder, seed: int = 7) -> tuple[Study, RuleEvaluator]:
    evaluator = RuleEvaluator(table_device("sm_90"))
    return Study(SHAPE, FAMILIES, evaluator, recorder, "ranked", seed=seed), evaluator


def test_the_ranked_guess_is_what_the_study_proposes_first() -> None:
    study, evaluator = _study(MemoryRecorder())
    study.prepare()
    guessed = list(evaluator.prepared)
    assert len(guessed) == evaluator.parallelism  # no warm starts given: all of them guessed
    assert len(set(guessed)) == len(guessed)
    study.run(trials=12)
    # The rule fake measures in the order the study started them: the proposals of a round,
    # quickest compiles first (``tuner.search.compile_order``), ties as proposed.
    assert evaluator.asked[: len(guessed)] == quickest_names(guessed)
    assert quickest_names(guessed) != guessed  # the two families' proposals were reordered
    # Another seed breaks the model's ties otherwise, and the guess follows it.
    other, other_evaluator = _study(MemoryRecorder(), seed=8)
    other.prepare()
    other.run(trials=12)
    assert other_evaluator.asked[: len(guessed)] == quickest_names(
        other_evaluator.prepared[: len(guessed)]
    )


def test_nothing_is_guessed_for_a_study_another_worker_has_begun() -> None:
    recorder = MemoryRecorder()
    first, _ = _study(recorder)
    first.run(trials=3)
    second, evaluator = _study(recorder)  # the same study: it resumes from what was stored
    second.prepare()
    assert evaluator.prepared == []
