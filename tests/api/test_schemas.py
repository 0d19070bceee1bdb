"""The API's bodies carry the library's records whole: a field added to one shows up here."""

from __future__ import annotations

from dataclasses import fields

import storage
from api import schemas
from tuner.answers.answer import Answer
from tuner.answers.default_rule import default_config
from tuner.answers.index import Snapshot


def test_uploads_and_result_lists_carry_every_measurement_field() -> None:
    # Uploads leave created_at to the server, the accuracy class to the family's and trust to
    # the token; lists add where the row sits.
    server_side = ("accuracy", "trusted", "created_at")
    uploaded = tuple(f for f in storage.MEASUREMENT_FIELDS if f not in server_side)
    assert tuple(schemas.MeasurementIn.model_fields) == uploaded
    listed = [
        name for name in schemas.MeasurementOut.model_fields if name in storage.MEASUREMENT_FIELDS
    ]
    assert tuple(listed) == storage.MEASUREMENT_FIELDS
    extra = set(schemas.MeasurementOut.model_fields) - set(storage.MEASUREMENT_FIELDS)
    assert extra == {"id", "device", "shape", "dtype", "layout", "out_dtype"}


def test_the_best_response_is_the_answer_plus_its_kernel() -> None:
    answer = Snapshot().answer(100, 200, 300)
    assert answer.name == default_config(100, 200).name
    body = answer.as_json()
    assert list(schemas.BestResponse.model_fields) == [*body, "kernel"]
    assert schemas.BestResponse(**body).model_dump(exclude={"kernel"}) == body


def test_the_best_response_schema_is_built_from_the_answers_fields() -> None:
    schema = schemas.BestResponse.model_json_schema()
    assert schema["required"] == [f.name for f in fields(Answer)]  # null where there is none
    described = {f.name: f.metadata["doc"] for f in fields(Answer) if "doc" in f.metadata}
    shown = {
        name: prop["description"]
        for name, prop in schema["properties"].items()
        if "description" in prop and name != "kernel"
    }
    assert shown == described and "source" in shown
    confidence = schema["properties"]["confidence"]
    assert (confidence["minimum"], confidence["maximum"]) == (0.0, 1.0)
    assert schema["properties"]["measured_on"]["anyOf"][0] == {"$ref": "#/$defs/ShapeOut"}
