"""The GPU evaluator's isolation, without CUDA: its worker process is replaced by fakes that
answer, hang or die, and the evaluator must bound, restart and report each case."""

from __future__ import annotations

import importlib.util
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

import pytest

import tuner.gpu_worker as gpu_worker
from tuner.compile import CompileError
from tuner.families import parse_config
from tuner.gpu_worker import Compare, GpuEvaluator, alternate
from tuner.resources import table_device
from tuner.shape import Shape

ANSWER, HANG, DIE = Shape(8, 8, 8), Shape(1, 8, 8), Shape(2, 8, 8)


def fake_worker(conn: Connection, device_index: int, budget_ms: float) -> None:
    """Stands in for ``_worker_main`` in the child: the request's shape says what to do."""
    conn.send(("ready", table_device("sm_90"), {"device": "fake", "worker_pid": os.getpid()}))
    while True:
        request = conn.recv()
        if request is None:
            return
        if isinstance(request, Compare):  # answers with one time per round, as the real one
            if request.shape == HANG:
                time.sleep(3600)
            rounds = range(request.rounds)
            conn.send(
                {
                    "status": "ok",
                    "rel_error": 0.0,
                    "ms_rounds": [1.0 + i for i in rounds],
                    "cublas_ms_rounds": [2.0 + i for i in rounds],
                    "kernel": getattr(request.compiled, "name", None),
                }
            )
            continue
        _, shape = request
        if shape == HANG:
            time.sleep(3600)
        if shape == DIE:
            os._exit(7)  # as after an illegal address
        conn.send({"status": "ok", "ms": 1.0, "cublas_ms": 1.0})


def dead_worker(conn: Connection, device_index: int, budget_ms: float) -> None:
    """A child that dies before it is ready (no device, a broken driver)."""
    os._exit(5)


@pytest.fixture
def pretend_cupy(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> Any:
        return object() if name == "cupy" else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


@pytest.fixture
def evaluator(pretend_cupy: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[GpuEvaluator]:
    monkeypatch.setattr(gpu_worker, "_worker_main", fake_worker)
    ev = GpuEvaluator(run_timeout_s=1.0)
    yield ev
    ev.close()


def _pid(ev: GpuEvaluator) -> int:
    return int(ev.provenance["worker_pid"])


def test_answers_through_the_worker(evaluator: GpuEvaluator) -> None:
    assert evaluator.device.arch == "sm_90" and evaluator.provenance["device"] == "fake"
    assert evaluator._measure("kernel", ANSWER)["status"] == "ok"  # type: ignore[arg-type]
    assert evaluator.restarts == 0


def test_a_hanging_kernel_times_out_and_the_worker_is_replaced(evaluator: GpuEvaluator) -> None:
    first = _pid(evaluator)
    reply = evaluator._measure("kernel", HANG)  # type: ignore[arg-type]
    assert reply["status"] == "timeout" and "no answer within 1 s" in reply["reason"]
    assert evaluator.restarts == 1 and _pid(evaluator) != first
    assert evaluator._measure("kernel", ANSWER)["status"] == "ok"  # type: ignore[arg-type]


def test_a_dying_worker_is_launch_failed_and_replaced(evaluator: GpuEvaluator) -> None:
    first = _pid(evaluator)
    reply = evaluator._measure("kernel", DIE)  # type: ignore[arg-type]
    assert reply["status"] == "launch_failed" and "exit 7" in reply["reason"]
    assert evaluator.restarts == 1 and _pid(evaluator) != first
    assert evaluator._measure("kernel", ANSWER)["status"] == "ok"  # type: ignore[arg-type]


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


# The bench's Compare request: same worker, same isolation, a deadline that grows with rounds.

CONFIG = parse_config("warptile_bm64_bn64_bk8_wm32_wn32_wni1_tm4_tn4_t128")


@dataclass(frozen=True)
class FakeKernel:
    """Stands in for a CompiledKernel: picklable, and says whether it must not be timed."""

    name: str
    rejected: str | None = None
    source: str = "source"

    def rejection(self, dev: object) -> str | None:
        return self.rejected


def test_alternate_interleaves_ours_and_cublas() -> None:
    calls: list[str] = []

    def ours() -> float:
        calls.append("ours")
        return float(len(calls))

    def theirs() -> float:
        calls.append("cublas")
        return float(len(calls))

    assert alternate(3, ours, theirs) == ([1.0, 3.0, 5.0], [2.0, 4.0, 6.0])
    assert calls == ["ours", "cublas"] * 3


def test_compare_goes_to_the_worker(
    evaluator: GpuEvaluator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(evaluator, "compile", lambda config: FakeKernel(config.name))
    reply = evaluator.compare(CONFIG, ANSWER, rounds=3)
    assert reply["status"] == "ok" and reply["kernel"] == CONFIG.name
    assert reply["ms_rounds"] == [1.0, 2.0, 3.0] and reply["cublas_ms_rounds"] == [2.0, 3.0, 4.0]
    assert evaluator._measure("kernel", ANSWER)["status"] == "ok"  # type: ignore[arg-type]


def test_compare_reports_compile_failures_and_rejections_without_the_worker(
    evaluator: GpuEvaluator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(evaluator, "compile", lambda config: CompileError("nvrtc: boom"))
    assert evaluator.compare(CONFIG, ANSWER, 2) == {
        "status": "compile_failed",
        "reason": "nvrtc: boom",
    }
    monkeypatch.setattr(evaluator, "compile", lambda config: FakeKernel(config.name, "spills"))
    assert evaluator.compare(CONFIG, ANSWER, 2) == {"status": "pruned", "reason": "spills"}
    with pytest.raises(ValueError, match="rounds"):
        evaluator.compare(CONFIG, ANSWER, 0)


def test_a_hanging_compare_times_out_after_its_longer_deadline(
    evaluator: GpuEvaluator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gpu_worker, "COMPARE_BLOCK_TIMEOUT_S", 0.5)
    monkeypatch.setattr(evaluator, "compile", lambda config: FakeKernel(config.name))
    first = _pid(evaluator)
    reply = evaluator.compare(CONFIG, HANG, rounds=1)  # 1 s + 2 blocks x 0.5 s
    assert reply == {"status": "timeout", "reason": "no answer within 2 s"}
    assert evaluator.restarts == 1 and _pid(evaluator) != first
    assert evaluator.compare(CONFIG, ANSWER, rounds=1)["status"] == "ok"


def test_compare_one_verifies_then_alternates_on_the_same_operands(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The worker side with the CUDA calls replaced: what is launched, with which operands and
    in which order; the fakes' times are the call counts."""
    import tuner.compile
    import tuner.measure as measure

    calls: list[tuple[object, ...]] = []
    error = [1e-7]

    def time_launches(run: Any, budget_ms: float) -> measure.Timing:
        assert budget_ms == 5.0
        run()
        return measure.Timing(float(len(calls)), 0.0, 0.0, 1)

    monkeypatch.setattr(tuner.compile, "load_kernel", lambda compiled: f"loaded {compiled.name}")
    monkeypatch.setattr(
        measure, "verify", lambda kernel, source, shape: measure.Verification(error[0], 1e-5)
    )
    monkeypatch.setattr(measure, "random_operands", lambda shape, seed=None: ("A", "B", "C"))
    monkeypatch.setattr(
        measure, "launch", lambda *args: calls.append(("ours", *(str(a) for a in args)))
    )
    monkeypatch.setattr(
        measure, "cublas_gemm", lambda *args: calls.append(("cublas", *(str(a) for a in args)))
    )
    monkeypatch.setattr(measure, "time_launches", time_launches)
    request = Compare(FakeKernel("k"), ANSWER, 2)  # type: ignore[arg-type]
    reply = gpu_worker._compare_one(request, 5.0)
    assert reply == {
        "status": "ok",
        "rel_error": 1e-7,
        "ms_rounds": [1.0, 3.0],
        "cublas_ms_rounds": [2.0, 4.0],
    }
    ours = ("ours", "loaded k", "source", "8x8x8", "1.0", "A", "B", "0.0", "C")
    assert calls == [ours, ("cublas", "1.0", "A", "B", "0.0", "C")] * 2

    calls.clear()
    error[0] = 1e-2
    reply = gpu_worker._compare_one(request, 5.0)
    assert reply == {
        "status": "wrong_result",
        "reason": "relative error 1.00e-02 > 1.0e-05",
        "rel_error": 1e-2,
    }
    assert calls == []  # a wrong kernel is never timed
