"""Kernel families: their parameters, validity rules and resource footprint, in one place.

Each family matches one template, ``templates/<name>.cu.j2``. A family says which parameter
values exist (:class:`Param`), which combinations make a correct kernel (:class:`Rule`, each with
its reason), which extra constants the template needs (``derive``), and what one block of it
costs the chip (``footprint``: threads, shared memory, values held in registers). Everything here
is pure arithmetic on integers; nothing compiles or touches a GPU.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from tuner.config import ABBR_PARAM, Config
from tuner.errors import InputError
from tuner.shape import Shape

Params = Mapping[str, int]
FLOAT_BYTES = 4
# Extra floats per row of a shared-memory tile that is written transposed. A multiple of 4 keeps
# every row 16-byte aligned for float4 reads; it moves successive rows to other banks.
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
    # The template keeps split-K ticket counters in module-scope device memory, so two launches
    # of one loaded module must not overlap (templates/README.md); a caller that launches on
    # several streams loads one module per stream (tuner.client).
    module_counters: bool = False

    @property
    def template(self) -> str:
        return f"{self.name}.cu.j2"

    def config(self, params: Params) -> Config:
        """Build a config in canonical order; unknown or missing names and bad values raise."""
        known = [p.name for p in self.params]
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


def _whole_warps(threads: Callable[[Params], int]) -> Rule:
    return Rule(
        "threads per block must be a whole number of warps (a multiple of 32)",
        lambda p: threads(p) % 32 == 0 and threads(p) >= 32,
    )


def _block_limit(threads: Callable[[Params], int]) -> Rule:
    return Rule(
        "threads per block must be at most 1024 (CUDA's limit)", lambda p: threads(p) <= 1024
    )


def _float4_tiles(threads: Callable[[Params], int]) -> tuple[Rule, ...]:
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


def _with_values(params: tuple[Param, ...], **values: tuple[int, ...]) -> tuple[Param, ...]:
    """``params`` with other value lists for the names given."""
    return tuple(Param(p.name, values[p.name], p.doc) if p.name in values else p for p in params)


_SPLITK_IN_GRID_Z = Rule(
    "SPLITK must be at most 65535: it is the grid's z dimension",
    lambda p: p["SPLITK"] <= 65535,
)


# --- smem_tiling -----------------------------------------------------------------------------


def _smem_threads(p: Params) -> int:
    return p["BM"] * p["BN"]


SMEM_TILING = Family(
    name="smem_tiling",
    doc="Stage a BMxBK tile of A and a BKxBN tile of B in shared memory; one C value per thread.",
    params=(
        Param("BM", (8, 16, 32, 64), "rows of C per block"),
        Param("BN", (8, 16, 32, 64), "columns of C per block"),
        Param("BK", (8, 16, 32, 64), "depth of the k tile staged in shared memory"),
    ),
    rules=(_whole_warps(_smem_threads), _block_limit(_smem_threads)),
    threads=_smem_threads,
    footprint=lambda p: Footprint(
        threads=_smem_threads(p),
        smem_bytes=(p["BM"] * p["BK"] + p["BK"] * p["BN"]) * FLOAT_BYTES,
        dynamic_smem=False,
        accumulators=1,
        fragments=1,
    ),
)

# --- blocktile_1d ----------------------------------------------------------------------------


def _1d_threads(p: Params) -> int:
    return p["BM"] * p["BN"] // p["TM"]


BLOCKTILE_1D = Family(
    name="blocktile_1d",
    doc="Each thread computes a column of TM results of C, reusing one B value from a register.",
    params=(
        Param("BM", (32, 64, 128), "rows of C per block"),
        Param("BN", (32, 64, 128), "columns of C per block"),
        Param("BK", (4, 8, 16, 32), "depth of the k tile staged in shared memory"),
        Param("TM", (4, 8, 16, 32), "rows of C per thread"),
    ),
    rules=(
        Rule(
            "BM must be a multiple of TM: each thread owns TM whole rows",
            lambda p: p["BM"] % p["TM"] == 0,
        ),
        _whole_warps(_1d_threads),
        _block_limit(_1d_threads),
    ),
    threads=_1d_threads,
    footprint=lambda p: Footprint(
        threads=_1d_threads(p),
        smem_bytes=(p["BM"] * p["BK"] + p["BK"] * p["BN"]) * FLOAT_BYTES,
        dynamic_smem=False,
        accumulators=p["TM"],
        fragments=1,
    ),
)

# --- blocktile_2d and vectorized -------------------------------------------------------------


def _2d_threads(p: Params) -> int:
    return (p["BM"] // p["TM"]) * (p["BN"] // p["TN"])


_2D_PARAMS = (
    Param("BM", (32, 64, 128, 256), "rows of C per block"),
    Param("BN", (32, 64, 128, 256), "columns of C per block"),
    Param("BK", (8, 16, 32), "depth of the k tile staged in shared memory"),
    Param("TM", (4, 8, 16), "rows of the TMxTN register tile of each thread"),
    Param("TN", (4, 8, 16), "columns of the TMxTN register tile of each thread"),
)
_2D_RULES = (
    Rule(
        "BM must be a multiple of TM: threads tile the block's rows exactly",
        lambda p: p["BM"] % p["TM"] == 0,
    ),
    Rule(
        "BN must be a multiple of TN: threads tile the block's columns exactly",
        lambda p: p["BN"] % p["TN"] == 0,
    ),
    _whole_warps(_2d_threads),
    _block_limit(_2d_threads),
)


def _2d_footprint(p: Params, smem_floats: int) -> Footprint:
    return Footprint(
        threads=_2d_threads(p),
        smem_bytes=smem_floats * FLOAT_BYTES,
        dynamic_smem=False,
        accumulators=p["TM"] * p["TN"],
        fragments=p["TM"] + p["TN"],
    )


BLOCKTILE_2D = Family(
    name="blocktile_2d",
    doc="Each thread computes a TMxTN tile of C as outer products of register fragments.",
    params=_2D_PARAMS,
    rules=_2D_RULES,
    threads=_2d_threads,
    footprint=lambda p: _2d_footprint(p, p["BM"] * p["BK"] + p["BK"] * p["BN"]),
)

VECTORIZED = Family(
    name="vectorized",
    doc="blocktile_2d with float4 global and shared loads; A stored transposed in shared memory.",
    # TM and TN 4 or 8: fragments are read from shared memory as float4.
    params=_with_values(_2D_PARAMS, TM=(4, 8), TN=(4, 8)),
    rules=(
        *_2D_RULES,
        Rule(
            "TM must be a multiple of 4: A fragments are read from shared memory as float4",
            lambda p: p["TM"] % 4 == 0,
        ),
        Rule(
            "TN must be a multiple of 4: B fragments are read from shared memory as float4",
            lambda p: p["TN"] % 4 == 0,
        ),
        *_float4_tiles(_2d_threads),
    ),
    threads=_2d_threads,
    footprint=lambda p: _2d_footprint(p, p["BK"] * (p["BM"] + A_PAD) + p["BK"] * p["BN"]),
    derive=lambda p: {"A_PAD": A_PAD},
)

# --- warptile and pipelined ------------------------------------------------------------------


def _warp_threads(p: Params) -> int:
    return p["THREADS"]


def _wmiter(p: Params) -> int:
    return (p["WM"] * p["WN"]) // (32 * p["TM"] * p["TN"] * p["WNITER"])


def _warptile_derive(p: Params) -> dict[str, int]:
    wmiter = _wmiter(p)
    return {
        "WMITER": wmiter,
        "WSUBM": p["WM"] // wmiter,
        "WSUBN": p["WN"] // p["WNITER"],
        "A_PAD": A_PAD,
    }


_WARPTILE_PARAMS = (
    Param("BM", (64, 128, 256), "rows of C per block"),
    Param("BN", (64, 128, 256), "columns of C per block"),
    Param("BK", (8, 16, 32), "depth of the k tile staged in shared memory"),
    Param("WM", (32, 64, 128), "rows of C per warp"),
    Param("WN", (32, 64, 128), "columns of C per warp"),
    Param("WNITER", (1, 2, 4), "warp subtiles along n (WMITER along m is derived)"),
    Param("TM", (4, 8), "rows of each thread's register tile per warp subtile"),
    Param("TN", (4, 8), "columns of each thread's register tile per warp subtile"),
    Param("THREADS", (128, 256), "threads per block"),
)
_WARPTILE_RULES = (
    Rule(
        "BM must be a multiple of WM: the block is a whole grid of warp tiles",
        lambda p: p["BM"] % p["WM"] == 0,
    ),
    Rule(
        "BN must be a multiple of WN: the block is a whole grid of warp tiles",
        lambda p: p["BN"] % p["WN"] == 0,
    ),
    Rule(
        "(BM/WM)*(BN/WN) must equal THREADS/32: one warp per warp tile",
        lambda p: (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * 32 == p["THREADS"],
    ),
    Rule(
        "WM*WN must be a multiple of 32*TM*TN*WNITER: WMITER is a whole number",
        lambda p: (p["WM"] * p["WN"]) % (32 * p["TM"] * p["TN"] * p["WNITER"]) == 0,
    ),
    Rule(
        "WN must be a multiple of WNITER: warp subtiles are whole columns",
        lambda p: p["WN"] % p["WNITER"] == 0,
    ),
    Rule(
        "WM must be a multiple of WMITER: warp subtiles are whole rows",
        lambda p: p["WM"] % _wmiter(p) == 0,
    ),
    Rule(
        "WSUBN/TN must divide 32 and WSUBM/TM rows of lanes fill the warp: "
        "the 32 lanes tile a subtile exactly",
        lambda p: (
            (p["WN"] // p["WNITER"]) % p["TN"] == 0
            and 32 % ((p["WN"] // p["WNITER"]) // p["TN"]) == 0
            and (p["WM"] // _wmiter(p)) % p["TM"] == 0
        ),
    ),
    Rule(
        "TN must be a multiple of 4: B fragments are read from shared memory as float4",
        lambda p: p["TN"] % 4 == 0,
    ),
    Rule(
        "TM must be a multiple of 4: A fragments are read from shared memory as float4",
        lambda p: p["TM"] % 4 == 0,
    ),
    *_float4_tiles(_warp_threads),
)


def _warptile_footprint(p: Params, smem_floats: int, dynamic: bool) -> Footprint:
    wmiter = _wmiter(p)
    return Footprint(
        threads=p["THREADS"],
        smem_bytes=smem_floats * FLOAT_BYTES,
        dynamic_smem=dynamic,
        accumulators=wmiter * p["WNITER"] * p["TM"] * p["TN"],
        fragments=wmiter * p["TM"] + p["WNITER"] * p["TN"],
    )


def _warptile_buffer_floats(p: Params) -> int:
    """Floats of one shared-memory buffer of warptile.cu.j2: As[BK][BM+A_PAD] and Bs[BK][BN]."""
    return p["BK"] * (p["BM"] + A_PAD) + p["BK"] * p["BN"]


def warptile_register_budget(p: Params) -> int:
    """Registers warptile.cu.j2 budgets per thread when it prefetches the next k tile:
    accumulators, fragments, four per float4 staged, and 40 for addresses and indices."""
    loads = (p["BM"] + p["BN"]) * p["BK"] // (4 * p["THREADS"])
    fp = _warptile_footprint(p, 0, dynamic=False)
    return fp.accumulators + fp.fragments + 4 * loads + 40


def warptile_prefetches(p: Params) -> bool:
    """Whether warptile.cu.j2 fetches the next k tile into registers during the current one:
    when its register budget stays below the 255-register cap. The template gets it as PREFETCH."""
    return warptile_register_budget(p) <= 248


WARPTILE = Family(
    name="warptile",
    doc="Block tile -> warp tiles (WMxWN) -> WMITERxWNITER warp subtiles -> TMxTN thread tiles.",
    params=_WARPTILE_PARAMS,
    rules=_WARPTILE_RULES,
    threads=_warp_threads,
    footprint=lambda p: _warptile_footprint(p, _warptile_buffer_floats(p), dynamic=False),
    derive=lambda p: {**_warptile_derive(p), "BUFFERS": 1, "PREFETCH": int(warptile_prefetches(p))},
)

DOUBLEBUF = Family(
    name="doublebuf",
    doc="warptile with two shared-memory buffers (dynamic): the next k tile is stored into one "
    "while the other is read, so a k tile needs one barrier instead of two.",
    params=_WARPTILE_PARAMS,
    rules=_WARPTILE_RULES,
    threads=_warp_threads,
    footprint=lambda p: _warptile_footprint(p, 2 * _warptile_buffer_floats(p), dynamic=True),
    derive=lambda p: {**_warptile_derive(p), "BUFFERS": 2, "PREFETCH": int(warptile_prefetches(p))},
)

PIPELINED = Family(
    name="pipelined",
    doc="warptile with STAGES shared-memory buffers filled ahead of use by cp.async.",
    params=(*_WARPTILE_PARAMS, Param("STAGES", (2, 3, 4), "shared-memory buffers in flight")),
    rules=_WARPTILE_RULES,
    threads=_warp_threads,
    footprint=lambda p: _warptile_footprint(
        p, p["STAGES"] * (p["BM"] * (p["BK"] + A_PAD) + p["BK"] * p["BN"]), dynamic=True
    ),
    derive=_warptile_derive,
)

# --- splitk ---------------------------------------------------------------------------------

# Output tiles that the split-K counters can serve: the template declares two module-scope arrays
# of this many unsigned ints (a ticket counter and a "done" counter per output tile). A launch
# whose grid has more tiles than this does not split (slice 0 does all of K; see the template),
# so such shapes drop these configs as not useful (``tuner.space.shape_waste``).
SPLITK_MAX_TILES = 16384


def _splitk_derive(p: Params) -> dict[str, int]:
    return {**_warptile_derive(p), "MAX_TILES": SPLITK_MAX_TILES}


# Stated for the families whose blocks can have 64 threads; warptile's values (128 or 256
# threads, BK <= 32, BN <= 256) always satisfy it.
_ONE_COLUMN_PER_THREAD = Rule(
    "THREADS must be a multiple of BK/4 and of BN/4: each thread copies the same "
    "16-byte column of the A and B tiles in every pass",
    lambda p: p["THREADS"] % (p["BK"] // 4) == 0 and p["THREADS"] % (p["BN"] // 4) == 0,
)

SPLITK = Family(
    name="splitk",
    doc="pipelined with K split over SPLITK blocks per output tile (grid z), reduced in C "
    "in ticket order; for output grids too small to fill the chip.",
    params=(
        # Small block tiles (down to one warp row of 16) and small blocks: the grids this family
        # serves are small, and skinny M (16) wants many blocks streaming B.
        Param("BM", (16, 32, 64, 128), "rows of C per block"),
        Param("BN", (64, 128, 256), "columns of C per block"),
        Param("BK", (16, 32, 64), "depth of the k tile staged in shared memory"),
        Param("WM", (16, 32, 64), "rows of C per warp"),
        Param("WN", (32, 64), "columns of C per warp"),
        Param("WNITER", (1, 2), "warp subtiles along n (WMITER along m is derived)"),
        Param("TM", (4, 8), "rows of each thread's register tile per warp subtile"),
        Param("TN", (4, 8), "columns of each thread's register tile per warp subtile"),
        Param("THREADS", (64, 128), "threads per block"),
        # A slice's k range is short, so its loads must be in flight early: 3 or 4 stages.
        Param("STAGES", (3, 4), "shared-memory buffers in flight"),
        Param(
            "SPLITK",
            (2, 3, 4, 6, 8, 12, 16, 24, 32, 64),
            "slices of K per output tile: blocks along grid z, each over a contiguous k range",
        ),
    ),
    rules=(
        *_WARPTILE_RULES,
        _ONE_COLUMN_PER_THREAD,
        _SPLITK_IN_GRID_Z,
    ),
    threads=_warp_threads,
    footprint=lambda p: _warptile_footprint(
        p, p["STAGES"] * (p["BM"] * (p["BK"] + A_PAD) + p["BK"] * p["BN"]), dynamic=True
    ),
    derive=_splitk_derive,
    module_counters=True,
)

# --- warptile_splitk -------------------------------------------------------------------------


WARPTILE_SPLITK = Family(
    name="warptile_splitk",
    doc="warptile (register-prefetched main loop) with K split over SPLITK blocks per output "
    "tile (grid z), reduced in C as splitk does; for output grids too small to fill the chip.",
    params=(
        *_with_values(_WARPTILE_PARAMS, BM=(32, 64, 128, 256), THREADS=(64, 128, 256)),
        SPLITK.params[-1],
    ),
    rules=SPLITK.rules,
    threads=_warp_threads,
    footprint=WARPTILE.footprint,
    derive=lambda p: {
        **_splitk_derive(p),
        "BUFFERS": 1,
        "PREFETCH": int(warptile_prefetches(p)),
    },
    module_counters=True,
)

# --- streamk --------------------------------------------------------------------------------

# Blocks of a persistent grid at most. The ticket counters of templates/streamk.cu.j2 are twice as
# many: fewer stream-K tiles than blocks, then one staggered first tile per block.
STREAMK_MAX_BLOCKS = 1024


def _streamk_max_registers(p: Params) -> int:
    """streamk's register cap (``__maxnreg__``): warptile's budget, at least 168 (NVRTC spilled
    the 128x128 tile of 256 threads under its budget of 144), and no more than SMBLOCKS blocks
    per SM leave (a multiple of 8). Left to itself the compiler took 249 registers for the
    128x256 tile where warptile takes 216, and its k loop issued less often (Nsight Compute at
    4096^3: issue active 0.78 against 0.83; see benchmarks/speed.md)."""
    per_sm = 65536 // (p["THREADS"] * p["SMBLOCKS"])
    return min(max(warptile_register_budget(p), 168), per_sm, 255) // 8 * 8


def is_persistent(p: Params) -> bool:
    """Whether the grid is sized by the device (SMBLOCKS per SM) rather than by the shape."""
    return "SMBLOCKS" in p


def persistent_blocks(p: Params, sm_count: int) -> int:
    """Blocks in a persistent grid of ``streamk``: SMBLOCKS per SM, at most STREAMK_MAX_BLOCKS."""
    return min(sm_count * p["SMBLOCKS"], STREAMK_MAX_BLOCKS)


STREAMK = Family(
    name="streamk",
    doc="warptile's main loop in a persistent grid (SMBLOCKS blocks per SM): whole output tiles "
    "in data-parallel waves, then the k tiles of the last partial wave's tiles shared evenly "
    "over all blocks (stream-K), their pieces summed in C as splitk does; the next tile's loads "
    "overlap the finished tile's stores.",
    params=(
        *_with_values(_WARPTILE_PARAMS, BM=(32, 64, 128, 256), THREADS=(64, 128, 256)),
        Param("SMBLOCKS", (1, 2, 3, 4), "blocks per SM in the persistent grid"),
        Param(
            "STAGGER",
            (0, 1),
            "1: each block starts its first tile part-way through K (spread evenly over the "
            "blocks) and finishes it last, so blocks write C at different times",
        ),
    ),
    rules=(
        *_WARPTILE_RULES,
        _ONE_COLUMN_PER_THREAD,
        Rule(
            "the next k tile must fit in registers beside the accumulators (register prefetch): "
            "accumulators + fragments + 4 * float4 loads per thread + 40 <= 248",
            warptile_prefetches,
        ),
    ),
    threads=_warp_threads,
    footprint=WARPTILE.footprint,
    derive=lambda p: {
        **_warptile_derive(p),
        "MAX_TILES": 2 * STREAMK_MAX_BLOCKS,  # stream-K tiles, then staggered first tiles
        "MAX_REGISTERS": _streamk_max_registers(p),
    },
    module_counters=True,
)

# --- skinny ---------------------------------------------------------------------------------

# A streaming kernel reads B once per block row; past this many block rows a tiled family,
# which shares B tiles across more rows, moves fewer bytes.
SKINNY_MAX_ROW_BLOCKS = 8


def _skinny_threads(p: Params) -> int:
    return p["BN"] * p["LK"] // p["TN"]


def _skinny_waste(p: Params, shape: Shape) -> str | None:
    row_blocks = -(-shape.m // p["BM"])
    if row_blocks > SKINNY_MAX_ROW_BLOCKS:
        return (
            f"BM={p['BM']} gives {row_blocks} block rows for M={shape.m}: B would be streamed "
            f"from memory more than {SKINNY_MAX_ROW_BLOCKS} times"
        )
    return None


SKINNY = Family(
    name="skinny",
    doc="Few rows of C: lanes stream B from global memory into registers (no shared-memory "
    "tiles), LK lanes per column split k and meet by shuffles, blocks split K (grid z) and "
    "meet in C by atomic adds; for small M, where reading B bounds the time.",
    params=(
        Param("BM", (1, 2, 4, 8, 16, 32), "rows of C per block (all held by every lane)"),
        Param("BN", (32, 64, 128, 256, 512), "columns of C per block"),
        Param("TN", (4, 8), "columns per lane, read from B as float4"),
        Param("LK", (1, 2, 4, 8, 16, 32), "lanes of a warp along k (32/LK along n)"),
        Param("KU", (1, 2, 4, 8), "consecutive k per lane and step: B loads in flight"),
        Param(
            "SPLITK",
            (1, 2, 4, 8, 16, 32, 64),
            "slices of K per output tile: blocks along grid z, summed in C",
        ),
    ),
    rules=(
        Rule(
            "TN must be a multiple of 4: B is read as float4",
            lambda p: p["TN"] % 4 == 0,
        ),
        Rule(
            "BN must be a multiple of (32/LK)*TN: warps cover whole column strips",
            lambda p: p["BN"] % ((32 // p["LK"]) * p["TN"]) == 0,
        ),
        _whole_warps(_skinny_threads),
        _block_limit(_skinny_threads),
        _SPLITK_IN_GRID_Z,
    ),
    threads=_skinny_threads,
    footprint=lambda p: Footprint(
        threads=_skinny_threads(p),
        smem_bytes=FLOAT_BYTES if p["SPLITK"] > 1 else 0,  # the block's split-K ticket
        dynamic_smem=False,
        accumulators=p["BM"] * p["TN"],
        fragments=2 * p["KU"] * p["TN"] + p["KU"],  # B of this chunk and the next, A
    ),
    derive=lambda p: {"MAX_TILES": SPLITK_MAX_TILES},
    k_step=lambda p: p["KU"] * p["LK"],
    waste=_skinny_waste,
    module_counters=True,
)

# --- dmma -----------------------------------------------------------------------------------

# Elements added to each shared-memory row of dmma.cu.j2 (A's rows of BK, B's of BN), by WIDEN.
# Double tiles: a row length of 4 modulo 16 doubles (12 for BK = 8) puts the fragment reads of a
# half-warp (4 rows x 4 columns) in 16 different bank pairs. Float tiles: 4 modulo 32 for A's
# reads (8 rows x 4 columns) and 8 modulo 32 for B's (4 rows x 8 columns) fill the 32 banks.
DMMA_ROW_PADS = {0: (4, 4), 1: (4, 8)}
DOUBLE_BYTES = 8


def _dmma_threads(p: Params) -> int:
    return (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * 32


def _dmma_footprint(p: Params) -> Footprint:
    mma_tiles = (p["WM"] // 16) * (p["WN"] // 8)
    a_pad, b_pad = DMMA_ROW_PADS[p["WIDEN"]]
    buffer = p["BM"] * (p["BK"] + a_pad) + p["BK"] * (p["BN"] + b_pad)
    element = FLOAT_BYTES if p["WIDEN"] else DOUBLE_BYTES
    loads = (p["BM"] + p["BN"]) * p["BK"] // (4 * _dmma_threads(p))
    return Footprint(
        threads=_dmma_threads(p),
        smem_bytes=2 * buffer * element,
        dynamic_smem=True,
        # In 32-bit registers: four FP64 sums per m16n8 tile, the A and B fragments of one mma
        # k step as doubles, and the next k tile's float4s staged.
        accumulators=8 * mma_tiles,
        fragments=(p["WM"] // 16) * p["MK"] + (p["WN"] // 8) * p["MK"] // 2 + 4 * loads,
    )


# Block and warp tiles and the mma depth, shared by dmma and dmma_pipelined.
_DMMA_TILE_PARAMS = (
    *_2D_PARAMS[:3],  # BM, BN, BK
    Param("WM", (16, 32, 64), "rows of C per warp (m16 tiles of the mma)"),
    Param("WN", (16, 32, 64), "columns of C per warp (n8 tiles of the mma)"),
    Param("MK", (4, 8, 16), "k depth of one mma.sync (m16n8k4, m16n8k8 or m16n8k16)"),
)
# Besides splitk's values, 33 and 66: an output grid of 4, 8 or 16 tiles split 33 or 66 ways fills
# whole waves of the H100's 132 SMs (4 x 33) at one to four blocks per SM.
_DMMA_SPLITK = Param(
    "SPLITK", tuple(sorted({1, 33, 66, *SPLITK.params[-1].values})), SPLITK.params[-1].doc
)
_DMMA_MINBLOCKS = Param(
    "MINBLOCKS",
    (1, 2, 3, 4),
    "blocks per SM the compiler must leave registers for (__launch_bounds__)",
)

DMMA = Family(
    name="dmma",
    doc="FP32 GEMM on the FP64 tensor cores: float tiles widened to double before the shared "
    "store or as fragments are read (WIDEN), mma.sync m16n8kMK in FP64 (exact products, FP64 "
    "sums), one rounding of C to float; two shared buffers with the next k tile fetched into "
    "registers; K split over grid z as warptile_splitk when SPLITK > 1.",
    params=(
        *_DMMA_TILE_PARAMS,
        _DMMA_SPLITK,
        _DMMA_MINBLOCKS,
        Param(
            "WIDEN",
            (0, 1),
            "0: tiles widened to double before the shared store; 1: kept as float in shared "
            "memory and widened as fragments are read",
        ),
    ),
    rules=(
        Rule(
            "BM must be a multiple of WM and BN of WN: the block is a whole grid of warp tiles",
            lambda p: p["BM"] % p["WM"] == 0 and p["BN"] % p["WN"] == 0,
        ),
        _whole_warps(_dmma_threads),
        _block_limit(_dmma_threads),
        Rule(
            "BK must be a multiple of MK: a k tile is whole mma steps",
            lambda p: p["BK"] % p["MK"] == 0,
        ),
        Rule(
            "BM*BK and BN*BK must be multiples of 4*threads: the tiles load in whole float4 passes",
            lambda p: (
                (p["BM"] * p["BK"]) % (4 * _dmma_threads(p)) == 0
                and (p["BN"] * p["BK"]) % (4 * _dmma_threads(p)) == 0
            ),
        ),
        _SPLITK_IN_GRID_Z,
    ),
    threads=_dmma_threads,
    footprint=_dmma_footprint,
    derive=lambda p: {
        "A_ROW_PAD": DMMA_ROW_PADS[p["WIDEN"]][0],
        "B_ROW_PAD": DMMA_ROW_PADS[p["WIDEN"]][1],
        "MAX_TILES": SPLITK_MAX_TILES,
    },
    module_counters=True,
)

# --- dmma_pipelined -------------------------------------------------------------------------

# Floats added to each A row of a dmma_pipelined stage, by BK: row lengths of 8, 16 and 36 floats
# put the vector fragment reads of a phase (two rows, four lanes' k ranges) in distinct banks.
# B's rows are not padded; their chunks are XOR-swizzled (templates/dmma_pipelined.cu.j2).
DMMA_PIPELINED_A_PADS = {8: 0, 16: 0, 32: 4}


def _dmma_pipelined_footprint(p: Params) -> Footprint:
    mt, nt = p["WM"] // 16, p["WN"] // 8
    stage = p["BM"] * (p["BK"] + DMMA_PIPELINED_A_PADS[p["BK"]]) + p["BK"] * p["BN"]
    vw = min(p["BK"] // 4, 4)  # k per vector read of a fragment row
    return Footprint(
        threads=_dmma_threads(p),
        smem_bytes=p["STAGES"] * stage * FLOAT_BYTES,
        dynamic_smem=True,
        accumulators=8 * mt * nt,
        # In 32-bit registers: the A floats of one vector group (2*MT rows of VW), one mma step's
        # A fragments as doubles and the B fragments of two n8 tiles (B is widened as it is
        # used); cp.async needs no staging registers. With the overhead this is under nvcc's
        # count by a median of 10 % (at most 34 %) over the H100 sweep rows: it prunes leniently,
        # and compiling finds the spills.
        fragments=mt * 2 * vw + mt * p["MK"] + p["MK"],
    )


DMMA_PIPELINED = Family(
    name="dmma_pipelined",
    doc="dmma (FP32 GEMM on the FP64 tensor cores, one rounding of C) with float tiles in a "
    "STAGES-deep cp.async ring, vector fragment reads along a permuted k and n, and float4 C "
    "stores; K split over grid z as dmma when SPLITK > 1.",
    params=(
        *_DMMA_TILE_PARAMS,
        Param("STAGES", (2, 3, 4), "shared-memory buffers in flight"),
        _DMMA_SPLITK,
        _DMMA_MINBLOCKS,
    ),
    rules=DMMA.rules,
    threads=_dmma_threads,
    footprint=_dmma_pipelined_footprint,
    derive=lambda p: {
        "A_ROW_PAD": DMMA_PIPELINED_A_PADS[p["BK"]],
        "MAX_TILES": SPLITK_MAX_TILES,
    },
    module_counters=True,
)

FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        SMEM_TILING,
        BLOCKTILE_1D,
        BLOCKTILE_2D,
        VECTORIZED,
        WARPTILE,
        DOUBLEBUF,
        PIPELINED,
        SPLITK,
        WARPTILE_SPLITK,
        STREAMK,
        SKINNY,
        DMMA,
        DMMA_PIPELINED,
    )
}


def get_family(name: str) -> Family:
    """The family called ``name``; an unknown name raises listing the known ones."""
    try:
        return FAMILIES[name]
    except KeyError:
        raise InputError(f"unknown family {name!r}; choose one of {', '.join(FAMILIES)}") from None


_TOKEN_RE = re.compile(r"^([a-z]+)(\d+)$")
_ASSIGN_RE = re.compile(r"^\s*([A-Za-z]+)\s*=\s*(-?\d+)\s*$")


def parse_config(text: str, family: str | None = None) -> Config:
    """Read a config from its procedural name, or from ``BM=128,BN=128,...`` with ``family``.

    The result has canonical order but is not checked against the rules (see ``Family``).
    """
    text = text.strip()
    if "=" in text:
        if family is None:
            raise InputError(f"config {text!r} is given as parameters: name its family too")
        fam = get_family(family)
        params: dict[str, int] = {}
        for part in text.split(","):
            match = _ASSIGN_RE.match(part)
            if not match:
                raise InputError(f"config parameter {part.strip()!r} must look like NAME=INTEGER")
            params[match.group(1).upper()] = int(match.group(2))
        return fam.config(params)
    names = sorted((n for n in FAMILIES if text.startswith(n + "_")), key=len, reverse=True)
    if not names:
        raise InputError(f"config name {text!r} must start with a family: {', '.join(FAMILIES)}")
    fam = FAMILIES[names[0]]
    if family is not None and family != fam.name:
        raise InputError(f"config {text!r} belongs to family {fam.name}, not {family}")
    params = {}
    for token in text[len(fam.name) + 1 :].split("_"):
        match = _TOKEN_RE.match(token)
        if not match or match.group(1) not in ABBR_PARAM:
            raise InputError(f"config name {text!r} has an unreadable part {token!r}")
        params[ABBR_PARAM[match.group(1)]] = int(match.group(2))
    return fam.config(params)
