"""Ray's start-up overlapped with work: Ray starts in the background, a local pool runs the first jobs.

Starting a local Ray instance costs several seconds (its head processes, then
actors that import netsleuth) that a process pool does not pay; on a short
campaign that is most of the difference between the two.  With the hand-off
on, a campaign that starts a local instance -- the same machine runs the
jobs either way -- starts it with :class:`RayStarter` in a background
thread, and :class:`HandoffExecutor` starts a process pool of the same size
at once: jobs go to the pool until
the Ray actors are ready, and to Ray from then on.  The pool takes no new
job after that; its running jobs end normally and it closes.  The campaign
still keeps at most ``workers`` jobs in flight, so the parallelism is the
same throughout, and a job's result depends only on its seed, so the
buckets are those of a campaign that ran on Ray alone.

On a cluster (``--address``) nothing runs on the driver's machine, which may
lack the controllers: the campaign waits for Ray as before.

It is off by default (``campaign/runner.py``'s ``HANDOFF``; bench/campaign.py
turns it on as ``ray-handoff``).  Ray's start is mostly CPU work (about 3
CPU-seconds over its head processes and prestarted workers), and the pool
adds its own start and jobs on top: on a machine whose CPUs are all busy
the two only slow each other down (a pool's start went from 2.5 to 6 s,
Ray's from 5-8 to 9-10 s, overlapped at a load average of 7 on 2 CPUs),
so it gained nothing reliable there.  And Ray started off the main thread
does not take part in SIGTERM's handling the way ``init_ray`` arranges on
the main thread: a campaign stopped by SIGTERM while handing off writes
its partial report but sometimes ends with an abort instead of exit 143.
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
    """``init_ray``, in a background thread when ``background`` and the instance is a local one to start.

    Otherwise Ray starts at once on the calling thread (the main thread, where ``init_ray`` keeps the campaign's
    own SIGTERM handler).  The background thread never ends: Ray ties the life of the head processes it starts
    to the thread that started them (the kernel's parent-death signal is per thread), so a thread that ended
    after ``ray.init`` would take the local instance with it; and one that ended after ``ray.shutdown`` could
    abort the process (seen after a SIGTERM) as Ray's state for that thread is torn down.  It waits, idle, until
    the process exits."""

    def __init__(self, address: str | None, workers: int | None, background: bool = True,
                 preload: Sequence[str] = ()) -> None:
        ray = sys.modules.get("ray")  # importing it takes a while too: that is done in the thread
        self.address = address
        self.local = not address and not (ray is not None and ray.is_initialized())  # a local instance started here
        self.background = background and self.local
        self.owned = False
        self.error: BaseException | None = None
        self._started = threading.Event()
        self._thread: threading.Thread | None = None
        if not self.background:
            self.owned = init_ray(address, workers, preload=preload)
            self._started.set()
            return
        self._thread = threading.Thread(target=self._run, args=(address, workers, preload), name="ray-start",
                                        daemon=True)
        self._thread.start()

    def _run(self, address: str | None, workers: int | None, preload: Sequence[str]) -> None:
        try:
            self.owned = init_ray(address, workers, preload=preload)
        except BaseException as exc:  # noqa: BLE001 - raised again on the campaign's thread by result()
            self.error = exc
        finally:
            self._started.set()
        threading.Event().wait()  # see the class's text: this thread outlives Ray

    def done(self) -> bool:
        return self._started.is_set()

    def result(self) -> bool:
        """Wait for Ray; True if this campaign started it (and so shuts it down). Raises its start-up error."""
        self._started.wait()
        if self.error is not None:
            raise self.error
        return self.owned

    def shutdown(self) -> None:
        """Stop the instance if this campaign started it (after waiting for a start still under way)."""
        self._started.wait()
        if self.owned:
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

    @property
    def lost(self) -> int:
        return self.ray.lost

    def describe(self) -> str:
        head = self.ray.describe() if self._ready.is_set() else f"ray@local ({self.workers} workers, starting)"
        return f"{head}; the process pool ran the first {self.on_pool} job(s)" if self.on_pool else head

    def start(self, init: Init) -> None:
        self._thread = threading.Thread(target=self._start_ray, args=(init,), name="ray-actors", daemon=True)
        self._thread.start()
        self.local.start(init)

    def _start_ray(self, init: Init) -> None:
        try:
            self.starter.result()
            self.ray.start(init)
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
        return self.local.submit(task, payload)

    def join_start(self) -> None:
        """Wait until Ray's start (actors included) has ended, well or not."""
        if self._thread is not None:
            self._thread.join()

    def close(self) -> None:
        self.local.close()
        self.join_start()
        self.ray.close()


__all__ = ["RayStarter", "HandoffExecutor"]
