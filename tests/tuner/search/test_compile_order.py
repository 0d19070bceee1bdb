"""Each round of a study's proposals is told to the sampler quickest compiles first: the vendor's
launches (nothing to compile), then the families by their compile times on the H200; so quick
results do not wait behind a slow compile."""

from __future__ import annotations

from collections import Counter

import pytest

import tuner.search.study as study_module
from tests.tuner.fakes import Forwarding, RuleEvaluator
from tuner.core.config import Config
from tuner.core.result import Result
from tuner.core.shape import Shape
from tuner.kernels.resources import table_device
from tuner.search.compile_order import (
    EXPECTED_COMPILE_S,
    UNKNOWN_COMPILE_S,
    expected_compile_s,
    quickest_compiles_first,
)
from tuner.search.recorder import MemoryRecorder
from tuner.search.study import Study
from tuner.search.tell_order import ProposalOrder


def config(family: str, bm: int = 64) -> Config:
    return Config(family, (("BM", bm),))


def test_the_vendor_compiles_nothing_and_a_family_takes_its_figure():
    assert expected_compile_s(Config("cublas", ())) == 0.0
    assert expected_compile_s(config("streamk")) == EXPECTED_COMPILE_S["streamk"]
    assert expected_compile_s(config("skinny")) == UNKNOWN_COMPILE_S


def test_a_round_is_ordered_by_expected_compile_time_ties_in_their_order():
    batch = [
        (config("streamk"), "t0"),
        (config("dmma_pipelined", 64), "t1"),
        (Config("cublas", ()), "t2"),
        (config("warptile"), "t3"),
        (config("dmma_pipelined", 128), "t4"),
        (config("skinny"), "t5"),
    ]
    ordered = quickest_compiles_first(batch)
    assert [trial for _, trial in ordered] == ["t2", "t1", "t4", "t5", "t3", "t0"]
    assert sorted(ordered, key=lambda item: item[1]) == batch  # nothing lost or added


def test_the_quick_families_are_quicker_than_the_slow_ones():
    quick = max(EXPECTED_COMPILE_S["dmma"], EXPECTED_COMPILE_S["dmma_pipelined"])
    slow = min(EXPECTED_COMPILE_S[f] for f in ("warptile", "pipelined", "streamk"))
    assert quick < UNKNOWN_COMPILE_S < slow


SHAPE = Shape(2048, 2048, 2048)


class SlowFamily(Forwarding):
    """``pipelined`` kernels compile slowly (ready once asked about ten times); the rest at
    once."""

    def __init__(self, inner: RuleEvaluator) -> None:
        super().__init__(inner)
        self.asked: Counter[str] = Counter()

    def ready(self, config: Config) -> bool:
        self.asked[config.name] += 1
        return config.family != "pipelined" or self.asked[config.name] > 10


class CountedOrder(ProposalOrder):
    """Counts the results that, once measured, had to wait for an earlier proposal's (while
    one waits, the study proposes nothing)."""

    waited = 0

    def measured(self, name: str, result: Result | None) -> None:
        head = next(iter(self.unmeasured()), None)
        CountedOrder.waited += head is not None and head != name  # an earlier one is not in
        super().measured(name, result)

    def unmeasured(self) -> list[str]:
        """Proposals not measured yet, oldest first."""
        return [n for n, _ in self._proposed if n not in self._results]


def _results_that_waited(monkeypatch: pytest.MonkeyPatch) -> int:
    CountedOrder.waited = 0
    monkeypatch.setattr(study_module, "ProposalOrder", CountedOrder)
    families = ("pipelined", "dmma_pipelined")
    device = table_device("sm_90")
    # The first round begins with a slow kernel: a pipelined start, then three dmma_pipelined.
    probe = Study(SHAPE, families, RuleEvaluator(device), MemoryRecorder(), "ranked")
    probe.prepare()
    space = sorted(probe.candidates.values(), key=lambda config: config.name)
    slow = [c for c in space if c.family == "pipelined"][:1]
    quick = [c for c in space if c.family == "dmma_pipelined"][:3]
    evaluator = SlowFamily(RuleEvaluator(device))
    study = Study(
        SHAPE, families, evaluator, MemoryRecorder(), "ranked", seed=5, starts=slow + quick
    )
    assert study.search(trials=24).evaluated == 24
    assert any(name.startswith("pipelined") for name in evaluator.asked)
    return CountedOrder.waited


def test_quick_results_no_longer_wait_behind_slow_compiles(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Told quickest first, a round's quick results are told as they come; told in the order
    asked, those behind a slow compile wait for it, and the study proposes nothing meanwhile."""
    ordered = _results_that_waited(monkeypatch)
    monkeypatch.setattr(study_module, "quickest_compiles_first", list)  # the order as asked
    as_asked = _results_that_waited(monkeypatch)
    assert ordered < as_asked
