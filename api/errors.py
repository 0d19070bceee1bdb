"""422 answers whose every message names the field, what is allowed, and the value sent.

FastAPI's default messages ("Input should be greater than or equal to 1") leave the field to the
``loc`` array; people read ``msg``, so the field goes there too: "`m` must be an integer in
1..2147483647, got 0".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.status import HTTP_422_UNPROCESSABLE_CONTENT

from tuner.answers import UnknownDeviceError
from tuner.shape import MAX_DIM

_SOURCES = ("body", "query", "path", "header", "cookie")
_DIMS = {"m", "n", "k", "m_min", "m_max", "n_min", "n_max", "k_min", "k_max"}


def field_name(loc: Sequence[Any]) -> str:
    parts = [str(p) for p in loc if p not in _SOURCES]
    return ".".join(parts) or "body"


def _allowed(error: dict[str, Any]) -> str:
    ctx = error.get("ctx") or {}
    kind = error.get("type", "")
    if kind == "missing":
        return "is required"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected', '?')}"
    if kind == "extra_forbidden":
        return "is not a known field"
    if kind == "value_error":  # a validator's own message, without pydantic's prefix
        return str(ctx.get("error", error.get("msg", "is invalid")))
    name = field_name(error.get("loc", ())).rsplit(".", 1)[-1]
    if name in _DIMS and kind in (
        "greater_than_equal",
        "less_than_equal",
        "int_parsing",
        "int_from_float",
        "int_type",
    ):
        return f"must be an integer in 1..{MAX_DIM}"
    if kind in ("greater_than_equal", "less_than_equal", "int_parsing", "int_from_float"):
        return "must be an integer" + (
            f" >= {ctx['ge']}" if "ge" in ctx else f" <= {ctx['le']}" if "le" in ctx else ""
        )
    message = str(error.get("msg", "is invalid"))
    return message[0].lower() + message[1:]


def describe(error: dict[str, Any]) -> str:
    """One line: "`field` <what is allowed>, got <value>"."""
    name = field_name(error.get("loc", ()))
    text = f"`{name}` {_allowed(error)}"
    if error.get("type") != "missing" and "input" in error:
        value = error["input"]
        shown = repr(value)
        text += f", got {shown if len(shown) <= 80 else shown[:77] + '...'}"
    return text


def _unprocessable(detail: list[dict[str, Any]]) -> JSONResponse:
    return JSONResponse(
        status_code=HTTP_422_UNPROCESSABLE_CONTENT, content=jsonable_encoder({"detail": detail})
    )


async def validation_handler(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    detail = []
    for error in exc.errors():
        detail.append(
            {
                "loc": list(error.get("loc", ())),
                "field": field_name(error.get("loc", ())),
                "msg": describe(dict(error)),
                "type": error.get("type"),
            }
        )
    return _unprocessable(detail)


async def unknown_device_handler(request: Request, exc: Exception) -> JSONResponse:
    """A device name nothing is stored for, with no arch to find its kind: a 422 on the
    ``device`` field, its message listing the known devices."""
    assert isinstance(exc, UnknownDeviceError)
    message = (
        f"`{exc.field}` {exc.detail}; or send `device_arch` and `device_sm_count` to be "
        "answered from devices of the same kind"
    )
    return _unprocessable(
        [{"loc": ["body", exc.field], "field": exc.field, "msg": message, "type": "unknown_device"}]
    )
