"""Which studies are searching right now: ``Study.search`` wrapped for a test, so that it can
ask, at any moment (a worker taking its next job, say), whose search is under way."""

from __future__ import annotations

import pytest

from tuner.search.study import Progress, Study


def watch_searches(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The shapes whose search is under way, kept up to date for as long as the test runs."""
    searching: list[str] = []
    search = Study.search

    def watched(self: Study, *args: object, **kwargs: object) -> Progress:
        searching.append(str(self.shape))
        try:
            return search(self, *args, **kwargs)  # type: ignore[arg-type]
        finally:
            searching.remove(str(self.shape))

    monkeypatch.setattr(Study, "search", watched)
    return searching
