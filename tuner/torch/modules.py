"""``tuner.torch.Linear``: ``torch.nn.Linear`` computed by gemmtune, and ``replace_linears``,
which swaps it into a model in place of every ``nn.Linear`` (the same parameters, not copies)."""

from __future__ import annotations

from typing import Any

import torch

from tuner.core.accuracy import DEFAULT_ACCURACY
from tuner.torch.ops import linear


class Linear(torch.nn.Linear):
    """A drop-in ``torch.nn.Linear`` whose forward is :func:`tuner.torch.linear` (the weight
    read in place as the transposed operand); ``url``, ``db`` and ``accuracy`` say where and how
    its configs are asked (:func:`tuner.client.best`)."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
        *,
        url: str | None = None,
        db: str | None = None,
        accuracy: str = DEFAULT_ACCURACY,
    ) -> None:
        super().__init__(in_features, out_features, bias, device, dtype)
        self.url, self.db, self.accuracy = url, db, accuracy

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.weight, self.bias, url=self.url, db=self.db, accuracy=self.accuracy)

    @classmethod
    def from_linear(
        cls,
        module: torch.nn.Linear,
        *,
        url: str | None = None,
        db: str | None = None,
        accuracy: str = DEFAULT_ACCURACY,
    ) -> Linear:
        """A :class:`Linear` holding ``module``'s own weight and bias (shared, not copied)."""
        new = cls(
            module.in_features,
            module.out_features,
            module.bias is not None,
            device="meta",  # no memory of its own: the parameters are module's
            url=url,
            db=db,
            accuracy=accuracy,
        )
        new.weight = module.weight
        new.bias = module.bias
        new.train(module.training)
        return new


def replace_linears(
    model: torch.nn.Module,
    *,
    url: str | None = None,
    db: str | None = None,
    accuracy: str = DEFAULT_ACCURACY,
) -> torch.nn.Module:
    """``model`` with every ``torch.nn.Linear`` in it (itself included) replaced by a
    :class:`Linear` on the same parameters; the model is changed in place and returned."""
    lookup: dict[str, Any] = {"url": url, "db": db, "accuracy": accuracy}
    if type(model) is torch.nn.Linear:
        return Linear.from_linear(model, **lookup)
    for name, child in model.named_children():
        if type(child) is torch.nn.Linear:
            setattr(model, name, Linear.from_linear(child, **lookup))
        else:
            replace_linears(child, **lookup)
    return model
