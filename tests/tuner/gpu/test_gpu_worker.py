"""The GPU evaluator without CUDA: its worker process is replaced by fakes that answer, hang or
die, its compiler by one that writes fake cubins; the evaluator must compile ahead, bound,
restart and report each case. The worker's request handlers run with CUDA calls replaced."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any

import pytest

import tuner.gpu.requests as gpu_requests
import tuner.gpu.worker as gpu_worker
from tests.tuner.fake_gpu import (
    ANSWER,
    CONFIG,
    DIE,
    HANG,
    OTHER,
    RATES,
    FakeCompiler,
    dead_worker,
)
from tuner.core.shape import Shape
from tuner.gpu.requests import Compare, Measure, WorkerState
from tuner.gpu.worker import GpuEvaluator
from tuner.kernels.families import parse_config


@pytest.fixture
def evaluator(fake_gpu_evaluator: GpuEvaluator) -> GpuEvaluator:
    return fake_gpu_evaluator


def _pid(ev: GpuEvaluator) -> int:
    return int(ev.provenance["worker_pid"])


def test_a_candidate_is_compiled_by_the_pool_then_measured_by_the_worker(
    evaluator: GpuEvaluator,
) -> None:
    assert evaluator.device.arch == "sm_90" and evaluator.provenance["device"] == "fake"
    assert evaluator.parallelism == 3  # two compiler workers and one more
    evaluator.prepare(CONFIG)
    result = evaluator.evaluate(CONFIG, ANSWER)
    assert result.status == "ok" and result.ms == 1.0 and result.cublas_ms == 2.0
    assert result.ratio == 2.0 and result.registers == 96
    assert FakeCompiler.compiled == [CONFIG.name]  # prepared once, not compiled again
    assert evaluator.restarts == 0


def test_a_result_says_how_often_the_compiler_processes_crashed(evaluator: GpuEvaluator) -> None:
    before = evaluator.evaluate(CONFIG, ANSWER)
    assert "compile_crashes" not in before.provenance  # none yet: nothing shown
    evaluator.pool.crashes = 2  # as two recoveries leave it (tests/tuner/kernels)
    after = evaluator.evaluate(OTHER, ANSWER)
    assert after.status == "ok" and after.provenance["compile_crashes"] == 2


def test_compile_failures_and_spills_never_reach_the_worker(evaluator: GpuEvaluator) -> None:
    FakeCompiler.failing = {CONFIG.name}
    FakeCompiler.spilling = {OTHER.name}
    failed = evaluator.evaluate(CONFIG, DIE)  # the worker would die on this shape
    spilled = evaluator.evaluate(OTHER, DIE)
    assert failed.status == "compile_failed" and "does not compile" in (failed.reason or "")
    assert spilled.status == "pruned" and "spill" in (spilled.reason or "")
    assert evaluator.restarts == 0


def test_a_hanging_kernel_times_out_and_the_worker_is_replaced(evaluator: GpuEvaluator) -> None:
    first = _pid(evaluator)
    result = evaluator.evaluate(CONFIG, HANG)
    assert result.status == "timeout" and "no answer within 1 s" in (result.reason or "")
    assert evaluator.restarts == 1 and _pid(evaluator) != first
    assert evaluator.evaluate(CONFIG, ANSWER).status == "ok"


def test_a_dying_worker_is_launch_failed_and_replaced(evaluator: GpuEvaluator) -> None:
    first = _pid(evaluator)
    result = evaluator.evaluate(CONFIG, DIE)
    assert result.status == "launch_failed" and "exit 7" in (result.reason or "")
    assert evaluator.restarts == 1 and _pid(evaluator) != first
    assert evaluator.evaluate(CONFIG, ANSWER).status == "ok"


def test_probe_goes_to_the_worker(evaluator: GpuEvaluator) -> None:
    assert evaluator.probe() == RATES


def test_close_ends_the_worker(evaluator: GpuEvaluator) -> None:
    proc = evaluator._proc
    evaluator.close()
    assert proc is not None and not proc.is_alive()


def test_a_worker_dying_at_start_is_a_runtime_error(
    pretend_cupy: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It used to surface as EOFError, which the CLI turned into a silent exit code 130."""
    monkeypatch.setattr(gpu_worker, "_worker_main", dead_worker)
    with pytest.raises(RuntimeError, match=r"exited \(code 5\) before it was ready"):
        GpuEvaluator()


def test_without_cupy_is_an_import_error_naming_the_extra() -> None:
    if importlib.util.find_spec("cupy") is not None:
        pytest.skip("CuPy is installed")
    with pytest.raises(ImportError, match=r"gemmtune\[gpu\]"):
        GpuEvaluator()


def test_compare_sends_every_kernel_in_one_request_and_keeps_the_order(
    evaluator: GpuEvaluator,
) -> None:
    FakeCompiler.failing = {OTHER.name}
    third = parse_config("warptile_bm64_bn64_bk32_wm32_wn32_wni1_tm4_tn4_t128")
    answers = evaluator.compare([CONFIG, OTHER, third], ANSWER, rounds=3)
    assert [a.config_name for a in answers] == [CONFIG.name, OTHER.name, third.name]
    assert answers[1].status == "compile_failed" and answers[1].ms_rounds == ()
    assert answers[0].ms_rounds == (1.0, 2.0, 3.0) and answers[0].cublas_ms_rounds == (
        2.0,
        3.0,
        4.0,
    )
    assert answers[2].ms_rounds == (2.0, 3.0, 4.0)  # the worker's second timed kernel
    assert answers[0].ms == 2.0 and answers[0].ratio == 1.5
    with pytest.raises(ValueError, match="rounds"):
        evaluator.compare([CONFIG], ANSWER, 0)


def test_a_hanging_compare_times_out_after_its_longer_deadline(
    evaluator: GpuEvaluator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gpu_worker, "COMPARE_BLOCK_TIMEOUT_S", 0.5)
    first = _pid(evaluator)
    (answer,) = evaluator.compare([CONFIG], HANG, rounds=1)  # 1 s + 2 blocks x 0.5 s
    assert answer.status == "timeout" and answer.reason == "no answer within 2 s"
    assert evaluator.restarts == 1 and _pid(evaluator) != first
    assert evaluator.compare([CONFIG], ANSWER, rounds=1)[0].status == "ok"


# The worker's side, with the CUDA calls replaced: what is launched, on which operands, in which
# order; the fake times are the call counts.


@dataclass(frozen=True)
class FakeKernel:
    name: str
    source: str = "source"


@pytest.fixture
def cuda_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[object, ...]]:
    import tuner.gpu.measure as measure
    import tuner.gpu.nvrtc

    calls: list[tuple[object, ...]] = []

    @dataclass(frozen=True)
    class Ops:
        a: str = "A"
        b: str = "B"
        out: str = "C"

        @classmethod
        def make(cls, shape: Shape, seed: int | None = None) -> Ops:
            calls.append(("operands", str(shape)))
            return cls()

        def cublas(self, alpha: float, beta: float, c: Any) -> None:
            calls.append(("cublas", str(alpha), self.a, self.b, str(beta), str(c)))

    def time_launches(run: Any, budget_ms: float, warmup: int = 3) -> measure.Timing:
        assert budget_ms in (5.0, gpu_requests.SETTLE_MS)
        run()
        return measure.Timing(float(len(calls)), 0.0, 0.0, 1)

    def verify(kernel: Any, source: Any, shape: Shape, operands: Any = None) -> Any:
        calls.append(("verify", kernel))
        error = 1e-2 if "wrong" in kernel else 1e-7
        return measure.Verification(error, 1e-5)

    monkeypatch.setattr(tuner.gpu.nvrtc, "load_kernel", lambda compiled: f"loaded {compiled.name}")
    monkeypatch.setattr(measure, "Operands", Ops)
    monkeypatch.setattr(measure, "verify", verify)
    monkeypatch.setattr(
        measure, "launch", lambda *args: calls.append(("ours", *(str(a) for a in args)))
    )
    monkeypatch.setattr(measure, "time_launches", time_launches)
    return calls


def test_measure_verifies_then_times_ours_and_cublas_on_the_shapes_operands(
    cuda_calls: list[tuple[object, ...]],
) -> None:
    state = WorkerState()
    first = gpu_requests.measure(Measure(FakeKernel("k"), ANSWER, 5.0), state)  # type: ignore[arg-type]
    second = gpu_requests.measure(Measure(FakeKernel("k2"), ANSWER, 5.0), state)  # type: ignore[arg-type]
    ours = ("ours", "loaded k", "source", "8x8x8", "1.0", "A", "B", "0.0", "C")
    cublas = ("cublas", "1.0", "A", "B", "0.0", "C")
    # New operands get one cuBLAS block that settles cuBLAS and the clocks, kept out of the window.
    settle = cublas
    assert cuda_calls[:5] == [("operands", "8x8x8"), settle, ("verify", "loaded k"), ours, cublas]
    assert cuda_calls.count(("operands", "8x8x8")) == 1  # made once per shape
    assert cuda_calls.count(settle) == 3  # settled once: then one block per candidate
    # The baseline is the median of the shape's cuBLAS blocks so far (call counts 5 and 8).
    assert first["status"] == "ok" and first["ms"] == 4.0 and first["cublas_ms"] == 5.0
    assert second["ms"] == 7.0 and second["cublas_ms"] == 6.5


def test_a_wrong_kernel_is_never_timed(cuda_calls: list[tuple[object, ...]]) -> None:
    reply = gpu_requests.measure(Measure(FakeKernel("wrong"), ANSWER, 5.0), WorkerState())  # type: ignore[arg-type]
    assert reply == {
        "status": "wrong_result",
        "reason": "relative error 1.00e-02 > 1.0e-05",
        "rel_error": 1e-2,
    }
    assert [c[0] for c in cuda_calls] == ["operands", "cublas", "verify"]  # ours never timed


def test_compare_alternates_every_kernel_with_cublas_each_round(
    cuda_calls: list[tuple[object, ...]],
) -> None:
    kernels = (FakeKernel("a"), FakeKernel("wrong"), FakeKernel("b"))
    replies = gpu_requests.compare(Compare(kernels, ANSWER, 2, 5.0), WorkerState())  # type: ignore[arg-type]
    assert [r["status"] for r in replies] == ["ok", "wrong_result", "ok"]
    timed = [c[:2] if c[0] == "ours" else c[:1] for c in cuda_calls if c[0] in ("ours", "cublas")]
    a, b = ("ours", "loaded a"), ("ours", "loaded b")
    settle = ("cublas",)  # when the shape's operands are made, before any kernel is verified
    warm = ("cublas",)  # after the checks, not kept: the first timed block is not the idle GPU's
    assert timed == [settle, warm, *[a, ("cublas",), b, ("cublas",)] * 2]
    kinds = [c[0] for c in cuda_calls]
    last_check = max(i for i, kind in enumerate(kinds) if kind == "verify")
    assert kinds[last_check + 1 : last_check + 3] == ["cublas", "ours"]  # warm: after the checks
    assert replies[0]["ms_rounds"] == [7.0, 11.0] and replies[0]["cublas_ms_rounds"] == [8.0, 12.0]
    assert replies[2]["ms_rounds"] == [9.0, 13.0]


def test_started_candidates_queue_in_the_worker_and_finish_in_order(
    evaluator: GpuEvaluator,
) -> None:
    first, second = evaluator.start(CONFIG, ANSWER), evaluator.start(OTHER, ANSWER)
    assert first.result is None and second.result is None  # both sent, neither answered yet
    with pytest.raises(RuntimeError, match="order"):
        evaluator.finish(second)
    assert evaluator.finish(first).status == "ok"
    assert evaluator.finish(second).config_name == OTHER.name


def test_a_death_loses_only_its_candidate_the_next_is_sent_again(evaluator: GpuEvaluator) -> None:
    doomed, next_one = evaluator.start(CONFIG, DIE), evaluator.start(OTHER, ANSWER)
    assert evaluator.finish(doomed).status == "launch_failed"
    assert evaluator.restarts == 1
    result = evaluator.finish(next_one)  # the new worker got it again
    assert result.status == "ok" and result.ms == 1.0


def test_a_candidate_that_cannot_compile_needs_no_worker(evaluator: GpuEvaluator) -> None:
    FakeCompiler.failing = {CONFIG.name}
    ticket = evaluator.start(CONFIG, DIE)
    assert ticket.result is not None and ticket.result.status == "compile_failed"
    assert evaluator.finish(ticket) is ticket.result and evaluator.restarts == 0


def test_cublas_is_timed_beside_the_first_candidates_then_every_third(
    cuda_calls: list[tuple[object, ...]],
) -> None:
    state = WorkerState()
    window, every = gpu_requests.CUBLAS_WINDOW, gpu_requests.CUBLAS_EVERY
    blocks = []
    for i in range(window + 2 * every):
        before = cuda_calls.count(("cublas", "1.0", "A", "B", "0.0", "C"))
        reply = gpu_requests.measure(Measure(FakeKernel(f"k{i}"), ANSWER, 5.0), state)  # type: ignore[arg-type]
        blocks.append(cuda_calls.count(("cublas", "1.0", "A", "B", "0.0", "C")) - before)
        assert reply["status"] == "ok" and reply["cublas_ms"] is not None
    settle = 1  # the shape's first candidate also made its operands, with one settling block
    timed = [b - (settle if i == 0 else 0) for i, b in enumerate(blocks)]
    measured = range(1, len(timed) + 1)
    assert timed == [int(n <= window or n % every == 0) for n in measured]
    assert len(state.shape(ANSWER).cublas_ms) == window


def test_compare_starts_every_compile_before_it_waits_for_one(
    evaluator: GpuEvaluator, monkeypatch: pytest.MonkeyPatch
) -> None:
    third = parse_config("warptile_bm64_bn64_bk32_wm32_wn32_wni1_tm4_tn4_t128")
    events: list[str] = []
    submit, result = evaluator.pool.submit, evaluator.pool.result

    def submitted(config: Any) -> None:
        events.append(f"submit {config.name}")
        submit(config)

    def waited(config: Any) -> Any:
        events.append(f"wait {config.name}")
        return result(config)

    monkeypatch.setattr(evaluator.pool, "submit", submitted)
    monkeypatch.setattr(evaluator.pool, "result", waited)
    answers = evaluator.compare([CONFIG, OTHER, third], ANSWER, rounds=1)
    assert [a.status for a in answers] == ["ok"] * 3
    first_wait = next(i for i, e in enumerate(events) if e.startswith("wait"))
    assert {e for e in events[:first_wait]} == {f"submit {c.name}" for c in (CONFIG, OTHER, third)}


def test_a_worker_gives_cached_device_memory_back_when_it_lets_a_shape_go(
    cuda_calls: list[tuple[object, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker that tuned a few vocabulary heads kept gigabytes in CuPy's pool, and the
    next compile process to make a CUDA context on that GPU ran out of memory."""
    released: list[int] = []
    monkeypatch.setattr(gpu_requests, "release_cached_memory", lambda: released.append(1))
    state = WorkerState()
    shapes = [Shape(8, 8, 8 * i) for i in range(1, gpu_requests.KEPT_SHAPES + 3)]
    for i, shape in enumerate(shapes):
        state.shape(shape)
        let_go = max(0, i + 1 - gpu_requests.KEPT_SHAPES)
        assert len(released) == let_go  # once for each shape that pushed another out
    state.shape(shapes[-1])  # a kept shape: nothing let go
    assert len(released) == len(shapes) - gpu_requests.KEPT_SHAPES
