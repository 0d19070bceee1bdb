"""``gemmtune bench``: every suite shape tuned (or its stored result reused), then re-measured
side by side with cuBLAS, placed on the roofline, and checked against the speed targets of its
dtype (:data:`TARGETS` for float32, :data:`HALF_TARGETS` for float16 and bfloat16).

For each shape: the best config stored for it on this device is used; the shape is tuned first
(``tuner.run.tune``, as ``gemmtune tune`` would) only when nothing is stored (or with
``retune``). That config is then verified and timed against
cuBLAS in alternating rounds in the same worker process (:meth:`GpuEvaluator.compare`); the
round medians give the reported times. Everything here but the comparison itself runs without a
GPU (tests use the replay evaluator and a fake comparison).

The baseline is the best vendor launch, not only the default cuBLAS call: in the same rounds the
bench times cuBLASLt's first :data:`BASELINE_RANKS` heuristic algorithms (``cublaslt``) and, on a
shape with ragged rows, the same and the default call on zero-padded operands (pad to whole
16-byte vectors, then the library; the copies timed). A row's ``ratio`` is the fastest of those
and the default call (``vendor_ms``) over ours; ``cublas_ratio`` keeps the default call's
(cublasSgemm for float32 NN, cublasGemmEx otherwise) as a second column. A launch the evaluator
cannot measure (a replay table holds no vendor rows) is left out, so there the baseline is the
default call.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import PurePath
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

import storage
from tuner.core.accuracy import DEFAULT_ACCURACY, accepted
from tuner.core.config import Config
from tuner.core.errors import InputError
from tuner.core.evaluators import EvaluatorKind
from tuner.core.result import Comparison
from tuner.core.shape import STORED_OUT_DTYPE, Shape
from tuner.data import suite_document
from tuner.data.location import DEFAULT_SUITE_NAME
from tuner.data.shape_lists import SuiteEntry
from tuner.kernels.families import CUBLAS, CUBLASLT, HEURISTIC_RANKS, get_family, parse_config
from tuner.kernels.families.vendor import BASELINE_RANKS
from tuner.kernels.operand_padding import pad_multiple, padding_refusal
from tuner.model.roofline import Ceilings, roofline
from tuner.run.multi_gpu import Worker, Workers
from tuner.run.request import TuneRequest
from tuner.run.runner import ProgressReport, check_families_compute, families_for, loosest_of
from tuner.run.tune import tune
from tuner.search.evaluator import Evaluator
from tuner.search.finalists import DEFAULT_CALL
from tuner.search.sql_recorder import SqlRecorder
from tuner.search.study import study_name

TIMING = (
    "after a correctness check against cuBLAS (in the shape's dtype with FP32 sums, never TF32; "
    "half inputs also against FP32 on the unrounded values; relative Frobenius error), our kernel "
    "and cuBLAS are timed alternately (ours, cuBLAS, ours, ...) on the same random normal "
    "operands, alpha = 1, beta = 0, and so are the vendor launches of the baseline (cuBLASLt's "
    "heuristic algorithms; on ragged shapes also on zero-padded operands, copies timed); each "
    "round is the median of repeated launches (CUDA events, 3 warm-ups, L2 flushed before each "
    "repeat); reported: the median of the rounds"
)
# What a row's ``ratio`` compares with (``method.baseline`` of the file; files without it
# compared with the default cuBLAS call).
BASELINE = "best vendor launch"


@dataclass(frozen=True)
class BenchRequest:
    """A bench: the tune of the suite's shapes (``tune.shapes``; with ``tune.trials`` per shape
    tuned, no time limit) and how each answer is re-measured. Without named families, the
    default families of the suite's first shape, checked to compute it (a suite has one dtype
    and layout)."""

    tune: TuneRequest
    retune: bool = False  # tune ``tune.trials`` more candidates even where a best is stored
    rounds: int = 5  # alternating rounds of ours and cuBLAS per shape
    budget_ms: float = 100.0  # kernel time per timed block
    vendor_ranks: int = BASELINE_RANKS  # cuBLASLt algorithms timed for the baseline (0: none)

    def __post_init__(self) -> None:
        first = self.tune.shapes[0]
        families = self.tune.families or families_for(first, self.tune.accuracy)
        check_families_compute(first, families)
        object.__setattr__(self, "tune", replace(self.tune, families=families))
        if self.rounds < 1:
            raise InputError(f"`rounds` must be at least 1, got {self.rounds}")
        if self.budget_ms < 1.0:
            raise InputError(f"`budget_ms` must be at least 1.0, got {self.budget_ms}")
        if not 0 <= self.vendor_ranks <= HEURISTIC_RANKS:
            raise InputError(
                f"`vendor_ranks` must be 0 to {HEURISTIC_RANKS}, got {self.vendor_ranks}"
            )

    @property
    def families(self) -> tuple[str, ...]:
        return self.tune.families


@dataclass(frozen=True)
class Choice:
    """The config a shape is benchmarked with and where it came from, or why there is none."""

    config: Config | None
    tuned: bool
    study: str | None = None
    evaluated: int | None = None  # candidates evaluated in ``study``, from storage
    stored_ms: float | None = None  # as measured while tuning
    stored_ratio: float | None = None
    reason: str | None = None


def device_slug(name: str) -> str:
    """``NVIDIA H100 80GB HBM3`` -> ``h100``: the words up to the first holding a digit."""
    words = [w for w in re.split(r"[^a-z0-9]+", name.lower()) if w and w != "nvidia"]
    for i, word in enumerate(words):
        if any(ch.isdigit() for ch in word):
            return "-".join(words[: i + 1])
    return "-".join(words) or "gpu"


def suite_file_name(slug: str, shape: Shape, accuracy: str = DEFAULT_ACCURACY) -> str:
    """Where ``gemmtune bench`` writes by default: ``<device>-suite.json`` for float32 NN (the
    committed FP32 results), ``<device>-suite-<dtype>-<layout>.json`` for the others writing
    float32 C (what every committed file measured) and ``...-<layout>-out-<out_dtype>.json``
    for a half C, with ``-<accuracy>`` before ``.json`` at a floor other than ``exact``."""
    tail = "" if accuracy == DEFAULT_ACCURACY else f"-{accuracy}"
    if shape.is_default_kind:
        return f"{slug}-suite{tail}.json"
    out = "" if shape.out == STORED_OUT_DTYPE else f"-out-{shape.out}"
    return f"{slug}-suite-{shape.dtype}-{shape.layout.lower()}{out}{tail}.json"


def _stored_choice(
    sessions: sessionmaker[Session],
    device: str,
    shape: Shape,
    tuned: bool,
    classes: frozenset[str],
    replayed: bool = False,
) -> Choice | None:
    """The fastest best config stored for ``shape`` on ``device`` among the accuracy
    ``classes`` (None when nothing is stored); for a bench on a replay (``replayed``), what its
    studies found, which is never a best config (``storage.fastest_replayed``)."""
    dims = (shape.m, shape.n, shape.k, shape.dtype, shape.layout)
    with sessions() as session:
        out = shape.out
        if replayed:
            row = storage.fastest_replayed(
                session, device, *dims, accuracies=classes, out_dtype=out
            )
        else:
            found = storage.best_for(session, device, *dims, accuracies=classes, out_dtype=out)
            row = None if found is None else found[1]
        if row is None:
            return None
        name, study = row.config_name, row.study
        evaluated = len(storage.measurements_for_study(session, study)) if study else None
        ms, ratio = row.ms, row.ratio
    try:
        config = parse_config(name)
        broken = get_family(config.family).broken_rules(config)
    except InputError:
        broken, config = ["it is not a config of this version of the tuner"], None
    if broken or config is None:
        reason = f"the stored best {name} cannot be used: {broken[0]}; re-tune into a new database"
        return Choice(None, tuned, study, evaluated, ms, ratio, reason)
    return Choice(config, tuned, study, evaluated, ms, ratio)


def choose_config(
    shape: Shape,
    evaluator: Evaluator,
    sessions: sessionmaker[Session],
    request: BenchRequest,
    report: ProgressReport | None = None,
) -> Choice:
    """Reuse the stored best config of ``shape`` on this device, or tune when none is stored
    (``report`` follows the study, candidate by candidate).

    With ``request.retune`` the shape's study (same families) runs ``request.tune.trials`` more
    evaluated candidates even when a best config is stored.
    """
    device = evaluator.device.name
    # The floor the families search at: a shape is reused only once its own class has a best
    # (an exact best alone does not say what the emulated families reach), and then the
    # fastest of every class the floor accepts answers.
    floor = loosest_of(request.families)
    classes = accepted(floor)
    replayed = evaluator.kind == EvaluatorKind.REPLAY
    own = _stored_choice(sessions, device, shape, False, frozenset({floor}), replayed)
    if own is not None and not request.retune:
        if classes == {floor}:  # exact: nothing more exact to compare with
            return own
        return _stored_choice(sessions, device, shape, False, classes, replayed) or own
    trials = request.tune.trials
    if request.retune and trials is not None:
        name = study_name(device, shape, request.families)
        trials += len(SqlRecorder(sessions).evaluated(name))
    [progress] = tune(
        replace(request.tune, shapes=(shape,), trials=trials, timeout=None),
        workers=Workers([Worker(0, evaluator)]),
        sessions=sessions,
        new_report=None if report is None else lambda: report,
    )
    tuned = _stored_choice(sessions, device, shape, True, classes, replayed)
    if tuned is not None:
        return tuned
    reason = f"no candidate ran correctly in {progress.evaluated} evaluated"
    return Choice(None, True, progress.study, progress.evaluated, reason=reason)


def vendor_configs(shape: Shape, ranks: int = BASELINE_RANKS) -> list[Config]:
    """The vendor launches timed for ``shape``'s baseline: cuBLASLt's first ``ranks`` heuristic
    algorithms, and on a shape with ragged rows the same and the default cuBLAS call on
    zero-padded operands ("pad, then cuBLAS", copies timed). The default call on the operands as
    given is the comparison's own (``cublas_ms``); ``ranks`` 0 times no other launch."""
    configs = [CUBLASLT.config({"RANK": rank}) for rank in range(ranks)]
    if configs and padding_refusal(shape, c_rows=CUBLASLT.pads_c_rows) is None:
        pad = pad_multiple(shape.dtype)
        configs += [config.padded(pad) for config in configs]
        configs.append(CUBLAS.config({}).padded(pad))
    return configs


def best_vendor(cublas_ms: float, vendor: Sequence[Comparison]) -> tuple[str, float, Any]:
    """The fastest vendor launch: (its name, its ms, its algorithm or None) among the default
    cuBLAS call (``cublas_ms``) and the ``vendor`` launches that ran correctly."""
    name, ms, algo = DEFAULT_CALL, cublas_ms, None
    for launch in vendor:
        if launch.status == "ok" and launch.ms is not None and launch.ms < ms:
            name, ms = launch.config_name, launch.ms
            algo = dict(launch.provenance.get("vendor") or {}).get("algo")
    return name, ms, algo


def shape_row(
    entry: SuiteEntry,
    choice: Choice,
    reply: Comparison | None,
    ceilings: Ceilings | None,
    vendor: Sequence[Comparison] = (),
) -> dict[str, Any]:
    """One shape's JSON row from its choice and its re-measurement (None: not compared);
    ``vendor``: the baseline's vendor launches measured in the same rounds
    (:func:`vendor_configs`)."""
    shape = entry.shape
    row: dict[str, Any] = {
        "class": entry.label,
        "m": shape.m,
        "n": shape.n,
        "k": shape.k,
        "dtype": shape.dtype,
        "layout": shape.layout,
        "out_dtype": shape.out,
        "status": "no_config",
        "reason": choice.reason,
        "config": choice.config.name if choice.config else None,
        "family": choice.config.family if choice.config else None,
        "tuned": choice.tuned,
        "study": choice.study,
        "candidates_evaluated": choice.evaluated,
        "stored_ms": choice.stored_ms,
        "stored_ratio": choice.stored_ratio,
    }
    roof = None
    if ceilings is not None and ceilings.compute_tflops(shape.dtype) is not None:
        roof = roofline(shape, ceilings)
    row["roofline"] = roof.as_dict() if roof is not None else None
    if reply is None:
        return row
    row.update(status=reply.status, reason=reply.reason, rel_error=reply.rel_error)
    if reply.status != "ok" or reply.ms is None or reply.cublas_ms is None:
        return row
    mine, base = list(reply.ms_rounds), list(reply.cublas_ms_rounds)
    ms, cublas_ms = reply.ms, reply.cublas_ms
    tflops, cublas_tflops = shape.tflops(ms), shape.tflops(cublas_ms)
    launch, vendor_ms, algo = best_vendor(cublas_ms, vendor)
    vendor_tflops = shape.tflops(vendor_ms)
    row.update(
        ms=ms,
        tflops=tflops,
        vendor_launch=launch,
        vendor_algo=algo,
        vendor_ms=vendor_ms,
        vendor_tflops=vendor_tflops,
        ratio=vendor_ms / ms,
        cublas_ms=cublas_ms,
        cublas_tflops=cublas_tflops,
        cublas_ratio=cublas_ms / ms,
        rounds={"ms": mine, "cublas_ms": base},
        vendor_launches={
            launch.config_name: launch.ms if launch.status == "ok" else launch.status
            for launch in vendor
        },
    )
    if roof is not None:
        row["roofline"].update(
            pct_of_bound=roof.percent(tflops),
            vendor_pct_of_bound=roof.percent(vendor_tflops),
            cublas_pct_of_bound=roof.percent(cublas_tflops),
        )
    return row


def run_bench(
    suite: Sequence[SuiteEntry],
    bench: Evaluator,
    sessions: sessionmaker[Session],
    request: BenchRequest,
    ceilings: Ceilings | None,
    on_row: Callable[[list[dict[str, Any]]], None] | None = None,
    report: ProgressReport | None = None,
) -> list[dict[str, Any]]:
    """Choose (tune or reuse) and re-measure every shape, in suite order; ``on_row`` gets the
    rows so far after each shape (to write partial results), ``report`` each shape's study."""
    rows: list[dict[str, Any]] = []
    for entry in suite:
        choice = choose_config(entry.shape, bench, sessions, request, report)
        reply, vendor = None, []
        if choice.config is not None:
            # Ours and the baseline's vendor launches in the same alternating rounds.
            launches = [choice.config, *vendor_configs(entry.shape, request.vendor_ranks)]
            reply, *vendor = bench.compare(launches, entry.shape, request.rounds)
        rows.append(shape_row(entry, choice, reply, ceilings, vendor))
        if on_row is not None:
            on_row(rows)
    return rows


# The summary, and the targets a bench is judged by: ratios to the baseline (the best vendor launch;
# the default cuBLAS call in files from before it) the service aims to reach.


def geomean(values: Iterable[float]) -> float | None:
    logs = [math.log(v) for v in values]
    return math.exp(sum(logs) / len(logs)) if logs else None


@dataclass(frozen=True)
class Target:
    """A claim about ratios (baseline time / ours): over the suite, one shape, or one class."""

    name: str
    scope: str  # "suite", "shape" or "class"
    key: str  # the shape (MxNxK) or class it is about; "" for the suite
    threshold: float

    def rows(self, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        if self.scope == "shape":
            return [r for r in rows if f"{r['m']}x{r['n']}x{r['k']}" == self.key]
        if self.scope == "class":
            return [r for r in rows if r.get("class") == self.key]
        return list(rows)

    def check(self, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """The geometric mean of its rows' ratios against the threshold. ``met`` is None when
        the suite has no such row, and False when any of them has no ratio (a failed shape)."""
        mine = self.rows(rows)
        ratios = [r["ratio"] for r in mine if r.get("ratio")]
        value = geomean(ratios)
        met: bool | None = None
        if mine:
            met = value is not None and len(ratios) == len(mine) and value >= self.threshold
        return {
            "name": self.name,
            "threshold": self.threshold,
            "value": value,
            "measured": len(ratios),
            "shapes": len(mine),
            "met": met,
        }


# float32: at least cuBLAS's speed over the public suite, within 5 % of it on the two large
# cubes, and 1.2 times it on each class of shapes (skinny: M <= 128, odd sizes, small K, large K)
# where cuBLAS runs far under its large-square rate.
TARGETS = (
    Target("geometric mean over the suite", "suite", "", 1.00),
    Target("4096x4096x4096", "shape", "4096x4096x4096", 0.95),
    Target("8192x8192x8192", "shape", "8192x8192x8192", 0.95),
    *(
        Target(f"class {c} (geometric mean)", "class", c, 1.2)
        for c in ("skinny", "odd", "small_k", "large_k")
    ),
)
# Half inputs, per suite file: on the public suite mma.sync kernels race cuBLAS's wgmma ones, so
# 0.6 of its speed is the aim; on the odd-shape suite cuBLAS falls off its fast paths, so 1.5.
HALF_TARGETS = {
    "shapes.csv": (Target("geometric mean over the public suite", "suite", "", 0.6),),
    "odd_shapes.csv": (Target("geometric mean over the odd-shape suite", "suite", "", 1.5),),
}


def input_kind(rows: Sequence[dict[str, Any]]) -> tuple[str, str]:
    """The dtype and layout of a bench's rows (one per bench; rows from before dtypes: float32
    NN)."""
    first = rows[0] if rows else {}
    return first.get("dtype") or "float32", first.get("layout") or "NN"


def targets_for(dtype: str, suite: str | None) -> tuple[Target, ...]:
    """:data:`TARGETS` for float32; for half inputs, the :data:`HALF_TARGETS` of the suite file
    (named by its file name), none for other suites."""
    if dtype == "float32":
        return TARGETS
    name = PurePath(suite).name if suite else DEFAULT_SUITE_NAME
    return HALF_TARGETS.get(name, ())


def summarize(rows: Sequence[dict[str, Any]], suite: str | None = None) -> dict[str, Any]:
    """Geometric means of the ratios (over the suite and per class) and the targets of the rows'
    dtype and the suite file ``suite`` (default: the public suite)."""
    classes: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        classes.setdefault(row.get("class") or "-", []).append(row)
    targets = [t.check(rows) for t in targets_for(input_kind(rows)[0], suite)]
    return {
        "geomean_ratio": geomean(r["ratio"] for r in rows if r.get("ratio")),
        "shapes": len(rows),
        "measured": sum(1 for r in rows if r.get("ratio")),
        "by_class": {
            name: {
                "geomean_ratio": geomean(r["ratio"] for r in members if r.get("ratio")),
                "shapes": len(members),
                "measured": sum(1 for r in members if r.get("ratio")),
            }
            for name, members in classes.items()
        },
        "targets": targets,
        "all_targets_met": all(t["met"] is True for t in targets),
    }


def document(
    rows: list[dict[str, Any]],
    bench: Evaluator,
    request: BenchRequest,
    ceilings: Ceilings | None,
    suite: str,
) -> dict[str, Any]:
    """The suite file ``gemmtune bench`` writes: method, provenance, roofs, summary and rows
    (``suite``: the shape CSV, as the user named it)."""
    dtype, layout = input_kind(rows)
    return suite_document(
        device=bench.device.name,
        provenance=bench.provenance,
        suite=suite,
        method={
            "families": list(request.families),
            "accuracy": loosest_of(request.families),
            "sampler": request.tune.sampler,
            "seed": request.tune.seed,
            "trials_per_tuned_shape": request.tune.trials,
            "retune": request.retune,
            "dtype": dtype,
            "layout": layout,
            "out_dtype": (rows[0].get("out_dtype") if rows else None) or STORED_OUT_DTYPE,
            "warm_start": request.tune.warm_start,
            "rounds": request.rounds,
            "timing_budget_ms": request.budget_ms,
            "timing": TIMING,
            "baseline": BASELINE,
            "vendor_ranks": request.vendor_ranks,
        },
        roofline=ceilings.as_dict() if ceilings is not None else None,
        summary=summarize(rows, suite),
        rows=rows,
    )
