"""One executor interface for independent work: serial, a local process pool, or Ray.

By design, the replays of one delta-debugging level (and,
later, partitions of a model-checking frontier or batches of traces) are
independent tasks; where they run is a choice of executor, not of algorithm.

The interface is deliberately small and generic:

* ``start(init)`` -- ``init(worker_id) -> state`` is a picklable callable
  that each worker runs once (worker ids are 0..workers-1) to build its
  long-lived state, e.g. an oracle that owns a controller and its ports.
  If the state has a ``close()`` method it is called when the worker ends.
* ``submit(task, payload) -> concurrent.futures.Future`` -- runs
  ``task(state, payload)`` on some worker; ``task`` is a module-level
  function and ``payload`` plain data, so both pickle.
* ``close()`` -- cancels what has not started, waits for what has, ends the workers.

Futures complete in any order; callers that need reproducible results (the
minimizer does) must not depend on completion order.

Executor specs (``--executor``): ``serial``, ``local`` (default; ``--jobs J``
processes forked from multiprocessing's fork server, see
:class:`LocalPoolExecutor`), ``ray`` (a local Ray instance with J CPUs) and ``ray:ADDRESS`` (an
existing cluster, e.g. ``ray:auto`` or ``ray:ray://head:10001``; netsleuth
must be installed on its nodes).
"""

from __future__ import annotations

import multiprocessing
import os
import select
import signal
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

from netsleuth.minimize.errors import ExecutorSpecError
from netsleuth.minimize.ray_executor import RAY_FIX, RayActorPool, import_ray

Init = Callable[[int], Any]
Task = Callable[[Any, Any], Any]


def _close_state(state: Any) -> None:
    close = getattr(state, "close", None)
    if callable(close):
        close()


class Executor(ABC):
    """Runs ``task(state, payload)`` on workers that each built ``state = init(worker_id)`` once."""

    name: str = "?"
    workers: int = 1

    @abstractmethod
    def start(self, init: Init) -> None: ...

    @abstractmethod
    def submit(self, task: Task, payload: Any) -> Future[Any]: ...

    @abstractmethod
    def close(self) -> None: ...

    def describe(self) -> str:
        return f"{self.name} ({self.workers} worker{'s' if self.workers != 1 else ''})"

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# ------------------------------------------------------------------ serial
class SerialExecutor(Executor):
    """Runs each task in this process when it is submitted; one worker, id 0."""

    name = "serial"

    def __init__(self) -> None:
        self.workers = 1
        self._state: Any = None
        self._started = False

    def start(self, init: Init) -> None:
        self._state = init(0)
        self._started = True

    def submit(self, task: Task, payload: Any) -> Future[Any]:
        if not self._started:
            raise RuntimeError("SerialExecutor.submit before start()")
        fut: Future[Any] = Future()
        fut.set_running_or_notify_cancel()
        try:
            fut.set_result(task(self._state, payload))
        except Exception as exc:  # KeyboardInterrupt and friends propagate
            fut.set_exception(exc)
        return fut

    def close(self) -> None:
        if self._started:
            self._started = False
            state, self._state = self._state, None
            _close_state(state)


# ------------------------------------------------------------------ local process pool
_WORKER_STATE: Any = None


def _follow_creator(creator: int) -> None:
    """Die with the process that made the pool (a campaign, a minimization).

    A worker busy with a job reads nothing from its pool, so a creator killed
    outright (SIGKILL runs no clean-up) would leave it running the job -- and
    the controller the job started -- to the end, into a directory a restarted
    campaign is about to run again; and a worker forked by the fork server is
    the server's child, which lives while any worker does (each holds its end
    of the server's pipe).  Dying is enough: the job's controller dies with its
    worker (controllers/guard.py)."""
    try:
        fd = os.pidfd_open(creator)
    except ProcessLookupError:
        fd = None
    except OSError:  # pragma: no cover - a kernel before pidfds: look every half second
        while True:
            try:
                os.kill(creator, 0)
            except ProcessLookupError:
                break
            time.sleep(0.5)
        fd = None
    if fd is not None:
        select.select([fd], [], [])
    os.kill(os.getpid(), signal.SIGKILL)


def _pool_init(init: Init, ids: Any, environ: dict[str, str] | None = None, creator: int | None = None) -> None:
    global _WORKER_STATE
    from multiprocessing import util

    if environ is not None:  # the pool's creator's environment, as a spawned worker would have had it
        os.environ.clear()
        os.environ.update(environ)
    if creator is not None:
        threading.Thread(target=_follow_creator, args=(creator,), name="follow-creator", daemon=True).start()
    worker_id = ids.get()
    _WORKER_STATE = init(worker_id)
    # multiprocessing children leave through os._exit: atexit would not run, Finalize does.
    util.Finalize(None, _close_state, args=(_WORKER_STATE,), exitpriority=10)


def _pool_call(task: Task, payload: Any) -> Any:
    return task(_WORKER_STATE, payload)


def _pool_ready(_: Any) -> int:
    return os.getpid()


def worker_modules(init: Init) -> list[str]:
    """The modules a worker will run: those that define ``init``'s class and its fields' classes
    (a minimization's start-up holds its oracle factory), netsleuth's own only."""
    found = {type(init).__module__}
    fields = getattr(init, "__dict__", None) or {}
    found.update(type(value).__module__ for value in fields.values())
    return sorted(name for name in found if name == "netsleuth" or name.startswith("netsleuth."))


class LocalPoolExecutor(Executor):
    """A pool of J worker processes on this machine.

    Workers come from multiprocessing's fork server: a clean single-threaded
    process that imports what the first pool's workers run
    (:func:`worker_modules`) once and forks a worker per request.  Forking
    netsleuth itself would copy its threads' locks (a progress display,
    asyncio's executor threads) mid-use; spawning a fresh interpreter per
    worker made each one import netsleuth, os-ken's packet library and numpy
    again -- about 0.75 s of CPU per worker, paid again by every campaign and
    minimization a process runs.  The server lives as long as the process
    that started it (and its workers), so later pools reuse it.  A forked
    worker has the server's environment, not its creator's current one, so
    the pool hands that over, and it follows its creator's life itself
    (:func:`_follow_creator`): the worker sees what a spawned one would.
    """

    name = "local"

    def __init__(self, workers: int | None = None, start_method: str = "forkserver") -> None:
        self.workers = max(1, workers or os.cpu_count() or 1)
        self._ctx = multiprocessing.get_context(start_method)
        self._pool: ProcessPoolExecutor | None = None

    def start(self, init: Init, wait: bool = True) -> None:
        """Start the pool; with ``wait``, every worker, so that its set-up errors surface here and not
        mid-search (without, the workers start with the first jobs, and such an error fails those)."""
        if self._ctx.get_start_method() == "forkserver":
            self._ctx.set_forkserver_preload(worker_modules(init))  # read only when the server starts
        ids = self._ctx.Queue()
        for i in range(self.workers):
            ids.put(i)
        self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=self._ctx,
                                         initializer=_pool_init,
                                         initargs=(init, ids, dict(os.environ), os.getpid()))
        if not wait:
            return
        try:
            for fut in [self._pool.submit(_pool_ready, i) for i in range(self.workers)]:
                fut.result()
        except BaseException:
            self.close()
            raise

    def submit(self, task: Task, payload: Any) -> Future[Any]:
        if self._pool is None:
            raise RuntimeError("LocalPoolExecutor.submit before start()")
        return self._pool.submit(_pool_call, task, payload)

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


# ------------------------------------------------------------------ Ray
class RayExecutor(RayActorPool, Executor):
    """J Ray actors on a local instance or a cluster (minimize/ray_executor.py: placement, lost nodes)."""


# ------------------------------------------------------------------ specs
def make_executor(spec: str | Executor | None = None, jobs: int | None = None) -> Executor:
    """``serial`` | ``local`` | ``ray`` | ``ray:ADDRESS`` (or an Executor, returned as is)."""
    if isinstance(spec, Executor):
        return spec
    if jobs is not None and jobs < 1:
        raise ExecutorSpecError(f"--jobs must be at least 1, got {jobs}", "pass --jobs 1 or more")
    text = (spec or "local").strip()
    kind, _, address = text.partition(":")
    if kind == "serial" and not address:
        return SerialExecutor()
    if kind == "local" and not address:
        return LocalPoolExecutor(jobs)
    if kind == "ray":
        return RayExecutor(address or None, jobs)
    raise ExecutorSpecError(f"unknown executor {text!r}", "use serial, local, ray or ray:ADDRESS")


__all__ = ["Executor", "SerialExecutor", "LocalPoolExecutor", "RayExecutor", "make_executor", "import_ray",
           "RAY_FIX"]
