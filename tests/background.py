"""Slow work of other processes, overlapped with the in-process tests.

The in-process tests spend their time compiling XLA executables, on one core. The tests
that run other processes (notebook kernels, command-line runs, the 4-device
subprocess) mostly wait for them. A module lists such work in a module-level dict
`BACKGROUND = {name: function}` and marks the tests that use a job with
`@pytest.mark.background(name)`; once the session's tests are collected, `conftest.py`
starts the jobs of the tests to run (not those deselected or skipped), in test order, in
one background thread, and a test takes the job's return value with
`result(__name__, name)` (waiting for it if it is still running). A job that has not
started by then runs in the test's own thread instead.

A job only starts processes and returns what they produced (exit codes, output, file
paths); it asserts nothing and touches no JAX state of this process. Every check stays
in the test that reads the result, so a failure is reported there, as before.
"""

from __future__ import annotations

import concurrent.futures
import sys
import threading
import time

_lock = threading.Lock()
_pool: concurrent.futures.ThreadPoolExecutor | None = None
_jobs: dict[tuple[str, str], concurrent.futures.Future] = {}
#: Wall seconds of each job that ran on the background thread, in the order they ran
#: (printed at the end of the session by `conftest.py`, to see what the thread waits on).
durations: dict[str, float] = {}


def _timed(module: str, name: str):
    def run():
        t0 = time.perf_counter()
        try:
            return sys.modules[module].BACKGROUND[name]()
        finally:
            durations[f"{module}:{name}"] = time.perf_counter() - t0
    return run


def start(module: str, name: str) -> None:
    """Queue `sys.modules[module].BACKGROUND[name]()` on the background thread (once)."""
    global _pool
    with _lock:
        if (module, name) in _jobs:
            return
        if _pool is None:
            _pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="tests-background")
        _jobs[module, name] = _pool.submit(_timed(module, name))


def result(module: str, name: str):
    """The job's return value (its exception re-raised here); run now if not yet started."""
    with _lock:
        job = _jobs.get((module, name))
    if job is None or job.cancel():  # never queued, or still waiting in the queue
        return sys.modules[module].BACKGROUND[name]()
    return job.result()


def shutdown() -> None:
    """Drop the jobs not yet started and wait for a running one (end of the session)."""
    with _lock:
        if _pool is not None:
            _pool.shutdown(wait=True, cancel_futures=True)
