"""The public grid of shapes tuned for the shipped H100 database (issue 44, item 4).

    python benchmarks/llm_grid.py [--out benchmarks/grid/h100-grid.csv]

Writes one CSV of ``class,M,N,K,dtype,layout`` rows (``gemmtune tune-batch`` reads a row's own
dtype and layout), in this order:

* BF16 NT: the projections of common open decoder models with hidden sizes 2048 to 8192 (fused
  query/key/value, attention output, fused gate/up, down, and the vocabulary head), at token
  counts 1, 16, 128, 512, 1000, 2048, 4096 and 8192, as ``nn.Linear`` runs them (B is the
  weight, N x K);
* FP16 NT: one model's projections (an 8B-class layer) at the same token counts;
* BF16 NN: squares, and two models' layer projections at three token counts;
* FP32 NN: squares, an 8B- and a 1B-class layer at five token counts, and a few odd shapes.

Model sizes are the published configurations of those models (hidden size, MLP size, attention
and key-value heads, head size, vocabulary). Every held-out shape of the project
(``heldout.csv``, ``hopper_heldout.csv``, ``grid_heldout.csv``, ``odd_heldout.csv``) is left
out, whatever its dtype, so that none of them is tuned into what the server ships; a row is
listed once.
"""

from __future__ import annotations

import argparse
import csv
import io
from dataclasses import dataclass
from pathlib import Path

LAB = Path(__file__).resolve().parent
OUT = LAB / "grid" / "h100-grid.csv"
HELD_OUT = ("heldout.csv", "hopper_heldout.csv", "grid_heldout.csv", "odd_heldout.csv")
TOKENS = (1, 16, 128, 512, 1000, 2048, 4096, 8192)


@dataclass(frozen=True)
class Decoder:
    """One decoder model's sizes, as its published configuration gives them."""

    name: str
    hidden: int
    mlp: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int

    def projections(self) -> list[tuple[str, int, int]]:
        """(class, N, K) of each linear layer: x (tokens x K) @ W.T, W being N x K."""
        attention = self.heads * self.head_dim
        return [
            (f"{self.name}_qkv", attention + 2 * self.kv_heads * self.head_dim, self.hidden),
            (f"{self.name}_o", self.hidden, attention),
            (f"{self.name}_gate_up", 2 * self.mlp, self.hidden),
            (f"{self.name}_down", self.hidden, self.mlp),
            (f"{self.name}_lm_head", self.vocab, self.hidden),
        ]


MODELS = (
    Decoder("llama3_1b", 2048, 8192, 32, 8, 64, 128256),
    Decoder("llama3_3b", 3072, 8192, 24, 8, 128, 128256),
    Decoder("llama3_8b", 4096, 14336, 32, 8, 128, 128256),
    Decoder("mistral_7b", 4096, 14336, 32, 8, 128, 32768),
    Decoder("qwen2_7b", 3584, 18944, 28, 4, 128, 152064),
    Decoder("gemma2_9b", 3584, 14336, 16, 8, 256, 256000),
    Decoder("llama2_13b", 5120, 13824, 40, 40, 128, 32000),
    Decoder("llama3_70b", 8192, 28672, 64, 8, 128, 128256),
)
SQUARES = (256, 512, 1024, 1536, 2048, 3072, 4096, 6144, 8192)
ODD = ((1000, 1000, 1000), (4097, 4097, 4097), (1234, 4321, 999), (777, 12345, 4096))
FP32_ODD = ((999, 1001, 1003), (1234, 567, 890), (3000, 2000, 1000), (777, 777, 777))

Row = tuple[str, int, int, int, str, str]


def held_out() -> set[tuple[int, int, int]]:
    """(M, N, K) of every held-out file's rows."""
    dims = set()
    for name in HELD_OUT:
        for line in (LAB / name).read_text().splitlines():
            cells = [c.strip() for c in line.split(",")]
            if line.startswith("#") or len(cells) < 4 or not cells[1].isdigit():
                continue
            dims.add((int(cells[1]), int(cells[2]), int(cells[3])))
    return dims


def grid() -> list[Row]:
    rows: list[Row] = []
    for model in MODELS:
        for label, n, k in model.projections():
            rows += [(label, m, n, k, "bfloat16", "NT") for m in TOKENS]
    fp16_model = MODELS[2]
    for label, n, k in fp16_model.projections():
        rows += [(label, m, n, k, "float16", "NT") for m in TOKENS]
    rows += [("square", s, s, s, "bfloat16", "NT") for s in SQUARES]
    rows += [("odd", m, n, k, "bfloat16", "NT") for m, n, k in ODD]
    rows += [("square", s, s, s, "bfloat16", "NN") for s in SQUARES]
    for model in (MODELS[2], MODELS[7]):
        for label, n, k in model.projections()[:4]:  # the layer, not the vocabulary head
            rows += [(label, m, n, k, "bfloat16", "NN") for m in (16, 512, 4096)]
    rows += [("square", s, s, s, "float32", "NN") for s in SQUARES]
    for model, tokens in ((MODELS[2], (1, 16, 128, 512, 2048)), (MODELS[0], (16, 512, 4096))):
        for label, n, k in model.projections()[:4]:
            rows += [(label, m, n, k, "float32", "NN") for m in tokens]
    rows += [("odd", m, n, k, "float32", "NN") for m, n, k in FP32_ODD]
    excluded = held_out()
    seen: set[tuple[int, int, int, str, str]] = set()
    kept = []
    for row in rows:
        key = (row[1], row[2], row[3], row[4], row[5])
        if key in seen or key[:3] in excluded:
            continue
        seen.add(key)
        kept.append(row)
    return kept


def grid_csv() -> str:
    text = io.StringIO()
    text.write(
        "# The shipped H100 grid (issue 44): written by benchmarks/llm_grid.py, which says\n"
        "# what is in it; every held-out shape of the project is left out. Tune it with\n"
        "# `gemmtune tune-batch benchmarks/grid/h100-grid.csv --gpus N` (see docs/tuning.md).\n"
    )
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["class", "M", "N", "K", "dtype", "layout"])
    writer.writerows(grid())
    return text.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    options = parser.parse_args()
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(grid_csv())
    print(f"wrote {len(grid())} shapes to {options.out}")


if __name__ == "__main__":
    main()
