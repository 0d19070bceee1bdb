"""The ``exhaustive`` sampler: every candidate of the study once, in name order."""

from __future__ import annotations

from tuner.search.samplers._base import CandidateSampler


class ExhaustiveSampler(CandidateSampler):
    """Every candidate once, in name order (the study ends when none is left)."""

    def choose(self, tried: set[int], measured: dict[int, float]) -> int | None:
        order = sorted(range(len(self.context.candidates)), key=self._key)
        return next((i for i in order if i not in tried), None)

    def _key(self, index: int) -> str:
        return self.context.candidates[index].name
