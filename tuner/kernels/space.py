"""The search space of one family for one (shape, device): every config, and why the rest are out.

Enumeration is deterministic: the product of the parameter values in declared order. A config
is dropped in three steps, each counted: it breaks a family rule (``valid``), it is wasteful for
this shape (``useful``: a tile larger than the matrix, or a K split that cannot or need not
happen), or it does not fit the device (``fits``). The first step does not depend on the shape
or the device, so its verdicts are computed once per family (``tuner.kernels.rule_verdicts``); so is
what the later steps read of each valid config, and each config's resource check is kept per
device: a second shape of the family costs a pass of integer comparisons.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import NamedTuple

from tuner.core.config import Config
from tuner.core.shape import Shape
from tuner.kernels.candidate import Candidate
from tuner.kernels.families import SPLITK_MAX_TILES, Family, get_family
from tuner.kernels.resources import DeviceLimits, ResourceCheck, static_check
from tuner.kernels.rule_verdicts import Pinned, parameter_choices, rule_verdicts


def _pow2_ceil(value: int) -> int:
    return 1 << max(value - 1, 0).bit_length()


TILE_DIMENSIONS = ("BM", "BN", "BK")  # block-tile sides, along M, N and K


def shape_waste(family: Family, config: Config, shape: Shape) -> str | None:
    """Why ``config`` is wasteful for ``shape``, or None.

    A block tile larger than the matrix rounded up to a power of two only adds idle threads and
    zero-filled shared memory; the smallest value a valid config of the shape's pins takes is
    always kept so that every shape has candidates.
    """
    smallest = _smallest_tiles(family, tuple(sorted(family.pinned(shape).items())))
    params = config.as_dict()
    for param, dim, label in (("BM", shape.m, "M"), ("BN", shape.n, "N"), ("BK", shape.k, "K")):
        value = params.get(param)
        if value is not None and value > smallest[param] and value > _pow2_ceil(dim):
            return f"{param}={value} exceeds {label}={dim} rounded up to {_pow2_ceil(dim)}"
    return None


@functools.cache
def _smallest_values(family: Family) -> dict[str, int]:
    return {p.name: min(p.values) for p in family.params}


@functools.cache
def _smallest_tiles(family: Family, pinned: Pinned) -> dict[str, int]:
    """Per block-tile side, the smallest value of the rule-valid configs with these pins (a
    value only some layouts allow, such as tma_ws's 16-row tiles with A stored along K, is not
    the smallest for the others), else the parameter's smallest value."""
    smallest = dict(_smallest_values(family))
    points = _valid_points(family, pinned)
    for name in smallest:
        sides = [value for point in points for side, value in point.tiles if side == name]
        if sides:
            smallest[name] = min(sides)
    return smallest


@functools.cache
def _split_values(family: Family) -> tuple[int, ...]:
    return next(p.values for p in family.params if p.name == family.split_param)


# Split-K slices pay while they put idle SMs to work; past this many threads per SM of the
# whole grid (output tiles x SPLITK blocks) a deeper split only adds work in C: 4 blocks of 128
# threads, 8 of 64, 16 of a one-warp streaming kernel.
SPLITK_THREADS_PER_SM = 512


def split_blocks_per_sm(threads: int) -> int:
    """Blocks per SM past which a deeper K split is wasteful (``SPLITK_THREADS_PER_SM``)."""
    return max(1, SPLITK_THREADS_PER_SM // max(threads, 1))


@dataclass(frozen=True)
class SplitFacts:
    """What the split-K checks read of one config (``split_facts``)."""

    split: int
    first: int  # the family's first SPLITK value: always kept where the matrix allows it
    deeper: int | None  # the next larger SPLITK value of the family, if any
    bm: int
    bn: int
    k_step: int
    per_sm: int  # blocks per SM past which a deeper split is wasteful
    max_tiles: int  # output tiles past which the kernel does not split
    # Whether the split checks may drop a whole-K config (split 1): so for the SPLITK families
    # (dmma's SPLITK 1 past 16384 tiles: the smallest tiles of the largest matrices; or where a
    # split would fill idle SMs); not for tma_ws, whose SPLIT 1 is its whole space on most
    # shapes, and whose split lost to whole tiles on short K (1024^3 on the H200,
    # benchmarks/results/h200-tma-ws-split-2026-11-29.json).
    whole_k_checked: bool


def split_facts(family: Family, params: dict[str, int]) -> SplitFacts | None:
    """The split-K facts of a config of ``family`` (None for families without a split)."""
    if family.split_param not in params:
        return None
    values = _split_values(family)
    return _split_facts(family, params, values[0], _deeper_splits(values))


def _deeper_splits(values: tuple[int, ...]) -> dict[int, int | None]:
    """Per SPLITK value, the next larger one of ``values`` (None for the largest)."""
    return {v: min((s for s in values if s > v), default=None) for v in values}


def _split_facts(
    family: Family, params: dict[str, int], first: int, deeper: dict[int, int | None]
) -> SplitFacts:
    split = params[family.split_param]
    per_sm = family.split_blocks_per_sm or split_blocks_per_sm(family.threads(params))
    return SplitFacts(
        split,
        first,
        deeper[split],
        params["BM"],
        params["BN"],
        family.k_step(params),
        per_sm,
        family.split_max_tiles or SPLITK_MAX_TILES,
        family.split_max_tiles is None,
    )


def split_kind(facts: SplitFacts, shape: Shape, device: DeviceLimits) -> str | None:
    """The kind of waste of a K split (the reasons of :func:`splitk_waste`), or None."""
    if facts.split == 1 and not facts.whole_k_checked:
        return None
    tiles = -(-shape.m // facts.bm) * -(-shape.n // facts.bn)
    if tiles > facts.max_tiles:
        return SPLIT_TICKETS
    k_tiles = -(-shape.k // facts.k_step)
    limit = facts.per_sm * device.sm_count
    deeper = facts.deeper
    if (
        tiles * facts.split < device.sm_count
        and deeper is not None
        and deeper <= k_tiles
        and tiles * deeper <= limit
    ):
        return SPLIT_IDLE_SMS
    if facts.split == facts.first:
        return None
    if k_tiles < facts.split:
        return SPLIT_EMPTY_SLICES
    if tiles * facts.split > limit:
        return SPLIT_TOO_DEEP
    return None


SPLIT_TICKETS = "split-K: more output tiles than ticket counters"
SPLIT_IDLE_SMS = "split-K: fewer blocks than SMs"
SPLIT_EMPTY_SLICES = "split-K: fewer BK tiles than slices"
SPLIT_TOO_DEEP = "split-K: more blocks per SM than needed"


def splitk_waste(
    family: Family, config: Config, shape: Shape, device: DeviceLimits
) -> tuple[str, str] | None:
    """Why the K split of ``config`` is wasteful for ``shape`` on ``device``, as (kind, detail),
    or None (also for families without a split: ``Family.split_param``).

    * More output tiles than the kernel has ticket counters: it would not split at all (slice 0
      does all of K and the other slices exit), so the config only wastes blocks.
    * Fewer blocks than SMs while a deeper split (one the next two checks allow) would give the
      idle SMs work.
    * Fewer BK tiles in K than slices: split-K needs at least one BK tile per slice, else some
      slices have nothing to add.
    * More blocks per SM than ``split_blocks_per_sm``: the split is deeper than the chip needs.

    The last two keep the family's first SPLITK value, so that every shape with few enough
    output tiles has candidates.
    """
    facts = split_facts(family, config.as_dict())
    kind = None if facts is None else split_kind(facts, shape, device)
    if facts is None or kind is None:
        return None
    split = facts.split
    tiles = -(-shape.m // facts.bm) * -(-shape.n // facts.bn)
    limit = facts.per_sm * device.sm_count
    name = family.split_param
    details = {
        SPLIT_TICKETS: f"{tiles} output tiles exceed the {facts.max_tiles} split-K ticket "
        "counters: the kernel would not split K",
        SPLIT_IDLE_SMS: f"{tiles} output tiles x {name}={split} = {tiles * split} blocks leave "
        f"SMs of the {device.sm_count} idle, and {name}={facts.deeper} is possible",
        SPLIT_EMPTY_SLICES: f"{name}={split} exceeds the {-(-shape.k // facts.k_step)} BK tiles "
        f"of K={shape.k}: split-K needs at least one BK tile per slice",
        SPLIT_TOO_DEEP: f"{tiles} output tiles x {name}={split} = {tiles * split} blocks exceed "
        f"{facts.per_sm} per SM ({limit} on {device.sm_count} SMs)",
    }
    return kind, details[kind]


@dataclass
class SpaceCounts:
    """How many configs survive each step (raw -> valid -> useful for the shape -> fits)."""

    raw: int = 0
    valid: int = 0
    useful: int = 0
    fits: int = 0
    pruned: dict[str, int] = field(default_factory=dict)  # reason -> count

    def __str__(self) -> str:
        return f"raw {self.raw} -> valid {self.valid} -> useful {self.useful} -> fits {self.fits}"


def all_configs(family: Family, pinned: Pinned = ()) -> Iterator[Config]:
    """Every combination of ``family``'s parameter values, valid or not, in declared order;
    a ``pinned`` parameter takes only its one value (``Family.pinned``)."""
    names = [p.name for p in family.params]
    for values in itertools.product(*parameter_choices(family, pinned)):
        yield family.config(dict(zip(names, values, strict=True)))


class _ValidPoint(NamedTuple):
    """What the shape and device steps read of one rule-valid config, computed once."""

    position: int
    config: Config
    params: dict[str, int]
    tiles: tuple[tuple[str, int], ...]  # (BM/BN/BK, value): the block tile's sides it names
    split: SplitFacts | None


@cache
def _valid_points(family: Family, pinned: Pinned) -> tuple[_ValidPoint, ...]:
    """Every rule-valid config of ``family`` with what the shape checks read of it: the same
    for every shape and device, so kept for the process like the rule verdicts."""
    names = {p.name for p in family.params}
    sides = [name for name in TILE_DIMENSIONS if name in names]
    values = _split_values(family) if family.split_param in names else ()
    deeper = _deeper_splits(values)
    points = []
    for position, config in rule_verdicts(family, pinned).valid:
        params = dict(config.params)
        tiles = tuple((name, params[name]) for name in sides)
        split = _split_facts(family, params, values[0], deeper) if values else None
        points.append(_ValidPoint(position, config, params, tiles, split))
    return tuple(points)


def enumerate_rules(family: str | Family, shape: Shape) -> int:
    """Walk ``family``'s rule step for ``shape``'s pinned parameters now (kept for the process,
    as every Space of the family and pins then reads it) and say how many configs it keeps.
    A command calls it while its GPU workers start, so its first study does not wait for it."""
    family = get_family(family) if isinstance(family, str) else family
    return len(_valid_points(family, tuple(sorted(family.pinned(shape).items()))))


def check_every_valid(family: str | Family, shape: Shape, device: DeviceLimits) -> int:
    """Check every rule-valid config of ``family`` for ``shape``'s pinned parameters against
    ``device`` now, whether or not ``shape`` finds it useful (kept for the process, as every
    Space of the family, pins and device then reads it); how many fit. A standing worker calls
    it before its first study (``tuner.run.warm_spaces``)."""
    family = get_family(family) if isinstance(family, str) else family
    pinned = tuple(sorted(family.pinned(shape).items()))
    checks = _resource_checks(family, pinned, device)
    return sum(_checked(checks, point, device).fits for point in _valid_points(family, pinned))


@cache
def _resource_checks(
    family: Family, pinned: Pinned, device: DeviceLimits
) -> dict[int, ResourceCheck]:
    """``static_check`` of ``family``'s valid configs on ``device`` by position, filled as
    Spaces ask (a config's check does not depend on the shape)."""
    return {}


def _checked(
    checks: dict[int, ResourceCheck], point: _ValidPoint, device: DeviceLimits
) -> ResourceCheck:
    """``point``'s check on ``device``, from ``checks`` (``_resource_checks``) or made now and
    kept there."""
    check = checks.get(point.position)
    if check is None:
        check = checks[point.position] = static_check(point.config, device)
    return check


class Space:
    """The configs of one family for one shape and device."""

    def __init__(self, family: str | Family, shape: Shape, device: DeviceLimits) -> None:
        self.family = get_family(family) if isinstance(family, str) else family
        self.shape = shape
        # What the family's kernel computes (``Family.run_shape``): it decides which tiles are
        # wasteful.
        self.run_shape = self.family.run_shape(shape)
        self.device = device
        self.pinned: Pinned = tuple(sorted(self.family.pinned(shape).items()))

    def all_configs(self) -> Iterator[Config]:
        """Every combination of parameter values, valid or not, in deterministic order."""
        return all_configs(self.family, self.pinned)

    def evaluate(self) -> tuple[list[ResourceCheck], SpaceCounts]:
        """Walk the whole space once: the configs that fit, and the counts of each step. A
        family that does not compute the shape's input type or layout has none."""
        unsupported = self.family.unsupported(self.shape)
        if unsupported is not None:
            return [], SpaceCounts(pruned={unsupported: 1})
        rules = rule_verdicts(self.family, self.pinned)
        counts = SpaceCounts(raw=rules.raw, valid=len(rules.valid))
        first_seen = {reason: position for reason, position, _ in rules.broken}
        pruned = {reason: configs for reason, _, configs in rules.broken}
        checks = _resource_checks(self.family, self.pinned, self.device)
        limits = self._tile_limits()
        kept: list[ResourceCheck] = []
        for point in _valid_points(self.family, self.pinned):
            reason = self._waste(point, limits)
            if reason is None:
                counts.useful += 1
                check = _checked(checks, point, self.device)
                if check.fits:
                    kept.append(check)
                    continue
                reason = _problem_kind(check.problems[0])
            first_seen.setdefault(reason, point.position)
            pruned[reason] = pruned.get(reason, 0) + 1
        counts.fits = len(kept)
        counts.pruned = {r: pruned[r] for r in sorted(pruned, key=first_seen.__getitem__)}
        return kept, counts

    def _tile_limits(self) -> dict[str, int]:
        """Per block-tile side, the largest value that is not wasteful for this shape
        (:func:`shape_waste`: the matrix side rounded up to a power of two, or the smallest value
        of a valid config with this shape's pins)."""
        smallest = _smallest_tiles(self.family, self.pinned)
        run = self.run_shape
        sides = dict(zip(TILE_DIMENSIONS, (run.m, run.n, run.k), strict=True))
        return {
            name: max(smallest[name], _pow2_ceil(side))
            for name, side in sides.items()
            if name in smallest
        }

    def _waste(self, point: _ValidPoint, limits: dict[str, int]) -> str | None:
        """Why a valid config is wasteful for this shape (the counts' reason), or None: the
        reasons of :func:`shape_waste`, ``Family.waste``, ``Family.device_waste`` and
        :func:`splitk_waste`, in order."""
        if any(value > limits[name] for name, value in point.tiles):
            return "tile larger than the matrix"
        if self.family.waste(point.params, self.run_shape):
            return f"{self.family.name}: wasteful for this shape"
        device_waste = self.family.device_waste
        if device_waste is not None and device_waste(point.params, self.run_shape, self.device):
            return f"{self.family.name}: wasteful for this shape on this device"
        if point.split is None:
            return None
        return split_kind(point.split, self.run_shape, self.device)

    def candidates(self) -> list[Config]:
        """The configs worth compiling for this shape and device, in deterministic order."""
        return [check.config for check in self.evaluate()[0]]

    def built_candidates(self) -> list[Candidate]:
        """The same configs as :meth:`candidates`, each built with the resource check the space
        made of it (``tuner.kernels.candidate``)."""
        return [Candidate(check.config, check) for check in self.evaluate()[0]]


def _problem_kind(problem: str) -> str:
    """Group resource problems by kind for the counts (drops the numbers)."""
    kinds = ("architecture", "static shared memory", "shared memory", "registers", "threads")
    for kind in (*kinds, "no block fits"):
        if kind in problem:
            return f"resources: {kind}"
    return "resources"
