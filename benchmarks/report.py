"""Print the Markdown table of a ``gemmtune bench`` result (the README's table); with
``--chart FILE.svg`` also write its bar chart. Reads older per-shape tuning files too.

    python benchmarks/report.py tuner/data/results/h100-suite.json [--chart h100-suite.svg]

A thin wrapper: the rendering lives in ``tuner.report.bench_tables`` (``gemmtune bench`` writes
both).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tuner.data import read_suite_file
from tuner.report.bench_tables import chart_title, markdown, ratio_chart


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("result", type=Path, help="a suite file written by gemmtune bench")
    parser.add_argument("--chart", type=Path, help="also write the SVG bar chart here")
    args = parser.parse_args()
    doc = read_suite_file(args.result).document
    sys.stdout.write(markdown(doc))
    if args.chart:
        args.chart.write_text(ratio_chart(doc.get("shapes") or [], chart_title(doc)))


if __name__ == "__main__":
    main()
