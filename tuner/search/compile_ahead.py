"""Compiling what the sampler will propose next, while the study may not propose.

A study proposes nothing while a measured result waits for an earlier proposal's
(``tuner.search.tell_order``): that rule kept the search as good on held-out shapes as measuring
oldest first. But while it waits, the compiler processes that finished the round's quicker
kernels sit idle until the slowest compile of the round is in, and the next round's compiles
start only then. On one H200, a 4096^3 study's rounds were 1.0 to 2.2 s apart while most of each
round's compiles took under a second (``benchmarks/results/h200x2-study-rows-2026-11-28f.json``).

So while the study waits, it asks its sampler what it would propose next once told the results
already measured (``CandidateSampler.likely_next``: on a copy of the sampler's random state, so
nothing the sampler does later changes) and starts compiling those on the idle processes. Nothing
is claimed or told: the proposals are made exactly as before when their turn comes, and where
the guess was right they find their kernels compiled or compiling. A wrong guess costs a compile
on a process that would have idled, unless a real proposal then waits for that process.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence

import optuna

from tuner.core.config import Config
from tuner.core.result import Result
from tuner.kernels.families import get_family
from tuner.search.evaluator import Evaluator
from tuner.search.samplers import CandidateSampler

# The round's proposals left unmeasured when guessing begins, as a share of the compile limit:
# a quarter (3 of 15 compiler processes).
STRAGGLER_SHARE = 4


class CompileAhead:
    """One search's compiles ahead of its sampler: what was started, and how much of it the
    sampler then proposed."""

    def __init__(
        self,
        sampler: CandidateSampler,
        evaluator: Evaluator,
        study: optuna.Study,
        claimed_elsewhere: Callable[[], Collection[str]],
    ) -> None:
        self.sampler, self.evaluator, self.study = sampler, evaluator, study
        self.claimed_elsewhere = claimed_elsewhere
        # Compiles in flight at most, the study's own proposals included: the evaluator's
        # compiler processes (its parallelism counts the candidate being measured too).
        self.limit = max(1, evaluator.parallelism - 1)
        # Guess only once at most this many of the study's proposals are left unmeasured: with
        # more of them still to come the model that will propose is further from the one that
        # guesses (see the module).
        self.stragglers = max(1, self.limit // STRAGGLER_SHARE)
        self.started: dict[str, Config] = {}  # compiled ahead, by name
        self.proposed = 0  # of those, proposed later by this search
        self._guess: list[Config] = []
        self._guessed_with: tuple[int, int, int] | None = None

    def top_up(
        self,
        known: int,
        waiting: Mapping[str, Result | None],
        queued: Sequence[Config],
        skip: Collection[str],
        left: int,
    ) -> None:
        """Start compiling the likeliest next proposals on the processes that are idle.
        ``known``: how many results the study knows (its guess is made again only when that,
        or ``waiting``, changed); ``waiting``: results measured and not told; ``queued``: the
        study's proposals not started on the device yet; ``skip``: candidates it knows others
        hold; ``left``: proposals the budget still allows, so no more are guessed (a 40-candidate
        study's last round holds 8: a full round's guesses there compile kernels no proposal
        can use)."""
        if len(queued) > self.stragglers or left <= 0:
            return
        if (known, len(waiting), left) != self._guessed_with:
            measured = {
                name: result.ms
                for name, result in waiting.items()
                if result is not None and result.status == "ok" and result.ms is not None
            }
            elsewhere = {*skip, *self.claimed_elsewhere()}
            count = min(self.limit, left)
            self._guess = self.sampler.likely_next(self.study, count, measured, elsewhere)
            self._guessed_with = (known, len(waiting), left)
        compiling = {c.name for c in queued if not self.evaluator.ready(c)}
        compiling |= {n for n, c in self.started.items() if not self.evaluator.ready(c)}
        room = self.limit - len(compiling)
        for config in self._guess:
            if room <= 0:
                break
            if config.name in self.started or get_family(config.family).vendor:
                continue  # started already, or nothing to compile
            self.evaluator.prepare(config)
            self.started[config.name] = config
            room -= 1

    def proposing(self, name: str) -> None:
        """The search proposed ``name``: counted when it was compiled ahead."""
        self.proposed += name in self.started

    def counts(self) -> dict[str, int]:
        """Compiles started ahead, and how many of them the search proposed."""
        return {"compiled": len(self.started), "proposed": self.proposed}
