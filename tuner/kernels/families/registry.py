"""Every family by name, and reading a config back from its procedural name."""

from __future__ import annotations

import re

from tuner.core.accuracy import EXACT
from tuner.core.config import ABBR_PARAM, OPERAND_PADS, PAD_TOKEN, Config
from tuner.core.errors import InputError
from tuner.core.shape import Shape
from tuner.kernels.families._base import Family
from tuner.kernels.families.dmma import DMMA, DMMA_PIPELINED, DMMA_STREAMK
from tuner.kernels.families.emulated import (
    HMMA_BF16X3,
    HMMA_SPLITK_BF16X3,
    TMA_WS_BF16X3,
    WGMMA_BF16X3,
    WGMMA_SPLITK_BF16X3,
)
from tuner.kernels.families.hmma import HMMA, HMMA_SPLITK
from tuner.kernels.families.ladder import BLOCKTILE_1D, BLOCKTILE_2D, SMEM_TILING, VECTORIZED
from tuner.kernels.families.skinny import SKINNY
from tuner.kernels.families.split import SPLITK, STREAMK, WARPTILE_SPLITK
from tuner.kernels.families.tma_ws import TMA_WS
from tuner.kernels.families.vendor import CUBLAS, CUBLASLT
from tuner.kernels.families.warptile import DOUBLEBUF, PIPELINED, WARPTILE
from tuner.kernels.families.wgmma import WGMMA, WGMMA_SPLITK
from tuner.kernels.operand_padding import pad_multiple

FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        SMEM_TILING,
        BLOCKTILE_1D,
        BLOCKTILE_2D,
        VECTORIZED,
        WARPTILE,
        DOUBLEBUF,
        PIPELINED,
        SPLITK,
        WARPTILE_SPLITK,
        STREAMK,
        SKINNY,
        DMMA,
        DMMA_PIPELINED,
        DMMA_STREAMK,
        HMMA,
        HMMA_SPLITK,
        WGMMA,
        WGMMA_SPLITK,
        TMA_WS,
        HMMA_BF16X3,
        HMMA_SPLITK_BF16X3,
        WGMMA_BF16X3,
        WGMMA_SPLITK_BF16X3,
        TMA_WS_BF16X3,
        CUBLASLT,
        CUBLAS,
    )
}


# The families with a template: every family but the vendor library's (``Family.vendor``).
KERNEL_FAMILIES: dict[str, Family] = {name: f for name, f in FAMILIES.items() if not f.vendor}


def get_family(name: str) -> Family:
    """The family called ``name``; an unknown name raises listing the known ones."""
    try:
        return FAMILIES[name]
    except KeyError:
        raise InputError(f"unknown family {name!r}; choose one of {', '.join(FAMILIES)}") from None


def is_vendor(name: str) -> bool:
    """Whether family ``name`` is a vendor library rather than a template (``Family.vendor``);
    False for a name this version does not know."""
    family = FAMILIES.get(name)
    return family is not None and bool(family.vendor)


def rewrites_operands(config: Config) -> bool:
    """Whether ``config``'s kernel runs on operands rewritten from the caller's (an emulated
    family's split: ``Family.kernel_shape``)."""
    return get_family(config.family).rewrites_operands


def accuracy_of(name: str) -> str:
    """The accuracy class of family ``name`` (``tuner.core.accuracy``); ``exact`` for a name this
    version does not know (its configs are never served: ``tuner.answers.index.readable``)."""
    family = FAMILIES.get(name)
    return family.accuracy if family is not None else EXACT.name


_TOKEN_RE = re.compile(r"^([a-z]+)(\d+)$")
_ASSIGN_RE = re.compile(r"^\s*([A-Za-z]+)\s*=\s*(-?\d+)\s*$")


def repinned(config: Config, shape: Shape) -> Config | None:
    """``config`` with its shape-pinned parameters (``Family.pinned``: DTYPE, LAYOUT, OUT) set
    for ``shape``, its tiles and operand mode kept; None where its family computes nothing for
    ``shape`` (``Family.unsupported``: a split-K family asked for a half C)."""
    family = get_family(config.family)
    if family.unsupported(shape) is not None:
        return None
    moved = family.config({**config.as_dict(), **family.pinned(shape)})
    return moved.padded(config.pad) if config.pad else moved


def parse_config(text: str, family: str | None = None) -> Config:
    """Read a config from its procedural name, or from ``BM=128,BN=128,...`` with ``family``.

    A name may end in ``_pad4`` or ``_pad8``, the operand mode (``tuner.core.config``). The result
    has canonical order but is not checked against the rules (see ``Family``).
    """
    text = text.strip()
    if "=" in text:
        if family is None:
            raise InputError(f"config {text!r} is given as parameters: name its family too")
        fam = get_family(family)
        params: dict[str, int] = {}
        for part in text.split(","):
            match = _ASSIGN_RE.match(part)
            if not match:
                raise InputError(f"config parameter {part.strip()!r} must look like NAME=INTEGER")
            params[match.group(1).upper()] = int(match.group(2))
        return fam.config(params)
    names = sorted(
        (n for n in FAMILIES if text == n or text.startswith(n + "_")), key=len, reverse=True
    )
    if not names:
        raise InputError(f"config name {text!r} must start with a family: {', '.join(FAMILIES)}")
    fam = FAMILIES[names[0]]
    if family is not None and family != fam.name:
        raise InputError(f"config {text!r} belongs to family {fam.name}, not {family}")
    # A family without parameters (``cublas``) is named by its name alone.
    tokens = text[len(fam.name) + 1 :].split("_") if text != fam.name else []
    pad = _operand_pad(text, tokens)
    params = {}
    for token in tokens[: len(tokens) - (1 if pad else 0)]:
        match = _TOKEN_RE.match(token)
        if not match or match.group(1) not in ABBR_PARAM:
            raise InputError(f"config name {text!r} has an unreadable part {token!r}")
        params[ABBR_PARAM[match.group(1)]] = int(match.group(2))
    config = fam.config(params)
    return config.padded(pad) if pad else config


def _operand_pad(text: str, tokens: list[str]) -> int:
    """The operand mode a name's tokens end with (0 for none); a ``pad`` token elsewhere, or
    with another value, raises naming it."""
    for position, token in enumerate(tokens):
        match = _TOKEN_RE.match(token)
        if not match or match.group(1) != PAD_TOKEN:
            continue
        if int(match.group(2)) not in OPERAND_PADS or position != len(tokens) - 1:
            modes = " or ".join(f"{PAD_TOKEN}{pad}" for pad in OPERAND_PADS)
            raise InputError(
                f"config name {text!r} has {token!r}: the operand mode must be the last part "
                f"and one of {modes} (rows padded to whole 16-byte vectors of floats or halves)"
            )
        return int(match.group(2))
    return 0


def checked_config(text: str, family: str | None = None) -> Config:
    """:func:`parse_config`, then the family's rules: an invalid config raises with the first
    rule it breaks (or, padded, with a pad that is not its input type's 16-byte vector)."""
    config = parse_config(text, family)
    fam = get_family(config.family)
    broken = fam.broken_rules(config)
    if broken:
        raise InputError(f"config {config.name} is invalid: {broken[0]}")
    allowed = {pad_multiple(dtype) for dtype in fam.dtypes}
    if config.pad and config.pad not in allowed:
        modes = " or ".join(f"{PAD_TOKEN}{pad}" for pad in sorted(allowed))
        raise InputError(
            f"config {config.name} is invalid: {fam.name} computes "
            f"{'/'.join(fam.dtypes)} inputs, whose 16-byte rows take {modes}"
        )
    return config
