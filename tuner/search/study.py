"""One Optuna study per (device, shape, dtype, layout, families): propose, prepare, measure,
record, tell; then re-measure the finalists side by side with cuBLAS.

The loop keeps up to the evaluator's ``parallelism`` proposals in flight: each is claimed and
handed to :meth:`Evaluator.prepare` (the GPU evaluator starts compiling it on a spare core), and
the oldest that has compiled is measured while the others compile; the sampler is told the
results in the order it proposed them (``tuner.search.tell_order``). Trials that sample an invalid
point (a broken rule, a tile larger than the matrix, a resource limit) are told PRUNED at once
and cost nothing; so are repeats of an evaluated candidate (they are told the stored value).
``trials`` counts evaluated candidates, across every worker and every run of the same study, so
re-running a command after a crash resumes where it stopped.

A study's first candidates are its ``starts`` (the runner's warm-start list: the config the API
would answer for this shape and device first). At the end, its fastest few and that first answer are
re-measured together in alternating rounds with cuBLAS (:meth:`Evaluator.compare`; those whose
kernels still compile after the search follow in rounds of their own, :data:`LATE_KERNEL_S`) and
stored as final measurements (``tuner.search.finalists``; ``storage`` makes the fastest of them the
best config): the stored ratio is the one a side-by-side re-measurement gives, and the best is never
slower than the answer the study started from. On a shape with ragged rows (a stored operand's row
length not a whole number of 16-byte vectors), a family that takes leading dimensions may be
screened on padded operands (``_pad4`` for float32, ``_pad8`` for half inputs; copies timed;
``tuner.search.screening_mode``, ``tuner.kernels.operand_padding``), and the fastest few are also
re-measured in the other mode, so whichever mode is faster can become the best.

The sampler works on an in-memory Optuna study: a model-based sampler proposes about ten invalid
points per valid one, and writing each to a database would cost more than the search itself.
That study is rebuilt from the recorder's results when a study resumes and is fed the results
other workers store. When a persistent Optuna storage is given, every evaluated candidate (not
the invalid proposals) is also added there as a finished trial, so Optuna's own tools see the
study.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

import optuna
from optuna.trial import TrialState

import storage
from tuner.core.claims import Claimed
from tuner.core.config import Config
from tuner.core.phases import Phase
from tuner.core.result import Comparison, Result
from tuner.core.shape import STORED_OUT_DTYPE, Shape
from tuner.kernels.candidate import Candidate, build_candidate
from tuner.kernels.families import get_family
from tuner.kernels.space import Space
from tuner.model.rates import DeviceRates
from tuner.search.compile_order import quickest_compiles_first
from tuner.search.evaluator import Evaluator, Ticket
from tuner.search.finalists import (
    DEFAULT_CALL,
    FINAL_BUDGET_MS,
    FINAL_KEEP_WITHIN,
    FINALISTS,
    choose_finalists,
    fastest_first_round,
    final_result,
    padding_candidates,
    remeasure,
)
from tuner.search.recorder import Recorder
from tuner.search.samplers import (
    DEFAULT_SAMPLER,
    CandidateSampler,
    SearchContext,
    check_sampler,
    make_sampler,
)
from tuner.search.schedule_twins import grid_twin, streamk_twin, twin_screening
from tuner.search.screening_mode import may_screen_padded, other_mode, padded_families, screened_as
from tuner.search.stopwatch import Stopwatch
from tuner.search.tell_order import ProposalOrder
from tuner.search.trial_mirror import TrialMirror
from tuner.search.trials import finished_trial, suggest_config, trial_params

optuna.logging.set_verbosity(optuna.logging.WARNING)

# After this many proposals in a row that bring nothing new, evaluate an untried candidate
# instead (a converged sampler keeps proposing its favourite).
STALE_PROPOSALS = 25
# After this many invalid points in a row, evaluate an untried candidate instead: a sampler that
# cannot model the conditional space (TPE on a space with few valid points) would otherwise ask
# thousands of times for each valid one.
INVALID_IN_A_ROW = 50
# Candidates started on the evaluator at once: the one measured and the one queued behind it.
IN_FLIGHT = 2
# How often a study whose device is idle looks whether a queued proposal (or, before the
# finalists' rounds, a finalist) has compiled.
READY_POLL_S = 0.002
# A finalist's kernel not compiled this long after the search is re-measured after the
# others, which start without it: the twin of a finalist found in the search's last results
# began compiling only then, and the finalists waited up to 1.1 s for it on one H200
# (``benchmarks/results/h200-final-waits-2026-11-29.json``). A kernel fetched from the disk
# cache is ready well within this.
LATE_KERNEL_S = 0.1
# How often a study with nothing left to do looks whether other workers' candidates are done
# (or their claims expired, their workers dead): the last of them is done a poll, at most,
# before this worker re-measures the finalists.
CLAIM_POLL_S = 0.05


def study_name(device: str, shape: Shape, families: tuple[str, ...]) -> str:
    # C's type joins the key only where it is not float32, so that studies started before C had
    # a type (all float32) keep their names.
    out = "" if shape.out == STORED_OUT_DTYPE else f"->{shape.out}"
    return f"{device}|{shape}|{shape.dtype}|{shape.layout}{out}|{'+'.join(families)}"


@dataclass
class Progress:
    """What a study has done so far (passed to the progress callback after each evaluation)."""

    study: str
    target: int
    evaluated: int = 0
    earlier: int = 0  # of ``evaluated``, those stored before this run searched
    invalid_proposals: int = 0
    best: Result | None = None
    last: Result | None = None
    history: list[Result] = field(default_factory=list)
    finalists: list[Result] = field(default_factory=list)  # re-measured beside cuBLAS
    notes: list[str] = field(default_factory=list)  # what the user should know about the run
    # Where this worker's seconds went (``tuner.search.stopwatch``): ``prepare`` (within it,
    # ``space``: the candidates; ``sampler``: its ranking, its first compiles started;
    # ``storage``: the Optuna studies opened), ``search`` (the whole screening) and, within
    # it, ``propose`` (sampler and claims), ``compile_wait`` (nothing on the device, the next
    # candidate still compiling), ``measure`` (waiting for the device), ``record`` and
    # ``others`` (waiting for other workers' candidates); then ``gather`` (reading back what
    # every worker stored), ``finalists`` (within it, ``final_compiles``: waiting for their
    # kernels) and ``mirror`` (waiting, after them, for the rest of the trials' copy in
    # Optuna's storage). A queue worker adds ``queue``: its writes to the tune queue around
    # the study (``tuner.run.queue_worker``).
    seconds: dict[str, float] = field(default_factory=dict)


def search_space(
    shape: Shape, families: tuple[str, ...], evaluator: Evaluator
) -> dict[str, Candidate]:
    """The candidates a study of ``shape`` searches, by name: every valid config of ``families``
    (``tuner.kernels.space``), or, on a replay that holds the shape, those of them it measured."""
    device = evaluator.device
    space = {c.name: c for f in families for c in Space(f, shape, device).built_candidates()}
    measured = evaluator.measured_configs(shape)
    if measured:  # a replay of this shape answers only for the configs its tables hold
        return {name: c for name, c in space.items() if name in measured}
    return space


class Study:
    """Tune one shape over some families with one evaluator and one recorder.

    Building a study stores what it is given; :meth:`prepare` (the first step of :meth:`run`
    and :meth:`search`) enumerates its candidates, starts compiling its first ones and opens
    its Optuna storage.
    """

    def __init__(
        self,
        shape: Shape,
        families: tuple[str, ...],
        evaluator: Evaluator,
        recorder: Recorder,
        sampler: str = DEFAULT_SAMPLER,
        seed: int | None = None,
        optuna_storage: str | optuna.storages.BaseStorage | None = None,
        starts: Sequence[Config] = (),
        rates: DeviceRates | None = None,
        finalists: int = FINALISTS,
        joined: int = 0,
    ) -> None:
        for family in families:
            get_family(family)  # unknown names fail here, before anything runs
        check_sampler(sampler)
        self.shape, self.families = shape, tuple(families)
        self.evaluator, self.recorder = evaluator, recorder
        self.device = evaluator.device
        self.name = study_name(self.device.name, shape, self.families)
        self.rates = rates
        self._sampler_name, self._seed = sampler, seed
        self._optuna_storage = optuna_storage
        self._given_starts = tuple(starts)
        self._finalists = finalists
        self._joined = joined  # workers that joined this study before this one (0: it began it)
        self._prepared = False
        # Where evaluated candidates are kept for Optuna's tools, once prepared with a storage.
        self.stored: optuna.storages.BaseStorage | None = None
        self._stored_id = -1
        self._own_storage: optuna.storages.RDBStorage | None = None
        self._trials: TrialMirror | None = None  # writes evaluated candidates to ``stored``
        self._known: set[str] = set()  # candidates the in-memory study has a finished trial of
        self._proposals = ProposalOrder()  # this worker's open proposals (:meth:`_screen`)
        self.invalid_proposals = 0
        self._done: dict[str, Result] = {}  # every evaluated candidate this worker knows of
        self.clock = Stopwatch()
        self._extras_prepared: set[str] = set()  # finalists and extras started compiling early
        self._started: set[str] = set()  # the candidates this study measured (not other workers)

    def prepare(self) -> None:
        """Enumerate the candidates, start the first ones compiling, bind the sampler and open
        the Optuna storage: the study's set-up, done once (:meth:`search` and :meth:`target`
        do it when it has not been done)."""
        if self._prepared:
            return
        with self.clock.part("prepare"):
            self._prepare()

    def _prepare(self) -> None:
        # Its parts are timed apart: a study's preparation is on the device's path where no
        # finalists run beside it (the first study of a command, one study on several GPUs).
        with self.clock.part("space"):
            built = self._enumerate()
        with self.clock.part("sampler"):
            self._bind_sampler(built)
        with self.clock.part("storage"):
            self._open_storage()
        self._order = sorted(self.candidates)  # for stale fallbacks
        self._prepared = True

    def _enumerate(self) -> list[Candidate]:
        """Set the study's candidates and starts, compiling the starts; the candidates built."""
        shape, evaluator, rates = self.shape, self.evaluator, self.rates
        # Starting points outside the space (a tile the space calls wasteful for this shape)
        # are still valid configs of the study's families: they join the candidates. They are
        # the first candidates, known before the space: they compile while it is enumerated.
        # A start is searched in the operand mode its family is screened in: on a shape with
        # ragged rows a family may be screened padded (``tuner.search.screening_mode``), so such a
        # family's starts are prepared once the space has decided; the other mode is tried on
        # the finalists (:meth:`_finish`). A stored stream-K answer that the study does not
        # search starts it from its data-parallel twin (``tuner.search.schedule_twins``), whose own
        # twin the finalists measure again.
        starts = list(dict.fromkeys(filter(None, map(self._searchable, self._given_starts))))
        for config in starts:
            if not may_screen_padded(config.family, shape):
                evaluator.prepare(config)
        held = evaluator.measured_configs(shape)
        space = search_space(shape, self.families, evaluator)
        padded = padded_families(list(space.values()), shape, self.device, rates)

        def screened(candidate: Candidate) -> Candidate:
            return screened_as(candidate, padded, shape, lambda c: held is None or c.name in held)

        built = {c.name: c for c in map(screened, space.values())}
        first = [screened(build_candidate(c, shape, self.device)) for c in starts]
        for candidate in first:
            evaluator.prepare(candidate.config)
            if held is None or candidate.name in held:
                built.setdefault(candidate.name, candidate)
        self.candidates = {name: candidate.config for name, candidate in built.items()}
        self.starts = [candidate.config for candidate in first]
        # Trial parameters name a config's kernel, not its operand mode: the candidate they mean.
        self._screened = {c.direct.name: c for c in self.candidates.values()}
        return list(built.values())

    def _bind_sampler(self, built: list[Candidate]) -> None:
        """Make the sampler and bind it to the candidates; start compiling its likely first
        proposals."""
        self.sampler = make_sampler(self._sampler_name, self._seed)
        if isinstance(self.sampler, CandidateSampler):
            self.sampler.bind(
                SearchContext(
                    self.shape,
                    self.device,
                    built,
                    self.families,
                    self.rates,
                    self.recorder.history(
                        self.device, self.shape.dtype, self.shape.layout, self.shape.out
                    ),
                )
            )
            # Its first proposals compile now, beside whatever the device is doing (the finalists
            # of the worker's last study, ``tuner.run.lookahead``), so the search starts with
            # them ready; only before any result is stored (results change what it proposes).
            for config in self._likely_first(self.evaluator.parallelism - len(self.starts)):
                self.evaluator.prepare(config)

    def _open_storage(self) -> None:
        """Make the in-memory study the sampler proposes in, and open the persistent one."""
        # Where the sampler proposes (invalid points included): memory only.
        self.optuna = optuna.create_study(sampler=self.sampler, direction="minimize")
        optuna_storage = self._optuna_storage
        if isinstance(optuna_storage, str):  # a URL: the study opens it, and closes it
            optuna_storage = self._own_storage = optuna.storages.RDBStorage(optuna_storage)
            storage.with_connection_settings(optuna_storage.engine)
        if optuna_storage is not None:
            self.stored = optuna.storages.get_storage(optuna_storage)
            optuna.create_study(
                study_name=self.name, storage=self.stored, direction="minimize", load_if_exists=True
            )
            self._stored_id = self.stored.get_study_id_from_name(self.name)

    def _likely_first(self, ahead: int) -> list[Config]:
        """The ``ahead`` proposals this worker will most likely make first, while no result is
        stored (``CandidateSampler.likely_first``); none once one is.

        Workers that began the study before this one (``joined`` of them) each claim a first
        wave. This worker's sampler walks its picks in order, each refused claim counting as
        tried: its own wave is the first ``ahead`` of its picks that nobody else holds. The
        claims it finds are skipped by name; those the others have not made yet (they are
        prepared side by side with this one) are taken to be its next picks, the sampler's
        first choices, as theirs are but for the ties they break otherwise.
        """
        if ahead <= 0 or not isinstance(self.sampler, CandidateSampler):
            return []
        if self.recorder.evaluated(self.name):
            return []
        held = self.recorder.held_elsewhere(self.name) - {config.name for config in self.starts}
        unclaimed = max(0, ahead * self._joined - len(held))  # picks the others will claim
        picks = self.sampler.likely_first(len(held) + unclaimed + ahead, self.starts)
        free = [config for config in picks if config.name not in held]
        return free[unclaimed : unclaimed + ahead]

    def close(self) -> None:
        """Write the trials' copy still queued (a writer's error is not raised here: the
        candidates it did not write are added by the study's next finish), then close the
        connections of the Optuna storage the study opened (a URL given): the database file is
        left as a finished command leaves it, not when the collector runs."""
        self.close_trials(raise_error=False)
        if self._own_storage is not None:
            self._own_storage.engine.dispose()

    def _learn(self, results: dict[str, Result]) -> None:
        """Give the sampler every result it has not seen (earlier runs, other workers); this
        worker's own results are told through their open trials, in their turn."""
        untold = self._proposals.untold
        for name, result in results.items():
            if name not in self._known and name in self.candidates and name not in untold:
                self.optuna.add_trial(finished_trial(result, self.families))
                self._known.add(name)

    def claimed_in_full(self, trials: int | None) -> bool:
        """True when a budget of ``trials`` candidates is taken already (``Recorder.claimed``:
        measured, or held by a worker, as a claim counts them): a worker joining now would find
        nothing to search. Known without preparing the study (None, every candidate: not known
        before the space is walked, so False)."""
        return trials is not None and self.recorder.claimed(self.name) >= trials

    def target(self, trials: int | None) -> int:
        """Candidates the study evaluates for ``trials`` (None: all of them)."""
        self.prepare()
        return min(trials or len(self.candidates), len(self.candidates))

    def run(
        self,
        trials: int | None = None,
        timeout_s: float | None = None,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> Progress:
        """Evaluate candidates until ``trials`` are done in this study (all workers, all runs),
        the space is exhausted, or ``timeout_s`` passes; then re-measure the finalists."""
        return self.finish(self.search(trials, timeout_s, on_progress))

    def search(
        self,
        trials: int | None = None,
        timeout_s: float | None = None,
        on_progress: Callable[[Progress], None] | None = None,
        on_tail: Callable[[], None] | None = None,
    ) -> Progress:
        """The screening part of :meth:`run`. Several workers (threads of one process, or
        processes anywhere) may search one study at once: the budget is kept by their claims
        in the database, so together they evaluate exactly ``trials``. ``on_tail`` is called
        once, when this worker has nothing more to propose and its last candidates drain (a
        worker starts preparing its next study then, ``tuner.run.multi_gpu``)."""
        self.prepare()
        with self.clock.part("search"):
            progress = self._search(trials, timeout_s, on_progress, on_tail)
        progress.seconds = self.clock.rounded()
        return progress

    def _search(
        self,
        trials: int | None,
        timeout_s: float | None,
        on_progress: Callable[[Progress], None] | None,
        on_tail: Callable[[], None] | None = None,
    ) -> Progress:
        target = self.target(trials)
        progress = Progress(self.name, target)
        done = self._done = self.recorder.evaluated(self.name)
        for result in done.values():
            self._account(progress, result)
        progress.earlier = progress.evaluated
        self._trials = self._open_trials()
        try:
            if not done and not self.optuna.trials:
                for config in self.starts:
                    if config.name in self.candidates:
                        self.optuna.enqueue_trial(trial_params(config, self.families))
            self._learn(done)
            self._screen(done, progress, target, timeout_s, on_progress, on_tail)
        except BaseException:
            self.close_trials(raise_error=False)  # write what is queued; the study's error goes on
            raise
        return progress  # the trials' copy goes on being written (:meth:`close_trials`)

    def close_trials(self, raise_error: bool = True) -> None:
        """Wait until this worker's evaluated candidates are all in the persistent Optuna study
        (raising its writer's error, if it had one, unless ``raise_error`` is False).
        :meth:`finish` does it after the finalists, whose rounds the writer's last trials
        overlap; a worker that leaves a study to another to finish does it as it leaves."""
        if self._trials is not None:
            trials, self._trials = self._trials, None
            with self.clock.part("mirror"):
                trials.close(raise_error)

    def finish(self, progress: Progress) -> Progress:
        """After :meth:`search` (this worker's, and every other worker's): count what the others
        stored, re-measure the finalists, then wait for this worker's trials' copy
        (:meth:`close_trials`: it is written during the finalists' rounds, off the device's
        path) and add the trials a killed run left out. Everything is read again: a result
        committed late may hide behind a newer one that ``recent`` saw.

        Missing trials are added once this worker's writer has drained. A trial still queued in
        another worker's writer may be taken for a missing one; it is not added twice: each
        writer adds a config's trial only if the study has none, under the study's lock
        (``tuner.search.trial_mirror``)."""
        with self.clock.part("gather"):
            evaluated = self.recorder.evaluated(self.name)
            for name, result in evaluated.items():
                if name not in self._done:
                    self._done[name] = result
                    self._account(progress, result)
        if self._finalists:
            with self.clock.part("finalists"):
                self._finish(self._done, progress)
        self.close_trials()
        with self.clock.part("gather"):
            self._mirror_missing(evaluated)
        progress.seconds = self.clock.rounded()
        return progress

    def _screen(
        self,
        done: dict[str, Result],
        progress: Progress,
        target: int,
        timeout_s: float | None,
        on_progress: Callable[[Progress], None] | None,
        on_tail: Callable[[], None] | None = None,
    ) -> None:
        """The candidate loop: propose, prepare, measure and record until ``target`` candidates
        are evaluated (all workers), the space is exhausted, or ``timeout_s`` passes; ``on_tail``
        once nothing more is proposed (:meth:`search`)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        queue: list[tuple[Config, optuna.trial.Trial]] = []
        running: deque[tuple[Config, optuna.trial.Trial, Ticket]] = deque()
        # The sampler is told results in the order it proposed them (``tuner.search.tell_order``).
        order = self._proposals = ProposalOrder()
        taken: set[str] = set()  # claimed by another worker (or by one killed mid-measurement)
        retried: set[str] = set()  # of those, the ones whose claim this run tried to take over
        stale = 0
        # The proposal whose claim found the budget full: nothing more is proposed until a
        # claim lapses or is released, and then it is proposed again first.
        refused: Config | None = None
        depth = max(1, self.evaluator.parallelism)
        try:
            while True:
                with self.clock.part("propose"):
                    batch = len(queue)  # this round's proposals are queue[batch:]
                    while (
                        refused is None
                        and not order.lagging  # propose knowing every result measured so far
                        and len(queue) < depth
                        and progress.evaluated + len(queue) + len(running) < target
                        and (deadline is None or time.monotonic() < deadline)
                    ):
                        busy = order.untold | {c.name for c, _ in queue[batch:]}
                        proposal, trial = self._propose(done, taken, stale, busy)
                        progress.invalid_proposals = self.invalid_proposals
                        if proposal is None or trial is None:
                            break  # each candidate evaluated, queued or claimed by another worker
                        config = proposal
                        claimed = Claimed.HELD if config.name in done else Claimed.TAKEN
                        if claimed:
                            claimed = self.recorder.claim(self.name, config.name, target)
                        if not claimed:
                            if claimed is Claimed.FULL:
                                refused = config
                            else:
                                taken.add(config.name)
                            self._tell_known(trial, done.get(config.name))
                            stale += 1
                            continue
                        stale = 0
                        self.evaluator.prepare(config)  # compiles start as proposals come
                        queue.append((config, trial))
                    # Told to the sampler quickest compiles first (``tuner.search.compile_order``).
                    queue[batch:] = quickest_compiles_first(queue[batch:])
                    for config, trial in queue[batch:]:
                        order.propose(config, trial)
                full = refused is not None  # the budget is full of claims: nothing to propose
                tail = full or progress.evaluated + len(queue) + len(running) >= target
                if tail:
                    self._prepare_extras(done)  # nothing more to propose: the tail drains
                    if on_tail is not None:  # after the extras: their compiles queue first
                        on_tail()
                        on_tail = None
                # Keep the device busy: the next candidate is started before the last one's result
                # is recorded (the evaluator queues it behind the one being measured). Of the
                # queued proposals, the oldest that has compiled goes first.
                while len(running) < IN_FLIGHT and queue:
                    if deadline is not None and time.monotonic() > deadline:
                        for config, _ in queue:
                            self._give_back(config, order)
                        queue.clear()
                        break
                    ready = next(
                        (i for i, (c, _) in enumerate(queue) if self.evaluator.ready(c)), None
                    )
                    if ready is None and running:
                        break  # measure what is running; the compiles go on meanwhile
                    if ready is None:
                        with self.clock.part("compile_wait"):
                            time.sleep(READY_POLL_S)
                        continue
                    config, trial = queue[ready]
                    ticket = self.evaluator.start(config, self.shape)
                    self._started.add(config.name)
                    running.append((config, trial, ticket))
                    del queue[ready]  # after its start: a start that raises leaves it queued
                if not running:
                    self._tell_in_order(order)
                    with self.clock.part("others"):
                        more = self._wait_for_others(
                            done, taken, retried, progress, target, deadline, full
                        )
                    if more:
                        if refused is not None:  # a claim expired or was released: its slot
                            # may be free; the refused proposal (told failed) goes first
                            self.optuna.enqueue_trial(trial_params(refused, self.families))
                            refused = None
                        continue
                    break
                config, trial, ticket = running.popleft()
                with self.clock.part("measure"):
                    result = self.evaluator.finish(ticket)
                order.measured(config.name, result)
                with self.clock.part("record"):
                    self._record(result, done, progress, on_progress)
                    self._tell_in_order(order)
                # A first wave measured: the finalists take shape (at the tail, the loop's
                # next turn prepares their extras).
                if len(done) >= depth and not tail:
                    self._prepare_extras(done)
        except Exception:  # (an interrupt ends the process: nothing to keep fit)
            # The evaluator answers tickets in the order they were started: one left unfinished
            # would fail every later study on this evaluator ("finish tickets in the order they
            # were started"). Finish them here, results dropped, so a worker goes on.
            unmeasured = [c for c, _ in queue] + [c for c, _, _ in running]
            while running:
                with contextlib.suppress(Exception):
                    self.evaluator.finish(running.popleft()[2])
            # Their claims, released: a rerun of the study (another worker's, at once) would
            # otherwise wait for them to lapse as a dead worker's claims.
            for config in unmeasured:
                with contextlib.suppress(Exception):
                    self.recorder.release(self.name, config.name)
            raise

    def _wait_for_others(
        self,
        done: dict[str, Result],
        taken: set[str],
        retried: set[str],
        progress: Progress,
        target: int,
        deadline: float | None,
        full: bool = False,
    ) -> bool:
        """With nothing of its own left to do: True to go on (other workers' candidates to wait
        for, claims of dead workers to take over, or a place in a budget that was ``full`` of
        claims and is free again), False when the study is over."""
        self._absorb(done, progress)  # count what other workers finished meanwhile
        if progress.evaluated >= target:
            return False
        live = self.recorder.held_elsewhere(self.name) - done.keys()
        lapsed = taken - done.keys() - live - retried
        if lapsed:  # their workers died: propose them again, once, to claim them
            retried |= lapsed
            taken -= lapsed
            for name in sorted(lapsed):
                self.optuna.enqueue_trial(trial_params(self.candidates[name], self.families))
            return True
        out_of_time = deadline is not None and time.monotonic() + CLAIM_POLL_S > deadline
        if live and not out_of_time:
            time.sleep(CLAIM_POLL_S)
            return True
        if full and not out_of_time and len(self.recorder.evaluated(self.name)) < target:
            # The budget was full of claims and none is held now: one lapsed (a dead worker's)
            # or was given back between this worker's claim and this look. Its place is free:
            # propose again, rather than end the study short of its budget.
            time.sleep(CLAIM_POLL_S)
            return True
        unfinished = sorted(live | (taken - done.keys()))
        if unfinished:
            shown = ", ".join(unfinished[:3]) + (", ..." if len(unfinished) > 3 else "")
            progress.notes.append(
                f"{len(unfinished)} candidate(s) of this study are claimed by other workers and "
                f"not measured yet ({shown}); they finish with those workers, or, if those were "
                "killed, on a rerun once their claims expire"
            )
        return False

    def _record(
        self,
        result: Result,
        done: dict[str, Result],
        progress: Progress,
        on_progress: Callable[[Progress], None] | None,
    ) -> None:
        self.recorder.record(result, self.device, self.shape, self.name, None)
        self._mirror(result)
        done[result.config_name] = result
        self._account(progress, result)
        progress.last = result
        if on_progress is not None:
            on_progress(progress)
        self._absorb(done, progress)

    def _tell_in_order(self, order: ProposalOrder) -> None:
        """Tell the sampler every result whose turn has come (``tuner.search.tell_order``)."""
        for trial, result in order.tellable():
            if result is None:
                self.optuna.tell(trial, state=TrialState.FAIL)
            else:
                self._tell(trial, result)

    def _give_back(self, config: Config, order: ProposalOrder) -> None:
        """A proposal the study will not measure (time ran out): unclaimed, and told failed
        in its turn."""
        self.recorder.release(self.name, config.name)
        order.measured(config.name, None)

    def _finish(self, done: dict[str, Result], progress: Progress) -> None:
        """Re-measure the fastest candidates, the study's first answer and the default cuBLAS
        call beside cuBLAS and store them as final measurements; the fastest of them is the
        study's best."""
        chosen = self._chosen(done)
        if not chosen:
            return
        configs = [self.candidates[name] for name in chosen]
        others, twins = self._extras(done, chosen)
        screened = {
            **done,
            **{other.name: done[name] for name, other in others.items()},
            **{twin.name: twin_screening(done[name], twin) for name, twin in twins.items()},
        }
        measured = [*configs, *others.values(), *twins.values()]
        # The finalists whose kernels are ready are re-measured while the rest compile (a
        # finalist found in the search's last results brings a twin compiled only then), and
        # those follow, kept or dropped after their first round by the same fastest time.
        with self.clock.part("final_compiles"):
            for config in measured:  # started now where it was not, or where the pool let go
                self.evaluator.prepare(config)
            self._compiled(measured, LATE_KERNEL_S)
        ready = {config.name for config in measured if self.evaluator.ready(config)}
        late = [config for config in measured if config.name not in ready]
        comparisons: list[Comparison] = []
        for group in ([config for config in measured if config.name in ready], late):
            if group:
                with self.clock.part("final_compiles"):
                    self._compiled(group)
                comparisons += remeasure(
                    self.evaluator,
                    group,
                    self.shape,
                    FINAL_BUDGET_MS,
                    keep_within=FINAL_KEEP_WITHIN,
                    beside_ms=fastest_first_round(comparisons),
                )
        for comparison in comparisons:
            final = final_result(screened[comparison.config_name], comparison, self.shape)
            if final is None:
                progress.notes.append(
                    f"finalist {comparison.config_name} failed its re-measurement: "
                    f"{comparison.status} ({comparison.reason})"
                )
                continue
            self.recorder.record(final, self.device, self.shape, self.name, None, phase=Phase.FINAL)
            progress.finalists.append(final)
        if progress.finalists:
            progress.best = min(progress.finalists, key=lambda r: (r.ms or 0.0, r.config_name))

    def _compiled(self, configs: Sequence[Config], within_s: float | None = None) -> None:
        """Wait until every one of ``configs`` (prepared) is compiled, or ``within_s`` seconds
        have passed, so that the finalists' seconds tell the wait for their kernels from their
        rounds beside cuBLAS."""
        deadline = None if within_s is None else time.monotonic() + within_s
        while not all(self.evaluator.ready(config) for config in configs):
            if deadline is not None and time.monotonic() >= deadline:
                return
            time.sleep(READY_POLL_S)

    def _chosen(self, done: dict[str, Result]) -> list[str]:
        """The finalists of :meth:`_finish`, as ``done`` stands."""
        first = next((c.name for c in self.starts if c.name in done), None)
        return choose_finalists(done, first, self._finalists, also=(DEFAULT_CALL,))

    def _extras(
        self, done: dict[str, Result], chosen: list[str]
    ) -> tuple[dict[str, Config], dict[str, Config]]:
        """What the finalists ``chosen`` bring to re-measure beside them, screened or not: the
        other operand mode of some (:meth:`_other_modes`) and stream-K twins
        (:meth:`_streamk_twins`)."""
        held = self.evaluator.measured_configs(self.shape)
        fastest = chosen[: self._finalists]
        return self._other_modes(done, fastest, held), self._streamk_twins(done, fastest, held)

    def _prepare_extras(self, done: dict[str, Result]) -> None:
        """Start compiling what the finalists would bring as ``done`` stands (their twins and
        other modes are new kernels), so that :meth:`_finish` finds them compiled, and the
        finalists another worker measured: never compiled here, such a kernel comes from the
        disk cache through the compile pool, which queues it behind every compile begun before
        (one measured here is kept by the pool, ``tuner.kernels.compile_pool``). Called after
        each result once a first wave of results (the evaluator's ``parallelism``) is in, and
        at the tail, each extra started once: a finalist is often found in the first wave,
        and its twin, begun at the tail, kept the finalists waiting 0.3-2.0 s for it on two H200
        (``final_compiles`` in ``benchmarks/results/h200x2-study-finals-2026-11-29-*.json``).
        A finalist found in the last wave brings its own late; the extras of one that drops
        out were compiled for nothing (a compile each, beside the search's)."""
        if not self._finalists:
            return
        chosen = self._chosen(done)
        others, twins = self._extras(done, chosen)
        finalists = [self.candidates[name] for name in chosen if name not in self._started]
        for config in [*finalists, *others.values(), *twins.values()]:
            if config.name not in self._extras_prepared:
                self._extras_prepared.add(config.name)
                self.evaluator.prepare(config)

    def _other_modes(
        self, done: dict[str, Result], fastest: list[str], held: set[str] | None
    ) -> dict[str, Config]:
        """Where the shape has ragged rows: the fastest finalists, and the fastest candidate of
        each family that takes leading dimensions (and the vendor's), in the operand mode they were
        not screened
        in (padded, or on the caller's arrays; ``tuner.search.screening_mode.other_mode``), by the
        screened candidate's name, where the evaluator can measure them (``held``: the names it
        can, or None for any; ``tuner.search.finalists.padding_candidates``)."""
        # The vendor library too: its fastest algorithm is re-measured in the other mode, so
        # the best is never slower than the vendor in either mode.
        leading = [f for f in self.families if get_family(f).leading_dims or get_family(f).vendor]
        others = {}
        for name in padding_candidates(done, fastest, leading):
            other = other_mode(self.candidates[name], self.shape)
            if (
                other is not None
                and other.name not in done
                and (held is None or other.name in held)
            ):
                others[name] = other
        return others

    def _searchable(self, config: Config) -> Config | None:
        """A start as the study can search it, on the caller's arrays: itself where its family
        is searched, its data-parallel twin where only that one's is, else None."""
        if config.family in self.families:
            return config.direct
        twin = grid_twin(config.direct)
        return twin if twin is not None and twin.family in self.families else None

    def _streamk_twins(
        self, done: dict[str, Result], fastest: list[str], held: set[str] | None
    ) -> dict[str, Config]:
        """The stream-K twins of the ``fastest`` finalists (``tuner.search.schedule_twins``), by the
        screened candidate's name: the same tile on a persistent grid, re-measured beside it
        because a data-parallel grid's last wave may run part full. Only twins not measured
        already and that the evaluator can measure (``held``, as for :meth:`_other_modes`)."""
        twins: dict[str, Config] = {}
        for name in fastest:
            twin = streamk_twin(self.candidates[name], done[name], self.device)
            if (
                twin is not None
                and twin.name not in done
                and (held is None or twin.name in held)
                # Finalists that differ only in their launch bound (MINBLOCKS) and ran as many
                # blocks per SM share a twin: it is re-measured once, as the faster one's.
                and all(twin.name != other.name for other in twins.values())
            ):
                twins[name] = twin
        return twins

    def _open_trials(self) -> TrialMirror | None:
        """The writer of this run's trials into the persistent Optuna study, if there is one."""
        if self.stored is None:
            return None

        def numbered(config_name: str, number: int) -> None:
            self.recorder.number(self.name, config_name, number)

        def locked() -> AbstractContextManager[object]:
            return self.recorder.trial_lock(self.name)

        return TrialMirror(self.stored, self._stored_id, self.families, numbered, locked)

    def _mirror(self, result: Result) -> None:
        """Queue a recorded candidate for the persistent Optuna study
        (``tuner.search.trial_mirror``).

        The measurement is stored first: a crash between the two writes leaves a measurement
        without a trial, which the next run adds (:meth:`_mirror_missing`), never a trial
        without a measurement, which would be measured and added again.
        """
        if self._trials is not None:
            self._trials.add(result)

    def _mirror_missing(self, done: dict[str, Result]) -> None:
        """Add to the persistent Optuna study the recorded candidates it lacks (a run killed
        between a measurement and its trial)."""
        if self.stored is None:
            return
        trials = self.stored.get_all_trials(self._stored_id, deepcopy=False)
        mirrored = {t.user_attrs.get("config") for t in trials}
        missing = [
            result
            for name, result in done.items()
            if name not in mirrored and name in self.candidates
        ]
        writer = self._open_trials() if missing else None
        if writer is not None:
            for result in missing:
                writer.add(result)
            writer.close()

    def _absorb(self, done: dict[str, Result], progress: Progress) -> None:
        """Count results other workers stored meanwhile."""
        for name, other in self.recorder.recent(self.name).items():
            if name not in done:
                done[name] = other
                self._account(progress, other)
        self._learn(done)

    def _propose(
        self,
        done: dict[str, Result],
        taken: set[str],
        stale: int,
        busy: set[str],
    ) -> tuple[Config | None, optuna.trial.Trial | None]:
        """The next candidate: from the sampler, skipping invalid points at no cost (``busy``:
        proposed by this worker and not yet recorded)."""
        if stale >= STALE_PROPOSALS and not self._enqueue_untried(done, taken, busy):
            return None, None
        for attempt in range(INVALID_IN_A_ROW + 1):
            if attempt == INVALID_IN_A_ROW and not self._enqueue_untried(done, taken, busy):
                return None, None
            trial = self.optuna.ask()
            if isinstance(self.sampler, CandidateSampler) and not self.sampler.proposes(trial):
                self.optuna.tell(trial, state=TrialState.FAIL)  # nothing left to propose
                return None, None
            config = suggest_config(trial, self.families)
            config = self._screened.get(config.name, config)
            if config.name in self.candidates:
                return config, trial
            reason = (get_family(config.family).broken_rules(config) or ["does not fit"])[0]
            trial.set_user_attr("invalid", reason)
            self.invalid_proposals += 1
            self.optuna.tell(trial, state=TrialState.PRUNED)
        return None, None

    def _enqueue_untried(self, done: dict[str, Result], taken: set[str], busy: set[str]) -> bool:
        """Make the next proposal a candidate nobody has tried; False when there is none."""
        untried = next(
            (n for n in self._order if n not in done and n not in taken and n not in busy), None
        )
        if untried is None:
            return False
        self.optuna.enqueue_trial(trial_params(self.candidates[untried], self.families))
        return True

    def _tell(self, trial: optuna.trial.Trial, result: Result) -> None:
        self._known.add(result.config_name)
        trial.set_user_attr("config", result.config_name)
        trial.set_user_attr("status", result.status)
        if result.status == "ok" and result.ms is not None:
            trial.set_user_attr("tflops", result.tflops)
            trial.set_user_attr("ratio", result.ratio)
            self.optuna.tell(trial, result.ms)
        else:
            trial.set_user_attr("reason", result.reason)
            self.optuna.tell(trial, state=TrialState.PRUNED)

    def _tell_known(self, trial: optuna.trial.Trial, known: Result | None) -> None:
        if known is not None and known.status == "ok" and known.ms is not None:
            self.optuna.tell(trial, known.ms)
        else:  # failed before, or being measured by another worker right now
            self.optuna.tell(trial, state=TrialState.PRUNED)

    @staticmethod
    def _account(progress: Progress, result: Result) -> None:
        progress.evaluated += 1
        progress.history.append(result)
        if (
            result.status == "ok"
            and result.ms is not None
            and (progress.best is None or progress.best.ms is None or result.ms < progress.best.ms)
        ):
            progress.best = result
