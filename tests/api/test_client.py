"""``tuner.client.best``: the same answer over HTTP and straight from the database."""

from __future__ import annotations

import pytest

from tests.api.conftest import FAST, LiveServer, seed
from tuner.client import best
from tuner.errors import InputError


def test_best_over_http_and_from_the_database_agree(live_server: LiveServer) -> None:
    over_http = best(1024, 2048, 1024, url=live_server.url)
    db_url = live_server.app.state.settings.database_url
    direct = best(1024, 2048, 1024, db=db_url)
    assert over_http == direct
    assert (direct.name, direct.source, direct.measured_on) == (FAST, "nearest", (1024, 1024, 1024))
    assert direct.config.name == FAST


def test_best_from_an_empty_database_is_the_default(tmp_path: pytest.TempPathFactory) -> None:
    answer = best(3, 5, 7, db=f"sqlite:///{tmp_path}/empty.db")
    assert answer.source == "default" and answer.ms is None


def test_best_checks_dimensions_and_reports_server_trouble(
    tmp_path: pytest.TempPathFactory,
) -> None:
    url = f"sqlite:///{tmp_path}/x.db"
    seed(url)
    with pytest.raises(InputError, match=r"`k` must be an integer in 1\.\.2147483647, got 0"):
        best(1, 1, 0, db=url)
    with pytest.raises(InputError, match="cannot reach gemmtune"):
        best(1, 1, 1, url="http://127.0.0.1:9", timeout_s=1)
