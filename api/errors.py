"""422 answers whose every message names the field, what is allowed, and the value sent.

FastAPI's default messages ("Input should be greater than or equal to 1") leave the field to the
``loc`` array; people read ``msg``, so the field goes there too: "`m` must be an integer in
1..2147483647, got 0".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import Request, status
from fastapi.encoders import jsonable_encoder
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from sqlalchemy.exc import DataError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.status import HTTP_422_UNPROCESSABLE_CONTENT

from api.schemas import CONFIG_NAME, NON_BLANK
from tuner.answers.best import UncomputedLayoutError, UnknownDeviceError
from tuner.answers.device_kind import ARCH_FORMAT
from tuner.core.shape import MAX_DIM
from tuner.data.intake import RejectedRecords

_SOURCES = ("body", "query", "path", "header", "cookie")
_DIMS = {"m", "n", "k", "m_min", "m_max", "n_min", "n_max", "k_min", "k_max"}


# Patterns of the schemas, said in words.
_PATTERNS = {
    NON_BLANK: "must not be blank",
    ARCH_FORMAT.pattern: "must look like sm_90 ('sm_' and the compute capability)",
    CONFIG_NAME: "must be a config's procedural name (lower-case letters, digits, '_')",
}


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
    if kind == "string_pattern_mismatch":
        pattern = str(ctx.get("pattern", ""))
        return _PATTERNS.get(pattern, f"must match the pattern {pattern}")
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
        text += f", got {_shown(error['input'])}"
    return text


def _shown(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= 80 else shown[:77] + "..."


def _unprocessable(detail: list[dict[str, Any]]) -> JSONResponse:
    return JSONResponse(
        status_code=HTTP_422_UNPROCESSABLE_CONTENT, content=jsonable_encoder({"detail": detail})
    )


async def validation_handler(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    if _is_dashboard(request):
        problems = "; ".join(describe(dict(error)) for error in exc.errors())
        return dashboard_error(request, status.HTTP_422_UNPROCESSABLE_CONTENT, problems)
    detail = []
    for error in exc.errors():
        body_problem = _body_problem(request, dict(error))
        detail.append(
            body_problem
            or {
                "loc": list(error.get("loc", ())),
                "field": field_name(error.get("loc", ())),
                "msg": describe(dict(error)),
                "type": error.get("type"),
            }
        )
    return _unprocessable(detail)


def _body_problem(request: Request, error: dict[str, Any]) -> dict[str, Any] | None:
    """A body that is not a JSON object at all, in one readable line (pydantic's own words
    name a character position as the field, or show the raw bytes)."""
    kind, loc = error.get("type"), tuple(error.get("loc", ()))
    if kind == "json_invalid":
        reason = (error.get("ctx") or {}).get("error", "not JSON")
        position = f" at character {loc[1]}" if len(loc) > 1 else ""
        message = f"`body` must be a JSON object; it is not valid JSON ({reason}{position})"
    elif kind == "model_attributes_type" and loc == ("body",):
        content_type = request.headers.get("content-type", "")
        if not is_json_type(content_type):
            message = (
                "`body` must be a JSON object sent with 'Content-Type: application/json', "
                f"got Content-Type {content_type or 'none'!r}"
            )
        else:
            message = f"`body` must be a JSON object, got {_shown(error.get('input'))}"
    else:
        return None
    return {"loc": ["body"], "field": "body", "msg": message, "type": kind}


def is_json_type(content_type: str) -> bool:
    """Whether a Content-Type is one FastAPI parses a body of as JSON."""
    main = content_type.split(";", 1)[0].strip().lower()
    return main == "application/json" or (
        main.startswith("application/") and main.endswith("+json")
    )


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


async def uncomputed_layout_handler(request: Request, exc: Exception) -> JSONResponse:
    """A dtype and layout no family of the asked accuracy class computes: a 422 on ``layout``."""
    assert isinstance(exc, UncomputedLayoutError)
    return _unprocessable(
        [{"loc": ["body", exc.field], "field": exc.field, "msg": str(exc), "type": "uncomputed"}]
    )


async def http_error_handler(request: Request, exc: Exception) -> Response:
    """FastAPI's own refusals, except its 400 for a body that is not text: that is bad input
    like any other body that is not JSON, so a 422 saying so. A dashboard page's refusal is a
    page (its message in HTML), not a JSON body."""
    assert isinstance(exc, StarletteHTTPException)
    if _is_dashboard(request):
        return dashboard_error(request, exc.status_code, str(exc.detail))
    cause = exc.__cause__
    if exc.status_code == status.HTTP_400_BAD_REQUEST and isinstance(cause, UnicodeDecodeError):
        message = f"`body` must be a JSON object in UTF-8; byte {cause.start} is not UTF-8"
        return _unprocessable(
            [{"loc": ["body"], "field": "body", "msg": message, "type": "body_not_utf8"}]
        )
    return await http_exception_handler(request, exc)


async def rejected_records_handler(request: Request, exc: Exception) -> JSONResponse:
    """Records refused by :mod:`tuner.data.intake`: one 422 entry per problem, on its field."""
    assert isinstance(exc, RejectedRecords)
    return _unprocessable(
        [
            {
                "loc": ["body", *problem.path],
                "field": problem.field,
                "msg": str(problem),
                "type": "rejected_record",
            }
            for problem in exc.problems
        ]
    )


async def database_error_handler(request: Request, exc: Exception) -> JSONResponse:
    """The database failed (unreachable, dropped, privileges revoked, file gone): a 503 that
    says so, instead of a bare 500. A value the database refused is the client's: 422."""
    if isinstance(exc, DataError):
        return _unprocessable(
            [
                {
                    "loc": ["body"],
                    "field": "body",
                    "msg": f"the database refused a value: {_one_line(exc)}",
                    "type": "database_refused",
                }
            ]
        )
    return unavailable(f"database unavailable: {_one_line(exc)}")


async def storage_error_handler(request: Request, exc: Exception) -> JSONResponse:
    return unavailable(f"database unavailable: {exc}")


def unavailable(message: str) -> JSONResponse:
    return JSONResponse(
        {"detail": message},
        status_code=status.HTTP_503_SERVICE_UNAVAILABLE,
        headers={"Retry-After": "5"},
    )


def _one_line(exc: Exception) -> str:
    """The driver's own message, first line, without SQLAlchemy's SQL echo and links."""
    original = getattr(exc, "orig", None) or exc
    text = str(original).strip().splitlines()
    # Long enough for a message that names two file paths (a SQLite file moved away).
    return " ".join(text[0].split())[:600] if text else type(original).__name__


# Dashboard paths that answer JSON (the study page's polling), whose errors stay JSON too.
DASHBOARD_JSON_PATHS = frozenset({"/dashboard/progress"})


def _is_dashboard(request: Request) -> bool:
    """Whether ``request`` asked for a dashboard page (HTML)."""
    path = request.url.path
    page = path == "/dashboard" or path.startswith("/dashboard/")
    return page and path not in DASHBOARD_JSON_PATHS


def dashboard_error(request: Request, status_code: int, message: str) -> Response:
    """A dashboard page's refusal as a page of the dashboard: the status, what was wrong, and
    the way back (the JSON endpoints keep JSON bodies)."""
    from http import HTTPStatus

    from api.routes.dashboard import templates  # the dashboard's own templates and style

    reason = HTTPStatus(status_code).phrase if status_code in HTTPStatus._value2member_map_ else ""
    context = {"status_code": status_code, "reason": reason, "message": message}
    return templates.TemplateResponse(request, "error.html", context, status_code=status_code)
