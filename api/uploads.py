"""``POST /v1/results``: from a validated body to stored rows, all or nothing.

Every measurement passes :mod:`tuner.data.intake` first (the rules shared with ``gemmtune import``
and preload), and its device must agree with what the database knows of that name
(:mod:`storage.device_claims`); one problem refuses the whole upload. What is stored is marked
trusted or not by the token it came with (:func:`tuner.data.intake.with_trust`): an untrusted
row is listed like any other but never becomes the best config, a study's trial or a device
an answer is resolved by. The SQLite file is checked before and after the
write, so an upload is never acknowledged into a file that was deleted or replaced.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import HTTPException, status
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from sqlalchemy.orm import Session, sessionmaker

import storage
from api import schemas
from api.errors import is_json_type
from tuner.core.provenance import ProvenanceError
from tuner.data.intake import Problem, RejectedRecords, check_upload, with_trust
from tuner.kernels.families import accuracy_of


def parse_upload(raw: bytes, content_type: str) -> schemas.ResultsUpload:
    """The upload's body as FastAPI would validate it, with the same errors, but in the
    caller's thread: the route calls this from a worker thread, because validating an upload at
    the body limit takes a tenth of a second or more, which on the event loop every answer
    would wait for.

    Raises:
        RequestValidationError: not JSON, or not a valid upload (``loc`` starts with ``body``).
        HTTPException: 400 for a body that is not UTF-8 (answered as a 422 that says so).
    """
    value: Any = raw
    if not raw:
        missing = {"type": "missing", "loc": ("body",), "msg": "Field required", "input": None}
        raise RequestValidationError([missing])
    if is_json_type(content_type):
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            error = {
                "type": "json_invalid",
                "loc": ("body", exc.pos),
                "msg": "JSON decode error",
                "input": {},
                "ctx": {"error": exc.msg},
            }
            raise RequestValidationError([error]) from None
        except UnicodeDecodeError as exc:  # as FastAPI refuses it: api.errors says why, in a 422
            raise HTTPException(
                status.HTTP_400_BAD_REQUEST, "There was an error parsing the body"
            ) from exc
    try:
        return schemas.ResultsUpload.model_validate(value, from_attributes=True)  # as FastAPI
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        raise RequestValidationError([{**e, "loc": ("body", *e["loc"])} for e in errors]) from None


def store_upload(
    body: schemas.ResultsUpload,
    sessions: sessionmaker[Session],
    trusted: bool,
    database_file: storage.SqliteFile | None,
) -> list[int]:
    """Ids of the stored measurements.

    Raises:
        RejectedRecords: a measurement breaks a rule (nothing is stored).
        HTTPException: 503 when the database file is not the one the server opened.
    """
    device = storage.DeviceIn(**body.device.model_dump())
    shape = storage.ShapeIn(**body.shape.model_dump())
    measurements = []
    for i, item in enumerate(body.measurements):
        try:
            # The class is the family's, never the uploader's word; a phase or trust said the
            # old way, in the study name or provenance, is read as the fields.
            values = item.model_dump()
            measurement = storage.MeasurementIn(**values, accuracy=accuracy_of(values["family"]))
            measurements.append(storage.from_legacy(measurement))
        except ProvenanceError as exc:
            where = ("measurements", i, "provenance", *exc.where)
            raise RejectedRecords([Problem(where, exc.allowed)]) from exc
        except ValueError as exc:
            raise RejectedRecords([Problem(("measurements", i), str(exc))]) from exc
    check_upload(device, shape, measurements)
    _check_file(database_file, "")
    with sessions.begin() as session:
        # Checked in the transaction that writes, under the name's lock: two uploads of a new
        # name with different claims cannot both find it unknown (a refusal rolls back).
        storage.lock_device_names(session, [device.name])
        claim = storage.claim_problem(device, storage.known_devices(session, [device.name]))
        if claim is not None:
            raise RejectedRecords([Problem(("device",), claim)])
        ids = storage.record_measurements(
            session, [(device, shape, with_trust(m, trusted)) for m in measurements]
        )
    _check_file(database_file, "; this upload may not have been stored, send it again")
    return ids


def _check_file(database_file: storage.SqliteFile | None, consequence: str) -> None:
    problem = None if database_file is None else database_file.problem()
    if problem is not None:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, problem + consequence)
