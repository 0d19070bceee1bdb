"""Dynamic shared memory: what a launch gives a kernel is exactly what its rendered code addresses.

ptxas reports only static shared memory, so the families whose footprint says ``dynamic_smem``
are checked against their rendered code instead: the constants the code indexes shared memory
with (the stride between buffers or stages, where B starts in one, the row lengths of A and B,
on the side that writes and the side that reads) give the extent it addresses. The tiles must
not overlap, and the last buffer's B tile must end where the launch's dynamic memory ends.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from tuner.core.config import Config
from tuner.core.shape import Shape
from tuner.kernels.families import KERNEL_FAMILIES, get_family, parse_config
from tuner.kernels.render import render
from tuner.kernels.representative import REPRESENTATIVE


@dataclass(frozen=True)
class Layout:
    """Shared memory as a kernel's code addresses it, in elements of ``element`` bytes: buffers
    ``stride`` apart, each an A tile of ``a_rows`` rows of ``a_ld`` (``a_cols`` used) and, from
    ``b_offset``, a B tile of ``b_rows`` rows of ``b_ld`` (``b_cols`` used)."""

    buffers: int
    stride: int
    a_rows: int
    a_cols: int
    a_ld: int
    b_offset: int
    b_rows: int
    b_cols: int
    b_ld: int
    element: int
    spare: int = 0  # bytes before the first buffer, where the code rounds its base up

    def overlaps(self) -> list[str]:
        problems = []
        if self.a_cols > self.a_ld or self.b_cols > self.b_ld:
            problems.append("a tile row is longer than the row length it is indexed with")
        if self.a_rows * self.a_ld > self.b_offset:
            problems.append("A runs into B")
        if self.b_offset + self.b_rows * self.b_ld > self.stride:
            problems.append("B runs into the next buffer")
        return problems

    @property
    def extent_bytes(self) -> int:
        last_b_end = (self.buffers - 1) * self.stride + self.b_offset + self.b_rows * self.b_ld
        return last_b_end * self.element + self.spare


def number(code: str, *patterns: str) -> int:
    """The integer the code has where each pattern's group is: every match of every pattern (the
    side that writes shared memory and the side that reads it) must give the same one."""
    found = {int(m) for pattern in patterns for m in re.findall(pattern, code)}
    assert len(found) == 1 and all(re.search(p, code) for p in patterns), (patterns, found)
    return found.pop()


def warptile_buffers(code: str, p: dict[str, int]) -> Layout:
    """doublebuf (warptile.cu.j2 with two buffers): As[BK][BM + pad] transposed, then Bs[BK][BN]."""
    assert "const int read = kt & 1;" in code  # buffers 0 and 1
    buffer = r"reinterpret_cast<float \(\*\)\[(\d+)\]>\(smem \+ \(b\) \* (\d+)"
    a = re.search(r"WARPTILE_AS\(b\) " + buffer + r"\)", code)
    b = re.search(r"WARPTILE_BS\(b\) " + buffer + r" \+ (\d+)\)", code)
    assert a and b and a.group(2) == b.group(2)
    a_ld, stride = int(a.group(1)), int(a.group(2))
    b_ld, b_offset = int(b.group(1)), int(b.group(3))
    return Layout(2, stride, p["BK"], p["BM"], a_ld, b_offset, p["BK"], p["BN"], b_ld, 4)


@dataclass(frozen=True)
class RingCode:
    """Where the code of a cp.async ring states its layout (each group a number): the last
    stage, the stride between stages in floats (reads) and in bytes (cp.async writes), and
    where B starts, A's row length and B's, each as written and as read."""

    last_stage: str
    stride: str
    stride_bytes: str
    b_offset: tuple[str, str]
    a_ld: tuple[str, str]
    b_ld: tuple[str, str]

    def layout(self, code: str, p: dict[str, int]) -> Layout:
        """STAGES stages of As[BM][BK + pad] then Bs[BK][BN], floats."""
        stride = number(code, self.stride)
        assert number(code, self.stride_bytes) == 4 * stride
        return Layout(
            number(code, self.last_stage) + 1,
            stride,
            p["BM"],
            p["BK"],
            number(code, *self.a_ld),
            number(code, *self.b_offset),
            p["BK"],
            p["BN"],
            number(code, *self.b_ld),
            4,
        )


# pipelined and splitk: cp.async writes through byte offsets, the fragments read through float
# pointers.
PIPELINED_RING = RingCode(
    last_stage=r"read_stage == (\d+)\) \?",
    stride=r"smem \+ read_stage \* (\d+);",
    stride_bytes=r"static_cast<unsigned>\(\w+\) \* (\d+)u;",
    b_offset=(r"\(\((\d+) \+ b_row \* \d+ \+ b_col\) \* 4\)", r"Bs = As \+ (\d+);"),
    a_ld=(r"\(a_row \* (\d+) \+ a_col\) \* 4\)", r"&As\[\(a_frag \+ wm \* \d+ \+ i\) \* (\d+) \+"),
    b_ld=(r"\(\(\d+ \+ b_row \* (\d+) \+ b_col\) \* 4\)", r"&Bs\[\(kk \+ kq\) \* (\d+) \+"),
)
# dmma_pipelined: B's chunks are swizzled within their row; the fragments read from As.
DMMA_RING = RingCode(
    last_stage=r"read_stage == (\d+) \?",
    stride=r"smem \+ read_stage \* (\d+);",
    stride_bytes=r"static_cast<unsigned>\(stage\) \* (\d+)u;",
    b_offset=(
        r"static_cast<unsigned>\(\((\d+) \+ row \* \d+ \+",
        r"b_frag\[(?:q|1)\] = \{? ?(\d+) \+",
    ),
    a_ld=(r"\(a_row \* (\d+) \+ a_col\) \* 4\)", r"const int a_frag = \(warp_m \+ g\) \* (\d+) \+"),
    b_ld=(r"static_cast<unsigned>\(\(\d+ \+ row \* (\d+) \+", r"\+ r\) \* (\d+)\);"),
)


def dmma_buffers(code: str, p: dict[str, int]) -> Layout:
    """dmma: two buffers of As[BM][BK + pad] then Bs[BK][BN + pad], doubles or floats."""
    element = {"double": 8, "float": 4}[re.findall(r"extern __shared__ (\w+) smem\[\];", code)[0]]
    assert "smem + (kt & 1) *" in code  # buffers 0 and 1
    return Layout(
        2,
        number(code, r"As = smem \+ (?:buf|\(kt & 1\)) \* (\d+);"),
        p["BM"],
        p["BK"],
        number(
            code, r"a = As \+ q / \d+ \* (\d+) \+", r"As\[\(warp_m \+ i \* 16 \+ g .*?\) \* (\d+)"
        ),
        number(code, r"Bs = As \+ (\d+);"),
        p["BK"],
        p["BN"],
        number(code, r"b = Bs \+ q / \d+ \* (\d+) \+", r"Bs\[\(ks \+ t \+ 4 \* r\) \* (\d+) \+"),
        element,
    )


def hmma_ring(code: str, p: dict[str, int]) -> Layout:
    """hmma: STAGES stages of A's tile then B's, 16-bit values, each stored as the operand is in
    global memory: rows along k for A stored K x M (TN, TT) and B stored K x N (NN, TN), else
    along m or n. Strides and offsets are in bytes in the code."""
    stride = number(
        code,
        r"const unsigned st = smem_base \+ static_cast<unsigned>\(stage\) \* (\d+)u;",
        r"return smem_base \+ static_cast<unsigned>\(stage\) \* (\d+)u;",
    )
    a_krows, b_krows = p["LAYOUT"] >= 2, p["LAYOUT"] % 2 == 0
    a_rows, a_cols = (p["BK"], p["BM"]) if a_krows else (p["BM"], p["BK"])
    b_rows, b_cols = (p["BK"], p["BN"]) if b_krows else (p["BN"], p["BK"])
    return Layout(
        number(code, r"read_stage == (\d+) \?") + 1,
        stride // 2,
        a_rows,
        a_cols,
        number(code, r"\(r \* (\d+) \+ \(\(a_chunk", r"\(row \* (\d+) \+ \(\(chunk \^ a_lswz\)"),
        number(code, r"const unsigned tile = st \+ ([1-9]\d*)u;", r"b_tile = a_tile \+ (\d+)u;")
        // 2,
        b_rows,
        b_cols,
        number(code, r"\(r \* (\d+) \+ \(\(b_chunk", r"\(row \* (\d+) \+ \(\(chunk \^ b_lswz\)"),
        2,
    )


def wgmma_ring(code: str, p: dict[str, int]) -> Layout:
    """wgmma: STAGES stages of A's tile then B's in 128-byte rows (swizzled, so counted in
    bytes), from the first 1024-byte boundary of the dynamic shared memory. Both tiles' byte
    counts come from the code: where B starts in a stage, and the stage stride."""
    stride = number(
        code,
        r"const unsigned st = smem_base \+ static_cast<unsigned>\(stage\) \* (\d+)u;",
        r"a_tile = smem_base \+ static_cast<unsigned>\(read_stage\) \* (\d+)u;",
    )
    b_offset = number(
        code, r"const unsigned tile = st \+ ([1-9]\d*)u;", r"b_tile = a_tile \+ (\d+)u;"
    )
    rounding = r"__cvta_generic_to_shared\(smem\)\) \+ (\d+)u\) & ~\d+u;"
    align = number(code, rounding) + 1
    row = 128
    return Layout(
        number(code, r"read_stage == (\d+) \?") + 1,
        stride,
        p["BM"] * p["BK"] * 2 // row,
        row,
        row,
        b_offset,
        p["BN"] * p["BK"] * 2 // row,
        row,
        row,
        1,
        align,
    )


def tma_ring(code: str, p: dict[str, int]) -> Layout:
    """tma_ws: STAGES stages of A's tile then B's in 128-byte rows from the first 1024-byte
    boundary (as wgmma's), then the C pieces of the TMA-store epilogue and a full and an empty
    mbarrier of 8 bytes per stage, which come after the last stage's B (counted as spare), and
    with TAIL 1 the hand-off's ticket word after them."""
    stride = number(code, r"a_tile = ring \+ static_cast<unsigned>\(stage\) \* (\d+)u;")
    b_offset = number(code, r"b_tile = a_tile \+ (\d+)u;")
    stages = number(code, r"const int stage = it % (\d+);")
    align = number(code, r"__cvta_generic_to_shared\(smem\)\) \+ (\d+)u\) & ~\d+u;") + 1
    ring = number(code, r"c_pieces = ring \+ (\d+)u;")
    pieces = number(code, r"full_bars = c_pieces \+ (\d+)u;")
    full = number(code, r"empty_bars = full_bars \+ (\d+)u;")
    assert ring == stages * stride and full == 8 * stages
    ticket = 0
    if "ticket_slot = empty_bars" in code:
        assert number(code, r"ticket_slot = empty_bars \+ (\d+)u;") == full
        ticket = 4  # one unsigned word
    row = 128
    return Layout(
        stages,
        stride,
        p["BM"] * p["BK"] * 2 // row,
        row,
        row,
        b_offset,
        p["BN"] * p["BK"] * 2 // row,
        row,
        row,
        1,
        align + pieces + 2 * full + ticket,
    )


LAYOUTS: dict[str, Callable[[str, dict[str, int]], Layout]] = {
    "doublebuf": warptile_buffers,
    "pipelined": PIPELINED_RING.layout,
    "splitk": PIPELINED_RING.layout,
    "dmma": dmma_buffers,
    "dmma_pipelined": DMMA_RING.layout,
    "dmma_streamk": DMMA_RING.layout,  # dmma_pipelined's template in its stream-K mode
    "hmma": hmma_ring,
    "hmma_splitk": hmma_ring,
    "wgmma": wgmma_ring,
    "wgmma_splitk": wgmma_ring,
    "tma_ws": tma_ring,
    # The same templates on split float32 (tuner.kernels.families.emulated).
    "hmma_bf16x3": hmma_ring,
    "hmma_splitk_bf16x3": hmma_ring,
    "wgmma_bf16x3": wgmma_ring,
    "wgmma_splitk_bf16x3": wgmma_ring,
    "tma_ws_bf16x3": tma_ring,
}
DYNAMIC = [
    name
    for name, family in KERNEL_FAMILIES.items()
    if family.footprint(parse_config(REPRESENTATIVE[name][0]).as_dict()).dynamic_smem
]
# Every stage count, k tile depth, widening and B fragment width of the dynamic families.
MORE = [
    "pipelined_bm128_bn128_bk32_wm64_wn64_wni4_tm8_tn4_t128_s4",
    "dmma_bm32_bn32_bk8_wm16_wn32_mk4_sk1_mb1_wd1",
    "dmma_pipelined_bm64_bn64_bk32_wm32_wn64_mk4_s4_sk1_mb1",
    "dmma_pipelined_bm32_bn32_bk8_wm16_wn32_mk4_s2_sk1_mb1",
    "hmma_bm256_bn64_bk64_wpm4_wpn2_s5_sw1_dt1_ly2",  # 64 sums a lane: BK = 64 allows no more
    "hmma_bm64_bn256_bk32_wpm1_wpn4_s2_sw4_dt0_ly0",
]


def test_every_family_with_dynamic_shared_memory_has_a_layout_reader() -> None:
    assert sorted(DYNAMIC) == sorted(LAYOUTS)


@pytest.mark.parametrize("name", [n for f in DYNAMIC for n in REPRESENTATIVE[f]] + MORE)
def test_launch_gives_exactly_the_shared_memory_the_kernel_addresses(name: str) -> None:
    config: Config = parse_config(name)
    source = render(config)
    layout = LAYOUTS[config.family](source.code, config.as_dict())
    assert layout.overlaps() == [], layout
    launch = source.launch(Shape(1000, 1000, 1000), 132 if source.persistent else None)
    assert launch.dynamic_smem_bytes == layout.extent_bytes, layout
    assert get_family(config.family).footprint(config.as_dict()).dynamic_smem
