"""Server settings: from the environment (``GEMMTUNE_*``), or given by tests and the CLI."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from storage import DEFAULT_URL

# An upload of the most measurements a request may carry (1000), each with its provenance at
# the bound uploads allow, is under 4 MiB; storing one raised the server's peak memory by 24 MiB
# (benchmarks/results/upload-memory-2026-11-28.json).
DEFAULT_MAX_BODY_BYTES = 4 * 2**20
DEFAULT_BODY_TIMEOUT_S = 10.0
DEFAULT_MAX_CONCURRENT_UPLOADS = 2
# A page of GET /v1/results: 1000 rows (storage.queries.MAX_PAGE) of small provenances fit;
# rows that each carry a provenance at its 16 KiB bound end the page at about 240 rows.
DEFAULT_MAX_PAGE_BYTES = 4 * 2**20


class Settings(BaseSettings):
    """What the server needs to know; every field reads ``GEMMTUNE_<NAME>`` from the environment.

    Neither token set means uploads (``POST /v1/results``) are switched off: reads are open,
    writes need a token someone chose on purpose. Uploads with ``api_token`` are stored as
    untrusted (listed, never the best config); with ``trusted_token`` they compete for best.
    """

    model_config = SettingsConfigDict(env_prefix="GEMMTUNE_", extra="ignore")

    database_url: str = Field(default=DEFAULT_URL, description="SQLAlchemy URL of the results")
    api_token: str | None = Field(
        default=None, description="bearer token for uploads, stored as untrusted"
    )
    trusted_token: str | None = Field(
        default=None, description="bearer token for uploads that may become the best config"
    )
    max_body_bytes: int = Field(
        default=DEFAULT_MAX_BODY_BYTES,
        ge=1,
        description="largest request body accepted; a larger one is refused (413) unread",
    )
    body_timeout_s: float = Field(
        default=DEFAULT_BODY_TIMEOUT_S,
        gt=0,
        description="seconds a request body may take to arrive whole; a slower one is refused "
        "(408) and its connection closed",
    )
    max_concurrent_uploads: int = Field(
        default=DEFAULT_MAX_CONCURRENT_UPLOADS,
        ge=1,
        description="uploads read and stored at once; another waits up to body_timeout_s for a "
        "turn, then gets 503 (with the body limit, this bounds the server's memory)",
    )
    max_page_bytes: int = Field(
        default=DEFAULT_MAX_PAGE_BYTES,
        ge=1,
        description="most bytes of rows (as JSON) one GET /v1/results page holds; a page that "
        "would hold more ends early (always at least one row), its next_cursor after its last",
    )
    preload: bool = Field(
        default=False,
        description="fill an empty database with the committed results at start-up",
    )
    cache_ttl_s: float = Field(
        default=2.0,
        ge=0,
        description="seconds between background refreshes of the in-memory best-config index; "
        "writes by other processes (tuning workers) show up after about this long, the API's "
        "own uploads at once",
    )
