"""The dashboard's HTML: the overview, the studies list, a study page (charts, failures, a
filtered, sorted, paged trial table) and the shape space, served by the app itself."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

import storage
from tests.api.conftest import H100, make_app, measurement, seed
from tuner.answers.default_rule import DEFAULT_SMALL
from tuner.kernels.families import parse_config

STUDY = "/dashboard/studies/sweep/2048%20%231"


def test_dashboard_html_has_table_chart_and_studies(sqlite_client: TestClient) -> None:
    html = sqlite_client.get("/dashboard").text
    assert '<table class="best-configs">' in html
    assert html.count("<svg") == 2  # one % of cuBLAS chart per device
    assert "1024\u00d71024\u00d71024" in html and "200.0 %" in html
    assert f'href="{STUDY}"' in html
    assert "<script" not in html and "http://" not in html.replace('xmlns="http://www.w3.org', "")


def test_studies_page_lists_every_study_by_a_readable_title(sqlite_client: TestClient) -> None:
    html = sqlite_client.get("/dashboard/studies").text
    assert f'href="{STUDY}"' in html
    assert re.search(
        r"<td class=\"num\">4</td><td class=\"num\">3</td><td class=\"num\">1</td>", html
    )


def test_the_studies_list_filters_by_every_word_of_a_search(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/search.db"
    seed(url)
    engine = storage.make_engine(url)
    with storage.make_session_factory(engine).begin() as s:
        shape = storage.ShapeIn(512, 512, 512)
        storage.record_measurement(s, H100, shape, measurement(DEFAULT_SMALL, 0.5, study="tune B"))
    engine.dispose()
    app = make_app(url)
    with TestClient(app) as client:
        listed = client.get("/dashboard/studies").text
        found = client.get("/dashboard/studies", params={"q": "512X512 TUNE"}).text
        none = client.get("/dashboard/studies", params={"q": "512x512 no-such-word"}).text
    app.state.engine.dispose()
    keys = re.findall(r'<code class="muted">([^<]+)</code>', listed)
    assert "tune B" in keys and len(keys) > 1
    # Every word, any case, in the title (which names the shape) or the key.
    assert re.findall(r'<code class="muted">([^<]+)</code>', found) == ["tune B"]
    assert 'value="512X512 TUNE"' in found  # the form keeps the search
    assert "No study matches" in none and '<table class="studies">' not in none


def test_study_page_has_every_chart_and_explains_failures(client: TestClient) -> None:
    response = client.get(STUDY)
    assert response.status_code == 200
    html = response.text
    assert 'class="best-so-far"' in html and 'class="reference"' in html  # the cuBLAS line
    assert 'id="importances" data-fragment=' in html and "Parameters of the trials" in html
    # One slice per shared parameter that took more than one value in the study's trials.
    trials = client.get("/v1/studies/sweep/2048%20%231").json()["trials"]
    params = [parse_config(t["config_name"]).as_dict() for t in trials]
    names = set.intersection(*(set(p) for p in params))
    varied = sorted(n for n in names if len({p[n] for p in params}) > 1)
    assert 0 < len(varied) < len(names)  # the seeded study has parameters of one value too
    assert html.count('aria-label="TFLOP/s by ') == len(varied)
    for name in names:
        assert (f'aria-label="TFLOP/s by {name}"' in html) == (name in varied), name
    assert "registers per thread" in html  # the default x axis
    assert "compile_failed" in html and "nvrtc failed" in html
    assert "the compiler refused the source" in html
    assert 'src="/static/live.js"' in html
    assert client.get("/dashboard/studies/none").status_code == 404


def test_study_page_takes_the_axis_and_colour_from_the_form(sqlite_client: TestClient) -> None:
    html = sqlite_client.get(STUDY, params={"x": "occupancy", "colour": "BK"}).text
    assert "TFLOP/s against occupancy (active warps / maximum), coloured by BK" in html
    bad = sqlite_client.get(STUDY, params={"x": "colour of the sky"})
    assert bad.status_code == 422 and "`x` must be one of" in bad.text
    assert sqlite_client.get(STUDY, params={"family": "nope"}).status_code == 422


def rows_of(html: str) -> list[str]:
    body = html.split('<table class="trials">')[1].split("</table>")[0]
    return re.findall(r"<tr><td>(\d+)</td><td><span[^>]*>(\w+)</span>", body)


def test_the_trial_table_filters_and_sorts(sqlite_client: TestClient) -> None:
    everything = rows_of(sqlite_client.get(STUDY).text)
    assert [number for number, _ in everything] == ["0", "1", "2", "3"]
    failed = rows_of(sqlite_client.get(STUDY, params={"status": "compile_failed"}).text)
    assert failed == [("1", "compile_failed")]
    fastest = rows_of(sqlite_client.get(STUDY, params={"sort": "tflops"}).text)
    assert [number for number, _ in fastest][:3] == ["2", "3", "0"]  # 3.5, 3.8, 4.0 ms
    assert rows_of(sqlite_client.get(STUDY, params={"q": "bk99"}).text) == []


def test_progress_is_a_small_json_document(client: TestClient) -> None:
    data = client.get("/dashboard/progress", params={"study": "sweep/2048 #1"}).json()
    assert (data["trials"], data["ok"]) == (4, 3)
    assert data["last_at"].startswith("20")
    empty = client.get("/dashboard/progress", params={"study": "none"}).json()
    assert (empty["trials"], empty["last_id"]) == (0, None)


def test_shape_space_shows_tuned_shapes_and_answers_like_the_api(
    sqlite_client: TestClient,
) -> None:
    html = sqlite_client.get("/dashboard/shapes").text
    assert '<table class="tuned-shapes">' in html and html.count("<svg") == 1
    far = sqlite_client.get("/dashboard/shapes", params={"shape": "3x5x7"}).text
    api = sqlite_client.post("/v1/configs/best", json={"m": 3, "n": 5, "k": 7}).json()
    assert api["source"] == "far" and api["name"] == DEFAULT_SMALL
    assert f"<code>{api['name']}</code>" in far and ">far</span>" in far
    assert f"{api['distance']:.3f}" in far
    near = sqlite_client.get("/dashboard/shapes", params={"shape": "1024x2048x1024"}).text
    assert ">nearest</span>" in near and "1024\u00d71024\u00d71024 on NVIDIA H100" in near
    bad = sqlite_client.get("/dashboard/shapes", params={"shape": "0x1x1"}).text
    assert "must be" in bad and "0x1x1" in bad  # the API's line, on the page


@pytest.mark.parametrize(
    "asked",
    [
        {"dtype": "bfloat16", "layout": "NT"},
        {"dtype": "bfloat16", "layout": "NT", "out_dtype": "float32"},
        {"dtype": "float16", "layout": "TN", "accuracy": "bf16x3"},
        {"dtype": "float32", "layout": "NT", "accuracy": "bf16x3"},
    ],
)
def test_the_shape_form_asks_what_the_api_is_asked(
    sqlite_client: TestClient, asked: dict[str, str]
) -> None:
    """Input type, layout, accuracy and type of C reach the answer: the page answers each
    question with the API's config (a BF16 NT question used to get a float32 answer)."""
    api = sqlite_client.post("/v1/configs/best", json={"m": 1000, "n": 3000, "k": 700, **asked})
    assert api.status_code == 200, api.text
    page = sqlite_client.get("/dashboard/shapes", params={"shape": "1000x3000x700", **asked}).text
    assert f"<code>{api.json()['name']}</code>" in page
    assert f"{asked['dtype']} {asked['layout']} \u2192 {api.json()['out_dtype']}" in page
    for field, value in asked.items():  # the form keeps what was asked
        assert re.search(rf'name="{field}">.*?<option selected>{value}</option>', page, re.S)


def test_the_shape_form_names_a_bad_field_as_the_api_does(sqlite_client: TestClient) -> None:
    page = sqlite_client.get(
        "/dashboard/shapes",
        params={"shape": "64x64x64", "dtype": "float32", "out_dtype": "bfloat16"},
    ).text
    assert "out_dtype" in page and "bfloat16" in page and 'class="card bad"' in page


def test_half_inputs_show_their_dtype_and_layout(tmp_path: Path) -> None:
    """A bfloat16 NT best config writing float32 C (a row from before C had a type) and one
    writing bfloat16 C, beside the float32 NN ones: their own rows, columns and bars."""
    url = f"sqlite:///{tmp_path / 'half.db'}"
    seed(url)
    sessions = storage.make_session_factory(storage.make_engine(url))
    half = storage.ShapeIn(4096, 4096, 4096, "bfloat16", "NT")
    half_c = storage.ShapeIn(4096, 4096, 4096, "bfloat16", "NT", "bfloat16")
    name = "hmma_bm128_bn128_bk32_wpm2_wpn2_s4_sw8_dt1_ly1"
    with sessions.begin() as session:
        for shape, config, ms in ((half, name, 0.4), (half_c, name + "_out2", 0.3)):
            storage.record_measurement(
                session,
                H100,
                shape,
                storage.MeasurementIn("hmma", config, {"BM": 128}, ms=ms, cublas_ms=0.2),
            )
    app = make_app(url)
    with TestClient(app) as client:
        html = client.get("/dashboard").text
        shapes = client.get("/dashboard/shapes").text
    app.state.engine.dispose()
    best = html.split('<table class="best-configs">')[2]  # the H100's (the A100's first)
    assert "<th>dtype</th><th>out</th><th>layout</th>" in best
    cube = "<td>4096\u00d74096\u00d74096</td>"
    assert f"{cube}<td>bfloat16</td><td>float32</td><td>NT</td>" in best
    assert f"{cube}<td>bfloat16</td><td>bfloat16</td><td>NT</td>" in best
    assert f"{cube}<td>float32</td><td>float32</td><td>NN</td>" in best
    assert ">4096x4096x4096 bfloat16 NT -&gt; float32<" in html  # the chart's bar labels
    assert ">4096x4096x4096 bfloat16 NT<" in html
    row = '<td>bfloat16</td><td>{}</td><td>NT</td><td class="wrap"><code>{}'
    assert row.format("float32", name) in shapes
    assert row.format("bfloat16", name + "_out2") in shapes


def test_an_emulated_best_shows_its_accuracy_class_beside_the_exact_one(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'classes.db'}"
    seed(url)
    sessions = storage.make_session_factory(storage.make_engine(url))
    name = "wgmma_bf16x3_bm128_bn256_bk64_wgm2_s4_sw8_dt1_ly0"
    with sessions.begin() as session:
        storage.record_measurement(
            session,
            H100,
            storage.ShapeIn(4096, 4096, 4096),
            storage.MeasurementIn(
                "wgmma_bf16x3", name, {"BM": 128}, ms=0.8, cublas_ms=2.8, accuracy="bf16x3"
            ),
        )
    app = make_app(url)
    with TestClient(app) as client:
        html = client.get("/dashboard").text
    app.state.engine.dispose()
    best = html.split('<table class="best-configs">')[2]  # the H100's (the A100's first)
    assert "<th>layout</th><th>accuracy</th>" in best
    assert '<td>float32</td><td>NN</td><td>bf16x3</td><td class="wrap"><code>' + name in best
    assert "<td>float32</td><td>NN</td><td>exact</td>" in best  # the strict best stays
    assert ">4096x4096x4096 bf16x3<" in html  # the chart's bar label


def test_empty_dashboard_says_how_to_get_data(db_url: str) -> None:
    app = make_app(db_url)
    with TestClient(app) as client:
        html = client.get("/dashboard").text
        studies = client.get("/dashboard/studies").text
        shapes = client.get("/dashboard/shapes").text
    app.state.engine.dispose()
    assert "No results yet" in html and "No studies yet" in studies
    assert "No tuned shapes yet" in shapes


# --- a study of 10 000 trials: the page stays bounded ---------------------------------------

BIG = "big study"
BIG_TRIALS = 10_000


def big_study(url: str) -> None:
    """10 000 trials of two families with every kind of failure, in one bulk write."""
    rng = random.Random(7)
    engine = storage.make_engine(url)
    sessions = storage.make_session_factory(engine)
    shape = storage.ShapeIn(4096, 4096, 4096)
    failures = ["pruned", "compile_failed", "wrong_result", "timeout"]
    records = []
    for number in range(BIG_TRIALS):
        family = rng.choice(["warptile", "pipelined"])
        params = {"BM": rng.choice([64, 128, 256]), "BN": rng.choice([64, 128, 256])}
        params["BK"] = rng.choice([8, 16, 32])
        status = rng.choice(failures) if number % 7 == 0 else "ok"
        ms = 2 + rng.random() * 8 * 64 / params["BM"] if status == "ok" else None
        name = f"{family}_bm{params['BM']}_bn{params['BN']}_bk{params['BK']}_n{number}"
        records.append(
            (
                H100,
                shape,
                storage.MeasurementIn(
                    family=family,
                    config_name=name,
                    params=params,
                    status=status,
                    reason=None if status == "ok" else f"{status} because of trial {number}",
                    ms=ms,
                    cublas_ms=2.7 if ms else None,
                    registers=rng.randint(60, 255),
                    occupancy=rng.choice([0.125, 0.25, 0.5]),
                    study=BIG,
                    trial_number=number,
                    provenance={},
                ),
            )
        )
    with sessions.begin() as session:
        storage.record_measurements(session, records)
    engine.dispose()


@pytest.fixture(scope="module")
def big_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    url = f"sqlite:///{tmp_path_factory.mktemp('big')}/big.db"
    seed(url)
    big_study(url)
    app = make_app(url)
    with TestClient(app) as client:
        yield client
    app.state.engine.dispose()


def test_a_10k_trial_study_page_is_bounded(big_client: TestClient) -> None:
    html = big_client.get("/dashboard/studies/big%20study").text
    assert len(html.encode()) < 400_000  # the whole study would be several MB
    assert html.count("<circle") <= 300 + 300 + 3 * 80  # curve, chosen scatter, 3 slices
    assert html.count("<polyline") <= 200  # parallel coordinates: the fastest and a sample
    assert len(rows_of(html)) == 50  # one page of the table
    assert f"{BIG_TRIALS} trials" in html and "Page 1 of 200" in html
    assert "and 1" in html or "more here" in html  # thinned points say what they stand for
    line = re.search(r'class="best-so-far" d="([^"]+)"', html)
    assert line is not None and line[1].count("H") < 100  # a corner where it rose, not per trial


def test_a_10k_trial_study_pages_and_filters_on_the_server(big_client: TestClient) -> None:
    url = "/dashboard/studies/big%20study"
    last = big_client.get(url, params={"status": "timeout", "page": 10_000}).text
    rows = rows_of(last)
    assert rows and {status for _, status in rows} == {"timeout"}
    pages = re.search(r"Page (\d+) of (\d+)", last)
    assert pages is not None and pages[1] == pages[2]  # past the end: the last page
    scoped = big_client.get(url, params={"family": "pipelined", "x": "BM"}).text
    assert "TFLOP/s against BM" in scoped and "warptile_bm" not in scoped.split('class="trials"')[1]


def test_a_studys_finalists_are_listed_and_shown_apart_from_its_screening(tmp_path: Path) -> None:
    """A study's final re-measurements share its key: the lists show them as a second entry
    titled from the stored rows and linked with ``?phase=final``; each page, its progress and
    the JSON study read only their own phase."""
    from tests.api.conftest import FAST, PIPE, measurement

    url = f"sqlite:///{tmp_path / 'finals.db'}"
    seed(url)
    key = f"{H100.name}|512x512x512|float32|NN|warptile+pipelined"
    shape = storage.ShapeIn(512, 512, 512)
    sessions = storage.make_session_factory(storage.make_engine(url))
    with sessions.begin() as session:
        for number, name in enumerate((PIPE, FAST)):
            screened = measurement(name, 1.0 + number, study=key, trial_number=number)
            storage.record_measurement(session, H100, shape, screened)
        final = measurement(FAST, 1.5, study=key, phase="final")
        storage.record_measurement(session, H100, shape, final)
    app = make_app(url)
    with TestClient(app) as client:
        listed = client.get("/dashboard/studies").text
        screening_page = client.get(f"/dashboard/studies/{key}").text
        final_page = client.get(f"/dashboard/studies/{key}", params={"phase": "final"}).text
        progress = client.get("/dashboard/progress", params={"study": key, "phase": "final"})
        final_json = client.get(f"/v1/studies/{key}", params={"phase": "final"}).json()
        bad = client.get(f"/dashboard/studies/{key}", params={"phase": "finalists"})
    app.state.engine.dispose()
    encoded = "/dashboard/studies/NVIDIA%20H100%2080GB%20HBM3%7C512x512x512%7Cfloat32%7CNN%7C"
    dims = "512\u00d7512\u00d7512 on NVIDIA H100 80GB HBM3"
    assert f'href="{encoded}warptile%2Bpipelined">{dims} · warptile, pipelined</a>' in listed
    assert (
        f'href="{encoded}warptile%2Bpipelined?phase=final">{dims} · finalists re-measured</a>'
        in listed
    )
    assert f"<h1>{dims} · warptile, pipelined</h1>" in screening_page
    assert f"<h1>{dims} · finalists re-measured</h1>" in final_page
    assert '<input type="hidden" name="phase" value="final">' in final_page
    assert 'name="phase"' not in screening_page
    assert progress.json()["trials"] == 1
    assert [t["config_name"] for t in final_json["trials"]] == [FAST]
    assert bad.status_code == 422


def test_a_refused_dashboard_page_is_a_page(sqlite_client: TestClient) -> None:
    """An unknown study or a bad query gives the dashboard's HTML with the status and the
    reason (it was raw JSON); the JSON endpoints, the dashboard's polling included, keep JSON."""
    missing = sqlite_client.get("/dashboard/studies/no-such-study")
    assert missing.status_code == 404 and missing.headers["content-type"].startswith("text/html")
    assert '<div class="card bad" id="error">' in missing.text and "no-such-study" in missing.text
    bad = sqlite_client.get("/dashboard/shapes", params={"shape": "x" * 200})
    assert bad.status_code == 422 and bad.headers["content-type"].startswith("text/html")
    assert "at most 100 characters" in bad.text
    for path in ("/v1/studies/no-such-study", "/dashboard/progress?study=no-such-study"):
        answer = sqlite_client.get(path)
        assert answer.headers["content-type"].startswith("application/json"), path
