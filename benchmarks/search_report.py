"""The report of ``benchmarks/search.py``: the runs' data, their summary per shape and sampler,
the search target's verdict, and the Markdown page with the date, machine and command.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import platform
import shlex
import statistics
import subprocess
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from tuner.core.shape import Shape, parse_shape
from tuner.data import SweepRow
from tuner.kernels.families import get_family
from tuner.search.replay import ReplayEvaluator
from tuner.search.samplers import SAMPLERS
from tuner.search.study import search_space

ROOT = Path(__file__).resolve().parent.parent
# The families of the exhaustive table (and of the runs saved before --family existed).
FAMILIES = ("warptile", "pipelined")


@dataclass(frozen=True)
class Scope:
    """What the runs searched: a replay and the families studied on it. The valid space of a
    shape is every candidate of those families that the replay holds (``tuner.search.study.Study``
    searches exactly these)."""

    evaluator: ReplayEvaluator
    families: tuple[str, ...] = FAMILIES

    def rows(self, shape: Shape) -> list[SweepRow]:
        """The replay's rows of ``shape`` in the searched families."""
        return [
            row
            for (s, _), row in self.evaluator.rows.items()
            if s == shape and row.family in self.families
        ]

    def times(self, shape: Shape) -> list[float]:
        """The measured times of ``shape`` in the searched families."""
        return [r.ok_ms for r in self.rows(shape) if r.ok_ms is not None]

    def best(self, shape: Shape) -> float:
        """The fastest time of ``shape`` in the searched families."""
        return min(self.times(shape))

    def within(self, shape: Shape, tol: float) -> int:
        """How many configs of ``shape`` run within ``tol`` of the best."""
        times = self.times(shape)
        goal = (1 + tol) * min(times)
        return sum(1 for ms in times if ms <= goal)

    def candidates(self, family: str, shape: Shape) -> list[str]:
        """The names of ``family``'s configs that a study of ``shape`` searches."""
        return list(search_space(shape, (family,), self.evaluator))


# The target: the best sampler's median count within this share of the valid space...
TARGET_SHARE = 0.05


# ... and at most this fraction of random's median count.
TARGET_VS_RANDOM = Fraction(1, 3)


@dataclass
class Run:
    shape: str
    sampler: str
    seed: int
    evaluations: int
    capped: bool
    wall_s: float
    best_ratio: float  # best found / best of the table
    cap: int  # the most candidates the run could evaluate


def space_size(scope: Scope, shape: Shape) -> int:
    return sum(len(scope.candidates(f, shape)) for f in scope.families)


def random_expectations(scope: Scope, shape: Shape, tol: float) -> tuple[float, float]:
    """Expected evaluations until a within-``tol`` candidate for (a) uniform sampling without
    replacement over the candidates (hypergeometric: (N+1)/(K+1)) and (b) Optuna's random sampler
    as the study drives it: the family is drawn first (each equally likely), then each parameter
    index uniformly; invalid points and repeats cost nothing, so candidate c is drawn with weight
    w_c = 1/(F * raw_f). For such successive sampling, E[T] = 1 + sum over the other candidates of
    w_i / (w_i + W_good) (order by exponential clocks: i precedes every good one with that
    probability)."""
    goal = (1 + tol) * scope.best(shape)
    weights: list[tuple[float, bool]] = []
    for name in scope.families:
        fam = get_family(name)
        raw = 1
        for p in fam.params:
            raw *= len(p.values)
        for config_name in scope.candidates(name, shape):
            ms = scope.evaluator.rows[(shape, config_name)].ok_ms
            good = ms is not None and ms <= goal
            weights.append((1 / (len(scope.families) * raw), good))
    n, k = len(weights), sum(good for _, good in weights)
    w_good = sum(w for w, good in weights if good)
    weighted = 1 + sum(w / (w + w_good) for w, good in weights if not good)
    return (n + 1) / (k + 1), weighted


@dataclass
class Counts:
    """The counts of one (shape, sampler), sorted; a capped run's count is only a lower bound."""

    values: list[int]
    capped: list[bool]

    @classmethod
    def of(cls, runs: list[Run]) -> Counts:
        pairs = sorted((r.evaluations, r.capped) for r in runs)
        return cls([v for v, _ in pairs], [c for _, c in pairs])

    def quantile(self, q: float) -> tuple[float, bool]:
        """The linearly interpolated quantile, and whether it is exact (no capped run in it)."""
        pos = q * (len(self.values) - 1)
        low = int(pos)
        high = min(low + 1, len(self.values) - 1)
        value = self.values[low] + (self.values[high] - self.values[low]) * (pos - low)
        used = (low,) if pos == low else (low, high)
        return value, not any(self.capped[i] for i in used)

    @property
    def median(self) -> tuple[float, bool]:
        return self.quantile(0.5)


def shown(value: float, exact: bool = True) -> str:
    """A count as text; ``+`` marks a lower bound."""
    return f"{value:g}" + ("" if exact else "+")


def tri(flag: bool | None) -> str:
    return {True: "yes", False: "no", None: "undecided"}[flag]


@dataclass
class Verdict:
    share: bool | None  # median count <= TARGET_SHARE of the valid space (None: undecided)
    vs_random: bool | None  # median count <= TARGET_VS_RANDOM of random's median
    reasons: list[str]

    @property
    def met(self) -> bool | None:
        flags = (self.share, self.vs_random)
        if False in flags:
            return False
        return True if all(flags) else None


def _under_limit(
    value: float, exact: bool, what: str, limit: float, reasons: list[str]
) -> bool | None:
    """A median at or under ``limit``: met when exact; when it is a lower bound (capped runs),
    open, with the reason added to ``reasons``."""
    if exact:
        return True
    reasons.append(
        f"its median {shown(value, exact)} is a lower bound (capped runs), so whether it is "
        f"within {what} ({limit:.1f}) is not known"
    )
    return None


def judge(
    median: tuple[float, bool], size: int, random_median: tuple[float, bool] | None
) -> Verdict:
    """The target for one sampler on one shape, from medians that may be lower bounds."""
    value, exact = median
    reasons: list[str] = []
    bound = TARGET_SHARE * size
    share: bool | None
    if value <= bound:
        share = _under_limit(value, exact, f"{100 * TARGET_SHARE:g} % of the space", bound, reasons)
    else:
        share = False
        reasons.append(
            f"its median {shown(value, exact)} is {'' if exact else 'at least '}"
            f"{100 * value / size:.1f} % of the valid space, "
            f"above {100 * TARGET_SHARE:g} % ({bound:.1f})"
        )
    vs_random: bool | None
    if random_median is None:
        vs_random = None
        reasons.append("random was not run, so the comparison with it is open")
    else:
        limit = float(TARGET_VS_RANDOM) * random_median[0]
        if value <= limit:
            what = f"{TARGET_VS_RANDOM} of random's median {shown(*random_median)}"
            vs_random = _under_limit(value, exact, what, limit, reasons)
        else:
            vs_random = False if random_median[1] else None
            reasons.append(
                f"its median {shown(value, exact)} is {value / random_median[0]:.2f} times "
                f"random's {shown(*random_median)}, more than {TARGET_VS_RANDOM} "
                f"({limit:.1f})"
                + ("" if random_median[1] else "; random's median is itself a lower bound")
            )
    return Verdict(share, vs_random, reasons)


def summarize(runs: list[Run], scope: Scope, tol: float, samplers: list[str], cap: int) -> str:
    """The result tables, the target per shape, remarks and random's exact expectation."""
    lines = [
        f"## Evaluated candidates until within {100 * tol:g} % of the exhaustive best",
        "",
        f"| shape | valid space | within {100 * tol:g} % | sampler | median | p25 - p75 "
        "| min - max | median % of space | capped runs | median wall s |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    target = [
        "## Target",
        "",
        f"The issue's target: the best sampler (lowest median; TPE is the one asked for) needs at "
        f"most {100 * TARGET_SHARE:g} % of the valid space and at most "
        f"{TARGET_VS_RANDOM} of random's median count. Every sampler other than random:",
        "",
        f"| shape | sampler | median | % of space | <= {100 * TARGET_SHARE:g} % of space "
        f"| <= {TARGET_VS_RANDOM} of random's median | target met |",
        "|---|---|---:|---:|---|---|---|",
    ]
    per_shape: list[str] = []
    remarks: list[str] = []
    notes: list[str] = []
    shapes = list(dict.fromkeys(r.shape for r in runs))
    for shape_text in shapes:
        shape = parse_shape(shape_text)
        size = space_size(scope, shape)
        good = scope.within(shape, tol)
        counts: dict[str, Counts] = {}
        for sampler in samplers:
            mine = [r for r in runs if r.shape == shape_text and r.sampler == sampler]
            if not mine:
                continue
            c = counts[sampler] = Counts.of(mine)
            med = c.median
            capped = sum(r.capped for r in mine)
            caps = sorted({r.cap for r in mine})
            lines.append(
                f"| {shape_text} | {size} | {good} | {sampler} | {shown(*med)} "
                f"| {shown(*c.quantile(0.25))} - {shown(*c.quantile(0.75))} "
                f"| {shown(c.values[0], not c.capped[0])} "
                f"- {shown(c.values[-1], not c.capped[-1])} "
                f"| {100 * med[0] / size:.1f} %{'+' if not med[1] else ''} "
                f"| {capped}/{len(mine)} at {'/'.join(map(str, caps))} "
                f"| {statistics.median(r.wall_s for r in mine):.2f} |"
            )
            if capped:
                remarks.append(
                    f"- {shape_text}, {sampler}: {capped} of {len(mine)} runs stopped at the cap "
                    f"of {'/'.join(map(str, caps))} evaluations without getting within "
                    f"{100 * tol:g} %; figures marked + count them at the cap, so they are lower "
                    "bounds."
                )
        random_median = counts["random"].median if "random" in counts else None
        by_seed = {
            s: {
                r.seed: (r.evaluations, r.capped)
                for r in runs
                if (r.shape, r.sampler) == (shape_text, s)
            }
            for s in counts
        }
        for sampler in counts:
            if sampler != "random" and "random" in counts and by_seed[sampler] == by_seed["random"]:
                remarks.append(
                    f"- {shape_text}, {sampler}: the same count as random for every seed, i.e. "
                    "it proposed what random did"
                    + (
                        " (CMA-ES cannot model this conditional space and falls back to its "
                        "independent sampler, a RandomSampler with the same seed)."
                        if sampler == "cmaes"
                        else "."
                    )
                )
        verdicts = {
            s: judge(c.median, size, random_median) for s, c in counts.items() if s != "random"
        }
        if verdicts:
            # Lowest median; a median that is only a lower bound ranks after every exact one.
            best = min(verdicts, key=lambda s: (not counts[s].median[1], counts[s].median[0]))
            for sampler, v in verdicts.items():
                med = counts[sampler].median
                target.append(
                    f"| {shape_text} | {sampler}{' (best)' if sampler == best else ''} "
                    f"| {shown(*med)} | {100 * med[0] / size:.1f} %{'' if med[1] else '+'} "
                    f"| {tri(v.share)} | {tri(v.vs_random)} | **{tri(v.met)}** |"
                )
            v = verdicts[best]
            med = counts[best].median
            line = (
                f"- {shape_text}: **{tri(v.met)}**; best sampler {best}, median {shown(*med)} "
                f"= {100 * med[0] / size:.1f} % of the space"
            )
            if random_median is not None:
                line += f", {med[0] / random_median[0]:.2f} times random's {shown(*random_median)}"
            if "tpe" in verdicts and best != "tpe":
                line += f"; TPE alone: {tri(verdicts['tpe'].met)}"
            per_shape.append(line + ".")
            if v.share and v.vs_random is False and random_median is not None:
                remarks.append(
                    f"- {shape_text}: the target is missed only on the comparison with random: "
                    f"with {good} candidates within {100 * tol:g} % of the best, random itself "
                    f"needs a median of {shown(*random_median)} "
                    f"({100 * random_median[0] / size:.1f} % of the space), so "
                    f"{TARGET_VS_RANDOM} of it is {float(TARGET_VS_RANDOM) * random_median[0]:.1f} "
                    "candidates."
                )
            for sampler in dict.fromkeys((best, "tpe")):
                if sampler in verdicts and verdicts[sampler].met is not True:
                    remarks.append(
                        f"- {shape_text}, {sampler}"
                        f"{' (the best sampler here)' if sampler == best else ''}: target "
                        f"{tri(verdicts[sampler].met)}: "
                        + "; ".join(verdicts[sampler].reasons)
                        + "."
                    )
        uniform, weighted = random_expectations(scope, shape, tol)
        notes.append(
            f"- {shape_text}: {good} of {size} candidates within {100 * tol:g} % -> random's "
            f"expected count {uniform:.0f} drawing uniformly over candidates ((N+1)/(K+1)), "
            f"{weighted:.0f} as Optuna's random sampler draws (family first)"
            + (f"; measured median {shown(*random_median)}." if random_median else ".")
        )
    target += ["", "Per shape:", "", *per_shape]
    for sampler in samplers:
        own = sorted({r.cap for r in runs if r.sampler == sampler and r.cap != cap})
        if own:
            remarks.append(
                f"- {sampler} ran with a cap of {'/'.join(map(str, own))} (--cap-for) instead of "
                f"{cap}, to bound the run's wall time (see the median wall s column); where its "
                "runs hit that cap, its figures are lower bounds (+)."
            )
    others = [s for s in SAMPLERS if s not in samplers and s != "exhaustive"]
    for sampler in others:
        why = ""
        if sampler == "gp" and importlib.util.find_spec("torch") is None:
            why = " (Optuna's GP sampler needs PyTorch, which is not installed here)"
        remarks.append(f"- Sampler {sampler} was not run{why}.")
    return "\n".join(
        [
            *lines,
            "",
            *target,
            "",
            "## Remarks",
            "",
            *(remarks or ["- None: every run reached the target before its cap."]),
            "",
            "## Random: exact expectation (cross-check)",
            "",
            *notes,
            "",
        ]
    )


def machine() -> str:
    cpu = platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{cores}-core CPU ({cpu}), {platform.system()}, no GPU used"


def code_version() -> str:
    """The git commit, and the uncommitted files that a run depends on."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "tuner", "benchmarks/search.py"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return "code version unknown (no git)"
    changed = [line[3:] for line in dirty]
    return f"commit {head}" + (
        f" with uncommitted changes to {', '.join(changed)}" if changed else ""
    )


def meta_tables(meta: dict[str, Any]) -> list[str]:
    """The tables a run replayed (runs saved before several tables were allowed name one)."""
    return list(meta.get("tables") or [meta["table"]])


def tables_text(meta: dict[str, Any]) -> str:
    tables = [f"`{t}`" for t in meta_tables(meta)]
    if len(tables) == 1:
        return f"{tables[0]}, the exhaustive sweep" if meta.get("families") is None else tables[0]
    return f"{', '.join(tables[:-1])} and {tables[-1]} (merged; a later table's row wins)"


def relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def render(meta: dict[str, Any], runs: list[Run], scope: Scope, json_path: str | None) -> str:
    """The markdown report of one run (``meta`` as ``main`` stores it in the JSON)."""
    stored = (
        []
        if json_path is None
        else [
            f"- Runs: each run's count, cap, wall time and best found are in `{json_path}`; "
            f"`python benchmarks/search.py --report-from {json_path} --markdown FILE` rebuilds "
            "this page from them without running anything."
        ]
    )
    samplers: list[str] = meta["samplers"]
    caps: dict[str, int] = meta["caps"]
    seeds: int = meta["seeds"]
    tolerance: float = meta["tolerance"]
    cap_text = ", ".join(f"{s} {caps[s]}" for s in samplers)
    return "\n".join(
        [
            "# Search efficiency on the replay table",
            "",
            f"- Date: {meta['started']} UTC; the whole run took {meta['total_s']:.0f} s of wall "
            f"time with {meta['jobs']} worker processes.",
            f"- Machine: {meta['machine']}; Python {meta['python']}, Optuna {meta['optuna']}; "
            f"gemmtune at {meta['code']}.",
            f"- Data: a replay of {tables_text(meta)}, measured on {meta['table_device']} "
            f"({meta['table_date']}); every evaluation is looked up there, nothing runs on a GPU.",
            f"- Method: for each of {len(meta['shapes'])} shapes, {len(samplers)} samplers and "
            f"{seeds} seeds (0 to {seeds - 1}), one study over the {' and '.join(scope.families)} "
            "families (in-memory Optuna study, no warm start) runs until the best time so far "
            f"is within {100 * tolerance:g} % of the best time of the whole table for that "
            "shape. The count is the number of evaluated candidates (distinct valid configs; "
            "invalid proposals and repeats cost nothing). A run that does not get there stops "
            f"at its sampler's cap ({cap_text}).",
            f"- Reproduce: `python benchmarks/search.py {shlex.join(meta['argv'])}`",
            *stored,
            "",
            summarize(runs, scope, tolerance, samplers, meta["cap"]),
        ]
    )
