"""Ray's start-up overlapped with work: a local pool runs the first jobs while Ray starts.

Starting a local Ray instance costs seconds (its head processes, then
workers that import Ray and netsleuth) that a process pool does not pay; on
a short campaign that is most of the difference between the two.  With the
hand-off on, a campaign that starts a local instance -- the same machine
runs the jobs either way -- starts a process pool of the same size first
(:class:`HandoffExecutor`) and gives it the first jobs; once the pool has
a job on every worker, it starts Ray (:class:`RayStarter`), on the
campaign's own thread, and builds the actors in the background: jobs go to
the pool until an actor is ready, and to Ray from then on.  The pool takes
no new job after that; its running jobs end normally and it closes.  The
campaign still keeps at most ``workers`` jobs in flight, so the parallelism
is the same throughout, and a job's result depends only on its seed, so the
buckets are those of a campaign that ran on Ray alone.

On a cluster (``--address``) nothing runs on the driver's machine, which may
lack the controllers: the campaign waits for Ray as before.

It is on by default (``campaign/runner.py``'s ``HANDOFF``; bench/campaign.py's
``ray-wait`` turns it off).  Both starts are CPU work -- Python processes
importing Ray and netsleuth --, so it pays only because the pool's start is
cheap: its workers are forked from a fork server that has imported what they
run (minimize/executors.py).  On the 2-CPU machine of
docs/research/benchmarks.md, at a load average of 3-4, one campaign per
fresh process as the command runs it: the pool 22.2 s median, Ray with the
hand-off 24.3 s, Ray alone 26.3 s; in the bench (one process, the fork
server kept between campaigns) the hand-off was the quicker of the two in
all three rounds.  Before the pool's workers were forked, when each imported
netsleuth itself, the overlapped starts only slowed each other down (at a
load of 7 the pool's first jobs ended 12.8 s after the call instead of 3-6 s
and the campaign took 40.0 s where Ray alone took 30-33 s).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

from netsleuth.minimize.executors import Executor, Init, LocalPoolExecutor, RayExecutor, Task, import_ray
from netsleuth.minimize.ray_executor import init_ray, shutdown_ray


class RayStarter:
    """``init_ray`` on the calling thread: at once, or, deferred (``background`` and a local instance to start),
    at the first :meth:`start` -- which :class:`HandoffExecutor` calls once the pool has a job on every worker.

    Ray is always started on the campaign's thread (the main thread of a command): there ``init_ray`` keeps the
    campaign's own SIGTERM handler, and the head processes, whose life Ray ties to the thread that started
    them (the kernel's parent-death signal is per thread), live as long as the campaign.  (An earlier version
    started Ray on a thread of its own, which had to outlive Ray, and a campaign stopped by SIGTERM while
    handing off sometimes ended in an abort instead of exit 143.)"""

    def __init__(self, address: str | None, workers: int | None, background: bool = True,
                 preload: Sequence[str] = ()) -> None:
        ray = sys.modules.get("ray")
        self.address = address
        self.workers = workers
        self.preload = tuple(preload)
        self.local = not address and not (ray is not None and ray.is_initialized())  # a local instance started here
        self.background = background and self.local
        self.owned = False
        self.error: Exception | None = None
        self._started = False
        if not self.background:
            self.start()

    def start(self) -> None:
        """Start (or reach) Ray now, on this thread, unless that was done; raises its start-up error (again)."""
        if not self._started:
            self._started = True
            try:
                self.owned = init_ray(self.address, self.workers, preload=self.preload)
            except Exception as exc:
                self.error = exc
        if self.error is not None:
            raise self.error

    def done(self) -> bool:
        """Whether Ray was started (or its start failed)."""
        return self._started

    def result(self) -> bool:
        """Ray, started now if it was not: True if this campaign started it (and so shuts it down)."""
        self.start()
        return self.owned

    def shutdown(self) -> None:
        """Stop the instance if this campaign started it (also one whose start was interrupted half-way)."""
        ray = sys.modules.get("ray")
        started_here = self.local and self._started and ray is not None and ray.is_initialized()
        if self.owned or started_here:
            self.owned = False
            shutdown_ray(import_ray())


class HandoffExecutor(Executor):
    """A process pool that runs jobs until the Ray actors are up, then Ray alone (see the module's text)."""

    name = "ray"

    def __init__(self, starter: RayStarter, workers: int | None) -> None:
        self.starter = starter
        self.local = LocalPoolExecutor(workers)
        self.workers = self.local.workers
        self.ray = RayExecutor(None, self.workers)
        self.on_pool = 0                      # jobs given to the pool before Ray was ready
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._retired = False
        self._thread: threading.Thread | None = None
        self._init: Init | None = None

    @property
    def lost(self) -> int:
        return self.ray.lost

    def describe(self) -> str:
        head = self.ray.describe() if self._ready.is_set() else f"ray@local ({self.workers} workers, starting)"
        return f"{head}; the process pool ran the first {self.on_pool} job(s)" if self.on_pool else head

    def start(self, init: Init) -> None:
        self._init = init
        self.local.start(init, wait=False)  # the pool's processes start with its first jobs, not waited for here

    def _start_ray(self) -> None:
        """Start Ray on this thread (the pool has a job on every worker meanwhile), then its actors in the
        background: the jobs go to them once one is ready."""
        self.starter.start()
        self._thread = threading.Thread(target=self._start_actors, name="ray-actors", daemon=True)
        self._thread.start()

    def _start_actors(self) -> None:
        try:
            assert self._init is not None
            self.ray.start(self._init)
        except BaseException as exc:  # noqa: BLE001 - raised on the campaign's thread at its next submit
            self._error = exc
        finally:
            self._ready.set()

    def submit(self, task: Task, payload: Any) -> Future[Any]:
        if self._ready.is_set():
            if self._error is not None:
                raise self._error
            if not self._retired:  # no new job for the pool: its running jobs end, then its processes
                self._retired = True
                pool = self.local._pool  # noqa: SLF001 - shut without waiting for the jobs it still runs
                if pool is not None:
                    pool.shutdown(wait=False)
            return self.ray.submit(task, payload)
        self.on_pool += 1
        fut = self.local.submit(task, payload)
        if self._thread is None and self.on_pool >= self.workers:  # every pool worker has a job: now Ray
            self._start_ray()
        return fut

    def join_start(self) -> None:
        """Wait until Ray's start (actors included) has ended, well or not."""
        if self._thread is not None:
            self._thread.join()

    def close(self) -> None:
        self.local.close()
        self.join_start()
        self.ray.close()


__all__ = ["RayStarter", "HandoffExecutor"]
