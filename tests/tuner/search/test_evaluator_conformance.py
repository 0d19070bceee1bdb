"""What every evaluator owes a study, checked the same way for each: the replay of committed
tables, the GPU evaluator (its worker and compiler faked), and the rule-based fake the study
tests use. A study relies on exactly these promises (``tuner.search.evaluator.Evaluator``)."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.tuner.fake_gpu import ANSWER, CONFIG, OTHER
from tests.tuner.fakes import RuleEvaluator
from tuner.core.config import Config
from tuner.core.shape import Shape
from tuner.core.statuses import STATUSES
from tuner.gpu.worker import GpuEvaluator
from tuner.kernels.families import parse_config
from tuner.kernels.resources import DeviceLimits, table_device
from tuner.kernels.space import Space
from tuner.model.rates import DeviceRates
from tuner.search.evaluator import Evaluator
from tuner.search.replay import ReplayEvaluator

# "fake_worker", not "gpu": a test id containing the word gpu would be taken for a GPU test.
EVALUATORS = ("replay", "fake_worker", "rule")


@dataclass
class Subject:
    """An evaluator with a shape and two configs it can answer for."""

    evaluator: Evaluator
    shape: Shape
    configs: tuple[Config, Config]


def _replay() -> Subject:
    replay = ReplayEvaluator()
    shape = replay.shapes()[0]
    ok = sorted(name for (s, name), row in replay.rows.items() if s == shape and row.ms)
    return Subject(replay, shape, (parse_config(ok[0]), parse_config(ok[-1])))


def _rule() -> Subject:
    return Subject(RuleEvaluator(table_device("sm_90")), Shape(128, 128, 128), (CONFIG, OTHER))


@pytest.fixture(params=EVALUATORS)
def subject(request: pytest.FixtureRequest) -> Iterator[Subject]:
    if request.param == "fake_worker":
        gpu: GpuEvaluator = request.getfixturevalue("fake_gpu_evaluator")
        yield Subject(gpu, ANSWER, (CONFIG, OTHER))
        return
    made = _replay() if request.param == "replay" else _rule()
    yield made
    made.evaluator.close()


def _check_result_is_consistent(subject: Subject, config: Config, result: object) -> None:
    from tuner.core.result import Result

    assert isinstance(result, Result)
    assert result.config_name == config.name and result.family == config.family
    assert result.status in STATUSES
    assert result.evaluator == subject.evaluator.kind  # what produced it, stored with it
    if result.status == "ok":
        assert result.ms is not None and result.ms > 0
        assert result.cublas_ms is not None and result.cublas_ms > 0
        assert result.ratio is not None
        assert math.isclose(result.ratio, result.cublas_ms / result.ms, rel_tol=1e-6)
    else:
        assert result.reason  # a failure always says why


def test_declares_its_device_families_provenance_parallelism_and_kind(subject: Subject) -> None:
    ev = subject.evaluator
    # Only the replay answers from tables; the others time (or stand in for timing) on a GPU.
    assert ev.kind == ("replay" if isinstance(ev, ReplayEvaluator) else "gpu")
    assert isinstance(ev.device, DeviceLimits) and ev.device.sm_count > 0
    assert isinstance(ev.families, tuple) and all(isinstance(f, str) for f in ev.families)
    assert isinstance(ev.provenance, dict) and ev.provenance
    assert isinstance(ev.parallelism, int) and ev.parallelism >= 1


def test_measured_configs_is_none_or_holds_what_it_answers(subject: Subject) -> None:
    held = subject.evaluator.measured_configs(subject.shape)
    assert held is None or {c.name for c in subject.configs} <= held


def test_evaluate_answers_ok_with_a_consistent_ratio(subject: Subject) -> None:
    for config in subject.configs:
        subject.evaluator.prepare(config)
    for config in subject.configs:
        result = subject.evaluator.evaluate(config, subject.shape)
        _check_result_is_consistent(subject, config, result)
        assert result.status == "ok"


def test_a_prepared_config_becomes_ready_and_then_starts(subject: Subject) -> None:
    ev = subject.evaluator
    for config in subject.configs:
        ev.prepare(config)
    deadline = time.monotonic() + 60
    while not all(ev.ready(c) for c in subject.configs) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert all(ev.ready(c) for c in subject.configs)
    # Started in the order they became ready, not proposed: any order finishes in start order.
    tickets = [ev.start(config, subject.shape) for config in reversed(subject.configs)]
    assert [ev.finish(t).config_name for t in tickets] == [c.name for c in subject.configs][::-1]


def test_started_tickets_finish_in_order_with_evaluate_s_answers(subject: Subject) -> None:
    ev = subject.evaluator
    tickets = [ev.start(config, subject.shape) for config in subject.configs]
    results = [ev.finish(ticket) for ticket in tickets]
    assert [r.config_name for r in results] == [c.name for c in subject.configs]
    for config, result in zip(subject.configs, results, strict=True):
        _check_result_is_consistent(subject, config, result)
        assert result.status == ev.evaluate(config, subject.shape).status


def test_compare_gives_one_comparison_per_config_in_order_with_every_round(
    subject: Subject,
) -> None:
    ordered = (subject.configs[1], subject.configs[0])
    comparisons = subject.evaluator.compare(ordered, subject.shape, rounds=3)
    assert [c.config_name for c in comparisons] == [c.name for c in ordered]
    for comparison in comparisons:
        assert comparison.status == "ok"
        assert len(comparison.ms_rounds) == len(comparison.cublas_ms_rounds) == 3
        assert comparison.ratio is not None and comparison.ratio > 0


def test_an_unanswerable_candidate_is_a_status_not_an_exception(subject: Subject) -> None:
    """A config the evaluator cannot time (not in a replay's table, not compiling on the GPU)
    comes back with a status and a reason; the rule fake times everything."""
    if isinstance(subject.evaluator, RuleEvaluator):
        pytest.skip("the rule fake times every config by its rule")
    if isinstance(subject.evaluator, GpuEvaluator):
        from tests.tuner.fake_gpu import FakeCompiler

        FakeCompiler.failing = {subject.configs[0].name}
        config = subject.configs[0]
    else:
        held = subject.evaluator.measured_configs(subject.shape) or set()
        space = Space("streamk", subject.shape, subject.evaluator.device).candidates()
        config = next(c for c in space if c.name not in held)
    result = subject.evaluator.evaluate(config, subject.shape)
    assert result.status in STATUSES and result.status != "ok" and result.reason


def test_probe_is_rates_or_none_and_close_is_idempotent(subject: Subject) -> None:
    rates = subject.evaluator.probe()
    assert rates is None or isinstance(rates, DeviceRates)
    subject.evaluator.close()
    subject.evaluator.close()
