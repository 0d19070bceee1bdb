"""The rule step of a family's space: which configs break no rule, and why the others are out.

The verdicts are the same for every shape and device, so they are computed once per family (and
pinned parameters) and kept for the process. The walk assigns the parameters one at a time in
declared order and checks each rule as soon as it can be decided: a rule that reads a parameter
not yet assigned raises ``KeyError`` and waits for a deeper level. When a rule breaks on a
prefix while every earlier rule already holds, the whole subtree under that prefix has it as
its first broken rule and is counted without being visited. Only configs that break no rule are
built as :class:`Config` objects. The verdicts equal those of checking every point of the
product with :meth:`Family.broken_rules` (first broken rule, in rule order) and are tested
against that.

Rules must read parameters by subscript (``p["BM"]``), so that a missing one raises.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

from tuner.core.config import Config
from tuner.kernels.families import Family

Pinned = tuple[tuple[str, int], ...]


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


def parameter_choices(family: Family, pinned: Pinned = ()) -> list[tuple[int, ...]]:
    """The values each parameter takes in ``family``'s enumeration, in declared order; a
    ``pinned`` parameter takes only its one value (``Family.pinned``)."""
    fixed = dict(pinned)
    return [(fixed[p.name],) if p.name in fixed else p.values for p in family.params]


@cache
def rule_verdicts(family: Family, pinned: Pinned = ()) -> RuleVerdicts:
    """The rule step of ``family``'s space (with ``pinned`` parameters), computed on first use
    and kept for the process (rules and parameter values are fixed once a family is defined)."""
    choices = parameter_choices(family, pinned)
    _check_values(family, choices)
    walk = _Walk(family, choices)
    walk.visit(0, 0, tuple(range(len(family.rules))))
    reasons = tuple((reason, walk.first[reason], walk.rejected[reason]) for reason in walk.first)
    return RuleVerdicts(walk.sizes[0], tuple(walk.valid), reasons)


def _check_values(family: Family, choices: list[tuple[int, ...]]) -> None:
    """Raise as :meth:`Family.config` would for a point holding a bad declared value."""
    if not choices:
        return
    first = {p.name: values[0] for p, values in zip(family.params, choices, strict=True)}
    for param, values in zip(family.params, choices, strict=True):
        for value in values:
            family.config({**first, param.name: value})


class _Walk:
    """Depth-first over the parameter product, deciding rules on prefixes."""

    def __init__(self, family: Family, choices: list[tuple[int, ...]]) -> None:
        self.family_name = family.name
        self.names = [p.name for p in family.params]
        self.choices = choices
        self.holds = [rule.holds for rule in family.rules]
        self.reasons = [rule.reason for rule in family.rules]
        # sizes[d]: configs under one prefix of d parameters (sizes[0]: the whole product)
        self.sizes = [math.prod(len(c) for c in choices[d:]) for d in range(len(choices) + 1)]
        self.partial: dict[str, int] = {}
        self.valid: list[tuple[int, Config]] = []
        self.first: dict[str, int] = {}
        self.rejected: dict[str, int] = {}

    def visit(self, depth: int, base: int, pending: tuple[int, ...]) -> None:
        """The configs under the current prefix (``depth`` parameters assigned, the first of
        them at position ``base``); ``pending``: rules not yet known to hold for all of them."""
        undecided: list[int] = []
        leaf = depth == len(self.names)
        for index in pending:
            try:
                ok = self.holds[index](self.partial)
            except KeyError:
                if leaf:
                    raise
                undecided.append(index)
                continue
            except ZeroDivisionError:
                ok = False
            if ok:
                continue
            if not undecided:  # every earlier rule holds under this prefix: this one is first
                reason = self.reasons[index]
                self.first.setdefault(reason, base)
                self.rejected[reason] = self.rejected.get(reason, 0) + self.sizes[depth]
                return
            undecided.append(index)  # an earlier rule may still break first, deeper down
        if leaf:
            # ``partial`` holds the names in declared order (each level re-assigns its own key)
            self.valid.append((base, Config(self.family_name, tuple(self.partial.items()))))
            return
        name, step, still = self.names[depth], self.sizes[depth + 1], tuple(undecided)
        for offset, value in enumerate(self.choices[depth]):
            self.partial[name] = value
            self.visit(depth + 1, base + offset * step, still)
        del self.partial[name]
