"""The search space of one family for one (shape, device): every config, and why the rest are out.

Enumeration is deterministic: the product of the parameter values in declared order. A config
is dropped in three steps, each counted: it breaks a family rule (``valid``), it is wasteful for
this shape (``useful``: a tile larger than the matrix, or a K split that cannot or need not
happen), or it does not fit the device (``fits``). The first step does not depend on the shape
or the device, so its verdicts are computed once per family (``rule_verdicts``).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache

from tuner.config import Config
from tuner.families import SPLITK_MAX_TILES, Family, get_family
from tuner.resources import DeviceLimits, ResourceCheck, static_check
from tuner.shape import Shape


def _pow2_ceil(value: int) -> int:
    return 1 << max(value - 1, 0).bit_length()


def shape_waste(family: Family, config: Config, shape: Shape) -> str | None:
    """Why ``config`` is wasteful for ``shape``, or None.

    A block tile larger than the matrix rounded up to a power of two only adds idle threads and
    zero-filled shared memory; the family's smallest value is always kept so that every shape
    has candidates.
    """
    smallest = _smallest_values(family)
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
def _split_values(family: Family) -> tuple[int, ...]:
    return next(p.values for p in family.params if p.name == "SPLITK")


# Split-K slices pay while they put idle SMs to work; past this many threads per SM of the
# whole grid (output tiles x SPLITK blocks) a deeper split only adds work in C: 4 blocks of 128
# threads, 8 of 64, 16 of a one-warp streaming kernel.
SPLITK_THREADS_PER_SM = 512


def split_blocks_per_sm(threads: int) -> int:
    """Blocks per SM past which a deeper K split is wasteful (``SPLITK_THREADS_PER_SM``)."""
    return max(1, SPLITK_THREADS_PER_SM // max(threads, 1))


def splitk_waste(
    family: Family, config: Config, shape: Shape, device: DeviceLimits
) -> tuple[str, str] | None:
    """Why the K split of ``config`` is wasteful for ``shape`` on ``device``, as (kind, detail),
    or None (also for families without SPLITK).

    * More output tiles than the kernel has ticket counters: it would not split at all (slice 0
      does all of K and the other slices exit), so the config only wastes blocks.
    * Fewer blocks than SMs while a deeper split (one the next two checks allow) would give the
      idle SMs work.
    * Fewer BK tiles in K than slices: split-K needs at least one BK tile per slice, else some
      slices have nothing to add.
    * More blocks per SM than ``split_blocks_per_sm``: the split is deeper than the chip needs.

    The last two keep the family's smallest SPLITK, so that every shape with few enough output
    tiles has candidates.
    """
    params = config.as_dict()
    if "SPLITK" not in params:
        return None
    split = params["SPLITK"]
    tiles = -(-shape.m // params["BM"]) * -(-shape.n // params["BN"])
    if tiles > SPLITK_MAX_TILES:
        return (
            "split-K: more output tiles than ticket counters",
            f"{tiles} output tiles exceed the {SPLITK_MAX_TILES} split-K ticket counters: "
            "the kernel would not split K",
        )
    values = _split_values(family)
    k_tiles = -(-shape.k // family.k_step(params))
    per_sm = split_blocks_per_sm(family.threads(params))
    limit = per_sm * device.sm_count
    if tiles * split < device.sm_count:
        deeper = [s for s in values if split < s <= k_tiles and tiles * s <= limit]
        if deeper:
            return (
                "split-K: fewer blocks than SMs",
                f"{tiles} output tiles x SPLITK={split} = {tiles * split} blocks leave SMs of "
                f"the {device.sm_count} idle, and SPLITK={deeper[0]} is possible",
            )
    if split == values[0]:
        return None
    if k_tiles < split:
        return (
            "split-K: fewer BK tiles than slices",
            f"SPLITK={split} exceeds the {k_tiles} BK tiles of K={shape.k}: "
            "split-K needs at least one BK tile per slice",
        )
    if tiles * split > limit:
        return (
            "split-K: more blocks per SM than needed",
            f"{tiles} output tiles x SPLITK={split} = {tiles * split} blocks exceed "
            f"{per_sm} per SM ({limit} on {device.sm_count} SMs)",
        )
    return None


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


Pinned = tuple[tuple[str, int], ...]


def all_configs(family: Family, pinned: Pinned = ()) -> Iterator[Config]:
    """Every combination of ``family``'s parameter values, valid or not, in declared order;
    a ``pinned`` parameter takes only its one value (``Family.pinned``)."""
    fixed = dict(pinned)
    names = [p.name for p in family.params]
    choices = [(fixed[p.name],) if p.name in fixed else p.values for p in family.params]
    for values in itertools.product(*choices):
        yield family.config(dict(zip(names, values, strict=True)))


@dataclass(frozen=True)
class RuleVerdicts:
    """What a family's rules make of every config it enumerates: the same for every shape and
    device, so one walk serves every Space of the family.

    ``valid``: the configs that break no rule, each with its position in the enumeration.
    ``broken``: per first broken rule, the position of the first config it rejects and how many
    it rejects, so that a Space's counts list the reasons in the order a walk meets them.
    """

    raw: int
    valid: tuple[tuple[int, Config], ...]
    broken: tuple[tuple[str, int, int], ...]  # (reason, first position, configs), by position


@cache
def rule_verdicts(family: Family, pinned: Pinned = ()) -> RuleVerdicts:
    """The rule step of ``family``'s space (with ``pinned`` parameters), computed on first use
    and kept for the process (rules and parameter values are fixed once a family is defined)."""
    valid: list[tuple[int, Config]] = []
    first: dict[str, int] = {}
    rejected: dict[str, int] = {}
    raw = 0
    for position, config in enumerate(all_configs(family, pinned)):
        raw += 1
        broken = family.broken_rules(config)
        if broken:
            first.setdefault(broken[0], position)
            rejected[broken[0]] = rejected.get(broken[0], 0) + 1
        else:
            valid.append((position, config))
    reasons = tuple((reason, first[reason], rejected[reason]) for reason in first)
    return RuleVerdicts(raw, tuple(valid), reasons)


class Space:
    """The configs of one family for one shape and device."""

    def __init__(self, family: str | Family, shape: Shape, device: DeviceLimits) -> None:
        self.family = get_family(family) if isinstance(family, str) else family
        self.shape = shape
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
        kept: list[ResourceCheck] = []
        for position, config in rules.valid:
            reason = self._waste(config)
            if reason is None:
                counts.useful += 1
                check = static_check(config, self.device)
                if check.fits:
                    kept.append(check)
                    continue
                reason = _problem_kind(check.problems[0])
            first_seen.setdefault(reason, position)
            pruned[reason] = pruned.get(reason, 0) + 1
        counts.fits = len(kept)
        counts.pruned = {r: pruned[r] for r in sorted(pruned, key=first_seen.__getitem__)}
        return kept, counts

    def _waste(self, config: Config) -> str | None:
        """Why a valid config is wasteful for this shape (the counts' reason), or None."""
        if shape_waste(self.family, config, self.shape):
            return "tile larger than the matrix"
        if self.family.waste(config.as_dict(), self.shape):
            return f"{self.family.name}: wasteful for this shape"
        split = splitk_waste(self.family, config, self.shape, self.device)
        return split[0] if split else None

    def candidates(self) -> list[Config]:
        """The configs worth compiling for this shape and device, in deterministic order."""
        return [check.config for check in self.evaluate()[0]]


def _problem_kind(problem: str) -> str:
    """Group resource problems by kind for the counts (drops the numbers)."""
    kinds = ("architecture", "static shared memory", "shared memory", "registers", "threads")
    for kind in (*kinds, "no block fits"):
        if kind in problem:
            return f"resources: {kind}"
    return "resources"
