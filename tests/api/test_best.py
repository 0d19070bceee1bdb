"""POST /v1/configs/best: exact, nearest and default answers, for the device asked about, and
422 for bad input."""

from __future__ import annotations

import math

import pytest
from fastapi.testclient import TestClient

import storage
from tests.api.conftest import A100, FAST, H100, PIPE, SLOW, make_app, measurement, seed
from tuner.answers.default_rule import DEFAULT_LARGE, DEFAULT_SMALL, default_config
from tuner.kernels.families import get_family

H100_OUT = {"name": H100.name, "arch": "sm_90", "sm_count": 132}
H200 = {"device": "NVIDIA H200", "device_arch": "sm_90", "device_sm_count": 132}
DMMA = "dmma_pipelined_bm64_bn128_bk32_wm32_wn64_mk4_s3_sk1_mb1"


def post(client: TestClient, **body: object) -> dict[str, object]:
    response = client.post("/v1/configs/best", json=body)
    assert response.status_code == 200, response.text
    data: dict[str, object] = response.json()
    return data


def test_exact_answer_is_the_fastest_config_for_the_shape(client: TestClient) -> None:
    data = post(client, m=1024, n=1024, k=1024)
    assert data["source"] == "exact"
    assert data["name"] == FAST
    assert data["family"] == "warptile"
    assert data["params"] == {
        "BM": 128,
        "BN": 128,
        "BK": 16,
        "WM": 64,
        "WN": 64,
        "WNITER": 4,
        "TM": 8,
        "TN": 4,
        "THREADS": 128,
    }
    assert data["distance"] == 0.0
    assert data["measured_on"] == {"m": 1024, "n": 1024, "k": 1024}
    assert data["ms"] == 0.5
    assert data["tflops"] == pytest.approx(4.294967)  # derived from 0.5 ms: none was stored
    assert data["cublas_tflops"] == pytest.approx(2.147484)  # and from cuBLAS's 1.0 ms
    assert data["ratio"] == pytest.approx(2.0)
    assert data["device"] is None  # none asked about
    assert data["measured_on_device"] == H100_OUT
    assert data["device_match"] == "any_device"
    assert data["provenance"] == {"test": True}
    assert data["kernel"] is None


def test_exact_without_device_takes_the_fastest_device(client: TestClient) -> None:
    assert post(client, m=4096, n=4096, k=4096)["name"] == PIPE
    a100 = post(client, m=4096, n=4096, k=4096, device=A100.name)
    assert (a100["name"], a100["source"], a100["device_match"]) == (SLOW, "exact", "same_device")
    assert a100["measured_on_device"]["name"] == A100.name  # type: ignore[index]
    # The stored arch and SM count fill in what the request left out.
    assert a100["device"] == {"name": A100.name, "arch": "sm_80", "sm_count": 108}


def test_nearest_says_which_shape_its_numbers_come_from(client: TestClient) -> None:
    data = post(client, m=1024, n=2048, k=1024)
    assert data["source"] == "nearest"
    assert data["name"] == FAST
    assert data["measured_on"] == {"m": 1024, "n": 1024, "k": 1024}
    assert data["distance"] == pytest.approx(math.log(2))
    assert data["ms"] == 0.5  # measured on 1024^3, and labelled so
    assert "1024x1024x1024" in str(data["note"]) and "measured on that shape" in str(data["note"])


def test_a_tiny_shape_is_far_from_1024_cubed_and_gets_no_numbers(client: TestClient) -> None:
    data = post(client, m=3, n=5, k=7)
    assert (data["source"], data["name"], data["confidence"]) == ("far", DEFAULT_SMALL, 0.0)
    to_1024_cubed = math.sqrt(sum(math.log(1024 / d) ** 2 for d in (3, 5, 7)))
    assert data["distance"] == pytest.approx(to_1024_cubed)
    assert (data["ms"], data["tflops"], data["ratio"], data["measured_on"]) == (None,) * 4
    near = post(client, m=1024, n=2048, k=1024)
    assert 0 < near["confidence"] < 1  # type: ignore[operator]


def test_nearest_stays_on_the_requested_device(client: TestClient) -> None:
    data = post(client, m=1000, n=1000, k=1000, device="NVIDIA A100-SXM4-40GB")
    assert data["source"] == "nearest"
    assert data["measured_on"] == {"m": 4096, "n": 4096, "k": 4096}
    assert data["name"] == SLOW


def test_unknown_device_is_422_listing_the_known_ones(client: TestClient) -> None:
    response = client.post("/v1/configs/best", json={"m": 8, "n": 8, "k": 8, "device": "RTX"})
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert (error["field"], error["type"]) == ("device", "unknown_device")
    assert error["msg"].startswith("`device` 'RTX' is not a known device")
    assert f"known devices: '{A100.name}', '{H100.name}'" in error["msg"]
    assert "`device_arch` and `device_sm_count`" in error["msg"]


def test_a_device_with_no_data_is_answered_from_its_kind(client: TestClient) -> None:
    data = post(client, m=1024, n=1024, k=1024, **H200)
    assert (data["source"], data["name"], data["device_match"]) == ("exact", FAST, "same_kind")
    assert data["device"] == {"name": "NVIDIA H200", "arch": "sm_90", "sm_count": 132}
    assert data["measured_on_device"] == H100_OUT
    assert "same kind (sm_90, 132 SMs)" in str(data["note"])
    nearest = post(client, m=1000, n=1000, k=1000, **H200)
    assert (nearest["source"], nearest["measured_on_device"]) == ("nearest", H100_OUT)


def test_a_device_of_no_stored_kind_gets_the_default(client: TestClient) -> None:
    rtx = {"device": "NVIDIA GeForce RTX 4090", "device_arch": "sm_89", "device_sm_count": 128}
    data = post(client, m=1024, n=1024, k=1024, **rtx)
    assert (data["source"], data["name"], data["device_match"]) == ("default", DEFAULT_SMALL, None)
    assert data["device"] == {"name": rtx["device"], "arch": "sm_89", "sm_count": 128}
    assert data["measured_on_device"] is None and data["ms"] is None
    # An arch without an SM count finds no kind either: the default, not an error.
    named = post(client, m=1024, n=1024, k=1024, device="GPU X", device_arch="sm_90")
    assert (named["source"], named["device"]["sm_count"]) == ("default", None)  # type: ignore[index]


def test_fp64_tensor_families_are_never_the_answer_where_they_run_slowly(seeded: str) -> None:
    """An H100 best of dmma_pipelined serves an H200 (fast FP64 tensor cores on sm_90), but not a
    GPU of the same kind whose probes measured slow FP64 tensor cores."""
    engine = storage.make_engine(seeded)
    slow = storage.DeviceIn("Cut-down sm_90", "sm_90", 132)
    with storage.make_session_factory(engine).begin() as s:
        storage.record_measurement(
            s, H100, storage.ShapeIn(2048, 2048, 1024), measurement(DMMA, 0.3)
        )
        rates = storage.RatesIn(ffma_tflops=60.0, fp64_tensor_tflops=1.0)
        storage.record_device_rates(s, slow, rates)
    engine.dispose()
    app = make_app(seeded)
    with TestClient(app) as client:
        fast = post(client, m=2048, n=2048, k=1024, **H200)
        cut = post(client, m=2048, n=2048, k=1024, device=slow.name)
    app.state.engine.dispose()
    assert (fast["name"], fast["source"], fast["device_match"]) == (DMMA, "exact", "same_kind")
    # Known by name from its rates (so its kind too); the dmma best skipped, the nearest other
    # (2048^3, whose best in the seeded study is FAST).
    assert (cut["name"], cut["source"], cut["device_match"]) == (FAST, "nearest", "same_kind")
    assert cut["measured_on"] == {"m": 2048, "n": 2048, "k": 2048}
    assert cut["distance"] == pytest.approx(math.log(2))
    assert "1 tuned config(s) on fp64_tensor math skipped" in str(cut["note"])
    assert "measured 1 TFLOP/s on the FP64 tensor cores against 60" in str(cut["note"])


def test_empty_database_gets_a_valid_default_for_any_shape(db_url: str) -> None:
    app = make_app(db_url)
    with TestClient(app) as client:
        small = post(client, m=1, n=7, k=13)
        large = post(client, m=4096, n=8192, k=3)
    app.state.engine.dispose()
    assert (small["source"], small["name"]) == ("default", DEFAULT_SMALL)
    assert large["name"] == DEFAULT_LARGE
    assert "rule" in small["provenance"]  # type: ignore[operator]


@pytest.mark.parametrize("name", [DEFAULT_SMALL, DEFAULT_LARGE])
def test_default_configs_satisfy_every_family_rule(name: str) -> None:
    from tuner.kernels.families import parse_config
    from tuner.kernels.resources import static_check, table_device

    config = parse_config(name)
    assert get_family(config.family).broken_rules(config) == []
    assert static_check(config, table_device("sm_90")).fits


def test_default_rule_switches_at_one_wave_of_128x128_tiles() -> None:
    assert default_config(12 * 128, 11 * 128).name == DEFAULT_LARGE  # 132 tiles
    assert default_config(12 * 128, 10 * 128 + 1).name == DEFAULT_LARGE
    assert default_config(131 * 128, 1).name == DEFAULT_SMALL


def test_include_source_gives_code_and_launch_geometry(sqlite_client: TestClient) -> None:
    data = post(sqlite_client, m=1000, n=3000, k=64, include_source=True)
    assert (data["name"], data["source"]) == (FAST, "nearest")  # 128x128 tiles, 128 threads
    kernel = data["kernel"]
    assert isinstance(kernel, dict)
    assert kernel["entry"] == FAST
    assert 'extern "C"' in kernel["code"] and FAST in kernel["code"]
    assert kernel["grid"] == [24, 8, 1]  # 3000 columns / 128, 1000 rows / 128, rounded up
    assert kernel["block"] == [128, 1, 1]
    assert kernel["dynamic_smem_bytes"] == 0  # warptile's tiles are static
    assert kernel["module_per_stream"] is False  # warptile keeps no counters
    # warptile reads packed rows: no leading dimensions, nothing to do around the launch.
    names = [a["name"] for a in kernel["argument_list"]]
    assert names == ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
    assert kernel["arguments"].startswith("(int M, int N, int K, float alpha, const float*")
    assert kernel["signature"].endswith(FAST + kernel["arguments"])
    assert kernel["kernel_shape"] == {"m": 1000, "n": 3000, "k": 64}
    assert kernel["buffers"] == [] and kernel["after_launch"] == []
    assert "ceil(N / 128)" in kernel["grid_rule"]
    assert kernel["compile"]["options"] == ["-arch=sm_90", "-std=c++17"]  # measured on the H100


def test_the_kernel_block_of_a_half_config_gives_its_leading_dimensions(tmp_path: object) -> None:
    url = f"sqlite:///{tmp_path}/half.db"
    seed(url)
    name = "wgmma_bm128_bn256_bk64_wgm2_s4_sw4_dt1_ly1"  # bfloat16, B transposed (NT)
    engine = storage.make_engine(url)
    with storage.make_session_factory(engine).begin() as s:
        shape = storage.ShapeIn(512, 384, 200, "bfloat16", "NT")
        storage.record_measurement(s, H100, shape, measurement(name, 0.01))
    engine.dispose()
    app = make_app(url)
    with TestClient(app) as client:
        # Stored as float32 C (a ShapeIn's default, what rows before C had a type wrote).
        kind = {"dtype": "bfloat16", "layout": "NT", "out_dtype": "float32"}
        data = post(client, m=512, n=384, k=200, **kind, include_source=True)
    app.state.engine.dispose()
    assert (data["name"], data["source"]) == (name, "exact")
    kernel = data["kernel"]
    assert isinstance(kernel, dict)
    by_name = {a["name"]: a for a in kernel["argument_list"]}
    assert list(by_name) == ["M", "N", "K", "alpha", "A", "lda", "B", "ldb", "beta", "C", "ldc"]
    # A stored 512 x 200, B stored (transposed) 384 x 200, C 512 x 384: packed row lengths.
    assert (by_name["lda"]["value"], by_name["ldb"]["value"], by_name["ldc"]["value"]) == (
        200,
        200,
        384,
    )
    assert by_name["A"]["type"] == "const half_bits*" and "half_bits" in kernel["types"]
    assert kernel["compile"]["arch"] == "sm_90a"  # wgmma: the architecture-specific target
    assert kernel["grid"] == [2, 4, 1]  # 384 / 256 and 512 / 128, rounded up
    assert any("dynamic shared memory" in step for step in kernel["before_launch"])


def test_persistent_grid_is_sized_for_the_device_it_was_measured_on(tmp_path: object) -> None:
    url = f"sqlite:///{tmp_path}/streamk.db"
    seed(url)
    name = "streamk_bm128_bn256_bk16_wm32_wn128_wni2_tm8_tn4_t256_smb1_stg1"
    engine = storage.make_engine(url)
    with storage.make_session_factory(engine).begin() as s:
        shape = storage.ShapeIn(3000, 5000, 700)
        storage.record_measurement(s, H100, shape, measurement(name, 0.5))
        storage.record_measurement(s, A100, shape, measurement(name, 0.9))
    engine.dispose()
    app = make_app(url)
    with TestClient(app) as client:
        for device, blocks in ((H100.name, 132), (A100.name, 108)):
            data = post(client, m=3000, n=5000, k=700, device=device, include_source=True)
            assert data["name"] == name
            kernel = data["kernel"]
            assert isinstance(kernel, dict)
            assert kernel["grid"] == [blocks, 1, 1] and kernel["block"] == [256, 1, 1]
            assert kernel["module_per_stream"] is True  # streamk's split-K counters
            assert "SM count" in kernel["grid_rule"]
    app.state.engine.dispose()


def test_each_accuracy_class_keeps_its_best_and_a_strict_ask_gets_the_strict_one(
    tmp_path: object,
) -> None:
    url = f"sqlite:///{tmp_path}/classes.db"
    seed(url)
    emulated = "wgmma_bf16x3_bm128_bn256_bk64_wgm2_s4_sw8_dt1_ly0"
    engine = storage.make_engine(url)
    with storage.make_session_factory(engine).begin() as s:
        # Faster than PIPE's 3.0 ms at 4096^3 on the H100, but emulated.
        shape = storage.ShapeIn(4096, 4096, 4096)
        storage.record_measurement(s, H100, shape, measurement(emulated, 0.8, accuracy="bf16x3"))
    engine.dispose()
    app = make_app(url)
    with TestClient(app) as client:
        strict = post(client, m=4096, n=4096, k=4096, device=H100.name)
        assert (strict["name"], strict["accuracy"]) == (PIPE, "exact")
        loose = post(client, m=4096, n=4096, k=4096, device=H100.name, accuracy="bf16x3")
        assert (loose["name"], loose["accuracy"]) == (emulated, "bf16x3")
        assert loose["source"] == "exact" and loose["ms"] == 0.8
        # A class the asked floor accepts, from a nearby shape, too.
        near = post(client, m=4000, n=4096, k=4096, device=H100.name, accuracy="bf16x3")
        assert (near["name"], near["source"]) == (emulated, "nearest")
    app.state.engine.dispose()


BAD = [
    ({"m": 1, "n": 1, "k": 1, "accuracy": "tf32"}, "accuracy", "'bf16x3'"),
    ({"m": 0, "n": 1, "k": 1}, "m", "1..2147483647"),
    ({"m": -1, "n": 1, "k": 1}, "m", "1..2147483647"),
    ({"m": 1, "n": "x", "k": 1}, "n", "1..2147483647"),
    ({"m": 1, "n": 1, "k": 2**40}, "k", "1..2147483647"),
    ({"m": 1, "n": 1, "k": 2**31}, "k", "1..2147483647"),
    ({"m": 1.5, "n": 1, "k": 1}, "m", "integer"),
    ({"n": 1, "k": 1}, "m", "required"),
    ({"m": 1, "n": 1}, "k", "required"),
    ({"m": 1, "n": 1, "k": 1, "dtype": "float64"}, "dtype", "'bfloat16'"),
    ({"m": 1, "n": 1, "k": 1, "layout": "column-major"}, "layout", "'NT'"),
    ({"m": 1, "n": 1, "k": 1, "devcie": "x"}, "devcie", "not a known field"),
    ({"m": 1, "n": 1, "k": 1, "device": ""}, "device", "at least 1 character"),
    ({"m": 1, "n": 1, "k": 1, "device": "X", "device_arch": "9.0"}, "device_arch", "sm_"),
    ({"m": 1, "n": 1, "k": 1, "device_arch": "sm_90"}, "device_arch", "give `device`"),
    ({"m": 1, "n": 1, "k": 1, "device": "X", "device_sm_count": 0}, "device_sm_count", ">= 1"),
    ({"m": 1, "n": 1, "k": 1, "device_sm_count": 132}, "device_sm_count", "give `device`"),
    # Strict JSON types: true is not 1, "4096" is not a number, 0 is not false.
    ({"m": True, "n": 1, "k": 1}, "m", "must be an integer"),
    ({"m": 1, "n": "4096", "k": 1}, "n", "must be an integer"),
    ({"m": 1, "n": 1, "k": 1.0}, "k", "must be an integer"),
    ({"m": 1, "n": 1, "k": 1, "include_source": 0}, "include_source", "boolean"),
    ({"m": 1, "n": 1, "k": 1, "device": "X", "device_sm_count": "132"}, "device_sm_count", "int"),
]


@pytest.mark.parametrize(("body", "field", "allowed"), BAD)
def test_bad_input_is_422_naming_the_field(
    sqlite_client: TestClient, body: dict[str, object], field: str, allowed: str
) -> None:
    response = sqlite_client.post("/v1/configs/best", json=body)
    assert response.status_code == 422
    errors = response.json()["detail"]
    mine = [e for e in errors if e["field"] == field]
    assert mine, errors
    assert mine[0]["msg"].startswith(f"`{field}`")
    assert allowed in mine[0]["msg"]
    if field in body:
        assert repr(body[field]) in mine[0]["msg"]


@pytest.mark.parametrize(
    ("content", "content_type", "needle"),
    [
        (b"m=1", "application/json", "not valid JSON (Expecting value at character 0)"),
        (b'{"m": 1,', "application/json", "not valid JSON"),
        (b"[1, 2]", "application/json", "must be a JSON object, got [1, 2]"),
        (b'{"m": "\xff"}', "application/json", "in UTF-8; byte 7 is not UTF-8"),
        (b'{"m": 1, "n": 1, "k": 1}', "text/plain", "'Content-Type: application/json', got"),
        (b'{"m": 1, "n": 1, "k": 1}', "", "got Content-Type 'none'"),
    ],
)
def test_a_body_that_is_not_a_json_object_gets_one_readable_line(
    sqlite_client: TestClient, content: bytes, content_type: str, needle: str
) -> None:
    headers = {"content-type": content_type} if content_type else {}
    response = sqlite_client.post("/v1/configs/best", content=content, headers=headers)
    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert error["field"] == "body" and error["msg"].startswith("`body` must be a JSON object")
    assert needle in error["msg"]


@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_inputs_get_a_tensor_core_default_for_their_layout(
    client: TestClient, dtype: str, layout: str
) -> None:
    """Nothing is tuned for half inputs in the fixture: the default is hmma's, and the config's
    pinned DTYPE and LAYOUT are the ones asked about (not the FP32 warptile of float32)."""
    data = post(client, m=4096, n=4096, k=4096, dtype=dtype, layout=layout)
    assert (data["source"], data["family"]) == ("default", "hmma")
    assert (data["dtype"], data["layout"]) == (dtype, layout)
    params = data["params"]
    assert isinstance(params, dict)
    assert params["DTYPE"] == ["float16", "bfloat16"].index(dtype)
    assert params["LAYOUT"] == ["NN", "NT", "TN", "TT"].index(layout)


@pytest.mark.parametrize("layout", ["NT", "TN", "TT"])
def test_float32_in_a_transposed_layout_needs_the_emulated_class(
    client: TestClient, layout: str
) -> None:
    """No exact family computes float32 NT, TN or TT: a 422 on ``layout`` saying what to do,
    not a config of another layout; at bf16x3 the emulated default, pinned to the layout."""
    body = {"m": 512, "n": 512, "k": 512, "layout": layout}
    response = client.post("/v1/configs/best", json=body)
    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert error["field"] == "layout" and error["msg"].startswith(f"`layout` '{layout}'")
    assert "accuracy bf16x3" in error["msg"]
    data = post(client, **body, accuracy="bf16x3")
    assert (data["family"], data["accuracy"], data["source"]) == (
        "hmma_bf16x3",
        "bf16x3",
        "default",
    )
    params = data["params"]
    assert isinstance(params, dict)
    assert params["LAYOUT"] == ["NN", "NT", "TN", "TT"].index(layout)


def test_row_major_is_answered_as_nn(client: TestClient) -> None:
    old = post(client, m=1024, n=1024, k=1024, layout="row-major")
    assert old["layout"] == "NN"
    assert old["name"] == post(client, m=1024, n=1024, k=1024, layout="NN")["name"] == FAST


def test_openapi_lists_the_dtypes_and_layouts(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()["components"]["schemas"]["BestRequest"]
    assert schema["properties"]["dtype"]["enum"] == ["float32", "float16", "bfloat16"]
    assert schema["properties"]["layout"]["enum"] == ["NN", "NT", "TN", "TT", "row-major"]
