"""Conformance: the tuning queue deduplicates, refuses past its limit and bad shapes with the
API's words, hands each entry to one worker under a lease, lets a lapsed lease be taken over,
and lets only the last worker out of a shared study finish it."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from storage import make_session_factory
from storage.models import QueueEntry
from storage.tune_queue import (
    DONE,
    FAILED,
    QUEUED,
    RUNNING,
    Problem,
    QueueFull,
    batch_progress,
    enqueue,
    give_up,
    has_work,
    join_running,
    leave_entry,
    mark_done,
    mark_failed,
    renew_entries,
    take_next,
)
from tuner.core.errors import InputError
from tuner.core.shape import MAX_DIM, Shape

H100 = "NVIDIA H100 80GB HBM3"


def problem(m: int, device: str = "", trials: int | None = 8) -> Problem:
    return Problem(Shape(m, 64, 64), "exact", device, ("warptile",), trials)


def state_of(session: Session, entry_id: int) -> QueueEntry:
    entry = session.get(QueueEntry, entry_id)
    assert entry is not None
    session.refresh(entry)
    return entry


def test_enqueue_adds_a_problem_once(session: Session) -> None:
    assert enqueue(session, [problem(1), problem(2), problem(1)]) == 2
    assert enqueue(session, [problem(2), problem(3)]) == 1
    other_families = Problem(Shape(1, 64, 64), "exact", "", ("pipelined",), 8)
    other_device = problem(1, device=H100)
    assert enqueue(session, [other_families, other_device]) == 2  # other problems
    assert session.query(QueueEntry).count() == 5


def test_a_full_queue_refuses_and_adds_nothing(session: Session) -> None:
    enqueue(session, [problem(1), problem(2)], limit=3)
    with pytest.raises(QueueFull, match="holds 2 waiting shapes and takes at most 3"):
        enqueue(session, [problem(3), problem(4)], limit=3)
    assert session.query(QueueEntry).count() == 2
    assert enqueue(session, [problem(1), problem(3)], limit=3) == 1  # the known one is free


@pytest.mark.parametrize(
    ("dims", "message"),
    [
        ((0, 64, 64), f"`m` must be an integer in 1..{MAX_DIM}, got 0"),
        ((64, MAX_DIM + 1, 64), f"`n` must be an integer in 1..{MAX_DIM}, got {MAX_DIM + 1}"),
    ],
)
def test_shapes_out_of_range_are_refused_in_the_apis_words(
    dims: tuple[int, int, int], message: str
) -> None:
    """The API's 422 for m = 0 reads "`m` must be an integer in 1..2147483647, got 0"
    (tests/api): a queued problem is a Shape, checked by the same rule."""
    with pytest.raises(InputError) as refused:
        Problem(Shape(*dims), "exact")
    assert str(refused.value) == message


def test_an_unknown_accuracy_is_refused() -> None:
    with pytest.raises(InputError, match="`accuracy` must be one of"):
        Problem(Shape(8, 8, 8), "sloppy")


def test_each_entry_goes_to_one_worker_in_order(session: Session) -> None:
    enqueue(session, [problem(1), problem(2)])
    first = take_next(session, "w1", H100)
    second = take_next(session, "w2", H100)
    assert first is not None and second is not None
    assert (first.problem, second.problem) == (problem(1), problem(2))
    assert take_next(session, "w3", H100) is None
    assert state_of(session, first.entry_id).worker == "w1"
    assert state_of(session, first.entry_id).state == RUNNING


def test_an_entry_for_another_device_is_left_to_its_workers(session: Session) -> None:
    enqueue(session, [problem(1, device="NVIDIA A100-SXM4-80GB")])
    assert take_next(session, "w1", H100) is None
    assert not has_work(session, H100)
    taken = take_next(session, "w2", "NVIDIA A100-SXM4-80GB")
    assert taken is not None and taken.problem.device == "NVIDIA A100-SXM4-80GB"


def test_a_lapsed_lease_is_taken_over_and_the_old_worker_can_no_longer_finish(
    session: Session,
) -> None:
    enqueue(session, [problem(1)])
    dead = take_next(session, "dead", H100, lease_s=-1.0)
    assert dead is not None
    assert renew_entries(session, [dead], lease_s=-1.0) == 1  # still running, still lapsed
    alive = take_next(session, "alive", H100)
    assert alive is not None and alive.entry_id == dead.entry_id
    assert alive.attempt == dead.attempt + 1
    assert leave_entry(session, dead) is None  # not its attempt any more
    assert mark_done(session, dead, "study", 8) is False
    assert leave_entry(session, alive) is True
    assert mark_done(session, alive, "study", 8) is True
    entry = state_of(session, alive.entry_id)
    assert (entry.state, entry.evaluated, entry.attempt) == (DONE, 8, 2)
    assert not has_work(session, H100)


def test_a_live_lease_is_not_taken(session: Session) -> None:
    enqueue(session, [problem(1)])
    assert take_next(session, "w1", H100, lease_s=60.0) is not None
    assert take_next(session, "w2", H100) is None
    assert has_work(session, H100)  # running: a waiting worker may take it if w1 dies


def test_the_last_worker_out_of_a_shared_study_finishes_it(session: Session) -> None:
    enqueue(session, [problem(1), problem(2)])
    owner = take_next(session, "w1", H100)
    busy = take_next(session, "w2", H100)
    assert owner is not None and busy is not None
    assert leave_entry(session, busy) is True  # alone in it
    helper = join_running(session, H100)
    assert helper is not None
    assert (helper.entry_id, helper.joined) == (owner.entry_id, 1)
    assert leave_entry(session, owner) is False  # others still search: no newcomers now
    assert join_running(session, H100) is None
    assert leave_entry(session, helper) is True  # the last out: it re-measures the finalists


def test_a_joiner_gives_up_its_place_unless_it_is_the_last_in_the_study(
    session: Session,
) -> None:
    enqueue(session, [problem(1)])
    owner = take_next(session, "w1", H100)
    joiner = join_running(session, H100)
    assert owner is not None and joiner is not None
    assert give_up(session, joiner) is True  # the owner still searches: the joiner leaves
    assert join_running(session, H100) is None  # and no newcomer takes its place
    assert leave_entry(session, owner) is True  # the owner is the last out: it finishes
    enqueue(session, [problem(2)])
    alone = take_next(session, "w1", H100)
    late = join_running(session, H100)
    assert alone is not None and late is not None
    assert leave_entry(session, alone) is False
    assert give_up(session, late) is False  # everyone else has left: it stays to finish
    assert leave_entry(session, late) is True


def test_joining_picks_the_study_with_fewest_workers(session: Session) -> None:
    enqueue(session, [problem(1), problem(2)])
    a = take_next(session, "w1", H100)
    b = take_next(session, "w2", H100)
    assert a is not None and b is not None
    first = join_running(session, H100)
    second = join_running(session, H100)
    assert first is not None and second is not None
    assert {first.entry_id, second.entry_id} == {a.entry_id, b.entry_id}


def test_a_failed_attempt_is_kept_with_its_error(session: Session) -> None:
    enqueue(session, [problem(1), problem(2)], batch="b")
    retried = take_next(session, "w1", H100)
    given_up = take_next(session, "w1", H100)
    assert retried is not None and given_up is not None
    mark_failed(session, retried, "RuntimeError: context lost", retry=True)
    mark_failed(session, given_up, "InputError: no family computes it", retry=False)
    assert state_of(session, retried.entry_id).state == QUEUED
    entry = state_of(session, given_up.entry_id)
    assert (entry.state, entry.error) == (FAILED, "InputError: no family computes it")
    again = take_next(session, "w2", H100)
    assert again is not None and again.attempt == 2
    progress = batch_progress(session, "b")
    assert (progress.total, progress.failed, progress.running) == (2, 1, 1)


def test_enqueue_again_requeues_a_finished_problem_with_the_new_budget(session: Session) -> None:
    enqueue(session, [problem(1)], batch="first")
    taken = take_next(session, "w1", H100)
    assert taken is not None and leave_entry(session, taken)
    mark_done(session, taken, "study", 8)
    assert enqueue(session, [problem(1, trials=16)], batch="second") == 0  # not new
    assert state_of(session, taken.entry_id).state == DONE  # without `again`: left alone
    enqueue(session, [problem(1, trials=16)], batch="second", again=True)
    entry = state_of(session, taken.entry_id)
    assert (entry.state, entry.trials, entry.batch) == (QUEUED, 16, "second")
    assert batch_progress(session, "second").total == 1


def test_two_sessions_race_for_one_entry(engine: Engine) -> None:
    """Both see the entry queued; the conditional update lets one of them have it."""
    sessions = make_session_factory(engine)
    with sessions.begin() as session:
        enqueue(session, [problem(1)])
    with sessions() as one, sessions() as two:
        got = [take_next(one, "w1", H100), take_next(two, "w2", H100)]
    assert sum(taken is not None for taken in got) == 1


def test_a_worker_never_joins_the_study_it_is_leaving(session: Session) -> None:
    # A worker takes its next problem as its search ends, before it leaves the entry: the one
    # it still searches is no place to join, another running one is.
    enqueue(session, [problem(1), problem(2)])
    mine = take_next(session, "w1", H100)
    other = take_next(session, "w2", H100)
    assert mine is not None and other is not None
    joined = join_running(session, H100, excluding=mine.entry_id)
    assert joined is not None and joined.entry_id == other.entry_id
    assert leave_entry(session, other) is False  # w2 and the newcomer: not the last out
    assert join_running(session, H100, excluding=mine.entry_id) is None  # closed to newcomers
    assert join_running(session, H100) is not None  # the entry left out is still joinable
