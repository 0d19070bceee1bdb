"""gemmtune's HTTP API and dashboard (FastAPI), started by ``gemmtune serve``.

Importing this package is cheap and imports neither FastAPI nor CuPy: ``api.app.create_app``
builds the application; "which config for this GEMM?" is answered by ``tuner.answers.best``, for the
routes and for ``tuner.client`` alike (``tuner`` never imports ``api``).
"""

from __future__ import annotations
