"""A local Ray instance of our own (``init_ray`` without an address): how it starts and how it ends.

Its worker processes start with the raylet and import the modules they are
given before taking any work, so an actor's start-up finds netsleuth
already imported; and its shutdown ends every process it started without
waiting the second Ray gives its autoscaler monitor to answer SIGTERM.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import psutil
import pytest
from test_campaign import all_gone

from netsleuth.minimize.executors import RayExecutor
from netsleuth.minimize.ray_executor import init_ray, shutdown_ray

ray = pytest.importorskip("ray")

pytestmark = [pytest.mark.real, pytest.mark.slow]

PRELOADED = "netsleuth.campaign.signature"  # not imported by Ray's worker, nor by this module's own code


def imported_before_init(_worker_id: int) -> bool:
    """The actor's state: was PRELOADED imported before the actor was built?"""
    return PRELOADED in sys.modules


def state(loaded: bool, _payload: Any) -> bool:
    return loaded


def test_the_workers_import_the_preloaded_module_and_shutdown_leaves_no_process_quickly() -> None:
    assert not ray.is_initialized()
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # Ray's workers cannot import tests/
    before = {p.pid for p in psutil.Process().children(recursive=True)}  # not Ray's (a resource tracker...)
    assert init_ray(None, 2, preload=(PRELOADED,)) is True
    pool = RayExecutor(None, 2)
    try:
        pool.start(imported_before_init)
        assert [pool.submit(state, None).result(timeout=60) for _ in range(4)] == [True] * 4
        tree = [p.pid for p in psutil.Process().children(recursive=True) if p.pid not in before]
        names = " ".join(" ".join(psutil.Process(pid).cmdline()) for pid in tree)
        assert "raylet" in names and "monitor.py" in names
    finally:
        pool.close()  # not the owner of the instance: its actors end, Ray stays up
        assert ray.is_initialized()
        t0 = time.monotonic()
        shutdown_ray(ray)
        took = time.monotonic() - t0
    assert not ray.is_initialized()
    assert all_gone(tree) == []
    assert took < 1.0, f"shutdown took {took:.2f} s (Ray's own waits a second on the autoscaler monitor)"
