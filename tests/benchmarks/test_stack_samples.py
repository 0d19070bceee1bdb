"""benchmarks/stack_samples.py without py-spy: the main thread read out of a dump's text, and the
tally of where it stood."""

from __future__ import annotations

from pathlib import Path

from tests.lab_scripts import lab_script

stack_samples = lab_script("stack_samples")

# What ``py-spy dump --full-filenames`` prints for a worker: its own main thread is not listed
# first, and a helper thread's frames are in the project too.
DUMP = """Process 4242: /usr/bin/python3 -m tuner.cli worker --gpu 1
Python v3.12.3 (/usr/bin/python3.12)

Thread 4250 (idle): "claims-gpu1"
    wait (/usr/lib/python3.12/threading.py:359)
    _beat (/srv/gemmtune/tuner/search/sql_recorder.py:160)
Thread 4242 (active): "MainThread"
    do_execute (/venv/lib/sqlalchemy/engine/default.py:942)
    claim_candidate (/srv/gemmtune/storage/claims.py:65)
    _screen (/srv/gemmtune/tuner/search/study.py:412)
    run_worker (/srv/gemmtune/tuner/run/queue_worker.py:168)
"""
ROOTS = ("/srv/gemmtune/tuner/", "/srv/gemmtune/storage/", "/srv/gemmtune/api/")


def test_the_main_thread_is_the_one_whose_id_is_the_process_id() -> None:
    thread = stack_samples.main_thread(DUMP, 4242)
    assert thread is not None and thread.state == "active"
    assert [f.function for f in thread.frames] == [
        "do_execute",
        "claim_candidate",
        "_screen",
        "run_worker",
    ]
    own = thread.project_frame(ROOTS)
    assert own is not None and own.label() == "claim_candidate (storage/claims.py:65)"
    assert stack_samples.main_thread(DUMP, 9999) is None  # not in this dump
    assert stack_samples.main_thread("Error: failed to open process", 4242) is None


def test_a_tally_counts_project_and_innermost_frames_and_failed_dumps() -> None:
    tally = stack_samples.Tally(ROOTS)
    tally.add(stack_samples.main_thread(DUMP, 4242))
    tally.add(stack_samples.main_thread(DUMP, 4242))
    outside = DUMP.replace("/srv/gemmtune/", "/elsewhere/")  # another tree's storage/: not ours
    tally.add(stack_samples.main_thread(outside, 4242))
    tally.add(None)
    summary = tally.summary()
    assert summary["samples"] == 3 and summary["failed_dumps"] == 1
    assert summary["states"] == {"active": 3}
    assert summary["project_frames"] == {
        "claim_candidate (storage/claims.py:65)": 2,
        "(outside the project)": 1,
    }
    assert summary["innermost_frames"] == {"do_execute (engine/default.py:942)": 3}


def test_the_project_is_the_tree_of_the_installed_package() -> None:
    repo = Path(__file__).resolve().parents[2]  # this checkout: the package the tests import
    assert stack_samples.project_roots() == (f"{repo}/tuner/", f"{repo}/storage/", f"{repo}/api/")
