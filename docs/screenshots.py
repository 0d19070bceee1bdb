"""Take the dashboard screenshots of docs/service.md from a running server.

    gemmtune serve --db sqlite:///shots.db            # preloads the committed H100 results
    gemmtune import benchmarks/results/tuning/h200-suite-run2-run3-export.json --db sqlite:///shots.db
    python docs/screenshots.py http://127.0.0.1:8000

Uses the browser tests' headless Chromium (tests/api/browser.py); run from the repository root.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.api.browser import Browser

HERE = Path(__file__).resolve().parent
PAGES = {
    "dashboard-study.png": ("/dashboard/studies/h100-sweep-4096x4096x4096", 2300),
    "dashboard-shapes.png": ("/dashboard/shapes?shape=3x5x7&device=#answer", 1500),
}

PANELS_LOADED = "[...document.querySelectorAll('[data-fragment]')].every(p => p.dataset.loaded)"


def main(server: str) -> None:
    # Chromium may still be writing its profile as it exits: leave what it wrote then.
    with (
        tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile,
        Browser(Path(profile), width=1280) as browser,
    ):
        for name, (page, height) in PAGES.items():
            browser.open(server + page)
            # Panels the page's script loads on their own request (a study's importances).
            log = browser.wait_until(PANELS_LOADED, timeout_s=50)
            assert not log.errors, log.errors
            browser.screenshot(HERE / name, height=height)
            print(HERE / name)


if __name__ == "__main__":
    main(sys.argv[1].rstrip("/"))
