"""A worker that joins a study others began compiles, while it is prepared, the first wave it
will propose itself: the sampler's picks after those the others claim (``Study._likely_first``),
whether their claims are already stored or not yet."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy.orm import Session, sessionmaker

import storage
from storage import open_database
from tests.conftest import NewDatabase
from tests.tuner.fakes import RuleEvaluator
from tuner.core.shape import Shape
from tuner.kernels.resources import table_device
from tuner.search.sql_recorder import SqlRecorder
from tuner.search.study import Study

SHAPE = Shape(2048, 2048, 2048)
FAMILIES = ("warptile", "pipelined")
WAVE = 16  # the evaluator's parallelism: proposals in flight, and those compiled ahead
TRIALS = 40
SEARCH_S = 3.0


@pytest.fixture
def sessions(new_database: NewDatabase) -> Iterator[sessionmaker[Session]]:
    factory = open_database(new_database(), optuna_tables=True)
    yield factory
    factory.kw["bind"].dispose()


def _worker(
    sessions: sessionmaker[Session], name: str, joined: int, seed: int
) -> tuple[Study, RuleEvaluator]:
    evaluator = RuleEvaluator(table_device("sm_90"))
    evaluator.parallelism = WAVE
    recorder = SqlRecorder(sessions, worker=name)
    study = Study(SHAPE, FAMILIES, evaluator, recorder, "ranked", seed=seed, joined=joined)
    return study, evaluator


def _claim_first_wave(sessions: sessionmaker[Session], leader: Study) -> set[str]:
    """What the leader holds while its first wave compiles: a claim on each of its first picks."""
    wave = [config.name for config in leader.sampler.likely_first(WAVE)]
    with sessions.begin() as session:
        for name in wave:
            assert storage.claim_candidate(session, leader.name, name, "leader:1", 60.0, TRIALS)
    return set(wave)


def _first_wave(joiner: Study, evaluator: RuleEvaluator) -> tuple[set[str], set[str]]:
    """What ``joiner`` compiled ahead, and its first wave of proposals (each is prepared as it
    is claimed, before any is measured)."""
    ahead = list(evaluator.prepared)
    # The leader's claims are never measured here: the joiner waits for them until its time is
    # up, seconds after its first waves (the rule fake measures at once).
    joiner.search(trials=TRIALS, timeout_s=SEARCH_S)
    return set(ahead), set(evaluator.prepared[len(ahead) : len(ahead) + WAVE])


def test_a_joiner_compiles_the_wave_after_the_claims_it_finds(
    sessions: sessionmaker[Session],
) -> None:
    """Seeds that break the model's ties otherwise (as workers' seeds do): the joiner's own
    first picks are partly the leader's claims and partly not; what it compiles is exactly
    the wave it then proposes."""
    leader, _ = _worker(sessions, "leader", 0, seed=7)
    leader.prepare()
    held = _claim_first_wave(sessions, leader)
    joiner, evaluator = _worker(sessions, "joiner", 1, seed=8)
    joiner.prepare()
    ahead, wave = _first_wave(joiner, evaluator)
    assert len(ahead) == WAVE
    assert not ahead & held  # nothing the leader holds is compiled twice
    assert ahead == wave


def test_a_joiner_that_finds_no_claim_yet_skips_the_leaders_picks(
    sessions: sessionmaker[Session],
) -> None:
    """Prepared side by side, the joiner looks before the leader has claimed anything: it
    counts on the leader taking the sampler's first wave and compiles the next one. With the
    same seed the two samplers break ties alike, and the guess is exact."""
    leader, _ = _worker(sessions, "leader", 0, seed=7)
    joiner, evaluator = _worker(sessions, "joiner", 1, seed=7)
    leader.prepare()
    joiner.prepare()
    held = _claim_first_wave(sessions, leader)
    ahead, wave = _first_wave(joiner, evaluator)
    assert len(ahead) == WAVE
    assert not ahead & held
    assert ahead == wave


def test_nothing_is_compiled_ahead_once_a_result_is_stored(
    sessions: sessionmaker[Session],
) -> None:
    leader, _ = _worker(sessions, "leader", 0, seed=7)
    leader.search(trials=3)
    joiner, evaluator = _worker(sessions, "joiner", 1, seed=8)
    joiner.prepare()
    assert evaluator.prepared == []
