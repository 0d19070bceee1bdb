"""While a study may not propose (a measured result waits for an earlier proposal's), it compiles
what its sampler would propose next (``tuner.search.compile_ahead``)."""

from __future__ import annotations

from collections import Counter

from tests.tuner.fakes import Forwarding, RuleEvaluator
from tuner.core.claims import Claimed
from tuner.core.config import Config
from tuner.core.shape import Shape
from tuner.kernels.resources import table_device
from tuner.search.compile_ahead import CompileAhead
from tuner.search.recorder import MemoryRecorder
from tuner.search.samplers import CandidateSampler
from tuner.search.study import Study
from tuner.search.trials import suggest_config

SHAPE = Shape(2048, 2048, 2048)
FAMILIES = ("warptile", "pipelined")


def _next_proposals(study: Study, count: int) -> list[Config]:
    proposed = []
    for _ in range(count):
        trial = study.optuna.ask()
        proposed.append(study._screened[suggest_config(trial, FAMILIES).name])
    return proposed


def test_the_guess_is_what_the_sampler_then_proposes() -> None:
    """Told nothing more, the sampler's next proposals are exactly its guess, and guessing did
    not move its random state (ties are broken at random: another seed guesses otherwise)."""
    study = Study(SHAPE, FAMILIES, RuleEvaluator(table_device("sm_90")), MemoryRecorder(), seed=3)
    study.run(trials=10)
    sampler = study.sampler
    assert isinstance(sampler, CandidateSampler)
    guess = sampler.likely_next(study.optuna, 6, {})
    assert sampler.likely_next(study.optuna, 6, {}) == guess  # asking again changes nothing
    assert _next_proposals(study, 6) == guess
    assert len(set(c.name for c in guess)) == 6


def test_the_guess_knows_waiting_results_and_skips_claims_elsewhere() -> None:
    study = Study(SHAPE, FAMILIES, RuleEvaluator(table_device("sm_90")), MemoryRecorder(), seed=3)
    study.run(trials=10)
    sampler = study.sampler
    assert isinstance(sampler, CandidateSampler)
    guess = sampler.likely_next(study.optuna, 4, {})
    skipped = sampler.likely_next(study.optuna, 4, {}, skip={guess[0].name})
    assert guess[0] not in skipped and len(set(skipped)) == 4
    # guess[0] proposed and measured (very slow), its result not told yet: the guess made
    # knowing it is what the sampler proposes once told.
    trial = study.optuna.ask()
    assert study._screened[suggest_config(trial, FAMILIES).name] == guess[0]
    knowing = sampler.likely_next(study.optuna, 4, {guess[0].name: 1e3})
    study.optuna.tell(trial, 1e3)
    assert _next_proposals(study, 4) == knowing


class SlowPipelined(Forwarding):
    """``pipelined`` kernels the study proposed compile slowly (ready once asked about ten
    times); the rest at once. Records what was prepared and measured."""

    def __init__(self, inner: RuleEvaluator, recorder: MemoryRecorder) -> None:
        super().__init__(inner)
        self.rule, self.recorder = inner, recorder
        self.parallelism = 8
        self.asked: Counter[str] = Counter()

    def ready(self, config: Config) -> bool:
        self.asked[config.name] += 1
        return config.family != "pipelined" or self.asked[config.name] > 10


class Claims(MemoryRecorder):
    """Remembers every candidate its study claimed."""

    def __init__(self) -> None:
        super().__init__()
        self.claimed: list[str] = []

    def claim(self, study: str, config_name: str, budget: int | None = None) -> Claimed:
        claimed = super().claim(study, config_name, budget)
        if claimed:
            self.claimed.append(config_name)
        return claimed


def test_a_study_compiles_ahead_while_a_slow_compile_holds_its_proposals() -> None:
    recorder = Claims()
    evaluator = SlowPipelined(RuleEvaluator(table_device("sm_90")), recorder)
    study = Study(SHAPE, FAMILIES, evaluator, recorder, "ranked", seed=5)
    study.prepare()
    first = set(evaluator.rule.prepared)  # guessed at prepare: the first round's proposals
    progress = study.search(trials=40)
    assert progress.evaluated == 40 and len(recorder.claimed) == 40  # the budget is exact
    assert len(set(evaluator.rule.asked)) == 40  # nothing measured twice
    # A kernel compiled ahead is prepared again when proposed (the pool joins the two).
    prepared = evaluator.rule.prepared
    twice = [n for n in recorder.claimed if n not in first and prepared.count(n) == 2]
    assert 0 < len(twice) == progress.ahead["proposed"] <= progress.ahead["compiled"]


def test_nothing_is_compiled_ahead_by_a_sampler_that_cannot_guess() -> None:
    recorder = Claims()
    evaluator = SlowPipelined(RuleEvaluator(table_device("sm_90")), recorder)
    study = Study(SHAPE, FAMILIES, evaluator, recorder, "tpe", seed=5)
    progress = study.search(trials=20)
    assert progress.evaluated == 20
    assert progress.ahead == {}
    assert sorted(evaluator.rule.prepared) == sorted(recorder.claimed)


def test_no_more_is_guessed_than_the_budget_leaves() -> None:
    """With room for seven compiles but two proposals left in the budget, two are guessed and
    compiled; with none left, none; with more queued than the stragglers, none yet."""
    study = Study(SHAPE, FAMILIES, RuleEvaluator(table_device("sm_90")), MemoryRecorder(), seed=3)
    study.run(trials=10)
    sampler = study.sampler
    assert isinstance(sampler, CandidateSampler)
    evaluator = RuleEvaluator(table_device("sm_90"))
    evaluator.parallelism = 8
    ahead = CompileAhead(sampler, evaluator, study.optuna, set)
    ahead.top_up(10, {}, [], (), left=0)
    assert evaluator.prepared == []
    queued = sampler.likely_next(study.optuna, 3, {})
    ahead.top_up(10, {}, queued, (), left=2)  # three proposals still to measure: too early
    assert evaluator.prepared == []
    ahead.top_up(10, {}, queued[:1], (), left=2)
    assert evaluator.prepared == [c.name for c in sampler.likely_next(study.optuna, 2, {})]
    assert ahead.counts() == {"compiled": 2, "proposed": 0}
