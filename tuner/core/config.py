"""A kernel configuration: a family plus integer parameters, with a procedural name.

A :class:`Config` is a frozen, hashable value. Its name (e.g.
``warptile_bm128_bn128_bk16_wm64_wn64_wni4_tm8_tn4_t128``) is its identity everywhere: cache keys,
database rows, CLI arguments and API answers.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

# Parameter name -> the short token used in procedural kernel names. One table, so that a name
# can always be read back (see ``tuner.kernels.families.parse_config``).
PARAM_ABBR: dict[str, str] = {
    "BM": "bm",
    "BN": "bn",
    "BK": "bk",
    "WM": "wm",
    "WN": "wn",
    "WNITER": "wni",
    "TM": "tm",
    "TN": "tn",
    "THREADS": "t",
    "STAGES": "s",
    "SPLITK": "sk",
    "LK": "lk",
    "KU": "ku",
    "SMBLOCKS": "smb",
    "STAGGER": "stg",
    "MK": "mk",
    "MINBLOCKS": "mb",
    "WIDEN": "wd",
    "WARPS_M": "wpm",
    "WARPS_N": "wpn",
    "WG_M": "wgm",
    "SWIZZLE": "sw",
    "DTYPE": "dt",
    "LAYOUT": "ly",
    "RANK": "rk",
    "CONSUMERS": "cw",
    "GROUP": "gr",
    "RASTER": "ra",
    "OUT": "out",
    "EPI": "ep",
    "CM": "cm",
    "CN": "cn",
    "TAIL": "tl",
    "SPLIT": "sp",
    "PINGPONG": "pp",
}
# Parameters a name leaves out at one value, so that the names stored before the parameter
# existed read back as that value: OUT (the type C is written in) is 0, float32, in every name
# without an ``out`` token, which is what every config wrote before C had a type; TAIL (tma_ws's
# stream-K tail) is 0, whole tiles, in every name without a ``tl`` token; SPLIT (tma_ws's pieces
# of K per tile) is 1, whole K, in every name without an ``sp`` token; PINGPONG (tma_ws's
# consumers taking whole tiles in turn) is 0, each tile's rows shared, without a ``pp`` token.
IMPLICIT_VALUES: dict[str, int] = {"OUT": 0, "TAIL": 0, "SPLIT": 1, "PINGPONG": 0}
ABBR_PARAM: dict[str, str] = {abbr: name for name, abbr in PARAM_ABBR.items()}
# The name token of the operand mode (``_pad4``, ``_pad8``): rows rounded up to a whole number of
# 16-byte vectors, what the templates' widest copies need; its value is that multiple in
# elements (``tuner.kernels.operand_padding.pad_multiple``: 4 floats, 8 halves).
PAD_TOKEN = "pad"
OPERAND_PADS = (4, 8)


@dataclass(frozen=True, order=True)
class Config:
    """Family name plus ``(PARAM, value)`` pairs in the family's declared parameter order.

    Build configs through ``tuner.kernels.families`` (``Family.config`` / ``parse_config``) so that
    the parameter order is canonical; two equal configs then have equal names and hashes.
    """

    family: str
    params: tuple[tuple[str, int], ...]
    pad: int = 0  # 0: the caller's arrays; one of OPERAND_PADS: zero-padded copies

    def __getitem__(self, key: str) -> int:
        for name, value in self.params:
            if name == key:
                return value
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self.params)

    def as_dict(self) -> dict[str, int]:
        """The parameters by name (a new dict; the config stays immutable)."""
        return dict(self._by_name)

    @cached_property
    def _by_name(self) -> dict[str, int]:
        return dict(self.params)

    # The names are cached: a study's space names every candidate several times (sets, dicts,
    # the sampler's ranking), and building the string was a tenth of a study's set-up.
    @cached_property
    def kernel_name(self) -> str:
        """The name without the operand mode: the kernel's symbol, shared by both modes."""
        tokens = (
            f"{PARAM_ABBR[name]}{value}"
            for name, value in self.params
            if IMPLICIT_VALUES.get(name) != value
        )
        return "_".join([self.family, *tokens])

    @cached_property
    def name(self) -> str:
        return self.kernel_name + (f"_{PAD_TOKEN}{self.pad}" if self.pad else "")

    @property
    def direct(self) -> Config:
        """This config on the caller's arrays (itself when it is not padded)."""
        return Config(self.family, self.params) if self.pad else self

    def padded(self, multiple: int) -> Config:
        """This config on zero-padded copies of its operands, rows rounded up to ``multiple``
        elements (one of :data:`OPERAND_PADS`)."""
        if multiple not in OPERAND_PADS:
            raise ValueError(f"operands are padded to {OPERAND_PADS} elements, not {multiple}")
        return Config(self.family, self.params, multiple)

    def __str__(self) -> str:
        return self.name
