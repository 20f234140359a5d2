"""The Ray executor: actors on a cluster of several nodes, placed by resources, surviving lost nodes.

Each actor holds one worker's state (``init(worker_id)``, e.g. an oracle
with its controllers).  What a task needs goes to the actor as its
arguments and what it produces comes back as its result, so the nodes
share no filesystem with the driver; a ``land`` hook, run on the driver,
can write what a result carries (a recorded trace) where the driver keeps
its output.

Placement is Ray's: every actor asks for one CPU and the custom resources
given (``controller: 1`` by default, which only nodes holding the controller
environments advertise), so a node without them never gets an actor.  A
local instance started here advertises ``controller`` itself.

Fault tolerance: an actor that dies (its process, or its whole node) takes
with it only the task it was running.  That task is queued again for another
actor, at most ``retries`` times, then fails with :class:`WorkerLostError`
-- the caller sees "not run", never a result.  The dead actor is replaced by
a new one (with a new worker id) that joins the pool once Ray has placed it
on a node with room; on a cluster that lost its capacity it simply stays
pending.  Ray's own actor restarts and task retries are not used: a
restarted actor keeps its place in the pool only once a node with room is
found, and until then the retried task would wait behind it instead of
running on a live actor.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from functools import partial
from typing import Any

from netsleuth.errors import EnvironmentSetupError, NetsleuthError
from netsleuth.minimize.errors import RayUnavailableError, WorkerLostError
from netsleuth.minimize.ray_local import enabled as quick_enabled
from netsleuth.minimize.ray_local import quick_start

Init = Callable[[int], Any]
Task = Callable[[Any, Any], Any]
Land = Callable[[Any], Any]

CONTROLLER_RESOURCE = "controller"
READY_TIMEOUT = 120.0  # seconds to wait for the first actor to be placed and built
TOGETHER_TIMEOUT = 30.0  # ... and for the others, before the work starts without those not yet placed


def node_label() -> str:
    """Where this process runs, as progress and records show it: host (IP) and a short Ray node id."""
    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():  # a local pool's worker: asking Ray would start it
        return socket.gethostname()
    try:
        ip = ray.util.get_node_ip_address()
        node = ray.get_runtime_context().get_node_id()[:8]
        return f"{socket.gethostname()}/{ip}/{node}"
    except Exception:  # noqa: BLE001 - outside Ray: the host is enough
        return socket.gethostname()


class RayWorker:
    """A Ray actor holding one worker's state; start-up errors are kept and reported with the node's name."""

    def __init__(self, init: Init, worker_id: int) -> None:
        self.node = node_label()
        self.state: Any = None
        self.error: tuple[str, str] | None = None
        try:
            self.state = init(worker_id)
        except NetsleuthError as exc:
            self.error = (exc.problem, exc.fix)
        except Exception as exc:  # noqa: BLE001 - reported to the driver, which raises it
            self.error = (f"{type(exc).__name__}: {exc}", "see the Ray worker's log (ray logs)")

    def ready(self) -> dict[str, Any]:
        return {"node": self.node, "pid": os.getpid(), "error": self.error}

    def run(self, task: Task, payload: Any) -> tuple[str, Any]:
        return self.node, task(self.state, payload)

    def close(self) -> None:
        close = getattr(self.state, "close", None)
        if callable(close):
            close()


@dataclass
class _Item:
    task: Task
    payload: Any
    outer: Future[Any]
    tries: int = 0
    lost: str = ""


class RayActorPool:
    """J Ray actors, each with its own state; a local Ray instance unless ``address`` is given.

    Subclassed by executors.RayExecutor (which adds the Executor interface); kept apart so the
    pool-and-retry logic reads on its own."""

    name = "ray"

    def __init__(self, address: str | None = None, workers: int | None = None, *, retries: int = 2,
                 resources: dict[str, float] | None = None, land: Land | None = None) -> None:
        self.address = address or None
        self.workers = workers or 0
        self.retries = retries
        self.resources = {CONTROLLER_RESOURCE: 1.0} if resources is None else dict(resources)
        self.land = land
        self.per_node: dict[str, int] = {}     # node -> tasks it completed
        self.lost = 0                          # actors lost while running a task
        self.node_lost: dict[str, int] = {}    # node -> tasks lost there (each ran again elsewhere or failed)
        self.node_errors: dict[str, str] = {}  # node -> why it could not build an actor, or lost one (the last)
        self._node_of: dict[int, str] = {}     # id(actor) -> the node it was placed on, once it answered
        self._ray: Any = None
        self._owns = False
        self._cls: Any = None
        self._init: Init | None = None
        self._next_id = 0
        self._actors: list[Any] = []           # every actor not known dead, pending ones included
        self._free: list[Any] = []
        self._queue: deque[_Item] = deque()
        self._lock = threading.RLock()

    def describe(self) -> str:
        where = self.address or "local"
        nodes = len(self.per_node)
        tail = f", {nodes} node{'s' if nodes != 1 else ''}" if nodes else ""
        return f"ray@{where} ({self.workers} worker{'s' if self.workers != 1 else ''}{tail})"

    # -- start
    def start(self, init: Init) -> None:
        ray = self._ray = import_ray()
        if not ray.is_initialized():
            self._owns = init_ray(self.address, self.workers, self.resources)
        self._check_resources()
        self._init = init
        self._cls = ray.remote(num_cpus=1, resources=self.resources or None, max_restarts=0)(RayWorker)
        actors = [self._spawn() for _ in range(self.workers)]
        self._await_first(actors)

    def _check_resources(self) -> None:
        have = self._ray.cluster_resources()
        capacity = int(have.get("CPU", 0))
        for name, amount in self.resources.items():
            if have.get(name, 0) < amount:
                raise RayUnavailableError(
                    f"no node of the Ray cluster offers the '{name}' resource (it has: "
                    f"{', '.join(sorted(have)) or 'nothing'})",
                    f"start every node that has .venv-controller with `ray start ... --resources "
                    f"'{{\"{name}\": N}}'` (N: the jobs it may run at once)")
            capacity = min(capacity, int(have[name] // amount))
        if not self.workers:
            self.workers = max(1, capacity)

    def _spawn(self) -> Any:
        wid, self._next_id = self._next_id, self._next_id + 1
        actor = self._cls.remote(self._init, wid)
        self._actors.append(actor)
        return actor

    def _await_first(self, actors: list[Any]) -> None:
        """Wait until at least one actor is up (the others join when placed); a broken node is an error."""
        refs = {a.ready.remote(): a for a in actors}
        ready, _ = self._ray.wait(list(refs), num_returns=1, timeout=READY_TIMEOUT)
        if not ready:
            raise RayUnavailableError(f"no Ray actor could be placed within {READY_TIMEOUT:g} s",
                                      "check that the cluster's nodes have free CPUs and the 'controller' resource "
                                      "(ray status)")
        # Give the rest time to come up together (the usual case), then let them join as they can.
        ready, _ = self._ray.wait(list(refs), num_returns=len(refs), timeout=TOGETHER_TIMEOUT)
        for ref in ready:
            self._joined(refs.pop(ref), ref)
        for ref, actor in refs.items():
            ref.future().add_done_callback(lambda f, a=actor, r=ref: self._join_later(a, r))

    def _joined(self, actor: Any, ref: Any) -> None:
        info = self._ray.get(ref)
        if info["error"] is not None:
            problem, fix = info["error"]
            exc = EnvironmentSetupError(f"Ray node {info['node']}: {problem}", fix)
            with self._lock:
                self.node_errors[info["node"]] = exc.one_line()
            raise exc
        with self._lock:
            self._node_of[id(actor)] = info["node"]
            self.per_node.setdefault(info["node"], 0)
            self._free.append(actor)

    def _join_later(self, actor: Any, ref: Any) -> None:
        try:
            self._joined(actor, ref)
        except NetsleuthError:  # a node that came later without what the jobs need: it gets none (node_errors)
            self._drop(actor)
            return
        except Exception:  # noqa: BLE001 - a replacement whose node went away: dropped, not fatal
            self._drop(actor)
            return
        with self._lock:
            self._dispatch_locked()

    # -- work
    def submit(self, task: Task, payload: Any) -> Future[Any]:
        if self._ray is None:
            raise RuntimeError("RayActorPool.submit before start()")
        outer: Future[Any] = Future()
        with self._lock:
            self._queue.append(_Item(task, payload, outer))
            self._dispatch_locked()
        return outer

    def _dispatch_locked(self) -> None:
        while self._free and self._queue:
            item = self._queue.popleft()
            if item.tries == 0 and not item.outer.set_running_or_notify_cancel():
                continue
            actor = self._free.pop()
            ref = actor.run.remote(item.task, item.payload)
            ref.future().add_done_callback(partial(self._done, actor, item))

    def _done(self, actor: Any, item: _Item, fut: Future[Any]) -> None:
        rex = self._ray.exceptions if self._ray is not None else None
        try:
            node, result = fut.result()
        except BaseException as exc:  # noqa: BLE001 - a RayTaskError, or an actor that died
            if rex is not None and isinstance(exc, (rex.RayActorError, rex.WorkerCrashedError, rex.NodeDiedError,
                                                    rex.ObjectLostError)):
                self._lost(actor, item, exc)
                return
            cause = getattr(exc, "cause", None)
            item.outer.set_exception(cause if isinstance(cause, Exception) else exc)
        else:
            try:
                item.outer.set_result(self.land(result) if self.land is not None else result)
            except Exception as exc:  # noqa: BLE001 - the landing failed on the driver (disk full...)
                item.outer.set_exception(exc)
            with self._lock:
                self.per_node[node] = self.per_node.get(node, 0) + 1
        with self._lock:
            self._free.append(actor)
            self._dispatch_locked()

    def _lost(self, actor: Any, item: _Item, exc: BaseException) -> None:
        """The actor died with the task: replace it, and run the task again elsewhere (bounded)."""
        reason = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        with self._lock:
            self.lost += 1
            node = self._node_of.get(id(actor))
            if node is not None:
                self.node_lost[node] = self.node_lost.get(node, 0) + 1
                self.node_errors[node] = f"lost a worker while running a task ({reason})"
            self._drop_locked(actor)
            if self._ray is not None and len(self._actors) < self.workers:
                new = self._spawn()
                ref = new.ready.remote()
                ref.future().add_done_callback(lambda f, a=new, r=ref: self._join_later(a, r))
            item.tries += 1
            item.lost = reason
            if item.tries <= self.retries and self._ray is not None:
                self._queue.appendleft(item)
                self._dispatch_locked()
                return
        item.outer.set_exception(WorkerLostError(
            f"a Ray worker died while running a task, {item.tries} time{'s' if item.tries != 1 else ''} "
            f"(last: {reason})", "look for a lost node or an out-of-memory kill (ray status; ray logs raylet.out)"))

    def _drop(self, actor: Any) -> None:
        with self._lock:
            self._drop_locked(actor)

    def _drop_locked(self, actor: Any) -> None:
        if actor in self._actors:
            self._actors.remove(actor)
        if actor in self._free:
            self._free.remove(actor)

    # -- end
    def close(self) -> None:
        ray = self._ray
        if ray is None:
            return
        with self._lock:
            self._ray = None
            while self._queue:
                self._queue.popleft().outer.cancel()
            actors, self._actors, self._free = list(self._actors), [], []
        try:
            ray.get([a.close.remote() for a in actors], timeout=30)
        except Exception:  # noqa: BLE001 - dead or never placed
            pass
        for a in actors:
            try:
                ray.kill(a)
            except Exception:  # noqa: BLE001 - already gone
                pass
        if self._owns:
            shutdown_ray(ray)


def local_config(preload: Sequence[str]) -> dict[str, Any]:
    """Ray's system config for a local instance: workers prestarted with the raylet, importing ``preload``,
    at the driver's own CPU priority, without task events or metrics.

    Ray lowers its workers' priority (niceness 15) by default, to keep a node's own processes responsive
    beside heavy tasks.  Here the workers' jobs are the work (the process pool's workers run at the
    priority of the campaign), and at nice 15 a worker starting up yields the CPUs to Ray's agents,
    which nothing waits for, and a job's controller (which inherits it) to any other program.

    Task events (what ``ray list tasks`` and the dashboard show) and metrics are what every Ray process
    reports to the GCS and to the dashboard agent; a local instance of netsleuth's has no dashboard and
    nothing reads them.  Turned off, they cost no CPU beside the jobs, and the driver's shutdown no longer
    waits for them: its core worker's shutdown, which flushes the task events and stops the metrics'
    exporter, took 0.26 s of a ``ray.shutdown`` of 0.35 s, and takes 0.005-0.02 s in most shutdowns
    without them (see ``LOCAL_ENV`` for the metrics)."""
    config: dict[str, Any] = {"enable_worker_prestart": True, "worker_niceness": LOCAL_WORKER_NICENESS,
                              "task_events_report_interval_ms": 0, "enable_metrics_collection": False}
    if preload:
        config["preload_python_modules"] = list(preload)
    return config


def shutdown_ray(ray: Any) -> None:
    """``ray.shutdown()``, quicker for a local instance started here by plain ``ray.init`` (the quick start
    starts no monitor): its autoscaler monitor (which a local instance does not use) is ended at once.  Ray
    sends each of its processes SIGTERM in turn and waits up to a second for each; the monitor alone takes
    that whole second, where the others take milliseconds.  The driver is still connected then, which the
    monitor has no part in; the rest goes as Ray does it."""
    for proc in _monitor_processes(ray):
        try:
            proc.kill()
            proc.wait(timeout=5)
        except Exception:  # noqa: BLE001 - already gone: Ray's own shutdown copes with that
            pass
    ray.shutdown()


def _monitor_processes(ray: Any) -> list[Any]:
    """The autoscaler monitor's Popen objects of the local instance this process started (none otherwise)."""
    try:
        node = ray._private.worker._global_node  # noqa: SLF001 - Ray offers no public handle on its head processes
        infos = node.all_processes.get("monitor", []) if node is not None else []
        return [info.process for info in infos if info.process.poll() is None]
    except AttributeError:  # another Ray version: the plain shutdown
        return []


LOCAL_WORKER_NICENESS = 0  # Ray's default is 15 (local_config: why not here)
# Ray's config as environment variables, set while a local instance starts (the driver's stats module reads
# its switch from the environment when its core worker starts, before the system config reaches it; the
# head processes inherit it): no metrics (local_config: why)
LOCAL_ENV = {"RAY_enable_metrics_collection": "0"}
LOCAL_LOG_TO_DRIVER = False  # a local instance's workers' output stays in its session's logs (init_ray: why)

RAY_FIX = "pip install 'netsleuth[ray]' (or choose --executor local)"


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """``values`` in ``os.environ`` within the context (a value set already is left as it is), then as before."""
    added = {k: v for k, v in values.items() if k not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for k in added:
            os.environ.pop(k, None)


def import_ray() -> Any:
    """``import ray``, or a RayUnavailableError that says how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise RayUnavailableError(f"--executor ray needs the 'ray' package, which is not installed ({exc})",
                                  RAY_FIX) from None
    return ray


def init_ray(address: str | None, workers: int | None, resources: dict[str, float] | None = None,
             preload: Sequence[str] = ()) -> bool:
    """Connect to the cluster at ``address``, or start a local instance offering ``workers`` CPUs and
    controller slots; True if Ray was started or connected here (and so is ours to shut down).

    A local instance starts its worker processes with the raylet, not once this driver has connected,
    and they import the modules of ``preload`` before taking work: the actors' own start-up (importing
    netsleuth, a second or more of CPU) then overlaps with the rest of Ray's start instead of following
    it.  The local instance is started through minimize/ray_local.py's quick start (its waits overlapped or
    skipped) unless ``NETSLEUTH_RAY_QUICK_START=0``.  A local instance's workers' output is not printed
    by the driver (``LOCAL_LOG_TO_DRIVER``): it stays in the session's logs (``/tmp/ray/session_latest/logs``),
    and the quick start then needs no log monitor, half a CPU-second at Ray's start and more
    over a campaign that the jobs' processes would otherwise share the CPUs with; what a worker has to
    say comes back as its result or error.  (A cluster's nodes were configured by ``ray start``: nothing
    of this reaches them, and the driver prints what their workers print.)"""
    ray = import_ray()
    if ray.is_initialized():
        return False
    local = not address
    kwargs: dict[str, Any] = {"include_dashboard": False, "logging_level": "warning",
                              "log_to_driver": not local or LOCAL_LOG_TO_DRIVER}
    quick: AbstractContextManager[None] = (quick_start(ray, log_monitor=kwargs["log_to_driver"])  # ray_local.py: why
                                           if local and quick_enabled() else nullcontext())
    main = threading.current_thread() is threading.main_thread()
    sigterm = signal.getsignal(signal.SIGTERM) if main else None
    try:
        if address:
            ray.init(address=address, **kwargs)
        else:
            n = workers or os.cpu_count() or 1
            custom = {k: float(n) for k in (resources if resources is not None else {CONTROLLER_RESOURCE: 1})
                      if k != "CPU"}
            # "local": a new instance of our own, even when this machine runs a cluster started by `ray start`
            # (without it Ray joins that cluster, and refuses the CPU count we give)
            with quick, _environment(LOCAL_ENV):
                ray.init(address="local", num_cpus=n, resources=custom, _system_config=local_config(preload),
                         **kwargs)
    except Exception as exc:
        raise RayUnavailableError(f"cannot start or reach Ray at {address or 'a local instance'}: {exc}",
                                  "check the address (auto, ray://HEAD:10001, HOST:6379) or use --executor local"
                                  ) from None
    if main and sigterm is not None:  # ray.init on the main thread replaced SIGTERM's handler with an exit that
        signal.signal(signal.SIGTERM, sigterm)  # skips the partial results: SIGTERM stops a job as Ctrl-C does
    return True


__all__ = ["RayActorPool", "RayWorker", "import_ray", "init_ray", "local_config", "shutdown_ray", "node_label",
           "CONTROLLER_RESOURCE", "RAY_FIX"]
