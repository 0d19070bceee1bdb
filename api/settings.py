"""Server settings: from the environment (``GEMMTUNE_*``), or given by tests and the CLI."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from storage import DEFAULT_URL, PoolLimits
from storage.tune_queue import QUEUE_LIMIT

# An upload of the most measurements a request may carry (1000), each with its provenance at
# the bound uploads allow, is under 4 MiB; storing one raised the server's peak memory by 24 MiB
# (benchmarks/results/upload-memory-2026-11-28.json).
DEFAULT_MAX_BODY_BYTES = 4 * 2**20
DEFAULT_BODY_TIMEOUT_S = 10.0
DEFAULT_MAX_CONCURRENT_UPLOADS = 2
# PostgreSQL connections of one server. Answers take none (they come from memory); what does:
# the index refresher (1), uploads (max_concurrent_uploads, 2), and the pages of results,
# studies and the dashboard, which run in the server's worker threads. Eight kept open cover
# those with room; eight more open in a burst; a page that finds all sixteen busy for 10 s gets
# 503. A server per machine keeps at most 16 of PostgreSQL's default 100 connections.
DEFAULT_DB_POOL_SIZE = 8
DEFAULT_DB_POOL_OVERFLOW = 8
DEFAULT_DB_POOL_TIMEOUT_S = 10.0
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
    db_pool_size: int = Field(
        default=DEFAULT_DB_POOL_SIZE,
        ge=1,
        description="PostgreSQL connections the server keeps open (SQLite ignores it)",
    )
    db_pool_overflow: int = Field(
        default=DEFAULT_DB_POOL_OVERFLOW,
        ge=0,
        description="PostgreSQL connections opened beyond db_pool_size in a burst, closed after",
    )
    db_pool_timeout_s: float = Field(
        default=DEFAULT_DB_POOL_TIMEOUT_S,
        gt=0,
        description="seconds a request waits for a free PostgreSQL connection before a 503",
    )
    cache_ttl_s: float = Field(
        default=2.0,
        ge=0,
        description="seconds between background refreshes of the in-memory best-config index; "
        "writes by other processes (tuning workers) show up after about this long, the API's "
        "own uploads at once",
    )
    tune_on_miss: bool = Field(
        default=False,
        description="queue the shapes answered far or default for tuning (a running gemmtune "
        "worker tunes them); with a token set, only callers that send one queue shapes",
    )
    tune_on_miss_per_minute: int = Field(
        default=60, ge=1, description="shapes this server queues on miss per minute at most"
    )
    queue_limit: int = Field(
        default=QUEUE_LIMIT,
        ge=1,
        description="shapes the tuning queue holds waiting at most; a miss past it is dropped",
    )

    def pool(self) -> PoolLimits:
        """The PostgreSQL connection pool these settings ask for."""
        return PoolLimits(self.db_pool_size, self.db_pool_overflow, self.db_pool_timeout_s)
