"""What a ``tune`` does: the default families, the warm-start policy, the evaluator, one study.

The commands (``tuner.cli``) and ``gemmtune bench`` call :func:`run_study`; it builds the study
on the database's sessions and reports progress to whoever asks (a progress bar, a log).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from sqlalchemy.orm import Session, sessionmaker

import storage
from tuner.errors import InputError
from tuner.evaluate import Evaluator
from tuner.families import FAMILIES
from tuner.samplers import SAMPLERS
from tuner.shape import Shape
from tuner.sql_recorder import SqlRecorder
from tuner.study import Progress, Study

if TYPE_CHECKING:
    from tuner.gpu_worker import GpuEvaluator

# What a study searches without --family: the families whose configs won suite shapes on the H100
# (benchmarks/results/h100-suite.json and the earlier runs under history/: dmma, streamk, skinny,
# warptile), pipelined, the multi-stage ladder rung, and dmma_pipelined (dmma fed by cp.async,
# faster than dmma on every shape of its sweeps). skinny has candidates only for small M;
# elsewhere its proposals are invalid points, which cost nothing.
DEFAULT_FAMILIES = ("warptile", "pipelined", "streamk", "skinny", "dmma", "dmma_pipelined")
WARM_START = 3  # candidates a new study takes from committed results and tuned neighbours
EVALUATORS = ("gpu", "replay")


class ProgressReport(Protocol):
    """Told when a study starts (its label and how many candidates it will evaluate) and after
    every evaluated candidate."""

    def start(self, label: str, total: int) -> None: ...

    def update(self, progress: Progress) -> None: ...


def check_families(families: Sequence[str] | None) -> tuple[str, ...]:
    """The family names given, checked (empty when none was given)."""
    chosen = tuple(families or ())
    for name in chosen:
        if name not in FAMILIES:
            raise InputError(f"unknown family {name!r}; choose one of {', '.join(FAMILIES)}")
    return chosen


def check_sampler(sampler: str) -> str:
    if sampler not in SAMPLERS:
        raise InputError(f"unknown sampler {sampler!r}; choose one of {', '.join(SAMPLERS)}")
    return sampler


def make_evaluator(name: str, replay_tables: Sequence[Path] | None = None) -> Evaluator:
    """The evaluator called ``name``: ``gpu`` (compile, verify, time) or ``replay`` (answers from
    committed sweep tables)."""
    if name == "replay":
        from tuner.replay import ReplayEvaluator

        return ReplayEvaluator(list(replay_tables) if replay_tables else None)
    if name == "gpu":
        return start_gpu("--evaluator gpu")
    raise InputError(f"unknown evaluator {name!r}; choose one of {', '.join(EVALUATORS)}")


def start_gpu(purpose: str, budget_ms: float = 100.0) -> GpuEvaluator:
    """The GPU evaluator, or an :class:`InputError` saying in one line why there is none
    (``purpose`` names what needed it)."""
    need = f"{purpose} needs a CUDA GPU with CuPy"
    if importlib.util.find_spec("cupy") is None:
        raise InputError(f"{need}: CuPy is not installed (pip install 'gemmtune[gpu]')")
    try:
        import cupy

        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as exc:  # no driver, a broken install: CuPy's own error names it
        raise InputError(f"{need}: {' '.join(str(exc).split())}") from None
    if count < 1:
        raise InputError(f"{need}: no CUDA device found")
    from tuner.gpu_worker import GpuEvaluator

    try:
        return GpuEvaluator(budget_ms=budget_ms)
    except (ImportError, RuntimeError) as exc:
        raise InputError(f"{need}: {exc}") from None


def default_families(evaluator: Evaluator) -> tuple[str, ...]:
    """The families searched when none are named: a replay's own (it has no answer for any
    other), else ``DEFAULT_FAMILIES``."""
    return evaluator.families or DEFAULT_FAMILIES


def run_study(
    shape: Shape,
    families: tuple[str, ...],
    evaluator: Evaluator,
    sessions: sessionmaker[Session],
    url: str | None,
    sampler: str,
    trials: int | None,
    timeout: float | None,
    seed: int | None,
    warm_start: int = WARM_START,
    report: ProgressReport | None = None,
) -> Progress:
    """Run (or resume) the study of ``shape`` over ``families`` on ``evaluator``, storing every
    candidate in the database behind ``sessions`` (Optuna's tables in the same database)."""
    study = Study(
        shape,
        families,
        evaluator,
        SqlRecorder(sessions),
        sampler=sampler,
        seed=seed,
        optuna_storage=storage.database_url(url),
        warm_start=warm_start,
    )
    if report is not None:
        report.start(str(shape), min(trials or len(study.candidates), len(study.candidates)))
    return study.run(
        trials=trials, timeout_s=timeout, on_progress=None if report is None else report.update
    )
