"""Conformance: claims are leases, settled once measured, and a study's budget is exact."""

from __future__ import annotations

from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

from storage import (
    claim_candidate,
    downgrade,
    live_claims,
    make_session_factory,
    renew_claims,
    settle_claim,
    upgrade,
)
from tuner.core.claims import Claimed


def test_an_expired_claim_is_taken_over_a_live_one_is_not(session: Session) -> None:
    assert claim_candidate(session, "s", "a", "dead", lease_s=-1.0) is Claimed.TAKEN
    assert claim_candidate(session, "s", "b", "alive", lease_s=60.0) is Claimed.TAKEN
    assert claim_candidate(session, "s", "a", "me") is Claimed.TAKEN  # lease over: taken
    assert claim_candidate(session, "s", "b", "me") is Claimed.HELD
    assert live_claims(session, "s", "me") == {"b"}  # a is mine now; b is another's, alive
    assert live_claims(session, "s", "alive") == {"a"}  # its own b is not "elsewhere"


def test_a_settled_claim_never_expires(session: Session) -> None:
    assert claim_candidate(session, "s", "a", "w1", lease_s=-1.0)
    settle_claim(session, "s", "a")  # measured
    assert claim_candidate(session, "s", "a", "w2") is Claimed.HELD
    assert live_claims(session, "s", "w2") == set()  # done, not being measured


def test_renewing_keeps_a_claim_alive(session: Session) -> None:
    assert claim_candidate(session, "s", "a", "w1", lease_s=-1.0)
    assert claim_candidate(session, "s", "b", "w1", lease_s=-1.0)
    settle_claim(session, "s", "b")
    assert renew_claims(session, "w1", lease_s=60.0) == 1  # a only: b is settled
    assert claim_candidate(session, "s", "a", "w2") is Claimed.HELD
    assert renew_claims(session, "w2") == 0


def test_the_budget_counts_open_claims_of_every_worker(session: Session) -> None:
    assert claim_candidate(session, "s", "a", "w1", budget=2)
    assert claim_candidate(session, "s", "b", "w2", budget=2)
    assert claim_candidate(session, "s", "c", "w1", budget=2) is Claimed.FULL
    assert claim_candidate(session, "other", "c", "w1", budget=2)  # per study
    settle_claim(session, "s", "a")
    assert claim_candidate(session, "s", "c", "w1", budget=2) is Claimed.FULL  # a still counts
    assert claim_candidate(session, "s", "d", "w3", lease_s=-1.0)  # over budget, but expired:
    assert claim_candidate(session, "s", "e", "w1", budget=3)  # it holds no slot
    assert claim_candidate(session, "s", "d", "w1", budget=4)  # taken over within the budget


def test_claims_from_before_leases_expire_after_the_upgrade(engine: Engine) -> None:
    downgrade(engine, "0003")
    with engine.begin() as connection:
        connection.execute(
            text("INSERT INTO claim (study, config_name, worker) VALUES ('s', 'cfg', 'gone')")
        )
    upgrade(engine)
    with make_session_factory(engine).begin() as session:
        assert live_claims(session, "s", "me") == set()
        assert claim_candidate(session, "s", "cfg", "me") is Claimed.TAKEN
