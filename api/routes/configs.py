"""``POST /v1/configs/best``: which config to run for a GEMM."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request, Response

from api import schemas
from api.deps import IndexDep
from api.responses import answer_headers, asked_device, best_response
from tuner.answers.answer_cache import reach_of

router = APIRouter(prefix="/v1/configs", tags=["configs"])


STALE_HEADER = "X-Gemmtune-Stale"
UNREADABLE_HEADER = "X-Gemmtune-Unreadable"


@router.post(
    "/best",
    response_class=Response,
    responses={
        200: {
            "model": schemas.BestResponse,
            "headers": {
                STALE_HEADER: {
                    "description": "present when the database failed: the answer comes from "
                    "the copy in memory, and says since when",
                    "schema": {"type": "string"},
                },
                UNREADABLE_HEADER: {
                    "description": "present when stored best configs were skipped because "
                    "this version cannot read them: how many",
                    "schema": {"type": "string"},
                },
            },
        },
        **schemas.errors(413, 422, 503),
    },
)
async def best_config(body: schemas.BestRequest, index: IndexDep, request: Request) -> Response:
    """The best config for (m, n, k) on ``device``: ``exact``, ``nearest`` (log-space distance)
    or ``default``, from the device's own results, else those of devices of the same kind
    (``device_match``); never a family that runs slowly on the device.

    For ``nearest`` the numbers were measured on ``measured_on``, not on the requested shape,
    and always on ``measured_on_device``. Async and answered from memory (the snapshot, then a
    cache of rendered answers), so the hot path neither queries the database nor hops to a
    worker thread (only a first read, when the one at start failed, runs in one). While the
    database is down it keeps answering from memory and says so in ``X-Gemmtune-Stale``. With
    tune on miss, a ``far`` or ``default`` answer also notes the shape for the tuning queue (in
    memory; ``api.tune_on_miss``).
    """
    snapshot = index.current
    if snapshot is None:
        # Nothing read yet (the database failed at start): read it off the loop, not here.
        snapshot = await asyncio.to_thread(index.snapshot)
    key = tuple(body.model_dump().values())
    content = snapshot.responses.get(key)
    if content is None:
        device = asked_device(body)
        answer = snapshot.answer(
            body.m,
            body.n,
            body.k,
            body.dtype,
            body.layout,
            device,
            accuracy=body.accuracy,
            out_dtype=body.out_dtype,
        )
        content = best_response(answer, body.include_source).model_dump_json().encode()
        request.app.state.misses.note_answer(
            body, answer.source, request.headers.get("authorization")
        )
        snapshot.responses.put(key, content, reach_of(answer))
    return Response(content, media_type="application/json", headers=answer_headers(index, snapshot))
