"""A short thread switch interval while studies run, so that the study loop's thread gets the
interpreter back soon after each of its waits ends.

A study's loop mostly waits: on the database, on the GPU worker's answers, on compiles. Each
wait releases the interpreter lock, and when it ends the loop must take the lock back from
whichever thread holds it then: the writer copying trials into Optuna's tables, the next
study's preparation, the compile pool's result threads. A thread that wants the lock asks the
holder to let go only after the switch interval, 5 ms by default, and the loop waits like this
at every statement it sends to the database. On the lent H200 a tune-batch of the 12 held-out
FP32 shapes spent 14.0 and 14.4 s recording results (the loop's ``record`` part) with the
default, 8.5 and 8.0 s with 0.5 ms, and the whole command took 70.9 s twice against 68.0 and
65.5 s (``benchmarks/notebook.md``, "The interpreter lock between the study loop and its
helpers").
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# Seconds between the interpreter's offers of its lock to a waiting thread while studies run.
STUDY_SWITCH_INTERVAL_S = 0.0005

_lock = threading.Lock()
_users = 0
_before = 0.0


@contextmanager
def quick_thread_switches() -> Iterator[None]:
    """Run the block with :data:`STUDY_SWITCH_INTERVAL_S` as the thread switch interval; the
    interval the process had is back when the last block running in any thread ends."""
    global _users, _before
    with _lock:
        if _users == 0:
            _before = sys.getswitchinterval()
            sys.setswitchinterval(min(_before, STUDY_SWITCH_INTERVAL_S))
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0:
                sys.setswitchinterval(_before)
