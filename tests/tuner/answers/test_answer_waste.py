"""A nearest answer passes over a config its family says would be many times slower at the asked
shape: a short ``tma_ws`` tile (16 rows) never answers for more rows than it holds."""

from __future__ import annotations

from tests.tuner.answers.entries import half_nt_entry
from tuner.answers.answer import DeviceInfo
from tuner.answers.best import Tuned, Tuning

H200 = DeviceInfo("NVIDIA H200", "sm_90", 132)
SHORT = "tma_ws_bm16_bn64_bk64_cw1_s16_gr1_ra0_ep0_cm1_cn1_dt1_ly1_out2"
TALL = "tma_ws_bm64_bn64_bk64_cw1_s12_gr1_ra0_ep0_cm1_cn1_dt1_ly1_out2"


def tuned(name: str, m: int, ms: float) -> Tuned:
    return half_nt_entry(name, (m, 4096, 4096), ms, "bfloat16", H200, best_id=m)


def test_a_short_tile_answers_only_shapes_whose_rows_it_holds() -> None:
    tuning = Tuning([tuned(SHORT, 16, 0.019), tuned(TALL, 64, 0.024)], [], {})

    def answer(m: int) -> tuple[str, str]:
        found = tuning.answer(m, 4096, 4096, "bfloat16", "NT")
        return found.source, found.name

    assert answer(16) == ("exact", SHORT)
    assert answer(8) == ("nearest", SHORT)  # 8 rows fit the 16-row tile
    # 24 rows are nearer 16 than 64, but the short tile would read B twice: the 64-row answer.
    assert answer(24) == ("nearest", TALL)
    alone = Tuning([tuned(SHORT, 16, 0.019)], [], {})
    assert alone.answer(24, 4096, 4096, "bfloat16", "NT").name != SHORT
