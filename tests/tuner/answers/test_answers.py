"""The answer rules on in-memory data: same device, same kind, slow families, unknown devices."""

from __future__ import annotations

import math

import pytest

from tuner.answers.answer import FAR_DISTANCE, Answer, DeviceInfo
from tuner.answers.best import Tuned, Tuning, UnknownDeviceError
from tuner.answers.default_rule import DEFAULT_LARGE, DEFAULT_SMALL
from tuner.answers.device_kind import DeviceSpec, MathRates
from tuner.core.accuracy import DEFAULT_ACCURACY
from tuner.core.errors import InputError
from tuner.kernels.families import parse_config

H100 = DeviceInfo("NVIDIA H100 80GB HBM3", "sm_90", 132)
A100 = DeviceInfo("NVIDIA A100-SXM4-40GB", "sm_80", 108)
L40 = DeviceInfo("NVIDIA L40S", "sm_89", 142)
WARPTILE = "warptile_bm128_bn128_bk16_wm64_wn64_wni4_tm8_tn4_t128"
STREAMK = "streamk_bm128_bn128_bk16_wm32_wn64_wni2_tm8_tn4_t256_smb2_stg0"
DMMA = "dmma_pipelined_bm64_bn128_bk32_wm32_wn64_mk4_s3_sk1_mb1"
H200 = DeviceSpec("NVIDIA H200", "sm_90", 132)


def tuned(device: DeviceInfo, shape: tuple[int, int, int], name: str, ms: float) -> Tuned:
    config = parse_config(name)
    m, n, k = shape
    return Tuned(
        best_id=int(ms * 1000),
        device=device,
        m=m,
        n=n,
        k=k,
        dtype="float32",
        layout="NN",
        family=config.family,
        config_name=name,
        params=config.as_dict(),
        ms=ms,
        tflops=2 * m * n * k / ms / 1e9,
        cublas_tflops=None,
        ratio=1.0,
        provenance={},
    )


CUBE = (4096, 4096, 4096)
SMALL = (1024, 1024, 1024)


@pytest.fixture
def tuning() -> Tuning:
    """H100: 4096^3 on dmma (fastest anywhere), 1024^3 on warptile; A100: 4096^3 on streamk."""
    return Tuning(
        [
            tuned(H100, CUBE, DMMA, 2.4),
            tuned(H100, SMALL, WARPTILE, 0.05),
            tuned(A100, CUBE, STREAMK, 7.0),
        ],
        [L40],  # seen (say, probed) but nothing tuned on it
        {},
    )


def test_no_device_takes_the_fastest_of_any(tuning: Tuning) -> None:
    answer = tuning.answer(*CUBE)
    assert (answer.name, answer.source, answer.device_match) == (DMMA, "exact", "any_device")
    assert answer.device is None and answer.measured_on_device == H100


def test_a_stored_device_gets_its_own_data(tuning: Tuning) -> None:
    answer = tuning.answer(*CUBE, device=DeviceSpec(A100.name))
    assert (answer.name, answer.device_match, answer.measured_on_device) == (
        STREAMK, "same_device", A100
    )  # fmt: skip
    assert answer.device == DeviceSpec(A100.name, "sm_80", 108)
    # Nearest stays on the device even though the H100 tuned the exact shape.
    near = tuning.answer(1024, 1024, 1024, device=DeviceSpec(A100.name))
    assert (near.source, near.measured_on, near.name) == ("nearest", CUBE, STREAMK)
    assert near.distance == pytest.approx(math.sqrt(3) * math.log(4))


def test_a_device_with_no_data_is_answered_from_its_kind(tuning: Tuning) -> None:
    answer = tuning.answer(*CUBE, device=H200)
    assert (answer.name, answer.source, answer.device_match) == (DMMA, "exact", "same_kind")
    assert (answer.device, answer.measured_on_device) == (H200, H100)
    assert "same kind (sm_90, 132 SMs)" in answer.note
    # The SM count is part of the kind: an H100 PCIe (114 SMs) is another kind.
    pcie = tuning.answer(*CUBE, device=DeviceSpec("NVIDIA H100 PCIe", "sm_90", 114))
    assert (pcie.source, pcie.name, pcie.device_match) == ("default", DEFAULT_LARGE, None)


def test_own_data_first_even_when_the_kind_has_the_exact_shape() -> None:
    tuning = Tuning(
        [
            tuned(H100, CUBE, DMMA, 2.4),
            tuned(DeviceInfo(H200.name, "sm_90", 132), SMALL, WARPTILE, 1),
        ],
        [],
        {},
    )
    answer = tuning.answer(*CUBE, device=H200)
    assert (answer.source, answer.device_match, answer.name) == ("nearest", "same_device", WARPTILE)


def test_slow_fp64_tensor_families_are_skipped_by_arch(tuning: Tuning) -> None:
    """An sm_89 part of the H100's 132 SMs (not a real GPU; the table says its FP64 tensor cores
    are slow): the dmma best of its kind is skipped, the warptile one serves as nearest."""
    odd = DeviceSpec("sm_89 with 132 SMs", "sm_89", 132)
    tuning = Tuning(
        [tuned(DeviceInfo("other sm_89", "sm_89", 132), CUBE, DMMA, 2.4),
         tuned(DeviceInfo("other sm_89", "sm_89", 132), SMALL, WARPTILE, 0.05)],
        [],
        {},
    )  # fmt: skip
    answer = tuning.answer(*CUBE, device=odd)
    assert (answer.name, answer.source, answer.measured_on) == (WARPTILE, "nearest", SMALL)
    assert "1 tuned config(s) on fp64_tensor math skipped" in answer.note
    assert "0.0156 of the FFMA rate on sm_89" in answer.note


def test_measured_rates_decide_over_the_arch_table(tuning: Tuning) -> None:
    slow = {H100.name: MathRates(ffma_tflops=60.0, fp64_tensor_tflops=20.0)}
    cut = Tuning(tuning.entries, tuning.devices, slow).answer(*CUBE, device=DeviceSpec(H100.name))
    assert (cut.name, cut.source, cut.measured_on) == (WARPTILE, "nearest", SMALL)
    fast = {H100.name: MathRates(ffma_tflops=60.0, fp64_tensor_tflops=30.0)}  # half: fast enough
    kept = Tuning(tuning.entries, tuning.devices, fast).answer(*CUBE, device=DeviceSpec(H100.name))
    assert (kept.name, kept.source) == (DMMA, "exact")
    # Without a device there is nothing to judge by: the fastest of any, dmma included.
    assert Tuning(tuning.entries, tuning.devices, slow).answer(*CUBE).name == DMMA


def test_an_unknown_arch_never_gets_a_dmma_config() -> None:
    b200 = DeviceInfo("NVIDIA B200", "sm_100", 148)
    tuning = Tuning([tuned(b200, CUBE, DMMA, 1.0)], [], {})
    answer = tuning.answer(*CUBE, device=DeviceSpec(b200.name))
    assert (answer.source, answer.name) == ("default", DEFAULT_LARGE)


def test_an_unknown_name_without_arch_is_an_error_listing_the_known(tuning: Tuning) -> None:
    with pytest.raises(UnknownDeviceError) as info:
        tuning.answer(*CUBE, device=DeviceSpec("NVIDIA H20O"))  # a typo
    assert isinstance(info.value, InputError) and info.value.field == "device"
    assert info.value.known == (A100.name, H100.name, L40.name)
    assert str(info.value).startswith("device 'NVIDIA H20O' is not a known device")
    with pytest.raises(UnknownDeviceError, match="known devices: none"):
        Tuning([], [], {}).answer(*CUBE, device=DeviceSpec("any"))


def test_a_known_device_without_results_or_kind_data_gets_the_default(tuning: Tuning) -> None:
    answer = tuning.answer(*SMALL, device=DeviceSpec(L40.name))
    assert (answer.source, answer.name) == ("default", DEFAULT_SMALL)
    assert answer.device == DeviceSpec(L40.name, "sm_89", 142)  # described from the device table
    assert "nothing tuned on NVIDIA L40S or a GPU of its kind" in answer.note


def test_a_name_with_two_sm_counts_needs_the_count_for_its_kind() -> None:
    full, half = DeviceInfo("GPU", "sm_90", 132), DeviceInfo("GPU", "sm_90", 66)
    other = DeviceInfo("Other", "sm_90", 66)
    tuning = Tuning(
        [tuned(full, CUBE, WARPTILE, 1.0), tuned(other, SMALL, STREAMK, 1.0)], [half], {}
    )
    mixed = tuning.answer(*SMALL, device=DeviceSpec("GPU"))
    assert (mixed.device_match, mixed.name, mixed.device) == (
        "same_device", WARPTILE, DeviceSpec("GPU", "sm_90", None)
    )  # fmt: skip
    sliced = tuning.answer(*SMALL, device=DeviceSpec("GPU", sm_count=66))
    assert (sliced.device_match, sliced.name, sliced.measured_on_device) == (
        "same_kind", STREAMK, other
    )  # fmt: skip


def test_bad_dimensions_name_the_field(tuning: Tuning) -> None:
    with pytest.raises(InputError, match=r"`n` must be an integer in 1\.\.2147483647, got 0"):
        tuning.answer(1, 0, 1)


@pytest.mark.parametrize("device", [None, H200])
def test_json_round_trip(tuning: Tuning, device: DeviceSpec | None) -> None:
    for shape in (CUBE, (1000, 3000, 64), (7, 7, 7)):
        answer = tuning.answer(*shape, device=device)
        assert Answer.from_json(answer.as_json()) == answer


def test_an_answer_from_a_server_before_accuracy_classes_is_exact(tuning: Tuning) -> None:
    body = tuning.answer(*CUBE, device=H200).as_json()
    assert body["measured_on"] == {"m": 4096, "n": 4096, "k": 4096}
    del body["accuracy"]
    old = Answer.from_json(body)
    assert old.accuracy == DEFAULT_ACCURACY and old.measured_on == CUBE
    assert old.device == H200 and old.measured_on_device is not None


def test_a_persistent_grid_is_sized_for_the_sms_it_was_measured_with() -> None:
    tuning = Tuning([tuned(H100, CUBE, STREAMK, 3.0), tuned(A100, CUBE, STREAMK, 9.0)], [], {})
    assert tuning.answer(*CUBE).launch().grid == (264, 1, 1)  # SMBLOCKS=2 on 132 SMs
    assert tuning.answer(*CUBE, device=H200).launch().grid == (264, 1, 1)
    a100 = tuning.answer(*CUBE, device=DeviceSpec(A100.name)).launch()
    assert a100.grid == (216, 1, 1) and a100.block == (256, 1, 1)


def test_confidence_falls_with_distance_and_is_one_for_exact(tuning: Tuning) -> None:
    exact = tuning.answer(*SMALL)
    near = tuning.answer(2048, 1024, 1024)  # a factor 2 in m from 1024^3
    assert (exact.source, exact.confidence) == ("exact", 1.0)
    assert near.source == "nearest" and near.distance == pytest.approx(math.log(2))
    assert near.confidence == pytest.approx(1 - math.log(2) / FAR_DISTANCE, abs=1e-3)
    assert 0 < near.confidence < exact.confidence


def test_a_tiny_shape_far_from_every_tuned_one_gets_no_measured_numbers(tuning: Tuning) -> None:
    answer = tuning.answer(3, 5, 7)
    distance = math.dist([math.log(3), math.log(5), math.log(7)], [math.log(1024)] * 3)
    assert (answer.source, answer.name, answer.confidence) == ("far", DEFAULT_SMALL, 0.0)
    assert answer.distance == pytest.approx(distance) and answer.distance > FAR_DISTANCE
    assert (answer.ms, answer.tflops, answer.ratio, answer.measured_on) == (None,) * 4
    assert "1024x1024x1024" in answer.note and f"> {FAR_DISTANCE:g}" in answer.note
    assert Answer.from_json(answer.as_json()) == answer


def test_just_inside_the_far_distance_is_still_nearest(tuning: Tuning) -> None:
    edge = 1024 / math.exp(FAR_DISTANCE)  # m alone moves away from 1024^3
    inside = tuning.answer(math.ceil(edge), 1024, 1024)
    outside = tuning.answer(math.floor(edge), 1024, 1024)
    assert (inside.source, inside.measured_on) == ("nearest", SMALL)
    assert outside.source == "far"


def test_a_far_own_device_falls_through_to_a_near_device_of_its_kind() -> None:
    tiny = (8, 8, 8)
    tuning = Tuning([tuned(H100, tiny, WARPTILE, 0.01), tuned(A100, CUBE, STREAMK, 7.0)], [], {})
    a100 = tuning.answer(*CUBE, device=DeviceSpec(A100.name))
    assert (a100.source, a100.name) == ("exact", STREAMK)
    h100 = tuning.answer(4000, 4000, 4000, device=DeviceSpec(H100.name))
    assert (h100.source, h100.device_match) == ("far", None)


@pytest.mark.parametrize(
    ("m", "n", "dtype", "layout", "accuracy", "chosen", "not_said"),
    [
        (3, 5, "float32", "NN", "exact", DEFAULT_SMALL, DEFAULT_LARGE),
        (4096, 4096, "float32", "NN", "exact", DEFAULT_LARGE, DEFAULT_SMALL),
        (4096, 4096, "bfloat16", "NT", "exact", "hmma_bm128_bn128", DEFAULT_SMALL),
        (100, 100, "float32", "NT", "bf16x3", "hmma_bf16x3", DEFAULT_LARGE),
    ],
)
def test_a_default_answer_says_the_branch_of_the_rule_that_chose_it(
    m: int, n: int, dtype: str, layout: str, accuracy: str, chosen: str, not_said: str
) -> None:
    """Not the whole rule (every branch, about 600 characters): the test that decided and its
    config; the whole rule stays in the provenance."""
    from tuner.answers.default_rule import DEFAULT_RULE

    answer = Tuning([], [], {}).answer(m, n, 64, dtype, layout, accuracy=accuracy)
    assert answer.source == "default" and answer.name.startswith(chosen.split("_bm")[0])
    assert chosen in answer.note and not_said not in answer.note
    assert f"ceil({m}/128)*ceil({n}/128)" in answer.note
    assert len(answer.note) < len(DEFAULT_RULE)
    assert answer.provenance["rule"] == DEFAULT_RULE
