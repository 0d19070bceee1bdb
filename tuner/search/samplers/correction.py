"""Correcting the cost model with measurements: what it got wrong here, and what it got wrong
before on this device.

The model's error on a config is its residual, ``log(measured ms / estimated ms)``. For every
candidate of a study the correction predicts that residual in three layers:

1. a prior from this device's measurements of other shapes (transfer): the residuals the same
   config had there, weighted by how near their shapes are to this one, shrunk towards the
   residual of its family there;
2. a family shift from this study's measurements: how far its family's measured configs are
   from their priors, shrunk towards zero while few are measured;
3. parameter effects: what is left, fitted as one additive effect per value of each parameter
   of a family (ridge regression: a value seen in few measured configs stays near zero), so
   "MK = 4 runs faster than the model says" carries to every untried config with MK = 4;
4. a local term: what is left of the measured configs' deviations, weighted by their distance
   in parameter space (ordinal steps, same family only).

The estimate times ``exp(predicted residual)`` is the corrected estimate the ranked sampler
follows. Everything here is plain numpy on arrays built once per study.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from tuner.core.config import Config
from tuner.core.dims import shape_distance
from tuner.core.errors import InputError
from tuner.core.shape import Shape
from tuner.kernels.families import get_family, parse_config
from tuner.search.samplers._base import Observation

# Log-space shape distance at which a measurement of another shape counts e^-1 as much.
SHAPE_SCALE = 1.0
# Weight of a family's residual against a config's own residuals from other shapes.
FAMILY_PRIOR_WEIGHT = 1.0
# Pseudo-count shrinking a family's shift (and the prior of a family seen on no other shape).
FAMILY_SHRINK = 1.0
# Parameter-space distance (ordinal steps) at which a measured config counts e^-1 as much.
LOCAL_SCALE = 1.5
# Pseudo-weight of "no local deviation" in the local term.
LOCAL_SHRINK = 0.5
# Ridge penalty of the parameter effects, in measured configs: an effect seen in one config is
# shrunk to a third of its deviation, one seen in eight to 80 %.
EFFECT_RIDGE = 2.0


def value_indicators(configs: Sequence[Config]) -> np.ndarray:
    """One column per (family, parameter, value), 1 where a config has that value."""
    columns: dict[tuple[str, str, int], int] = {}
    rows: list[list[int]] = []
    for config in configs:
        mine = []
        for name, value in config.params:
            key = (config.family, name, value)
            mine.append(columns.setdefault(key, len(columns)))
        rows.append(mine)
    indicators = np.zeros((len(configs), len(columns)))
    for row, mine in enumerate(rows):
        indicators[row, mine] = 1.0
    return indicators


def parameter_coordinates(configs: Sequence[Config]) -> tuple[np.ndarray, np.ndarray]:
    """Each config's parameters as ordinal indices (one column per parameter name across the
    families, -1 where a family has no such parameter), and its family's index."""
    families = sorted({c.family for c in configs})
    keys = sorted({p.name for f in families for p in get_family(f).params})
    coords = np.full((len(configs), len(keys)), -1.0)
    family_of = np.zeros(len(configs), dtype=int)
    column = {key: i for i, key in enumerate(keys)}
    for row, config in enumerate(configs):
        for p in get_family(config.family).params:
            coords[row, column[p.name]] = p.values.index(config[p.name])
        family_of[row] = families.index(config.family)
    return coords, family_of


def transfer_prior(
    candidates: Sequence[Config],
    shape: Shape,
    history: Sequence[Observation],
    log_estimate: Callable[[Config, Shape], float],
) -> np.ndarray:
    """Each candidate's prior residual from this device's measurements of other shapes."""
    by_config: dict[str, list[tuple[float, float]]] = {}
    by_family: dict[str, list[tuple[float, float]]] = {}
    known = {c.name: c for c in candidates}
    # A candidate screened padded runs its kernel on rows of whole vectors: the same kernel's
    # measurements elsewhere are its prior (the copies are the model's).
    kernels = {c.direct.name for c in candidates}
    families = {c.family for c in candidates}
    for obs in history:
        if obs.shape == shape or obs.ms <= 0:
            continue
        config = known.get(obs.config_name) or _parse(obs.config_name)
        # A padded config's time includes its copies (tuner.kernels.operand_padding): not the
        # kernel's.
        if config is None or config.pad or config.family not in families:
            continue
        family = config.family
        weight = math.exp(-shape_distance(shape.dims, obs.shape.dims) / SHAPE_SCALE)
        residual = math.log(obs.ms) - log_estimate(config, obs.shape)
        by_family.setdefault(family, []).append((weight, residual))
        if obs.config_name in kernels:
            by_config.setdefault(obs.config_name, []).append((weight, residual))
    family_prior = {
        family: sum(w * r for w, r in rows) / (sum(w for w, _ in rows) + FAMILY_SHRINK)
        for family, rows in by_family.items()
    }
    prior = np.zeros(len(candidates))
    for row, config in enumerate(candidates):
        base = family_prior.get(config.family, 0.0)
        own = by_config.get(config.direct.name, [])
        total = sum(w for w, _ in own) + FAMILY_PRIOR_WEIGHT
        prior[row] = (sum(w * r for w, r in own) + FAMILY_PRIOR_WEIGHT * base) / total
    return prior


def _parse(name: str) -> Config | None:
    try:
        return parse_config(name)
    except InputError:  # a name of another version of the tuner
        return None


class Correction:
    """Predicted residuals of a study's candidates, given what has been measured so far.

    The weights between every candidate and a measured one are computed once, when it is
    first seen, so a prediction costs one matrix-vector product over the measured columns.
    """

    def __init__(self, configs: Sequence[Config], log_est: np.ndarray, prior: np.ndarray) -> None:
        self.log_est = log_est
        self.prior = prior
        self.coords, self.family_of = parameter_coordinates(configs)
        self.indicators = value_indicators(configs)
        self.families = int(self.family_of.max()) + 1 if len(configs) else 0
        self._columns: dict[int, np.ndarray] = {}  # measured row -> weights of every candidate

    def _weights(self, row: int) -> np.ndarray:
        column = self._columns.get(row)
        if column is None:
            distance = np.abs(self.coords - self.coords[row]).sum(axis=1)
            column = np.exp(-distance / LOCAL_SCALE)
            column[self.family_of != self.family_of[row]] = 0.0
            self._columns[row] = column
        return column

    def residuals(self, measured: dict[int, float]) -> np.ndarray:
        """Predicted ``log(measured / estimated)`` of every candidate; ``measured``: candidate
        index -> measured ms."""
        predicted = self.prior.copy()
        if not measured:
            return predicted
        rows = np.fromiter(measured, dtype=int, count=len(measured))
        observed = np.log(np.array([measured[int(r)] for r in rows])) - self.log_est[rows]
        deviation = observed - self.prior[rows]
        counts = np.bincount(self.family_of[rows], minlength=self.families)
        sums = np.bincount(self.family_of[rows], weights=deviation, minlength=self.families)
        shift = sums / (counts + FAMILY_SHRINK)
        predicted += shift[self.family_of]
        leftover = deviation - shift[self.family_of[rows]]
        effects = self._effects(rows, leftover)
        predicted += self.indicators @ effects
        leftover = leftover - self.indicators[rows] @ effects
        weight = np.stack([self._weights(int(r)) for r in rows], axis=1)
        predicted += (weight @ leftover) / (weight.sum(axis=1) + LOCAL_SHRINK)
        return predicted

    def _effects(self, rows: np.ndarray, leftover: np.ndarray) -> np.ndarray:
        """Ridge fit of one effect per parameter value to the measured deviations."""
        seen = self.indicators[rows]
        used = np.flatnonzero(seen.any(axis=0))
        effects = np.zeros(self.indicators.shape[1])
        if used.size:
            x = seen[:, used]
            gram = x.T @ x + EFFECT_RIDGE * np.eye(used.size)
            effects[used] = np.linalg.solve(gram, x.T @ leftover)
        return effects
