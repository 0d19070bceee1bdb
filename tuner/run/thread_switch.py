"""A short thread switch interval while studies run, so that the study loop's thread gets the
interpreter back soon after each of its waits ends.

A study's loop mostly waits: on the database, on the GPU worker's answers, on compiles. Each
wait releases the interpreter lock, and when it ends the loop must take the lock back from
whichever thread holds it then: the writer copying trials into Optuna's tables, the next
study's preparation, the threads that feed the compiler processes and collect their results.
A thread that wants the lock asks the holder to let go only after the switch interval, 5 ms by
default, and the loop waits like this after every statement it sends to the database.

On the lent H200, a tune-batch of the 12 held-out FP32 shapes spent 8.0 to 12.1 s of its
studies' loops recording results (the ``record`` part, summed) with 0.5 ms, against 14.0 to
19.9 s with the default (five runs of each, in two leases). Whether the whole command is faster
depends on what holds the search back: in one lease 65.5 and 68.0 s against 70.9 twice, in the
other 77.6 to 93.7 s against 81.4 to 88.4, where the loop then waited for compiles instead
(``benchmarks/notebook.md``, "The interpreter lock between the study loop and its helpers").
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
