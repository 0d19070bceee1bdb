"""What a result must be before it is stored, whichever way it comes in: an API upload,
``gemmtune import`` or the preload of the committed results.

Storage checks types (``storage.inputs``); it cannot know kernel families or GPUs. This module
checks meaning, so that nothing stored can break an answer or win one by lying:

* the device's architecture looks like ``sm_90`` and its SM count is at most
  :data:`MAX_SM_COUNT`; the shape is one this version tunes;
* ``family`` is a known family, ``config_name`` is that family's canonical name of a config that
  obeys the family's rules (an ``invalid`` row may break them: that is why it is invalid), and
  ``params`` are the name's parameters;
* the family computes the shape's input type and layout (``Family.unsupported``: an ``hmma``
  time for a float32 shape measured another product), the config's parameters pinned by the
  shape (``Family.pinned``: a half family's DTYPE and LAYOUT) are the shape's, and
  ``accuracy`` is the family's class;
* times are at least :data:`MIN_KERNEL_MS` (no GPU kernel launch takes less), and no rate beats
  the device's peak: TFLOP/s, given or implied by ``2MNK / ms``, at most :data:`PEAK_MARGIN`
  times the peak of the unit that does the products (FP32 FMA, the FP64 tensor cores for the
  ``dmma`` families, the FP16/BF16 tensor cores for ``hmma``; cuBLAS in strict FP32 uses FMA,
  on half inputs the tensor cores). The peak comes from the architecture's
  datasheet figures (:data:`tuner.model.rates.ARCH_FIGURES`) and the device's SM count; for an
  architecture the table does not list, from the largest per-SM rate of any listed one.

Every problem names its row and field; callers reject the whole request or file when there is
one, so nothing of it is stored.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from storage import DeviceIn, MeasurementIn, ShapeIn
from tuner.answers.device_kind import ARCH_FORMAT
from tuner.core.config import Config
from tuner.core.dims import tflops as gemm_tflops
from tuner.core.errors import InputError
from tuner.core.shape import MAX_DIM, OUT_DTYPES, SUPPORTED_DTYPES, SUPPORTED_LAYOUTS, Shape
from tuner.kernels.families import FAMILIES, checked_config, parse_config
from tuner.kernels.families._base import MathUnit
from tuner.model.rates import ARCH_FIGURES, ArchFigures

# A measured rate may beat the datasheet peak a little (boost clocks above the listed one); a
# rate 1.5 times the peak is a wrong time, not a fast kernel.
PEAK_MARGIN = 1.5
# No kernel launch completes in less than a microsecond as CUDA events time it.
MIN_KERNEL_MS = 1e-3

# No GPU has nearly this many SMs (170 on the largest of 2025); a claim of more is a lie that
# would lift the device's peak, and so the plausibility bound on its times, as far as it likes.
MAX_SM_COUNT = 1024

# Column widths of the text fields a record may fill freely (storage.models).
DEVICE_NAME_CHARS = 200
STUDY_CHARS = 255

FieldPath = tuple[str | int, ...]
Record = tuple[DeviceIn, ShapeIn, MeasurementIn]


@dataclass(frozen=True)
class Problem:
    """One reason to refuse a record: where (``("measurements", 3, "ms")``) and what."""

    path: FieldPath
    message: str  # what is allowed and what was sent, without the field's name
    row: str | None = None  # the record, where the path does not say (a file's record 12)

    @property
    def field(self) -> str:
        return ".".join(str(part) for part in self.path)

    def __str__(self) -> str:
        where = f"{self.row}: " if self.row else ""
        return f"{where}`{self.field}` {self.message}"

    def under(self, *prefix: str | int) -> Problem:
        return Problem((*prefix, *self.path), self.message, self.row)


class RejectedRecords(InputError):
    """Records that may not be stored; the message lists the first few problems."""

    SHOWN = 5

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        shown = "; ".join(str(p) for p in self.problems[: self.SHOWN])
        more = len(self.problems) - self.SHOWN
        super().__init__(shown + (f"; and {more} more problem(s)" if more > 0 else ""))


def device_problems(device: DeviceIn) -> list[Problem]:
    problems = _text_problems((("name", device.name, DEVICE_NAME_CHARS),))
    if not ARCH_FORMAT.fullmatch(device.arch):
        message = f"must look like sm_90 (compute capability), got {device.arch!r}"
        problems.append(Problem(("arch",), message))
    if device.sm_count > MAX_SM_COUNT:
        message = f"must be at most {MAX_SM_COUNT} (no GPU has more), got {device.sm_count}"
        problems.append(Problem(("sm_count",), message))
    return problems


def shape_problems(shape: ShapeIn) -> list[Problem]:
    problems = []
    for name in ("m", "n", "k"):
        value = getattr(shape, name)
        if not 1 <= value <= MAX_DIM:
            problems.append(Problem((name,), f"must be an integer in 1..{MAX_DIM}, got {value!r}"))
    for name, allowed in (("dtype", SUPPORTED_DTYPES), ("layout", SUPPORTED_LAYOUTS)):
        value = getattr(shape, name)
        if value not in allowed:
            problems.append(Problem((name,), f"must be one of {', '.join(allowed)}, got {value!r}"))
    outs = OUT_DTYPES.get(shape.dtype)
    if outs is not None and shape.out_dtype not in outs:
        message = f"must be one of {', '.join(outs)} for {shape.dtype} inputs"
        problems.append(Problem(("out_dtype",), f"{message}, got {shape.out_dtype!r}"))
    return problems


def measurement_problems(device: DeviceIn, shape: ShapeIn, m: MeasurementIn) -> list[Problem]:
    """Problems of one measurement of a valid ``device`` and ``shape``."""
    texts = (("study", m.study, STUDY_CHARS), ("reason", m.reason, None))
    problems = _text_problems(texts)
    config_problem = _config_problem(m) or _family_problem(shape, m)
    if config_problem is not None:
        return [*problems, config_problem]
    return problems + _time_problems(device, shape, m, _math_of(m.family, shape))


def _math_of(family: str, shape: ShapeIn) -> MathUnit:
    """The unit whose peak bounds a measurement of ``family``: its own, or for the vendor
    library (``library``), the one cuBLAS uses for the input type (:func:`_baseline_math`)."""
    math = FAMILIES[family].cost.math
    return _baseline_math(shape) if math == "library" else math


def _baseline_math(shape: ShapeIn) -> MathUnit:
    """cuBLAS multiplies float32 with FMA (strict FP32), half inputs on the tensor cores."""
    return "ffma" if shape.dtype == "float32" else "half_tensor"


def record_problems(device: DeviceIn, shape: ShapeIn, m: MeasurementIn) -> list[Problem]:
    """Problems of one stored record, paths under ``device``, ``shape`` or the measurement."""
    problems = [p.under("device") for p in device_problems(device)]
    problems += [p.under("shape") for p in shape_problems(shape)]
    return problems or measurement_problems(device, shape, m)


def check_upload(device: DeviceIn, shape: ShapeIn, measurements: Sequence[MeasurementIn]) -> None:
    """Measurements of one device and shape (an API upload), paths under ``device``,
    ``shape`` and ``measurements.<i>``.

    Raises:
        RejectedRecords: with every problem found.
    """
    problems = [p.under("device") for p in device_problems(device)]
    problems += [p.under("shape") for p in shape_problems(shape)]
    if not problems:
        problems = [
            problem.under("measurements", i)
            for i, m in enumerate(measurements)
            for problem in measurement_problems(device, shape, m)
        ]
    if problems:
        raise RejectedRecords(problems)


def with_trust(m: MeasurementIn, trusted: bool) -> MeasurementIn:
    """``m`` marked as trusted or not (an untrusted measurement never becomes the best config),
    whatever its sender wrote there."""
    return replace(m, trusted=trusted)


def check_record(device: DeviceIn, shape: ShapeIn, m: MeasurementIn) -> None:
    """Raise :class:`RejectedRecords` if the record has a problem (see :func:`record_problems`)."""
    problems = record_problems(device, shape, m)
    if problems:
        raise RejectedRecords(problems)


def check_records(records: Iterable[tuple[str, Record]]) -> None:
    """Raise :class:`RejectedRecords` if any record has a problem (each labelled by its row).

    Raises:
        RejectedRecords: with every problem of every row.
    """
    problems = [
        replace(problem, row=row) for row, record in records for problem in record_problems(*record)
    ]
    if problems:
        raise RejectedRecords(problems)


def _text_problems(texts: Iterable[tuple[str, str | None, int | None]]) -> list[Problem]:
    """NUL characters (PostgreSQL cannot store them) and lengths past the column's."""
    problems = []
    for name, value, longest in texts:
        if value is None:
            continue
        if "\x00" in value:
            problems.append(Problem((name,), "must not contain NUL characters"))
        elif longest is not None and len(value) > longest:
            problems.append(
                Problem((name,), f"must be at most {longest} characters, got {len(value)}")
            )
    return problems


def _config_problem(m: MeasurementIn) -> Problem | None:
    if m.family not in FAMILIES:
        return Problem(("family",), f"must be one of {', '.join(FAMILIES)}, got {m.family!r}")
    config = _read_config(m.config_name, m.family, m.status != "invalid")
    if isinstance(config, str):
        return Problem(("config_name",), f"must name a valid {m.family} config: {config}")
    if config.name != m.config_name:
        return Problem(
            ("config_name",), f"must be the canonical name {config.name!r}, got {m.config_name!r}"
        )
    if dict(m.params) != config.as_dict():
        return Problem(
            ("params",),
            f"must be the parameters of {config.name}: {config.as_dict()}, got {dict(m.params)}",
        )
    return None


def _family_problem(shape: ShapeIn, m: MeasurementIn) -> Problem | None:
    """A family that does not compute the shape (its input type or layout), or a record whose
    accuracy class is not its family's: either would serve another product than the one
    asked for, or compete in the wrong class."""
    family = FAMILIES[m.family]
    try:
        problem = Shape(shape.m, shape.n, shape.k, shape.dtype, shape.layout, shape.out_dtype)
    except InputError:
        return None  # a type of C the inputs cannot write: named as `shape.out_dtype` itself
    unsupported = family.unsupported(problem)
    if unsupported is not None:
        return Problem(("family",), f"must compute the shape: {unsupported}")
    # Parameters the shape decides (a half family's input type and layout, Family.pinned).
    pins = family.pinned(problem)
    wrong = {name: value for name, value in pins.items() if m.params.get(name) != value}
    if wrong:
        expected = ", ".join(f"{name}={value}" for name, value in wrong.items())
        return Problem(
            ("config_name",),
            f"must compute {shape.dtype} {shape.layout}: {m.family} takes {expected} for it, "
            f"got {m.config_name!r}",
        )
    if m.accuracy != family.accuracy:
        return Problem(
            ("accuracy",),
            f"must be {family.accuracy!r}, the class of family {m.family}, got {m.accuracy!r}",
        )
    return None


@lru_cache(maxsize=4096)
def _read_config(name: str, family: str, obeys_rules: bool) -> Config | str:
    """The config, or why it cannot be read (cached: a file repeats its configs per shape)."""
    try:
        return (checked_config if obeys_rules else parse_config)(name, family)
    except InputError as exc:
        return str(exc)


def peak_tflops(arch: str, sm_count: int, math: MathUnit) -> float:
    """The device's peak rate on ``math`` from datasheet figures (see the module docstring)."""
    figures = ARCH_FIGURES.get(arch)
    if figures is not None:
        return figures.tflops(_per_clk(figures, math), sm_count)
    return max(f.tflops(_per_clk(f, math), sm_count) for f in ARCH_FIGURES.values())


def _per_clk(figures: ArchFigures, math: MathUnit) -> float:
    tensor = {
        "fp64_tensor": figures.dmma_per_clk,
        "half_tensor": figures.hmma_per_clk,
        "half_wgmma": figures.hmma_per_clk,
        "half_tma": figures.hmma_per_clk,
    }
    return tensor.get(math, figures.ffma_per_clk)


def _time_problems(
    device: DeviceIn, shape: ShapeIn, m: MeasurementIn, math: MathUnit
) -> list[Problem]:
    problems = _rate_problems(device, shape, ("ms", m.ms), ("tflops", m.tflops), math)
    cublas = ("cublas_ms", m.cublas_ms), ("cublas_tflops", m.cublas_tflops)
    problems += _rate_problems(device, shape, *cublas, _baseline_math(shape))
    if m.ratio is not None and not m.ratio > 0:
        problems.append(Problem(("ratio",), f"must be > 0, got {m.ratio!r}"))
    return problems


def _rate_problems(
    device: DeviceIn,
    shape: ShapeIn,
    time: tuple[str, float | None],
    rate: tuple[str, float | None],
    math: MathUnit,
) -> list[Problem]:
    """A time and its TFLOP/s against the floor and the device's peak on ``math``."""
    limit = PEAK_MARGIN * peak_tflops(device.arch, device.sm_count, math)
    bound = (
        f"{limit:.4g} TFLOP/s ({PEAK_MARGIN} x the {math} peak of {device.arch} "
        f"with {device.sm_count} SMs)"
    )
    (ms_name, ms), (rate_name, tflops) = time, rate
    problems = []
    if ms is not None and ms < MIN_KERNEL_MS:
        problems.append(Problem((ms_name,), f"must be >= {MIN_KERNEL_MS} ms, got {ms!r}"))
    elif (implied := gemm_tflops(shape.m, shape.n, shape.k, ms)) is not None and implied > limit:
        problems.append(
            Problem(
                (ms_name,),
                f"is too short: {ms!r} ms is {implied:.4g} TFLOP/s for "
                f"{shape.m}x{shape.n}x{shape.k}, above {bound}",
            )
        )
    if tflops is not None and not 0 < tflops <= limit:
        problems.append(Problem((rate_name,), f"must be in (0, {bound}], got {tflops!r}"))
    return problems
