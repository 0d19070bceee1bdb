"""Accuracy classes: how exactly a family computes a product, and what a caller accepts.

Every family so far multiplies the inputs as they are stored and adds the products in FP32 or
better: class ``exact``. A family that emulates FP32 on the FP16/BF16 tensor cores keeps fewer
bits of each float32 input; its class names how many (``bf16x3``: each input split into a BF16
high part and a BF16 low part, three products of the four, about 16 of its 24 significand
bits). A family states its class (``Family.accuracy``); verification allows its error on top of
the FP32 sums' (:func:`allowance`); a caller names the least exact class it accepts (a floor,
``exact`` unless asked), and only families of that class or a more exact one are searched,
stored as its best, or answered (one best config per device, shape and class).

This is the float32 analogue of PyTorch's ``torch.set_float32_matmul_precision``: ``exact`` is
"highest"; ``bf16x3`` sits where "high" would (TF32, which keeps 11 bits, is below it, and no
family here computes in TF32).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

from tuner.core.errors import InputError

# The class of a measurement nobody labelled: strict FP32. Storage keeps a class as an opaque short
# label and this one as every row's default; best_config keeps the fastest of each class apart,
# so a caller asking for strict results never gets a config that is merely close.
UNLABELLED = "exact"


@dataclass(frozen=True)
class AccuracyClass:
    """One class: its name, the significand bits of a float32 input its products keep (24
    for all of them), and what it means in one line."""

    name: str
    kept_bits: int
    doc: str


EXACT = AccuracyClass(UNLABELLED, 24, "inputs multiplied as stored, FP32 sums")
BF16X3 = AccuracyClass(
    "bf16x3",
    16,
    "float32 inputs split into BF16 high and low parts on the tensor cores (hi*hi + hi*lo + "
    "lo*hi, FP32 sums): about 16 significand bits of each input",
)
ACCURACY_CLASSES = {c.name: c for c in (EXACT, BF16X3)}
ACCURACY_NAMES = tuple(ACCURACY_CLASSES)
DEFAULT_ACCURACY = EXACT.name


def check_accuracy(value: object) -> str:
    """``value`` if it names an accuracy class, else raise naming it and the choices."""
    if value not in ACCURACY_CLASSES:
        choices = ", ".join(f"{c.name} ({c.doc})" for c in ACCURACY_CLASSES.values())
        raise InputError(f"`accuracy` must be one of {choices}; got {value!r}")
    return str(value)


def accepted(floor: str) -> frozenset[str]:
    """The classes a caller whose floor is ``floor`` accepts: it and every more exact one."""
    return _accepted(check_accuracy(floor))


@cache
def _accepted(floor: str) -> frozenset[str]:
    least = ACCURACY_CLASSES[floor].kept_bits
    return frozenset(c.name for c in ACCURACY_CLASSES.values() if c.kept_bits >= least)


def allowance(accuracy: str) -> float:
    """Relative error a family of this class may add to the FP32 sums' allowance
    (``tuner.gpu.measure.tolerance``): 0 for ``exact``, else one unit in the last kept bit.

    For ``bf16x3`` that is 2^-16 (1.5e-5). Simulated on random normal data (float64 sums, 128
    x 128 outputs, K from 16 to 16384) the split's own error is 4.4e-6 whatever K, one pass of
    TF32 2.9e-4 and one of BF16 2.3e-3: a kernel that silently dropped a product or a low part
    would fail."""
    kept = ACCURACY_CLASSES[check_accuracy(accuracy)].kept_bits
    return 0.0 if kept >= EXACT.kept_bits else 2.0**-kept


def loosest(classes: Iterable[str]) -> str:
    """The least exact of ``classes`` (``exact`` for none): the floor a set of families needs."""
    named = [ACCURACY_CLASSES[check_accuracy(c)] for c in classes]
    return min(named, key=lambda c: c.kept_bits, default=EXACT).name
