"""The hand-off of campaign/handoff.py on a real local Ray instance: the pool first, then Ray alone.

Tasks are submitted as a campaign does (never more than ``workers`` in
flight) until one has run on Ray.  Ray must have started once the pool had
a task on every worker, on the submitting thread (which keeps its SIGTERM
handler), not before.  The pool must have run the first ones,
Ray every one submitted after Ray's first, never more than ``workers`` at
once, and the pool's processes must be gone once Ray has taken over.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import signal
import sys
import time
from typing import Any

import psutil
import pytest

from netsleuth.campaign.handoff import HandoffExecutor, RayStarter

ray = pytest.importorskip("ray")

pytestmark = [pytest.mark.real, pytest.mark.slow]


def nothing(_worker_id: int) -> None:
    return None


def where(_state: Any, seconds: float) -> tuple[int, bool, float, float]:
    """(pid, ran in a Ray worker, start, end): a pool process never initializes Ray."""
    t0 = time.time()
    time.sleep(seconds)
    on_ray = "ray" in sys.modules and sys.modules["ray"].is_initialized()
    return os.getpid(), on_ray, t0, time.time()


def on_sigterm(_signum: int, _frame: Any) -> None:
    """A campaign's own SIGTERM handler (never called here)."""


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_the_pool_runs_the_first_tasks_then_ray_alone_and_never_more_than_the_workers_at_once() -> None:
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # Ray's workers cannot import tests/
    starter = RayStarter(None, 2)
    ex = HandoffExecutor(starter, 2)
    previous = signal.signal(signal.SIGTERM, on_sigterm)
    results: list[tuple[int, int, bool, float, float]] = []  # (submitted as, *where())
    try:
        ex.start(nothing)
        assert not ray.is_initialized()  # Ray starts once the pool has a job on every worker
        pending: dict[cf.Future[Any], int] = {}
        deadline = time.monotonic() + 180
        n = 0
        while not any(r[2] for r in results) or pending:
            assert time.monotonic() < deadline, "Ray never took over"
            while len(pending) < ex.workers and not any(r[2] for r in results):
                pending[ex.submit(where, 0.3)] = n
                n += 1
                # ... on this thread, where init_ray keeps the campaign's SIGTERM handler
                assert ray.is_initialized() == (n >= ex.workers)
                assert signal.getsignal(signal.SIGTERM) is on_sigterm
            done, _ = cf.wait(list(pending), timeout=5, return_when=cf.FIRST_COMPLETED)
            for fut in done:
                results.append((pending.pop(fut), *fut.result()))
        results.sort()
        on_ray = [r[2] for r in results]
        assert not on_ray[0] and on_ray[-1]
        assert on_ray == sorted(on_ray)  # once one task went to Ray, every later one did
        assert ex.on_pool == on_ray.count(False)
        spans = sorted((r[3], r[4]) for r in results)
        assert max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans) <= 2
        pool_pids = {r[1] for r in results if not r[2]}
        gone = time.monotonic() + 20
        while any(alive(p) for p in pool_pids):
            assert time.monotonic() < gone, "the retired pool's processes did not exit"
            time.sleep(0.2)
    finally:
        ex.close()
        starter.shutdown()
        signal.signal(signal.SIGTERM, previous)
    assert not ray.is_initialized()
