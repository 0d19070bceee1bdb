"""The candidates compiled beside a probe: each family's best estimates first, then the best of
all, on the architecture's table rates; and the runner runs them beside the probe, only then."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from tests.tuner.fakes import Forwarding
from tests.tuner.search.test_priors import TABLE
from tuner.core.config import Config
from tuner.core.shape import Shape
from tuner.kernels.candidate import Candidate
from tuner.model.cost_model import estimate
from tuner.model.rates import DeviceRates, table_rates
from tuner.run.runner import device_rates
from tuner.search.early_compiles import PER_FAMILY, compile_early, likely_first
from tuner.search.recorder import MemoryRecorder
from tuner.search.replay import ReplayEvaluator
from tuner.search.study import search_space

SHAPE = Shape(1000, 1000, 1000)
FAMILIES = ("warptile", "smem_tiling")


class Preparing(Forwarding):
    """A GPU-like evaluator over the whole space (no replay table limits it) that records what it
    was asked to compile."""

    def __init__(self, inner: ReplayEvaluator) -> None:
        super().__init__(inner)
        self.kind = "gpu"
        self.prepared: list[str] = []

    def measured_configs(self, shape: Shape) -> set[str] | None:
        return None

    def prepare(self, config: Config) -> None:
        self.prepared.append(config.name)


def _space(evaluator: Preparing) -> Sequence[Candidate]:
    return list(search_space(SHAPE, FAMILIES, evaluator).values())


def test_each_family_s_best_estimates_come_first_then_the_best_of_all() -> None:
    evaluator = Preparing(ReplayEvaluator(TABLE))
    space, device = _space(evaluator), evaluator.device
    rates = table_rates(device)
    ms = {c.name: estimate(c, SHAPE, device, rates).ms for c in space}
    picks = likely_first(space, SHAPE, device, 10)
    assert len(picks) == 10 == len({p.name for p in picks})
    opening = picks[: PER_FAMILY * len(FAMILIES)]
    for family in FAMILIES:
        mine = sorted(ms[c.name] for c in space if c.family == family)
        assert sorted(ms[p.name] for p in opening if p.family == family) == mine[:PER_FAMILY]
    rest = sorted(ms[n] for n in set(ms) - {p.name for p in opening})
    assert [ms[p.name] for p in picks[len(opening) :]] == rest[: 10 - len(opening)]


def test_compile_early_hands_its_picks_to_the_evaluator() -> None:
    evaluator = Preparing(ReplayEvaluator(TABLE))
    picks = compile_early(SHAPE, FAMILIES, evaluator, 3)
    assert evaluator.prepared == [p.name for p in picks] and len(picks) == 3


class SlowProbe(Preparing):
    """A probe that returns only once something beside it has run (or after 10 s: then the
    test fails), as a GPU's probe waits for its measuring process."""

    def __init__(self, inner: ReplayEvaluator) -> None:
        super().__init__(inner)
        self.beside_ran = threading.Event()
        self.waited: list[bool] = []

    def probe(self) -> DeviceRates | None:
        self.waited.append(self.beside_ran.wait(10.0))
        return DeviceRates(60.0, 61.0, 3.0, 2.0, "probed on the fake GPU")


def test_the_work_beside_a_probe_runs_during_it_and_only_when_probing() -> None:
    evaluator, recorder = SlowProbe(ReplayEvaluator(TABLE)), MemoryRecorder()
    calls: list[str] = []

    def beside() -> None:
        calls.append("beside")
        evaluator.beside_ran.set()

    assert device_rates(recorder, evaluator, [], beside) is not None
    assert evaluator.waited == [True] and calls == ["beside"]
    assert device_rates(recorder, evaluator, [], beside) is not None  # stored: no probe
    assert evaluator.waited == [True] and calls == ["beside"]
