"""``POST /v1/results``'s request body in the OpenAPI document.

The upload route validates its body itself, in a worker thread (:func:`api.uploads.parse_upload`),
so FastAPI does not see :class:`api.schemas.ResultsUpload` and would leave it out of the
document. :data:`UPLOAD_BODY` names it as the route's body, and :func:`with_upload_schemas`
puts it, and the models it holds, among the document's schemas, as FastAPI would have.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI

from api import schemas

REF = "#/components/schemas/{model}"

UPLOAD_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": {"$ref": REF.format(model="ResultsUpload")}}},
    }
}


def with_upload_schemas(app: FastAPI) -> Callable[[], dict[str, Any]]:
    """``app.openapi`` that adds the upload's schemas to the document FastAPI builds."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        document = build()
        upload = schemas.ResultsUpload.model_json_schema(ref_template=REF)
        found = document.setdefault("components", {}).setdefault("schemas", {})
        for name, schema in upload.pop("$defs", {}).items():
            found.setdefault(name, schema)
        found["ResultsUpload"] = upload
        return document

    return openapi
