"""Server settings: from the environment (``GEMMTUNE_*``), or given by tests and the CLI."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from storage import DEFAULT_URL


class Settings(BaseSettings):
    """What the server needs to know; every field reads ``GEMMTUNE_<NAME>`` from the environment.

    ``api_token`` unset means uploads (``POST /v1/results``) are switched off: reads are open,
    writes need a token someone chose on purpose.
    """

    model_config = SettingsConfigDict(env_prefix="GEMMTUNE_", extra="ignore")

    database_url: str = Field(default=DEFAULT_URL, description="SQLAlchemy URL of the results")
    api_token: str | None = Field(default=None, description="bearer token for uploads")
    preload: bool = Field(
        default=False,
        description="fill an empty database with the committed results at start-up",
    )
    cache_ttl_s: float = Field(
        default=2.0,
        ge=0,
        description="how long the in-memory best-config snapshot is trusted; writes by other "
        "processes (tuning workers) show up after at most this long, the API's own at once",
    )
