"""The ``ranked`` sampler: the study's candidates in the order of the corrected cost model.

Before anything is measured it follows the cost model (``tuner.model.cost_model``, on the device's
probed rates when it has them), shifted by what this device's measurements of other shapes say about
the model's errors (``tuner.search.samplers.correction.transfer_prior``). As the study measures, the
correction learns each family's shift and the local errors around measured configs, and the next
proposal is the untried candidate with the lowest corrected estimate.

Two rules keep a wrong model from hiding the best family or the best region: every family whose
best corrected estimate is within ``COMPETITIVE`` of the overall best gets ``FAMILY_TRIES``
proposals before the others are ranked together, and among candidates within ``NEAR_TIE`` of
the best score the one farthest (in parameter steps) from everything already proposed goes
first (then one at random, ``seed``), so a batch proposed before its results arrive spreads
over the parameters instead of piling onto one corner the model cannot tell apart.
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Sequence

import numpy as np

from tuner.core.config import Config
from tuner.core.shape import Shape
from tuner.model.cost_model import estimate
from tuner.search.samplers._base import CandidateSampler, SearchContext
from tuner.search.samplers.correction import Correction, transfer_prior

# A family is worth trying early while its best corrected estimate is at most this many times
# the best of all families; each such family gets this many proposals before the rest compete.
COMPETITIVE = 1.5
FAMILY_TRIES = 2
# A family's second early proposal comes from its candidates within 10 % of its best estimate,
# the one least like the first (the model cannot rank them more finely).
FAMILY_SPREAD = 1.10
# Corrected estimates this close (2 %) count as a tie: below the model's resolution.
NEAR_TIE = 1.02


class RankedSampler(CandidateSampler):
    """Proposes the untried candidate with the lowest corrected estimate (see the module)."""

    def __init__(self, seed: int | None = None) -> None:
        super().__init__(seed)
        self._rng = np.random.default_rng(seed)
        self._log_est = np.zeros(0)
        self._correction: Correction | None = None

    def bind(self, context: SearchContext) -> None:
        super().bind(context)
        device, rates = context.device, context.rates

        @functools.cache
        def log_estimate(config: Config, shape: Shape) -> float:
            """The model's log time of a config of this device's history."""
            return math.log(estimate(config, shape, device, rates).ms)

        shape, candidates = context.shape, context.candidates
        log_ms = [math.log(estimate(c, shape, device, rates).ms) for c in candidates]
        self._log_est = np.array(log_ms)
        configs = [c.config for c in candidates]
        prior = transfer_prior(configs, shape, context.history, log_estimate)
        self._correction = Correction(configs, self._log_est, prior)

    def scores(self, measured: dict[int, float]) -> np.ndarray:
        """Corrected log estimates of every candidate, given the measured ones."""
        assert self._correction is not None
        scores: np.ndarray = self._log_est + self._correction.residuals(measured)
        return scores

    def choose(self, tried: set[int], measured: dict[int, float]) -> int | None:
        return self._choose(tried, measured, self._rng)

    def likely_first(self, count: int, taken: Sequence[Config] = ()) -> list[Config]:
        """The first ``count`` proposals exactly as :meth:`choose` makes them while nothing is
        measured (on a copy of the random state, so the real ones are the same), after ``taken``.
        Another worker's results or claims arriving first may change them."""
        candidates = self.context.candidates
        tried = {self._index[c.name] for c in taken if c.name in self._index}
        rng, picks = copy.deepcopy(self._rng), list[Config]()
        score = self.scores({})
        while len(picks) < count:
            pick = self._choose(tried, {}, rng, score)
            if pick is None:
                break
            tried.add(pick)
            picks.append(candidates[pick].config)
        return picks

    def _choose(
        self,
        tried: set[int],
        measured: dict[int, float],
        rng: np.random.Generator,
        score: np.ndarray | None = None,
    ) -> int | None:
        count = len(self.context.candidates)
        if len(tried) >= count:
            return None
        score = self.scores(measured) if score is None else score
        open_ = np.ones(count, dtype=bool)
        open_[list(tried)] = False
        untried = np.flatnonzero(open_)
        pick = self._family_first(score, tried, untried)
        if pick is not None:
            return pick
        best = untried[score[untried] <= score[untried].min() + math.log(NEAR_TIE)]
        if tried and best.size > 1:  # a tie: explore, take those farthest from any proposed
            assert self._correction is not None
            coords, rows = self._correction.coords, list(tried)
            gap = np.abs(coords[best, None, :] - coords[None, rows, :]).sum(axis=2).min(axis=1)
            best = best[gap == gap.max()]
        return int(best[rng.integers(best.size)])

    def _family_first(self, score: np.ndarray, tried: set[int], untried: np.ndarray) -> int | None:
        """A candidate of the most promising competitive family that has had fewer than
        ``FAMILY_TRIES`` proposals, if any: its best, or after that the one of its
        near-best (within ``FAMILY_SPREAD``) farthest from what was proposed."""
        assert self._correction is not None
        family_of = self._correction.family_of
        proposals = np.bincount(family_of[list(tried)], minlength=self._correction.families)
        cutoff = score.min() + math.log(COMPETITIVE)
        choices = []
        for family in range(self._correction.families):
            if proposals[family] >= FAMILY_TRIES:
                continue
            mine = untried[family_of[untried] == family]
            if mine.size and score[mine].min() <= cutoff:
                if proposals[family]:
                    near = mine[score[mine] <= score[mine].min() + math.log(FAMILY_SPREAD)]
                    choices.append(self._farthest(near, tried))
                else:
                    choices.append(int(mine[np.argmin(score[mine])]))
        return min(choices, key=lambda i: score[i]) if choices else None

    def _farthest(self, rows: np.ndarray, tried: set[int]) -> int:
        """Of ``rows``, the one farthest (in parameter steps) from every tried candidate."""
        assert self._correction is not None
        coords = self._correction.coords
        gap = np.abs(coords[rows, None, :] - coords[None, list(tried), :]).sum(axis=2).min(axis=1)
        return int(rows[np.argmax(gap)])
