"""One tune: a request's shapes, each studied on the request's workers, recorded in its database.

``gemmtune tune``, ``tune-batch`` and ``bench`` all run their studies through :func:`tune`. The
commands give it the request alone, and it starts what the request names (GPU evaluators or
replays, ``tuner.run.multi_gpu``) and opens the database; ``bench``, which keeps one GPU and one
database for a whole suite and re-measures each answer beside cuBLAS afterwards, gives its own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from sqlalchemy.orm import Session, sessionmaker

from storage import make_session_factory, open_engine
from tuner.gpu.selection import choose_gpus
from tuner.kernels.space import enumerate_rules
from tuner.run.lookahead import Lookahead
from tuner.run.multi_gpu import Workers, start_workers, tune_shapes
from tuner.run.request import TuneRequest
from tuner.run.runner import ProgressReport, check_answerable, families_for
from tuner.run.thread_switch import quick_thread_switches
from tuner.search.study import Progress


def enumerate_request(request: TuneRequest) -> int:
    """Enumerate the rule step of every family the request's studies will search (named, else
    on a GPU the defaults of each shape; ``tuner.kernels.space.enumerate_rules``, kept for
    the process, so a family pinned alike for two shapes is walked once); how many configs
    the rule steps keep, summed over the shapes."""
    if not request.families and request.evaluator != "gpu":
        return 0  # a replay searches its tables' families, known once it has started
    kept = 0
    for shape in request.shapes:
        # A bad name or input: the checks before the studies report it, in their own words.
        with contextlib.suppress(Exception):
            for family in request.families or families_for(shape, request.accuracy):
                kept += enumerate_rules(family, shape)
    return kept


@quick_thread_switches()
def tune(
    request: TuneRequest,
    *,
    workers: Workers | None = None,
    sessions: sessionmaker[Session] | None = None,
    new_report: Callable[[], ProgressReport] | None = None,
    on_done: Callable[[Progress], None] | None = None,
) -> list[Progress]:
    """Run (or resume) the study of every shape of ``request``; the outcomes in its order.

    Without ``workers`` the request's are started (``request.evaluator`` on ``request.gpus``)
    and closed at the end; without ``sessions`` the request's database is opened (with Optuna's
    tables) and its connections closed at the end. Shapes the workers cannot answer (a replay
    without them, no family computing their dtype) are refused before the database is touched.
    ``new_report`` gives each study a progress report; ``on_done`` is told each outcome as its
    study ends. The studies run with a short thread switch interval
    (``tuner.run.thread_switch``).
    """
    own_workers = workers is None
    if workers is None:
        # The space's rule step (seconds of pure Python) runs while the workers start (child
        # processes importing CuPy, warming cuBLAS and the compile pool's processes up).
        rules = Lookahead(lambda: enumerate_request(request), "rules")
        devices = choose_gpus(request.gpus, request.evaluator)
        workers = start_workers(request.evaluator, devices, request.replay_tables)
        rules.take()
    try:
        first = workers.workers[0].evaluator
        check_answerable(first, request.shapes, request.families, request.accuracy)
        if sessions is not None:
            return tune_shapes(request, workers, sessions, new_report, on_done)
        engine = open_engine(request.database_url, optuna_tables=True)
        try:
            return tune_shapes(request, workers, make_session_factory(engine), new_report, on_done)
        finally:
            engine.dispose()  # the database file as the tune leaves it, now
    finally:
        if own_workers:
            workers.close()
