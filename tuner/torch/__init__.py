"""gemmtune for PyTorch: ``tuner.torch.matmul``, ``linear``, the ``Linear`` module and
``replace_linears``, on torch CUDA tensors without copies, on torch's current stream, usable
under ``torch.compile`` (the custom op ``gemmtune::matmul``) and in CUDA graphs.

Importing ``tuner`` never imports torch; importing this package does not either, until one of
its names is used (the argument checks, ``tuner.torch.checks``, need no torch at all). Needs the
``torch`` extra (``pip install 'gemmtune[torch]'``). Usage: docs/pytorch.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["Linear", "linear", "matmul", "replace_linears"]

if TYPE_CHECKING:
    from tuner.torch.modules import Linear, replace_linears
    from tuner.torch.ops import linear, matmul

_HOMES = {
    "matmul": "tuner.torch.ops",
    "linear": "tuner.torch.ops",
    "Linear": "tuner.torch.modules",
    "replace_linears": "tuner.torch.modules",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'tuner.torch' has no attribute {name!r}")
    import importlib

    try:
        module = importlib.import_module(home)
    except ModuleNotFoundError as exc:
        if exc.name != "torch":
            raise
        raise ImportError(
            "tuner.torch needs PyTorch, which is not installed: pip install 'gemmtune[torch]'"
        ) from exc
    value = getattr(module, name)
    globals()[name] = value
    return value
