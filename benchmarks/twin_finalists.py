"""How the stream-K twins of a study's finalists (``tuner.search.schedule_twins``) did beside the
finalists they come from, read from ``gemmtune export`` files (no GPU needed):

    gemmtune export --db sqlite:///odd.db odd-export.json
    python benchmarks/twin_finalists.py odd-export.json [...] --out twins.json

Each row pairs a twin's final re-measurement with its source's, from the same alternating
rounds: the shape, both configs and TFLOP/s, the twin's gain, and whether the twin is the
shape's fastest final measurement (its best). A twin that failed its re-measurement (a compile
that spilled, say) is not stored, so it has no row.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from storage.legacy_records import FINALISTS_SUFFIX


def twin_rows(measurements: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per stored twin whose source was re-measured with it, by shape then source."""
    finals: dict[tuple[str, tuple[int, int, int]], dict[str, dict[str, Any]]] = {}
    for m in measurements:
        # Exports written before phase was a field mark a final by its study name.
        final = m.get("phase") == "final" or str(m.get("study", "")).endswith(FINALISTS_SUFFIX)
        if m.get("status") != "ok" or not final:
            continue
        dims = (m["shape"]["m"], m["shape"]["n"], m["shape"]["k"])
        finals.setdefault((m["device"]["name"], dims), {})[m["config_name"]] = m
    rows = []
    for (device, dims), by_name in sorted(finals.items()):
        fastest = max(by_name.values(), key=lambda m: m["tflops"])["config_name"]
        by_source = sorted(
            by_name.values(), key=lambda m: m.get("provenance", {}).get("twin_of", "")
        )
        for twin in by_source:
            source = by_name.get(twin.get("provenance", {}).get("twin_of", ""))
            if source is None:
                continue
            rows.append(
                {
                    "device": device,
                    "shape": "x".join(map(str, dims)),
                    "source": source["config_name"],
                    "source_tflops": round(source["tflops"], 2),
                    "twin": twin["config_name"],
                    "twin_tflops": round(twin["tflops"], 2),
                    "gain": round(twin["tflops"] / source["tflops"] - 1, 4),
                    "twin_is_best": twin["config_name"] == fastest,
                    "time": twin.get("provenance", {}).get("time"),
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("exports", nargs="+", type=Path, help="gemmtune export files")
    parser.add_argument("--out", type=Path, help="write the rows as JSON here")
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    for path in args.exports:
        try:
            data = json.loads(path.read_text())
            rows.extend(twin_rows(data["measurements"]))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            sys.exit(f"{path}: not a gemmtune export ({exc})")
    for r in rows:
        best = "  best" if r["twin_is_best"] else ""
        print(
            f"{r['shape']:>16}  {r['source']:<62} {r['source_tflops']:5.1f}  ->  "
            f"{r['twin']:<58} {r['twin_tflops']:5.1f}  {100 * r['gain']:+5.1f} %{best}"
        )
    if args.out is not None:
        summary = {
            "what": "stream-K twins of study finalists beside their sources (final rounds)",
            "exports": [p.name for p in args.exports],
            "rows": rows,
        }
        args.out.write_text(json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":
    main()
