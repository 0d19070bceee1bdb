"""Several workers on one host (``tuner.run.multi_gpu``), on replays with fake device indices, on
SQLite and on the real PostgreSQL: one study searched by several workers at once, and a batch
of shapes spread over them. No config is measured twice, each study evaluates exactly its
budget, and every result is stored."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from pathlib import Path

import optuna
import pytest
from sqlalchemy import select

import storage
import tuner.gpu.worker as gpu_worker
from tests.conftest import NewDatabase
from tests.tuner.fake_gpu import FakeCompiler
from tests.tuner.fakes import Forwarding, rule_ms
from tests.tuner.gpu.test_gpu_selection import fake_gpu_host
from tuner.core.config import Config
from tuner.core.phases import Phase
from tuner.core.result import Result
from tuner.core.shape import Shape
from tuner.gpu.requests import Compare, Measure
from tuner.gpu.selection import choose_gpus
from tuner.gpu.worker import GpuEvaluator
from tuner.kernels.compile_pool import CompilePools
from tuner.kernels.resources import table_device
from tuner.run.multi_gpu import Worker, Workers, start_workers
from tuner.run.request import TuneRequest
from tuner.run.tune import tune
from tuner.search.replay import ReplayEvaluator
from tuner.search.study import Progress

BIG, MID, THIN = Shape(4096, 4096, 4096), Shape(1000, 1000, 1000), Shape(128, 4096, 4096)
FAMILIES = ("warptile",)
MEASURE_S = 0.02  # a replayed measurement takes this long, so the workers really overlap


class TimedReplay(Forwarding):
    """A replay whose measurements take :data:`MEASURE_S` (the thread sleeps, as a GPU worker's
    loop waits for its child). Each worker's first measurement waits at ``gate`` until every
    worker has one, so that all of them measure, at once; ``most`` counts how many did."""

    lock = threading.Lock()
    gate = threading.Barrier(1)
    now = 0
    most = 0

    def __init__(self, inner: ReplayEvaluator) -> None:
        super().__init__(inner)
        self.waited = False

    def evaluate(self, config: Config, shape: Shape) -> Result:
        with self.lock:
            TimedReplay.now += 1
            TimedReplay.most = max(TimedReplay.most, TimedReplay.now)
        if not self.waited:
            self.waited = True
            self.gate.wait(timeout=120)
        time.sleep(MEASURE_S)
        with self.lock:
            TimedReplay.now -= 1
        return self.inner.evaluate(config, shape)


@pytest.fixture(scope="module")
def replay() -> ReplayEvaluator:
    return ReplayEvaluator()


@pytest.fixture
def replays(replay: ReplayEvaluator) -> Iterator[Callable[[int], Workers]]:
    """Workers on fake devices 0..n-1, each a timed replay of the same tables."""
    made: list[Workers] = []
    TimedReplay.now = TimedReplay.most = 0

    def make(count: int) -> Workers:
        TimedReplay.gate = threading.Barrier(count)
        made.append(Workers([Worker(i, TimedReplay(replay.replica())) for i in range(count)]))
        return made[-1]

    yield make
    for workers in made:
        workers.close()


def request_for(url: str, shapes: list[Shape], trials: int, sampler: str = "random") -> TuneRequest:
    return TuneRequest(
        tuple(shapes), FAMILIES, sampler=sampler, seed=7, trials=trials, warm_start=0,
        evaluator="replay", database_url=url,
    )  # fmt: skip


def stored(url: str, study: str, phase: Phase = Phase.SCREENING) -> list[storage.Measurement]:
    engine = storage.make_engine(url)
    try:
        with storage.make_session_factory(engine)() as session:
            return list(storage.measurements_for_study(session, study, phase=phase))
    finally:
        engine.dispose()


def optuna_trials(url: str, study: str) -> list[str]:
    """The config of every trial of ``study`` in Optuna's own tables."""
    optuna_storage = optuna.storages.RDBStorage(url)
    try:
        loaded = optuna.load_study(study_name=study, storage=optuna_storage)
        return [str(t.user_attrs.get("config")) for t in loaded.get_trials(deepcopy=False)]
    finally:
        optuna_storage.engine.dispose()


def claims(url: str, study: str) -> list[tuple[str, str]]:
    """(config, worker) of every claim of ``study``."""
    engine = storage.make_engine(url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                select(storage.Claim.config_name, storage.Claim.worker).where(
                    storage.Claim.study == study
                )
            )
            return [(name, worker) for name, worker in rows]
    finally:
        engine.dispose()


def check_study(url: str, outcome: Progress, trials: int, runs: int = 1) -> set[str]:
    """Exactly ``trials`` candidates stored, none twice, each claimed once and each in the
    outcome; the finalists stored once a run (``runs`` of them). The workers (labels) that
    measured."""
    rows = stored(url, outcome.study)
    names = [row.config_name for row in rows]
    assert len(names) == len(set(names)), Counter(names).most_common(3)
    assert len(rows) == trials
    taken = claims(url, outcome.study)
    assert sorted(name for name, _ in taken) == sorted(names)  # every claim was measured
    assert sorted(optuna_trials(url, outcome.study)) == sorted(names)  # each a trial, once
    assert outcome.evaluated == trials
    assert sorted(r.config_name for r in outcome.history) == sorted(names)
    finals = [row.config_name for row in stored(url, outcome.study, Phase.FINAL)]
    ours = [r.config_name for r in outcome.finalists]
    assert ours and len(ours) == len(set(ours)) and set(ours) <= set(finals)
    if runs == 1:
        assert sorted(finals) == sorted(ours)  # one worker re-measured them, once
    return {worker.rsplit(":", 1)[-1] for _, worker in taken}


@pytest.mark.parametrize("trials", [30, 7])
def test_one_study_on_three_workers(
    new_database: NewDatabase, replays: Callable[[int], Workers], trials: int
) -> None:
    url = new_database()
    [outcome] = tune(request_for(url, [BIG], trials), workers=replays(3))
    labels = check_study(url, outcome, trials)
    assert labels == {"gpu0", "gpu1", "gpu2"}
    assert TimedReplay.most == 3  # their measurements ran at once
    assert "searched by 3 workers (devices 0, 1, 2)" in outcome.notes


def test_rerun_resumes_on_several_workers(
    new_database: NewDatabase, replays: Callable[[int], Workers]
) -> None:
    url = new_database()
    workers = replays(3)
    tune(request_for(url, [MID], 8), workers=workers)
    [outcome] = tune(request_for(url, [MID], 20, sampler="tpe"), workers=workers)
    check_study(url, outcome, 20, runs=2)


def test_a_batch_is_spread_over_the_workers(
    new_database: NewDatabase, replays: Callable[[int], Workers]
) -> None:
    url = new_database()
    shapes = [BIG, MID, THIN]
    workers = replays(2)
    told: list[str] = []
    outcomes = tune(
        request_for(url, shapes, 6), workers=workers, on_done=lambda p: told.append(p.study)
    )
    assert [o.study.split("|")[1] for o in outcomes] == [str(s) for s in shapes]
    assert sorted(told) == sorted(o.study for o in outcomes)  # each outcome told once
    labels = set().union(*(check_study(url, o, 6) for o in outcomes))
    assert labels == {"gpu0", "gpu1"}
    device = workers.workers[0].evaluator.device.name
    engine = storage.make_engine(url)
    with storage.make_session_factory(engine)() as session:
        for outcome, shape in zip(outcomes, shapes, strict=True):
            # Replayed: what each study found is stored and final, and no best config.
            found = storage.fastest_replayed(session, device, shape.m, shape.n, shape.k)
            assert found is not None and found.study == outcome.study
            assert found.phase == Phase.FINAL
            assert storage.best_for(session, device, shape.m, shape.n, shape.k) is None
    engine.dispose()


def test_replay_workers_share_their_tables() -> None:
    pool = start_workers("replay", (0, 3))
    try:
        first, second = (w.evaluator for w in pool.workers)
        assert [w.device_index for w in pool.workers] == [0, 3]
        assert isinstance(first, ReplayEvaluator) and isinstance(second, ReplayEvaluator)
        assert first.rows is second.rows and first is not second
    finally:
        pool.close()


def indexed_worker(conn: Connection, device_index: int, budget_ms: float) -> None:
    """Stands in for the GPU's child: says which device it owns, times each kernel by
    :func:`rule_ms` of its config."""
    conn.send(("ready", table_device("sm_90"), {"device": "fake", "device_index": device_index}))
    while (request := conn.recv()) is not None:
        if isinstance(request, Compare):
            rounds = [[rule_ms(k.source.config.name)] * request.rounds for k in request.kernels]
            conn.send([{"status": "ok", "rel_error": 0.0, "ms_rounds": m,
                        "cublas_ms_rounds": [1.5] * request.rounds} for m in rounds])  # fmt: skip
        elif isinstance(request, Measure):
            ms = rule_ms(request.compiled.source.config.name)
            conn.send({"status": "ok", "ms": ms, "cublas_ms": 1.5, "rel_error": 0.0})
        else:
            conn.send(None)


def test_gpu_workers_start_together_and_share_their_compile_pool(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Two GPUs (faked: CUDA reports two devices, each child says which one it owns): one
    compile pool for both, each evaluator preparing its half of it, one study between them."""
    fake_gpu_host(monkeypatch, 2)
    monkeypatch.setattr(gpu_worker, "_worker_main", indexed_worker)
    monkeypatch.setattr(FakeCompiler, "compiled", [])
    pools = CompilePools(4, FakeCompiler)
    workers = start_workers("gpu", choose_gpus("all", "gpu"), pools=pools)
    try:
        first, second = (w.evaluator for w in workers.workers)
        assert isinstance(first, GpuEvaluator) and isinstance(second, GpuEvaluator)
        assert [first.provenance["device_index"], second.provenance["device_index"]] == [0, 1]
        assert first.pool is second.pool is pools.for_arch("sm_90")
        assert first.parallelism == second.parallelism == 4 // 2 + 1
        url = f"sqlite:///{tmp_path / 'two-gpus.db'}"
        [outcome] = tune(request_for(url, [MID], 10), workers=workers)
        rows = stored(url, outcome.study)
        assert len(rows) == 10 == len({r.config_name for r in rows}) == outcome.evaluated
        assert {r.provenance["device_index"] for r in rows} <= {0, 1}
        assert set(FakeCompiler.compiled) >= {r.config_name for r in rows}
    finally:
        workers.close()


def test_a_worker_takes_its_next_job_before_its_search_ends(
    new_database: NewDatabase, replays: Callable[[int], Workers], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The next shape's study is prepared from the moment a search has nothing more to
    propose, beside its last measurements, not after them; and never as the job being left."""
    import tuner.run.multi_gpu as multi_gpu
    from tests.tuner.searches_under_way import watch_searches

    searching = watch_searches(monkeypatch)
    taken: list[tuple[str, list[str]]] = []  # (job taken, searches under way then)
    upcoming = multi_gpu._upcoming

    def watched_upcoming(*args: object) -> object:
        under_way = list(searching)  # as the job is taken (its study's preparation takes time)
        made = upcoming(*args)  # type: ignore[arg-type]
        if made is not None:
            taken.append((str(made[0].shape), under_way))
        return made

    monkeypatch.setattr(multi_gpu, "_upcoming", watched_upcoming)
    url = new_database()
    outcomes = tune(request_for(url, [BIG, MID, THIN], 12), workers=replays(1))
    assert len(outcomes) == 3
    assert [shape for shape, _ in taken] == [str(BIG), str(MID), str(THIN)]
    assert taken[0][1] == []  # the first, before anything
    assert taken[1][1] == [str(BIG)] and taken[2][1] == [str(MID)]  # each during the last search
