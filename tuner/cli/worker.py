"""``gemmtune worker``: tune the shapes of the queue in the database, one process per GPU
(logic in ``tuner.run.queue_worker`` and ``tuner.run.worker_processes``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from tuner.cli._common import (
    DbOpt,
    GpusOpt,
    ReplayTablesOpt,
    SamplerOpt,
    SeedOpt,
    WarmStartOpt,
    err,
    out,
)
from tuner.cli._queue_report import print_database_note, relay_line
from tuner.run.request import DEFAULT_TRIALS, WARM_START, check_evaluator
from tuner.search.sampler_names import DEFAULT_SAMPLER, check_sampler

if TYPE_CHECKING:
    from tuner.run.queue_worker import WorkerSettings
    from tuner.search.evaluator import Evaluator


def worker(
    gpu: Annotated[
        int | None, typer.Option(min=0, help="the device this worker tunes on (default 0)")
    ] = None,
    gpus: GpusOpt = None,
    evaluator: Annotated[
        str, typer.Option(help="gpu (compile, verify and time on the CUDA GPU) or replay")
    ] = "gpu",
    replay_table: ReplayTablesOpt = None,
    sampler: SamplerOpt = DEFAULT_SAMPLER,
    seed: SeedOpt = None,
    trials: Annotated[
        int, typer.Option(min=1, help="a study's budget where its shape was queued without one")
    ] = DEFAULT_TRIALS,
    timeout: Annotated[float | None, typer.Option(help="seconds per shape")] = None,
    warm_start: WarmStartOpt = WARM_START,
    db: DbOpt = None,
    wait: Annotated[
        bool, typer.Option("--wait", help="keep polling the queue once it is empty")
    ] = False,
    lease: Annotated[
        float,
        typer.Option(
            min=1.0, help="seconds a shape or candidate outlives this worker's last heartbeat"
        ),
    ] = 60.0,
    compile_workers: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="compiler processes of this worker (default: its GPU's share of the host's "
            "cores, less one)",
        ),
    ] = None,
    batch: Annotated[
        str | None, typer.Option(hidden=True, help="take only this command's shapes")
    ] = None,
) -> None:
    """Tune shapes from the queue until it is empty (or, with --wait, forever): one process per
    GPU, on any machine that reaches the database; --gpus starts one per GPU named."""
    from tuner.run.queue_worker import WorkerSettings

    settings = WorkerSettings(
        sampler=check_sampler(sampler),
        seed=seed,
        trials=trials,
        timeout=timeout,
        warm_start=warm_start,
        evaluator=check_evaluator(evaluator),
        replay_tables=tuple(replay_table or ()),
        database_url=db,
        batch=batch,
        wait=wait,
        lease_s=lease,
        compile_workers=compile_workers,
    )
    if gpus is not None:
        if gpu is not None:
            raise typer.BadParameter("give --gpu (this process) or --gpus (one per GPU), not both")
        _run_processes(settings, gpus)
    else:
        _run_here(settings, gpu or 0)


def _run_here(settings: WorkerSettings, device_index: int) -> None:
    import storage
    from tuner.cli.tune import print_outcome
    from tuner.run.queue_worker import WorkerStopped, run_worker
    from tuner.run.runner import start_gpu

    evaluator: Evaluator
    if settings.evaluator == "replay":
        from tuner.search.replay import ReplayEvaluator

        evaluator = ReplayEvaluator(list(settings.replay_tables) or None)
    else:
        from tuner.gpu.selection import cuda_device_count
        from tuner.kernels.compile_pool import host_share
        from tuner.run.lookahead import Lookahead
        from tuner.run.warm_spaces import warm_rules, warm_spaces

        # The spaces of the common problems, walked while the GPU worker starts (rules) and
        # before the worker says it is ready (device checks): its first study does not wait.
        rules = Lookahead(warm_rules, "warm-rules")
        share = settings.compile_workers or host_share(cuda_device_count("gemmtune worker"))
        evaluator = start_gpu("gemmtune worker", 100.0, device_index, compile_workers=share)
        rules.take()
        warm_spaces(evaluator.device)
    label = f"gpu{device_index}"
    try:
        engine = storage.open_engine(settings.database_url, optuna_tables=True)
        try:
            summary = run_worker(
                settings,
                evaluator,
                storage.make_session_factory(engine),
                label,
                on_done=print_outcome,
                on_failure=lambda error: err.print(f"failed: {error}", soft_wrap=True),
                on_ready=lambda rates: out.print(
                    f"{label} ready on {evaluator.device.name}: {rates}", soft_wrap=True
                ),
            )
        except WorkerStopped as exc:  # its problems are queued again for the other workers
            err.print(f"stopped: {exc}", soft_wrap=True)
            raise typer.Exit(1) from None
        finally:
            engine.dispose()
    finally:
        evaluator.close()
    out.print(
        f"worker done: finished {len(summary.finished)} studies, searched in "
        f"{summary.searched}, {len(summary.failures)} failed attempts"
    )


def _run_processes(settings: WorkerSettings, gpus: str) -> None:
    from tuner.gpu.selection import choose_gpus
    from tuner.run.worker_processes import start_worker_processes

    devices = choose_gpus(gpus, settings.evaluator)
    print_database_note(settings.database_url, len(devices))
    workers = start_worker_processes(settings, devices, relay_line)
    for worker in workers:
        worker.process.wait()
        for thread in worker.relays:
            thread.join()
    failed = [w for w in workers if w.process.returncode != 0]
    for w in failed:
        err.print(f"{w.label}: worker exited with code {w.process.returncode}", soft_wrap=True)
    if failed:
        raise typer.Exit(1)
