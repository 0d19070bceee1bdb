"""A study measures whichever queued proposal has compiled first, and tells its sampler the
results in the order it proposed them (``tuner.search.tell_order``)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import optuna
import pytest

from tests.tuner.fakes import Forwarding, RuleEvaluator
from tuner.core.claims import Claimed
from tuner.core.config import Config
from tuner.core.result import Result
from tuner.core.shape import Shape
from tuner.kernels.resources import table_device
from tuner.search.recorder import MemoryRecorder
from tuner.search.study import Study
from tuner.search.tell_order import ProposalOrder

SHAPE = Shape(2048, 2048, 2048)


CONFIGS = {
    key: Config("warptile", (("BM", bm),)) for key, bm in zip("abc", (32, 64, 128), strict=True)
}


def _result(key: str) -> Result:
    name = CONFIGS[key].name
    return Result(name, "warptile", {}, "ok", ms=1.0, cublas_ms=1.0, ratio=1.0)


def test_results_are_tellable_only_in_the_order_proposed() -> None:
    study = optuna.create_study()
    order = ProposalOrder()
    for config in CONFIGS.values():
        order.propose(config, study.ask())
    assert order.untold == {c.name for c in CONFIGS.values()}
    order.measured(CONFIGS["b"].name, _result("b"))
    assert list(order.tellable()) == [] and order.lagging  # a is not in yet
    order.measured(CONFIGS["a"].name, None)  # given back
    told = list(order.tellable())
    assert [(t.number, r is None) for t, r in told] == [(0, True), (1, False)]
    assert order.untold == {CONFIGS["c"].name} and not order.lagging
    order.measured(CONFIGS["c"].name, _result("c"))
    assert [t.number for t, _ in order.tellable()] == [2]
    assert list(order.tellable()) == [] and order.untold == set()


class ClaimLog(MemoryRecorder):
    """Remembers the order its study claimed (proposed) candidates in."""

    def __init__(self) -> None:
        super().__init__()
        self.proposed: list[str] = []

    def claim(self, study: str, config_name: str, budget: int | None = None) -> Claimed:
        claimed = super().claim(study, config_name, budget)
        if claimed:
            self.proposed.append(config_name)
        return claimed


class SlowCompiles(Forwarding):
    """Every third proposal compiles slowly: it is ready once asked about ten times (the study
    polls, or measures others, meanwhile); the rest are ready at once."""

    def __init__(self, inner: RuleEvaluator, recorder: ClaimLog) -> None:
        super().__init__(inner)
        self.rule, self.recorder = inner, recorder
        self.asked: Counter[str] = Counter()

    @property
    def started(self) -> list[str]:
        """The configs measured, in the order they were started (the rule fake's record)."""
        return self.rule.asked

    def ready(self, config: Config) -> bool:
        self.asked[config.name] += 1
        return self.recorder.proposed.index(config.name) % 3 != 1 or self.asked[config.name] > 10


def _study(sampler: str) -> tuple[Study, SlowCompiles, ClaimLog]:
    recorder = ClaimLog()
    evaluator = SlowCompiles(RuleEvaluator(table_device("sm_90")), recorder)
    return Study(SHAPE, ("warptile",), evaluator, recorder, sampler, seed=5), evaluator, recorder


@pytest.mark.parametrize("sampler", ["ranked", "tpe"])
def test_ready_proposals_are_measured_first_and_told_in_proposal_order(
    sampler: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    study, evaluator, recorder = _study(sampler)
    told: list[str] = []
    real_tell = study._tell

    def tell(trial: optuna.trial.Trial, result: Result) -> None:
        told.append(result.config_name)
        real_tell(trial, result)

    real_propose = study._propose
    lagging: list[bool] = []

    def propose(*args: Any) -> Any:
        lagging.append(study._proposals.lagging)
        return real_propose(*args)

    monkeypatch.setattr(study, "_tell", tell)
    monkeypatch.setattr(study, "_propose", propose)
    progress = study.search(trials=24)
    assert progress.evaluated == 24
    proposed = recorder.proposed
    assert sorted(evaluator.started) == sorted(proposed)  # each measured once
    assert evaluator.started != proposed  # slow compiles did not hold up the rest
    assert told == proposed  # the sampler heard them as proposed
    assert lagging and not any(lagging)  # and proposed knowing every result measured so far
    finished = [t for t in study.optuna.trials if t.user_attrs.get("config")]
    assert [t.user_attrs["config"] for t in finished] == told  # no extra or repeated trial
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in finished)
