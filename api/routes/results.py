"""``GET /v1/results`` (open), ``POST /v1/results`` (bearer token), ``GET /v1/devices``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, status

import storage
from api import schemas
from api.deps import IndexDep, SessionDep, SessionsDep, TrustDep
from api.responses import measurement_out
from api.upload_schema import UPLOAD_BODY
from api.uploads import parse_upload, store_upload
from tuner.core.shape import MAX_DIM

router = APIRouter(prefix="/v1", tags=["results"])

DimQuery = Annotated[int | None, Query(ge=1, le=MAX_DIM)]


@router.get("/results", response_model=schemas.ResultsPage, responses=schemas.errors(422, 503))
def list_results(
    request: Request,
    session: SessionDep,
    device: Annotated[str | None, Query(max_length=200, description="device name")] = None,
    family: Annotated[str | None, Query(max_length=64)] = None,
    status_: Annotated[schemas.Status | None, Query(alias="status")] = None,
    m_min: DimQuery = None,
    m_max: DimQuery = None,
    n_min: DimQuery = None,
    n_max: DimQuery = None,
    k_min: DimQuery = None,
    k_max: DimQuery = None,
    limit: Annotated[int, Query(ge=1, le=storage.queries.MAX_PAGE)] = 100,
    offset: Annotated[int, Query(ge=0, le=2**62)] = 0,
    cursor: Annotated[
        int | None,
        Query(ge=1, le=2**62, description="`next_cursor` of the previous page (keyset paging)"),
    ] = None,
) -> schemas.ResultsPage:
    """Stored measurements, most recently stored first; dimension bounds are inclusive. Page
    with ``cursor`` (each page's ``next_cursor``): every page costs the same, where a large
    ``offset`` grows slower with the rows it skips. A page holds at most ``limit`` rows and
    at most ``GEMMTUNE_MAX_PAGE_BYTES`` of them as JSON: one that would hold more ends early,
    and ``next_cursor`` goes on from its last row."""
    rows, total = storage.stream_measurements(
        session,
        device=device,
        family=family,
        status=status_,
        m_min=m_min,
        m_max=m_max,
        n_min=n_min,
        n_max=n_max,
        k_min=k_min,
        k_max=k_max,
        limit=limit,
        offset=offset,
        before_id=cursor,
    )
    items, full = fit_page(rows, request.app.state.settings.max_page_bytes)
    following = items[-1].id if full or len(items) == limit else None
    return schemas.ResultsPage(
        total=total, limit=limit, offset=offset, next_cursor=following, items=items
    )


async def upload_bytes(request: Request) -> bytes:
    # Read on the loop (RequestGuard holds it in memory already); parsed in the worker thread.
    return await request.body()


def fit_page(
    rows: Iterable[storage.Measurement], max_bytes: int
) -> tuple[list[schemas.MeasurementOut], bool]:
    """The first ``rows`` whose JSON takes at most ``max_bytes`` (at least one, so paging always
    moves on), and whether the bound cut the page short. Rows are read only as far as the page
    goes: a provenance may hold 16 KiB, and a page of 1000 such rows would be 16 MiB read to be
    thrown away."""
    items: list[schemas.MeasurementOut] = []
    used = 0
    for row in rows:
        item = measurement_out(row)
        used += len(item.model_dump_json()) + 1  # the comma between items
        if items and used > max_bytes:
            return items, True
        items.append(item)
    return items, False


@router.post(
    "/results",
    response_model=schemas.UploadResponse,
    status_code=status.HTTP_201_CREATED,
    responses=schemas.errors(401, 403, 413, 422, 503),
    openapi_extra=UPLOAD_BODY,
)
def upload_results(
    request: Request,
    raw: Annotated[bytes, Depends(upload_bytes)],
    trusted: TrustDep,
    sessions: SessionsDep,
    index: IndexDep,
) -> schemas.UploadResponse:
    """Store a worker's measurements of one device and shape (one transaction, all or none).

    Each must name a valid config of its family with plausible times (422 naming the field
    otherwise). With the trusted token they compete for the best config; with the plain
    token they are stored as untrusted: listed here, never served as the best. The body is
    validated here, in a worker thread, not by FastAPI on the event loop that answers
    ``POST /v1/configs/best`` (``api.uploads.parse_upload``).
    """
    body = parse_upload(raw, request.headers.get("content-type", ""))
    ids = store_upload(body, sessions, trusted, request.app.state.database_file)
    index.apply_written(ids)  # the new bests answer at once
    return schemas.UploadResponse(stored=len(ids), ids=ids)


@router.get("/devices", response_model=list[schemas.ListedDevice], responses=schemas.errors(503))
def list_devices(session: SessionDep) -> list[schemas.ListedDevice]:
    """Every device with stored measurements, each saying whether it is trusted (an untrusted
    one, named only by plain-token uploads, never answers for its name)."""
    return [
        schemas.ListedDevice(name=d.name, arch=d.arch, sm_count=d.sm_count, trusted=d.trusted)
        for d in storage.list_devices(session)
    ]
