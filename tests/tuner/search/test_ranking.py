"""The ranked sampler: valid untried proposals, the model first, corrections, transfer."""

from __future__ import annotations

from tests.tuner.fakes import RuleEvaluator
from tuner.core.shape import Shape
from tuner.kernels.resources import table_device
from tuner.model.cost_model import estimate, rank
from tuner.search.recorder import MemoryRecorder
from tuner.search.study import Study

H100 = table_device("sm_90")


def run_ranked(seed: int, trials: int = 30) -> tuple[Study, RuleEvaluator]:
    evaluator = RuleEvaluator(H100)
    study = Study(
        Shape(512, 512, 512),
        ("warptile", "pipelined"),
        evaluator,
        MemoryRecorder(),
        sampler="ranked",
        seed=seed,
    )
    study.run(trials=trials)
    return study, evaluator


def test_ranked_sampler_proposes_only_valid_untried_candidates() -> None:
    study, evaluator = run_ranked(seed=1)
    assert len(evaluator.asked) == 30 == len(set(evaluator.asked))
    assert set(evaluator.asked) <= set(study.candidates)
    assert not [t for t in study.optuna.trials if "invalid" in t.user_attrs]


def test_ranked_sampler_starts_from_the_model_and_is_deterministic_per_seed() -> None:
    study, first = run_ranked(seed=3)
    _, again = run_ranked(seed=3)
    assert first.asked == again.asked
    model = rank(list(study.candidates.values()), study.shape, H100)
    best = estimate(model[0], study.shape, H100).cycles
    assert estimate(study.candidates[first.asked[0]], study.shape, H100).cycles == best
