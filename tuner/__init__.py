"""gemmtune: autotuning of GEMM tile parameters for Jinja-templated CUDA kernels."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
