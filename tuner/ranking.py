"""An analytic cost model of the warptile-style kernels, to rank candidates before measuring.

The model knows only a config's parameters, the shape and the device's limits (plus a few
published throughput figures per architecture, below, and ``WARP_READY``). It
estimates a kernel's time in SM clock cycles:

* the grid is ``ceil(M/BM) * ceil(N/BN)`` output tiles (padding at the matrix edges is paid in
  full) times SPLITK blocks per tile for ``splitk`` and ``warptile_splitk``, each over
  ``1/SPLITK`` of the k tiles;
* ``r`` blocks share an SM (the occupancy estimate of ``tuner.resources.static_check``, or fewer
  when the grid is small); the grid runs in full waves of ``SMs * r`` blocks and a last, partial
  wave whose blocks share their SMs with fewer others (wave quantization);
* one k tile of one SM costs the largest of: instruction issue (FMAs, float4 shared loads of the
  fragments, the global loads and shared stores of the tile; ``fma_lanes / 32`` warp
  instructions a clock, scaled by the share of issue slots the resident warps can fill,
  ``issue_efficiency``), shared-memory bandwidth, L2 bandwidth for the block tiles, and the
  global-load latency divided by the tiles loaded ahead (1 for warptile, doublebuf and
  warptile_splitk with register prefetch, STAGES-1 for pipelined and splitk; without prefetch
  the latency adds to every tile);
* split-K adds, per wave, one hand-off (the first slice stores its C tile, fences and raises
  a flag: about two global-memory latencies) and the atomic adds of the SPLITK-1 later slices
  into C (one 16-byte reduction per four values, ``REDUCTIONS_PER_CLK`` chip-wide).
* ``streamk`` (a persistent grid) runs every block for the whole launch over an equal share of
  the k tiles, plus the hand-off and atomic adds of its stream-K tiles (``_persistent_estimate``).
* ``skinny`` (no shared-memory tiles, B streamed) has a model of its own, ``_stream_estimate``.

Families other than the warp-tiled ones are ranked by the same arithmetic with their own thread
tiles (one warp tile per block row of threads), which is rougher but never invalid. The model
does not see ``doublebuf``'s one barrier less per k tile.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import optuna

from tuner.config import Config
from tuner.families import SPLITK_MAX_TILES, get_family, persistent_blocks
from tuner.resources import DeviceLimits, ResourceCheck, static_check
from tuner.shape import Shape


@dataclass(frozen=True)
class Throughput:
    """Published per-SM rates of an architecture (not measured by this project)."""

    fma_lanes: int  # FP32 FMA lanes per SM (warp instructions a clock = fma_lanes / 32)
    smem_bytes_per_clk: int  # shared-memory bandwidth per SM
    l2_bytes_per_clk: int  # L2 -> SM bandwidth per SM
    global_latency: int  # clocks from a global load to its data (L2 hit / DRAM mix)
    dram_bytes_per_clk: int  # device-memory bandwidth of the whole chip, per SM clock


THROUGHPUT: dict[str, Throughput] = {
    # DRAM: datasheet bandwidth / boost clock (A100 80GB, RTX A6000, L40S-class, H100 SXM).
    "sm_80": Throughput(64, 128, 64, 600, 1400),
    "sm_86": Throughput(128, 128, 64, 600, 550),
    "sm_89": Throughput(128, 128, 64, 600, 400),
    "sm_90": Throughput(128, 128, 64, 600, 1690),
}


# 16-byte atomic reductions into C that L2 completes per SM clock, chip-wide (an assumption of
# this model, not a measured figure).
REDUCTIONS_PER_CLK = 64


# Schedulers (SM sub-partitions) per SM, each issuing one warp instruction a clock, and the chance
# that one warp of the k loop has an instruction ready in a given clock: one warp per scheduler
# issues 90 % of the clocks, two 99 %. The one figure of this model chosen by looking at
# measurements: of 0.7, 0.8 and 0.9, 0.9 agreed best with the H100 sweep tables overall
# (benchmarks/speed.md, "The cost model").
SCHEDULERS = 4
WARP_READY = 0.9


# Instructions that one load of ``skinny``'s unchecked loop costs beside itself: address
# arithmetic (nvcc 13.0 for sm_90 put 4.5 to 4.7 non-FMA instructions per load in the loop
# bodies of three configs; the checked loop, which only ragged edges run, about 16).
SKINNY_LOAD_ISSUE = 5


def issue_efficiency(warps: int) -> float:
    """Share of the SM's issue slots that ``warps`` resident warps fill: a scheduler without a
    warp issues nothing, and one with w warps misses a clock only when none of them is ready."""
    active = min(SCHEDULERS, max(warps, 1))
    per_scheduler = max(warps, 1) / active
    ready = 1.0 - float((1.0 - WARP_READY) ** per_scheduler)
    return active / SCHEDULERS * ready


@dataclass(frozen=True)
class Estimate:
    """The model's view of one config on one shape."""

    cycles: float
    blocks: int  # output tiles x SPLITK
    blocks_per_sm: int  # resident blocks per SM in a full wave
    waves: float  # blocks / (SMs * blocks_per_sm)
    wave_efficiency: float  # waves / ceil(waves)
    edge_efficiency: float  # useful M*N / padded M*N

    @classmethod
    def of(
        cls,
        cycles: float,
        blocks: int,
        per_sm: int,
        tile: tuple[int, int],
        shape: Shape,
        device: DeviceLimits,
    ) -> Estimate:
        """An estimate of ``cycles`` for ``blocks`` blocks of ``tile`` (BM, BN), ``per_sm`` of
        them resident per SM."""
        waves = blocks / (device.sm_count * per_sm)
        tiles = -(-shape.m // tile[0]) * -(-shape.n // tile[1])
        return cls(
            cycles=cycles,
            blocks=blocks,
            blocks_per_sm=per_sm,
            waves=waves,
            wave_efficiency=waves / -(-blocks // (device.sm_count * per_sm)),
            edge_efficiency=(shape.m * shape.n) / (tiles * tile[0] * tile[1]),
        )


def _tiles(config: Config) -> tuple[int, int, int, int]:
    """(accumulators, fragment floats, WM, WN) of one thread / one warp for any family."""
    family = get_family(config.family)
    params = config.as_dict()
    fp = family.footprint(params)
    wm, wn = family.cost.warp_tile_of(params)
    return fp.accumulators, fp.fragments, wm, wn


@dataclass(frozen=True)
class _Grid:
    """How a config's blocks meet the chip: shared by both cost models."""

    check: ResourceCheck
    tiles: int  # output tiles
    split: int  # SPLITK blocks per tile (1 when the grid has more tiles than ticket counters)
    blocks: int
    per_sm: int  # resident blocks per SM the resources allow
    r_full: int  # resident blocks per SM in a full wave of this grid


def _grid(config: Config, shape: Shape, device: DeviceLimits) -> _Grid:
    params = config.as_dict()
    check = static_check(config, device)
    tiles = -(-shape.m // params["BM"]) * -(-shape.n // params["BN"])
    # The kernel splits only when every tile has its ticket counters (see templates/splitk).
    split = params.get("SPLITK", 1) if tiles <= SPLITK_MAX_TILES else 1
    blocks = tiles * split
    per_sm = max(check.occupancy.blocks_per_sm, 1)
    return _Grid(check, tiles, split, blocks, per_sm, min(per_sm, -(-blocks // device.sm_count)))


def _stream_estimate(config: Config, shape: Shape, device: DeviceLimits) -> Estimate:
    """``skinny``: no shared-memory tiles; B streams from memory once per block row.

    Time is the largest of: reading every byte once from DRAM (and B again from L2 for each
    further block row; at most the L2 bandwidth of each SM with a block), scaled up when the
    resident lanes keep too few bytes in flight to cover the latency; and issuing the FMAs and
    loads of the padded product; and each lane's chain of chunks (``chain`` below). Split-K
    adds the atomic adds of the later slices into C (one 16-byte reduction per four values) and
    one hand-off latency."""
    rates = THROUGHPUT.get(device.arch, THROUGHPUT["sm_90"])
    p = config.as_dict()
    bm, bn = p["BM"], p["BN"]
    g = _grid(config, shape, device)
    row_blocks, col_blocks = -(-shape.m // bm), -(-shape.n // bn)
    dram = 4 * (shape.k * shape.n + shape.m * shape.k + shape.m * shape.n)
    l2 = 4 * shape.k * shape.n * (row_blocks - 1)
    active_sms = min(device.sm_count, g.blocks)  # each SM pulls at most its L2 bandwidth
    memory = max(
        dram / rates.dram_bytes_per_clk, (dram + l2) / (active_sms * rates.l2_bytes_per_clk)
    )
    resident = min(g.blocks, device.sm_count * g.per_sm)
    in_flight = resident * g.check.threads * p["KU"] * p["TN"] * 4  # bytes requested, chip-wide
    needed = rates.global_latency * rates.dram_bytes_per_clk  # Little's law at full bandwidth
    memory *= max(1.0, needed / max(in_flight, 1))
    # Per block row, k and lane: BM*TN FMAs, TN/4 loads of B, BM loads of A (a quarter as
    # many when chunks of 4 k are read as float4, half as many as float2).
    a_loads = bm / 4 if p["KU"] % 4 == 0 else bm / 2 if p["KU"] == 2 else bm
    per_lane_k = bm * p["TN"] + p["TN"] / 4 + a_loads
    lanes = row_blocks * col_blocks * bn / p["TN"]
    arithmetic = lanes * shape.k * per_lane_k / (device.sm_count * rates.fma_lanes)
    # Each lane runs its chunks one after another: it requests B (and A), waits, then issues the
    # chunk's FMAs and load instructions while its scheduler's other warps take turns. Few warps
    # per scheduler leave the wait exposed; many make the scheduler's issue the bound. (The
    # template requests the next chunk of B before computing the current one; charging the
    # latency and the chunk's issue in sequence still ranked the 55 configs measured on the H200
    # better than overlapping them: Spearman 0.72 against 0.53, benchmarks/speed.md.)
    waves = -(-g.blocks // (device.sm_count * g.per_sm))
    per_scheduler = resident * (g.check.threads / device.warp_size) / (device.sm_count * SCHEDULERS)
    b_loads = p["KU"] * p["TN"] / 4
    chunk = bm * p["KU"] * p["TN"] + SKINNY_LOAD_ISSUE * (a_loads * p["KU"] + b_loads)
    chunks = -(-shape.k // (p["KU"] * p["LK"] * g.split))
    chain = waves * chunks * max(chunk * max(per_scheduler, 1.0), rates.global_latency + chunk)
    reductions = (g.split - 1) * g.tiles * bm * bn / 4 / REDUCTIONS_PER_CLK
    cycles = max(memory, arithmetic, chain) + reductions
    cycles += rates.global_latency if g.split > 1 else 0
    return Estimate.of(cycles, g.blocks, g.r_full, (bm, bn), shape, device)


def estimate(config: Config, shape: Shape, device: DeviceLimits) -> Estimate:
    """Estimated cycles of ``config`` on ``shape`` (lower is better)."""
    family = get_family(config.family)
    if family.cost.schedule == "stream":
        return _stream_estimate(config, shape, device)
    rates = THROUGHPUT.get(device.arch, THROUGHPUT["sm_90"])
    params = config.as_dict()
    bm, bn, bk = params["BM"], params["BN"], params["BK"]
    g = _grid(config, shape, device)
    tiles, split, blocks, r_full = g.tiles, g.split, g.blocks, g.r_full
    threads = g.check.threads
    warps = -(-threads // device.warp_size)
    accumulators, fragments, wm, wn = _tiles(config)

    all_k_tiles = -(-shape.k // bk)
    k_tiles = -(-all_k_tiles // split)  # k tiles of the longest slice
    tile_loads = max((bm + bn) * bk // (4 * threads), 1)  # float4 loads per thread per tile
    ahead = family.cost.loads_ahead(params)

    def tile_cycles(resident: int) -> float:
        """Clocks for one k tile of every block resident on one SM."""
        per_thread = bk * (accumulators + fragments / 4) + 2 * tile_loads + 2
        issue = resident * warps * per_thread / (rates.fma_lanes / 32)
        issue /= issue_efficiency(resident * warps)
        smem = resident * (warps * bk * (wm + wn) + (bm + bn) * bk) * 4 / rates.smem_bytes_per_clk
        l2 = resident * (bm + bn) * bk * 4 / rates.l2_bytes_per_clk
        busy = max(issue, smem, l2)
        if ahead == 0:  # a block waits for its tile; the other resident blocks fill the wait
            return max(busy, rates.global_latency + busy / resident)
        return max(busy, rates.global_latency / ahead)

    if family.cost.schedule == "persistent":
        return _persistent_estimate(config, shape, device, tiles, all_k_tiles, tile_cycles)
    full_waves, rest = divmod(blocks, device.sm_count * r_full)
    cycles = full_waves * k_tiles * tile_cycles(r_full)
    if rest:
        r_last = -(-rest // device.sm_count)
        cycles += k_tiles * tile_cycles(r_last)
    if split > 1:  # the first slice's hand-off, then the later slices' atomic adds into C
        handoff = 2 * rates.global_latency
        adds = (split - 1) * tiles * bm * bn / 4 / REDUCTIONS_PER_CLK
        cycles += (full_waves + (1 if rest else 0)) * handoff + adds
    return Estimate.of(cycles, blocks, r_full, (bm, bn), shape, device)


def _persistent_estimate(
    config: Config,
    shape: Shape,
    device: DeviceLimits,
    tiles: int,
    k_tiles: int,
    tile_cycles: Callable[[int], float],
) -> Estimate:
    """``streamk``: SMBLOCKS blocks on every SM for the whole launch, each running an equal
    share of all k tiles (to one); the ``tiles % blocks`` stream-K tiles are cut into pieces
    (about ``blocks / stream-K tiles`` each), all but one of which add into C."""
    rates = THROUGHPUT.get(device.arch, THROUGHPUT["sm_90"])
    params = config.as_dict()
    per_sm = params["SMBLOCKS"]
    blocks = persistent_blocks(params, device.sm_count)
    resident = min(per_sm, -(-blocks // device.sm_count))
    cycles = -(-tiles * k_tiles // blocks) * tile_cycles(resident)
    sk_tiles = tiles % blocks
    if sk_tiles:
        pieces = min(-(-blocks // sk_tiles) + 1, k_tiles)
        adds = (pieces - 1) * sk_tiles * params["BM"] * params["BN"] / 4 / REDUCTIONS_PER_CLK
        cycles += 2 * rates.global_latency + adds
    return Estimate.of(cycles, blocks, resident, (params["BM"], params["BN"]), shape, device)


def rank(configs: list[Config], shape: Shape, device: DeviceLimits) -> list[Config]:
    """``configs`` from the fastest estimate to the slowest (ties by name, so deterministic)."""
    return sorted(configs, key=lambda c: (estimate(c, shape, device).cycles, c.name))


# --- a sampler that follows the model, corrected by what the study has measured -------------

NEIGHBOURS = 3  # measured configs whose error corrects a candidate's estimate


class RankedSampler(optuna.samplers.BaseSampler):
    """Proposes only valid candidates: the one with the lowest estimate, corrected online.

    Before anything is measured it follows the model's ranking. Afterwards each untried
    candidate's estimate is multiplied by the geometric mean of measured/estimated over its
    ``NEIGHBOURS`` nearest measured candidates (L1 distance over the parameters' ordinal
    indices, +1 across families), so the model's errors in one region of the space are learned
    from this study's own measurements and nothing else. Among equal scores (the model cannot
    tell them apart) it takes the candidates farthest from every measured one, then one at
    random (``seed``).
    Needs :meth:`bind` (``tuner.study.Study`` calls it) to know the shape and its candidates.
    """

    def __init__(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)
        self._names: list[str] = []
        self._configs: list[Config] = []
        self._log_est = np.zeros(0)
        self._coords = np.zeros((0, 0))
        self._index: dict[str, int] = {}
        self._families: tuple[str, ...] = ()
        self._chosen: dict[int, Config] = {}
        self._fallback = optuna.samplers.RandomSampler(seed=seed)

    def bind(
        self,
        shape: Shape,
        device: DeviceLimits,
        candidates: list[Config],
        families: tuple[str, ...],
    ) -> None:
        self._configs = sorted(candidates, key=lambda c: c.name)
        self._names = [c.name for c in self._configs]
        self._index = {name: i for i, name in enumerate(self._names)}
        self._families = families
        self._log_est = np.log(
            np.array([estimate(c, shape, device).cycles for c in self._configs], dtype=float)
        )
        keys = sorted({p.name for f in families for p in get_family(f).params})
        coords = np.zeros((len(self._configs), len(keys) + 1))
        for row, config in enumerate(self._configs):
            fam = get_family(config.family)
            values = {p.name: p.values.index(config[p.name]) for p in fam.params}
            coords[row, :-1] = [values.get(key, -1) for key in keys]
            coords[row, -1] = families.index(config.family)
        self._coords = coords

    def infer_relative_search_space(
        self, study: optuna.Study, trial: optuna.trial.FrozenTrial
    ) -> dict[str, optuna.distributions.BaseDistribution]:
        return {}

    def sample_relative(
        self,
        study: optuna.Study,
        trial: optuna.trial.FrozenTrial,
        search_space: dict[str, optuna.distributions.BaseDistribution],
    ) -> dict[str, Any]:
        return {}

    def before_trial(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        if self._configs and "fixed_params" not in trial.system_attrs:
            choice = self._choose(study)
            if choice is not None:
                self._chosen[trial.number] = choice

    def sample_independent(
        self,
        study: optuna.Study,
        trial: optuna.trial.FrozenTrial,
        param_name: str,
        param_distribution: optuna.distributions.BaseDistribution,
    ) -> Any:
        config = self._chosen.get(trial.number)
        if config is None:
            return self._fallback.sample_independent(study, trial, param_name, param_distribution)
        if param_name == "family":
            return config.family
        family, _, name = param_name.partition(".")
        if family != config.family:  # a parameter of another family: not used by this config
            return self._fallback.sample_independent(study, trial, param_name, param_distribution)
        param = next(p for p in get_family(family).params if p.name == name)
        return param.values.index(config[name])

    def after_trial(
        self,
        study: optuna.Study,
        trial: optuna.trial.FrozenTrial,
        state: optuna.trial.TrialState,
        values: Sequence[float] | None,
    ) -> None:
        self._chosen.pop(trial.number, None)

    def _choose(self, study: optuna.Study) -> Config | None:
        """The untried candidate with the lowest corrected estimate."""
        tried = np.zeros(len(self._configs), dtype=bool)
        measured: list[int] = []
        log_ms: list[float] = []
        for other in study.get_trials(deepcopy=False):
            name = other.user_attrs.get("config")
            if name is None:  # not measured (yet): mark the config its parameters name
                name = self._name_of(other.params)
            row = self._index.get(name) if name is not None else None
            if row is None:
                continue
            tried[row] = True
            if other.state == optuna.trial.TrialState.COMPLETE and other.value is not None:
                measured.append(row)
                log_ms.append(math.log(other.value))
        for name in self._pending():  # proposed by this process and not told yet
            tried[self._index[name]] = True
        untried = np.flatnonzero(~tried)
        if untried.size == 0:
            return None
        score = self._log_est[untried].copy()
        if measured:
            rows = np.array(measured)
            error = np.array(log_ms) - self._log_est[rows]  # log(measured / estimated)
            distance = np.abs(self._coords[untried, None, :] - self._coords[None, rows, :]).sum(2)
            k = min(NEIGHBOURS, rows.size)
            nearest = np.argpartition(distance, k - 1, axis=1)[:, :k]
            score += error[nearest].mean(axis=1)
        best = np.flatnonzero(score <= score.min() + 1e-9)
        if measured and best.size > 1:  # a tie: explore, take those farthest from any measured
            gap = distance[best].min(axis=1)
            best = best[gap == gap.max()]
        return self._configs[int(untried[self._rng.choice(best)])]

    def _pending(self) -> set[str]:
        return {config.name for config in self._chosen.values()}

    def _name_of(self, params: dict[str, Any]) -> str | None:
        if not params:
            return None
        family = params.get("family", self._families[0] if self._families else None)
        if family is None:
            return None
        fam = get_family(str(family))
        try:
            values = {p.name: p.values[int(params[f"{fam.name}.{p.name}"])] for p in fam.params}
        except (KeyError, IndexError, ValueError):
            return None
        return fam.config(values).name
