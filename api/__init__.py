"""gemmtune's HTTP API and dashboard (FastAPI), started by ``gemmtune serve``.

Importing this package is cheap and imports neither FastAPI nor CuPy: ``api.app.create_app``
builds the application, ``api.lookup`` answers "which config for this GEMM?" for the routes and
for ``tuner.client`` alike.
"""

from __future__ import annotations
