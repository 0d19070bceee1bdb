"""Claims: a worker takes a study's candidate before measuring it, so no two workers measure
the same one. The unique (study, config_name) key decides atomically on both backends."""

from __future__ import annotations

from sqlalchemy import delete
from sqlalchemy.orm import Session

from storage.conflicts import insert_ignoring_conflicts
from storage.models import Claim


def claim_candidate(session: Session, study: str, config_name: str, worker: str) -> bool:
    """Take ``config_name`` in ``study`` for ``worker``; False if any worker already took it.

    The claim is part of the caller's transaction: it holds once that commits.
    """
    values = {"study": study, "config_name": config_name, "worker": worker}
    return insert_ignoring_conflicts(session, Claim, values)


def release_claim(session: Session, study: str, config_name: str) -> None:
    """Give ``config_name`` back to ``study`` (a worker that claimed it and will not measure
    it, e.g. when its time ran out), so another worker may take it."""
    session.execute(delete(Claim).where(Claim.study == study, Claim.config_name == config_name))
