"""Rendered answers carried across a snapshot change: every answer kept is the answer the new
snapshot gives, and answers the change can alter are dropped."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime

import pytest

from tuner.answers.answer import DeviceInfo
from tuner.answers.answer_cache import AnswerCache, Changes, reach_of
from tuner.answers.best import Tuned
from tuner.answers.device_kind import DeviceSpec
from tuner.answers.index import Snapshot, StoredBest
from tuner.kernels.families import parse_config

H100 = DeviceInfo("NVIDIA H100 80GB HBM3", "sm_90", 132)
H200 = DeviceInfo("NVIDIA H200", "sm_90", 132)
CONFIGS = (
    "warptile_bm64_bn64_bk16_wm32_wn32_wni1_tm4_tn4_t128",
    "warptile_bm128_bn128_bk16_wm64_wn64_wni4_tm8_tn4_t128",
)
WHEN = datetime(2026, 11, 28, tzinfo=UTC)
SIZES = (64, 256, 1024, 4096, 16384)


def stored(best_id: int, dims: tuple[int, int, int], ms: float, device: DeviceInfo = H100,
           measurement_id: int | None = None) -> StoredBest:  # fmt: skip
    name = CONFIGS[best_id % 2]
    entry = Tuned(
        best_id=best_id,
        device=device,
        m=dims[0],
        n=dims[1],
        k=dims[2],
        dtype="float32",
        layout="NN",
        family="warptile",
        config_name=name,
        params=parse_config(name).as_dict(),
        ms=ms,
        tflops=None,
        cublas_tflops=None,
        ratio=None,
        provenance={},
    )
    return StoredBest(best_id, measurement_id or best_id, WHEN, name, entry)


def rendered(snapshot: Snapshot, request: tuple[object, ...]) -> bytes:
    m, n, k, dtype, layout, device = request
    spec = None if device is None else DeviceSpec(str(device))
    answer = snapshot.answer(m, n, k, dtype, layout, spec)  # type: ignore[arg-type]
    return json.dumps(answer.as_json(), sort_keys=True).encode()


def requests(rng: random.Random) -> list[tuple[object, ...]]:
    """Tuned, near, far and other-dtype shapes, with and without a device."""
    asked = []
    for _ in range(300):
        dims = tuple(rng.choice((*SIZES, rng.randint(1, 30000))) for _ in range(3))
        dtype, layout = rng.choice((("float32", "NN"), ("float32", "NN"), ("float16", "NN")))
        asked.append((*dims, dtype, layout, rng.choice((None, H100.name))))
    return asked


def warm(snapshot: Snapshot, asked: list[tuple[object, ...]]) -> None:
    for request in asked:
        spec = None if request[5] is None else DeviceSpec(str(request[5]))
        answer = snapshot.answer(*request[:5], spec)  # type: ignore[arg-type]
        snapshot.responses.put(request, rendered(snapshot, request), reach_of(answer))


def a_tuning(rng: random.Random) -> list[StoredBest]:
    shapes = {tuple(rng.choice(SIZES) for _ in range(3)) for _ in range(25)}
    return [
        stored(i + 1, dims, rng.uniform(0.5, 5.0), rng.choice((H100, H200)))  # type: ignore[arg-type]
        for i, dims in enumerate(sorted(shapes))
    ]


@pytest.mark.parametrize("seed", range(6))
def test_every_carried_answer_is_the_new_snapshots_answer(seed: int) -> None:
    rng = random.Random(seed)
    bests = a_tuning(rng)
    before = Snapshot(bests, {1: H100, 2: H200})
    asked = requests(rng)
    warm(before, asked)
    # A faster time for a tuned shape (a new best), and a newly tuned shape.
    old = rng.choice(bests).entry
    assert old is not None
    replaced = stored(old.best_id, (old.m, old.n, old.k), old.ms / 2, old.device, 10_000)
    added = stored(500, tuple(rng.choice(SIZES) for _ in range(3)), 0.1)  # type: ignore[arg-type]
    after = before.merged([replaced, added])
    kept = [r for r in set(asked) if after.responses.get(r) is not None]
    for request in kept:
        assert after.responses.get(request) == rendered(after, request), request
    changed = [r for r in set(asked) if rendered(after, r) != rendered(before, r)]
    assert changed, "the change alters no answer: the test proves nothing"
    assert not set(changed) & set(kept)
    assert kept, "nothing was carried"


def test_a_change_of_devices_drops_every_answer() -> None:
    before = Snapshot([stored(1, (1024, 1024, 1024), 1.0)], {1: H100})
    asked = [(1024, 1024, 1024, "float32", "NN", None)]
    warm(before, asked)
    after = before.merged(devices={2: H200})
    assert len(before.responses) == 1 and len(after.responses) == 0


def test_far_and_default_answers_drop_on_any_change_of_their_dtype_only() -> None:
    before = Snapshot([stored(1, (1024, 1024, 1024), 1.0)], {1: H100})
    far = (3, 5, 7, "float32", "NN", None)
    default = (1024, 1024, 1024, "float16", "NN", None)
    warm(before, [far, default])
    after = before.merged([stored(2, (16384, 16384, 16384), 1.0)])
    assert after.responses.get(far) is None  # far: names the nearest shape, wherever it is
    assert after.responses.get(default) == rendered(after, default)  # float16: untouched


def test_the_cache_stops_growing_at_its_bound() -> None:
    from tuner.answers.answer_cache import MAX_CACHED

    snapshot = Snapshot([stored(1, (1024, 1024, 1024), 1.0)], {1: H100})
    answer = snapshot.answer(1024, 1024, 1024)
    cache = AnswerCache()
    for i in range(MAX_CACHED + 10):
        cache.put(i, b"x", reach_of(answer))
    assert len(cache) == MAX_CACHED
    assert len(cache.carried(Changes(everything=True))) == 0
