"""gemmtune: autotuning of GEMM tile parameters for Jinja-templated CUDA kernels."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["__version__", "matmul"]

if TYPE_CHECKING:
    from tuner.client import matmul


def __getattr__(name: str) -> Any:
    # Lazy, so ``import tuner`` (the CLI, the API) never imports CuPy or the client.
    if name == "matmul":
        from tuner.client import matmul

        globals()["matmul"] = matmul
        return matmul
    raise AttributeError(f"module 'tuner' has no attribute {name!r}")
