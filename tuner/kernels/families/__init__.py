"""Kernel families: their parameters, validity rules, resource footprint and cost traits.

Each family matches one template, ``templates/<name>.cu.j2``, and lives in the module of its
group: ``ladder`` (the first SGEMM rungs), ``warptile`` (warp-tiled, one block per output tile),
``split`` (K split across blocks: split-K and stream-K), ``skinny`` (B streamed for small M),
``dmma`` (FP32 on the FP64 tensor cores), ``hmma`` (FP16/BF16 inputs on the tensor cores, by
warp) and ``wgmma`` (the same by warpgroup, on Hopper); ``emulated`` runs the half families
on float32 inputs split into BF16 parts (accuracy class ``bf16x3``); ``vendor`` is cuBLASLt as a
candidate (no template).
The building blocks are in ``_base``; the registry of names and the config-name parser in
``registry``.
"""

from __future__ import annotations

from tuner.kernels.families._base import (
    A_PAD,
    FLOAT_BYTES,
    CostTraits,
    Family,
    Footprint,
    Param,
    Params,
    Rule,
)
from tuner.kernels.families.dmma import (
    DMMA,
    DMMA_PIPELINED,
    DMMA_PIPELINED_A_PADS,
    DMMA_ROW_PADS,
    DMMA_STREAMK,
)
from tuner.kernels.families.emulated import (
    HMMA_BF16X3,
    HMMA_SPLITK_BF16X3,
    TMA_WS_BF16X3,
    WGMMA_BF16X3,
    WGMMA_SPLITK_BF16X3,
)
from tuner.kernels.families.hmma import HMMA, HMMA_SPLITK
from tuner.kernels.families.ladder import BLOCKTILE_1D, BLOCKTILE_2D, SMEM_TILING, VECTORIZED
from tuner.kernels.families.registry import (
    FAMILIES,
    KERNEL_FAMILIES,
    accuracy_of,
    checked_config,
    get_family,
    is_vendor,
    parse_config,
    repinned,
    rewrites_operands,
)
from tuner.kernels.families.skinny import SKINNY, SKINNY_MAX_ROW_BLOCKS
from tuner.kernels.families.split import (
    SPLITK,
    SPLITK_MAX_TILES,
    STREAMK,
    STREAMK_MAX_BLOCKS,
    WARPTILE_SPLITK,
    persistent_blocks,
)
from tuner.kernels.families.tma_ws import TMA_WS
from tuner.kernels.families.vendor import CUBLAS, CUBLASLT, HEURISTIC_RANKS
from tuner.kernels.families.warptile import (
    DOUBLEBUF,
    PIPELINED,
    WARPTILE,
    warptile_prefetches,
    warptile_register_budget,
)
from tuner.kernels.families.wgmma import WGMMA, WGMMA_SPLITK

__all__ = [
    "A_PAD",
    "BLOCKTILE_1D",
    "BLOCKTILE_2D",
    "CUBLAS",
    "CUBLASLT",
    "DMMA",
    "DMMA_PIPELINED",
    "DMMA_PIPELINED_A_PADS",
    "DMMA_ROW_PADS",
    "DMMA_STREAMK",
    "DOUBLEBUF",
    "FAMILIES",
    "FLOAT_BYTES",
    "HEURISTIC_RANKS",
    "HMMA",
    "HMMA_BF16X3",
    "HMMA_SPLITK",
    "HMMA_SPLITK_BF16X3",
    "KERNEL_FAMILIES",
    "PIPELINED",
    "SKINNY",
    "SKINNY_MAX_ROW_BLOCKS",
    "SMEM_TILING",
    "SPLITK",
    "SPLITK_MAX_TILES",
    "STREAMK",
    "STREAMK_MAX_BLOCKS",
    "TMA_WS",
    "TMA_WS_BF16X3",
    "VECTORIZED",
    "WARPTILE",
    "WARPTILE_SPLITK",
    "WGMMA",
    "WGMMA_BF16X3",
    "WGMMA_SPLITK",
    "WGMMA_SPLITK_BF16X3",
    "CostTraits",
    "Family",
    "Footprint",
    "Param",
    "Params",
    "Rule",
    "accuracy_of",
    "checked_config",
    "get_family",
    "is_vendor",
    "parse_config",
    "persistent_blocks",
    "repinned",
    "rewrites_operands",
    "warptile_prefetches",
    "warptile_register_budget",
]
