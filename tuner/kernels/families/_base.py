"""The parts every kernel family is built from: parameters, rules, footprints, cost traits.

A family says which parameter values exist (:class:`Param`), which combinations make a correct
kernel (:class:`Rule`, each with its reason), which extra constants the template needs
(``derive``), what one block of it costs the chip (``footprint``: threads, shared memory, values
held in registers), and what the cost model must know about how it runs (:class:`CostTraits`).
Everything here is pure arithmetic on integers; nothing compiles or touches a GPU.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol

from tuner.core.accuracy import EXACT
from tuner.core.config import IMPLICIT_VALUES, Config
from tuner.core.errors import InputError
from tuner.core.shape import Shape


class SmCount(Protocol):
    """What a device-dependent waste check reads of a device (``tuner.kernels.resources.
    DeviceLimits`` has it; the families do not import that module, which reads them)."""

    @property
    def sm_count(self) -> int: ...


Params = Mapping[str, int]
FLOAT_BYTES = 4
# ptxas fits a kernel into a __launch_bounds__ register cap some way below what it would use
# freely (dmma_pipelined at 1000^3: 128 under a cap of 128 where the estimate says 132), and the
# estimate is rough: by default only configs needing more than this many times the cap are
# pruned before compiling (those ptxas refuses or spills heavily: 120 or 96 registers under caps
# of 32 and 40). A family whose compiles show a tighter bound sets its own
# (``Family.launch_bound_slack``).
LAUNCH_BOUND_SLACK = 1.5
# Extra floats per row of the A tile in shared memory: warptile's and vectorized's transposed
# As[BK][BM + A_PAD], pipelined's As[BM][BK + A_PAD]. A multiple of 4 keeps every row 16-byte
# aligned for float4 accesses; it moves successive rows to other banks.
A_PAD = 4


@dataclass(frozen=True)
class Param:
    """A tunable integer and the values the search may give it."""

    name: str
    values: tuple[int, ...]
    doc: str


@dataclass(frozen=True)
class Rule:
    """A predicate every valid config satisfies; ``reason`` says why, and is shown on failure."""

    reason: str
    holds: Callable[[Params], bool]


@dataclass(frozen=True)
class Footprint:
    """What one thread block of a config needs from the chip (before compiling)."""

    threads: int
    smem_bytes: int
    dynamic_smem: bool
    accumulators: int  # C values each thread keeps in registers
    fragments: int  # A and B values each thread holds in registers per k step


Schedule = Literal["grid", "persistent", "tiles", "stream"]
MathUnit = Literal["ffma", "fp64_tensor", "half_tensor", "half_wgmma", "half_tma", "library"]


def _no_loads_ahead(p: Params) -> int:
    return 0


@dataclass(frozen=True)
class CostTraits:
    """What the analytic cost model (``tuner.model.cost_model``) needs to know about how a
    family runs.

    ``schedule``: ``grid`` launches one block per output tile (times SPLITK along grid z);
    ``persistent`` launches SMBLOCKS blocks per SM that walk the tiles (stream-K); ``tiles``
    launches one block per SM (at most one per output tile), each walking whole output tiles
    (``tma_ws``); ``stream``
    keeps no shared-memory tiles and streams B from memory (``skinny``).
    ``math``: the unit that does the products, FP32 FMA pipes, the FP64 tensor cores, the
    FP16/BF16 tensor cores fed by warps (``mma.sync``) or by warpgroups from shared memory
    (``wgmma``, Hopper), or by warpgroups from tiles the TMA unit copies (``half_tma``,
    ``tma_ws``), or a vendor library's own kernels (``library``: ``cublaslt``, whose time the
    model takes as the chip's peak rate, and its measurement as what it is).
    ``loads_ahead``: how many k tiles a block requests before it needs them (0: each tile's
    load latency is exposed).
    ``warp_tile``: rows and columns of C one warp computes, for families whose parameters do not
    name it (None: ``WM`` and ``WN``).
    """

    schedule: Schedule = "grid"
    math: MathUnit = "ffma"
    loads_ahead: Callable[[Params], int] = _no_loads_ahead
    warp_tile: Callable[[Params], tuple[int, int]] | None = None

    def warp_tile_of(self, p: Params) -> tuple[int, int]:
        if self.warp_tile is not None:
            return self.warp_tile(p)
        return p["WM"], p["WN"]


@dataclass(frozen=True)
class Family:
    """One kernel family: parameters, rules, template constants and resource footprint."""

    name: str
    doc: str
    params: tuple[Param, ...]
    rules: tuple[Rule, ...]
    threads: Callable[[Params], int]
    footprint: Callable[[Params], Footprint]
    derive: Callable[[Params], dict[str, int]] = lambda p: {}
    # The smallest piece of K one block works on at a time (a split-K slice needs at least one).
    k_step: Callable[[Params], int] = lambda p: p["BK"]
    # Why a valid config is wasteful for a shape beyond the generic checks, or None.
    waste: Callable[[Params, Shape], str | None] = lambda p, shape: None
    # The same, where the device decides it (its SMs); None: no such check.
    device_waste: Callable[[Params, Shape, SmCount], str | None] | None = None
    # Why a config tuned for another shape must not answer for this one, or None: it would be
    # correct there but many times slower (``tuner.answers.best`` passes over it for ``nearest``).
    answer_waste: Callable[[Params, Shape], str | None] = lambda p, shape: None
    # The parameter that splits K into pieces meeting in C (``SPLITK``; ``tma_ws`` names its own
    # ``SPLIT``), checked by ``tuner.kernels.space.splitk_waste``; the most output tiles whose
    # pieces the template can meet (None: ``SPLITK_MAX_TILES``), past which it does not split;
    # and the blocks per SM past which a deeper split is wasteful (None: by threads,
    # ``tuner.kernels.space.split_blocks_per_sm``).
    split_param: str = "SPLITK"
    split_max_tiles: int | None = None
    split_blocks_per_sm: int | None = None
    # The template keeps split-K ticket counters in module-scope device memory, so two launches
    # of one loaded module must not overlap (docs/kernels.md); a caller that launches on
    # several streams loads one module per stream (tuner.client).
    module_counters: bool = False
    # The kernel takes each matrix's leading dimension after it (A, lda, B, ldb, ..., C, ldc):
    # rows may be further apart than their length, so a padded launch copies only the ragged
    # operands and writes C in place (``tuner.kernels.operand_padding``). Else rows are packed.
    leading_dims: bool = False
    # The kernel reads A and B through TMA tensor maps (``CUtensorMap``, passed by value as its
    # fifth and sixth arguments in place of A, lda, B, ldb), which the launch builds on the
    # host (``tuner.gpu.tensor_maps``); C and ldc follow as for ``leading_dims``.
    tensor_maps: bool = False
    cost: CostTraits = field(default_factory=CostTraits)
    # The oldest architecture the template compiles for (compute capability x 10): cp.async
    # needs sm_80; the FP64 mma shapes m16n8k{4,8,16} need sm_90.
    min_arch: int = 80
    # The newest architecture it runs on, where a later one drops an instruction it uses (the
    # warpgroup mma of sm_90), or None.
    max_arch: int | None = None
    # Compiled for the architecture-specific target (``sm_90a``): the features that do not carry
    # forward to later chips, such as wgmma.
    arch_specific: bool = False
    # The input types and layouts (``tuner.core.shape``) the template computes: a shape of any other
    # has no configs of this family.
    dtypes: tuple[str, ...] = ("float32",)
    layouts: tuple[str, ...] = ("NN",)
    # The types it writes C in (``Shape.out_dtype``): float32 unless the template has an OUT
    # parameter; a shape asking for another has no configs of this family.
    out_dtypes: tuple[str, ...] = ("float32",)
    # Parameters whose one value the shape decides (a template compiled per input type or
    # layout names them, so that a config's name says what it computes), by name; every other
    # value of them is left out of the shape's space.
    pinned: Callable[[Shape], dict[str, int]] = lambda shape: {}
    # How far the register estimate (``footprint``) may exceed the cap a MINBLOCKS launch bound
    # leaves before the config is dropped without compiling
    # (``tuner.kernels.resources.static_check``).
    launch_bound_slack: float = LAUNCH_BOUND_SLACK
    # Blocks per SM its ``__launch_bounds__`` asks the compiler to leave registers for (0: no
    # such bound): the MINBLOCKS parameter where there is one.
    launch_bound_blocks: Callable[[Params], int] = lambda p: p.get("MINBLOCKS", 0)
    # How exactly it computes (``tuner.core.accuracy``): ``exact`` multiplies the inputs as stored.
    accuracy: str = EXACT.name
    # For a family that rewrites the operands before its kernel runs (``tuner.kernels.families.
    # emulated``: float32 split into BF16 parts along a K three times as long), the product its
    # kernel computes for a caller's shape; None: the shape itself (``run_shape``). Space, cost
    # model and launch see that product; the caller's FLOPs and verification stay the caller's.
    kernel_shape: Callable[[Shape], Shape] | None = None
    # The template it renders, when another family's (else ``<name>.cu.j2``).
    template_name: str | None = None
    # The vendor library that computes it rather than a template (``tuner.kernels.families.
    # vendor``: ``cublasLt`` or ``cublas``; empty for our kernels): nothing renders or compiles,
    # a config names which of the library's calls runs.
    vendor: str = ""

    @property
    def template(self) -> str:
        return self.template_name or f"{self.name}.cu.j2"

    @property
    def rewrites_operands(self) -> bool:
        """Whether its kernel runs on operands rewritten from the caller's (``kernel_shape``)."""
        return self.kernel_shape is not None

    @property
    def pads_c_rows(self) -> bool:
        """Whether its padded launch rounds up N, C's row length, in every layout (the vendor
        library's, which leaves its fast kernels when N is off the vector multiple:
        ``tuner.kernels.operand_padding``'s ``c_rows``)."""
        return bool(self.vendor)

    def run_shape(self, shape: Shape) -> Shape:
        """The product its kernel computes for the caller's ``shape``."""
        return shape if self.kernel_shape is None else self.kernel_shape(shape)

    def arch_problem(self, arch: int) -> str | None:
        """Why the family does not run on architecture ``arch`` (compute capability x 10, as
        ``min_arch``), or None."""
        if arch < self.min_arch:
            return f"{self.name} needs sm_{self.min_arch} or newer"
        if self.max_arch is not None and arch > self.max_arch:
            return (
                f"{self.name} runs on nothing newer than sm_{self.max_arch} (later chips drop "
                "its instructions)"
            )
        return None

    def unsupported(self, shape: Shape) -> str | None:
        """Why this family computes nothing for ``shape`` (its input type, layout or the type of
        C), or None."""
        if shape.dtype not in self.dtypes or shape.layout not in self.layouts:
            return (
                f"{self.name} computes {'/'.join(self.dtypes)} inputs in layouts "
                f"{'/'.join(self.layouts)}, not {shape.dtype} {shape.layout}"
            )
        if shape.out_dtype not in self.out_dtypes:
            return f"{self.name} writes C in {'/'.join(self.out_dtypes)}, not {shape.out_dtype}"
        return None

    def config(self, params: Params) -> Config:
        """Build a config in canonical order; unknown or missing names and bad values raise."""
        known = [p.name for p in self.params]
        # A name from before a parameter existed leaves it out: it reads as its implicit value.
        params = {
            **{n: v for n, v in IMPLICIT_VALUES.items() if n in known},
            **params,
        }
        extra = sorted(set(params) - set(known))
        missing = [n for n in known if n not in params]
        if extra or missing:
            raise InputError(
                f"family {self.name} takes parameters {', '.join(known)}"
                + (f"; unknown: {', '.join(extra)}" if extra else "")
                + (f"; missing: {', '.join(missing)}" if missing else "")
            )
        values: list[tuple[str, int]] = []
        for param in self.params:
            value = params[param.name]
            lowest = min(1, *param.values)  # 0 only for switches whose values list it
            if isinstance(value, bool) or not isinstance(value, int) or value < lowest:
                kind = "a positive integer" if lowest == 1 else "an integer >= 0"
                raise InputError(f"{param.name} must be {kind}, got {value!r}")
            values.append((param.name, value))
        return Config(self.name, tuple(values))

    def broken_rules(self, config: Config) -> list[str]:
        """Reasons of the rules ``config`` breaks (empty when valid). Stops at the first break
        of a rule that later rules' arithmetic depends on, so no rule divides by zero."""
        params = config.as_dict()
        broken = []
        for rule in self.rules:
            try:
                ok = rule.holds(params)
            except ZeroDivisionError:
                ok = False
            if not ok:
                broken.append(rule.reason)
        return broken

    def template_values(self, config: Config) -> dict[str, int]:
        """Every constant the template sees: the parameters plus derived integers."""
        params = config.as_dict()
        values = {**params, "THREADS": self.threads(params), **self.derive(params)}
        for key, value in values.items():
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"template constant {key} must be an int, got {value!r}")
        return values


# --- rules shared by several families -------------------------------------------------------


def whole_warps(threads: Callable[[Params], int]) -> Rule:
    return Rule(
        "threads per block must be a whole number of warps (a multiple of 32)",
        lambda p: threads(p) % 32 == 0 and threads(p) >= 32,
    )


def block_limit(threads: Callable[[Params], int]) -> Rule:
    return Rule(
        "threads per block must be at most 1024 (CUDA's limit)", lambda p: threads(p) <= 1024
    )


def float4_tiles(threads: Callable[[Params], int]) -> tuple[Rule, ...]:
    return (
        Rule(
            "BK must be a multiple of 4: tiles are loaded as float4 along k",
            lambda p: p["BK"] % 4 == 0,
        ),
        Rule(
            "BM*BK must be a multiple of 4*threads: the A tile loads in whole float4 passes",
            lambda p: (p["BM"] * p["BK"]) % (4 * threads(p)) == 0,
        ),
        Rule(
            "BN*BK must be a multiple of 4*threads: the B tile loads in whole float4 passes",
            lambda p: (p["BN"] * p["BK"]) % (4 * threads(p)) == 0,
        ),
    )


def float4_tile_loads(p: Params, threads: int) -> dict[str, int]:
    """How the ``threads`` of a block copy a BMxBK tile of A and a BKxBN tile of B in float4s,
    one row-major pass after another: float4s per tile row and a thread's loads per tile. The
    templates index with them; the footprints count them. Whole where ``float4_tiles`` holds."""
    return {
        "A_VECS_PER_ROW": p["BK"] // 4,
        "B_VECS_PER_ROW": p["BN"] // 4,
        "A_LOADS": (p["BM"] * p["BK"]) // (4 * threads),
        "B_LOADS": (p["BN"] * p["BK"]) // (4 * threads),
    }


def float4_row_steps(p: Params, threads: int) -> dict[str, int]:
    """Tile rows between two float4 loads of one thread (``float4_tile_loads``), for the
    templates that keep each thread on one column of float4s for every pass."""
    return {"A_ROW_STEP": (4 * threads) // p["BK"], "B_ROW_STEP": (4 * threads) // p["BN"]}


def with_values(params: tuple[Param, ...], **values: tuple[int, ...]) -> tuple[Param, ...]:
    """``params`` with other value lists for the names given."""
    return tuple(Param(p.name, values[p.name], p.doc) if p.name in values else p for p in params)


SPLITK_IN_GRID_Z = Rule(
    "SPLITK must be at most 65535: it is the grid's z dimension",
    lambda p: p["SPLITK"] <= 65535,
)
