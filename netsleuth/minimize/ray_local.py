"""A local Ray instance that starts sooner: Ray's own head node, its start-up waits overlapped or skipped.

``ray.init(address="local")`` starts the head node's processes one after
the other and waits on each: the GCS; the autoscaler monitor; the API
server (a Python process started even without the dashboard), until it has
written its address (about a second, more on a busy machine); the log
monitor; then the raylet, which registers with the GCS only once its two
Python agents (the dashboard agent and the runtime-env agent) have each
bound a port and written it to a file (1-2 s of their imports), and which
starts its prestarted workers only then; meanwhile the driver looks the
node up in a loop that sleeps a whole second between tries.  ``ray.init``
has no option for any of this.  :func:`quick_start` makes ``ray.init``
build its head node with :class:`QuickNode` (Ray's own ``Node`` class,
subclassed) instead, which changes these things:

* the raylet is given the runtime-env agent's port (one found free here) up
  front, so it does not wait for that agent;
* nor for the dashboard agent, for which Ray passes the raylet no port flag:
  when the agent runs minimal (Ray installed without the dashboard's
  dependencies, as netsleuth installs it) it has no service to offer and
  writes -1 as each of its three ports, which is what is written here, in
  Ray's own files and with Ray's own function, before the raylet starts.
  The raylet reads them at once and starts its workers 1-2 s sooner (the
  agent, up later, writes the same values again).  A full agent chooses its
  ports itself: then the raylet waits for it as in Ray;
* no API server: without the dashboard (netsleuth starts Ray with
  ``include_dashboard=False``) it loads nothing but Ray's usage-statistics
  module, so it is half a second of CPU and a second of waiting that nothing
  here uses (a dashboard asked for is started as Ray does);
* no log monitor when the driver does not print the workers' output
  (``log_to_driver=False``, ``quick_start(log_monitor=False)``): it would
  only read their log files to publish lines nobody subscribes to, half a
  CPU-second at its start and more over a campaign;
* the two agents run at a lower CPU priority (niceness 10, every thread;
  never raised): they start at the same moment as the workers and import
  Ray as the workers do, and at the same priority they would take half the
  CPUs of a two-CPU machine from the workers every job waits for, while
  nothing the local instance runs waits for them (their ports are known);
* the node's registration is polled every 20 ms (a raylet that died ends
  the wait at once, with its log's name), so Ray's own lookup that follows
  finds the node at its first try;
* no autoscaler monitor (``RayParams.no_monitor``, what ``ray start
  --no-monitor`` sets): a local instance of a fixed size has nothing to
  scale, and the monitor's start is a second of CPU on a busy machine.

These rest on Ray's private API (``ray._private.node.Node`` and its
methods, ``RayParams`` fields, the GCS client's node lookup, the agents'
port files of ``ray._raylet``).
:func:`missing_api` lists what the installed Ray lacks of it, and
:func:`quick_start` raises :class:`RayUnavailableError` naming it rather
than start Ray some other way; ``NETSLEUTH_RAY_QUICK_START=0`` makes
``init_ray`` call plain ``ray.init`` (slower, but with nothing private).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from netsleuth.minimize.errors import RayUnavailableError

ENV = "NETSLEUTH_RAY_QUICK_START"
POLL = 0.02            # seconds between two looks for the node's registration
AGENT_NICE = 10  # the agents' niceness: they take the CPUs only where the workers' start leaves them idle
REGISTER_TIMEOUT = 60.0  # seconds for the raylet to register (Ray's own wait is 30 s, then it gives up)

NODE_METHODS = ("start_api_server", "start_ray_processes", "get_gcs_client", "_get_log_file_name",
                "get_session_dir_path")
PARAMS = ("runtime_env_agent_port", "no_monitor", "include_dashboard", "include_log_monitor")
AGENT_SCRIPTS = ("/dashboard/agent.py", "/runtime_env/agent/main.py")  # the raylet's two agents, as it starts them
AGENT_TITLES = ("ray::DashboardAgent", "ray::RuntimeEnvAgent")  # ... and as they call themselves once up
# the names of the port files the dashboard agent writes and the raylet waits for (ray._raylet's constants)
AGENT_PORT_NAMES = ("DASHBOARD_AGENT_LISTEN_PORT_NAME", "METRICS_AGENT_PORT_NAME", "METRICS_EXPORT_PORT_NAME")


def enabled() -> bool:
    """Whether ``init_ray`` starts a local instance through :func:`quick_start` (``NETSLEUTH_RAY_QUICK_START``)."""
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def missing_api(ray: Any) -> list[str]:
    """What of Ray's private API this module uses the installed Ray lacks (empty: all there)."""
    missing: list[str] = []
    try:
        node_cls = ray._private.node.Node  # noqa: SLF001 - the head node class ray.init builds
        params = ray._private.parameter.RayParams()  # noqa: SLF001
    except AttributeError as exc:
        return [f"ray._private.node.Node / ray._private.parameter.RayParams ({exc})"]
    missing += [f"Node.{m}" for m in NODE_METHODS if not callable(getattr(node_cls, m, None))]
    missing += [f"RayParams.{p}" for p in PARAMS if not hasattr(params, p)]
    if not isinstance(getattr(node_cls, "node_id", None), property):
        missing.append("Node.node_id")
    raylet = getattr(ray, "_raylet", None)
    missing += [f"ray._raylet.{n}" for n in (*AGENT_PORT_NAMES, "persist_port") if not hasattr(raylet, n)]
    if not callable(getattr(getattr(getattr(ray, "_private", None), "utils", None),
                            "get_dashboard_dependency_error", None)):
        missing.append("ray._private.utils.get_dashboard_dependency_error")
    try:
        from ray.core.generated.gcs_pb2 import GcsNodeInfo  # type: ignore[attr-defined]  # protobuf-generated
        from ray.core.generated.gcs_service_pb2 import GetAllNodeInfoRequest  # type: ignore[attr-defined]
        GetAllNodeInfoRequest.NodeSelector(node_id=b"")
        GcsNodeInfo.GcsNodeState.ALIVE  # noqa: B018 - present or AttributeError
    except (ImportError, AttributeError, ValueError) as exc:
        missing.append(f"the GCS node lookup messages ({exc})")
    return missing


def quick_start(ray: Any, log_monitor: bool = True) -> AbstractContextManager[None]:
    """A context within which ``ray.init`` builds its head node as a :class:`QuickNode` (see the module's
    text); raises RayUnavailableError at once if the installed Ray lacks what that needs."""
    missing = missing_api(ray)
    if missing:
        raise RayUnavailableError(
            f"Ray {getattr(ray, '__version__', '?')} lacks what netsleuth's quick start of a local instance "
            f"uses: {', '.join(missing)}",
            f"set {ENV}=0 to start it with plain ray.init, or install a Ray version netsleuth supports "
            "(pip install 'netsleuth[ray]')")
    return _node_class_swapped(ray, log_monitor)


@contextmanager
def _node_class_swapped(ray: Any, log_monitor: bool) -> Iterator[None]:
    module = ray._private.node  # noqa: SLF001
    plain = module.Node
    module.Node = quick_node_class(plain, log_monitor)
    try:
        yield
    finally:
        module.Node = plain


def quick_node_class(base: type, log_monitor: bool = True) -> type:
    """:class:`QuickNode` over Ray's ``Node`` class ``base`` (a function: Ray is imported only when used)."""

    class QuickNode(base):  # type: ignore[misc]
        """Ray's head node, started with the changes of the module's text; any other node is Ray's as is."""

        def __init__(self, ray_params: Any, head: bool = False, *args: Any, **kwargs: Any) -> None:
            self._quick = head and not kwargs.get("connect_only", False) and ray_params.include_dashboard is False
            if self._quick:
                ray_params.no_monitor = True
                if not log_monitor and ray_params.include_log_monitor is None:
                    ray_params.include_log_monitor = False
            super().__init__(ray_params, head, *args, **kwargs)

        def start_api_server(self, **kwargs: Any) -> None:
            if not self._quick:
                super().start_api_server(**kwargs)
                return
            self._webui_url = ""  # what Ray sets without the dashboard (and gives the raylet): no address to show

        def start_ray_processes(self) -> None:
            if not self._quick:
                super().start_ray_processes()
                return
            params = self._ray_params
            preset = agent_ports(params)
            saved = {k: getattr(params, k) for k in preset}
            for k, v in preset.items():
                setattr(params, k, v)
            prewrite_agent_ports(self)
            try:
                super().start_ray_processes()
            finally:  # Ray reads the ports the raylet registered with once the node is up
                for k, v in saved.items():
                    setattr(params, k, v)
            self._await_registration()
            lower_agents(self.all_processes["raylet"][0].process.pid)

        def _await_registration(self) -> None:
            from ray.core.generated.gcs_pb2 import GcsNodeInfo  # type: ignore[attr-defined]  # protobuf-generated
            from ray.core.generated.gcs_service_pb2 import GetAllNodeInfoRequest  # type: ignore[attr-defined]

            selector = GetAllNodeInfoRequest.NodeSelector(node_id=bytes.fromhex(self._node_id))
            raylet = self.all_processes["raylet"][0].process
            deadline = time.monotonic() + REGISTER_TIMEOUT
            while time.monotonic() < deadline:
                if raylet.poll() is not None:
                    raise RuntimeError(f"the raylet exited with code {raylet.returncode} while starting; see "
                                       f"{self._get_log_file_name('raylet', 'err')}")
                try:
                    if self.get_gcs_client().get_all_node_info(
                            timeout=5, node_selectors=[selector], state_filter=GcsNodeInfo.GcsNodeState.ALIVE):
                        return
                except Exception:  # noqa: BLE001 - not yet answering: Ray's own lookup decides in the end
                    pass
                time.sleep(POLL)

    QuickNode.__qualname__ = QuickNode.__name__ = "QuickNode"
    return QuickNode


def agent_ports(params: Any) -> dict[str, int]:
    """The agents' ports to give the raylet so that it need not wait for them: the runtime-env agent's."""
    return {} if params.runtime_env_agent_port else {"runtime_env_agent_port": free_port()}


def minimal_agent(ray: Any) -> bool:
    """Whether the raylet starts the dashboard agent with ``--minimal`` (Ray's own test: the dashboard's
    dependencies are not installed), which then has no port to report and reports -1 for each."""
    return ray._private.utils.get_dashboard_dependency_error() is not None  # noqa: SLF001


def prewrite_agent_ports(node: Any) -> list[str]:
    """Write, before the raylet starts, the port files a minimal dashboard agent writes once it has
    imported Ray (-1: no such service), so that the raylet reads them at once instead of waiting for the
    agent; the names written.  A full agent's ports are its own to choose: nothing is written then."""
    import ray
    from ray import _raylet

    if not minimal_agent(ray):
        return []
    names = [getattr(_raylet, n) for n in AGENT_PORT_NAMES]
    for name in names:
        _raylet.persist_port(node.get_session_dir_path(), node.node_id, name, -1)  # type: ignore[attr-defined]
    return names


def lower_agents(raylet_pid: int) -> list[int]:
    """Give the raylet's agents the niceness ``AGENT_NICE`` (every thread of theirs, never a higher priority
    than they had; see the module's text for why); their pids.  An agent not started yet is left as it is."""
    import psutil

    lowered: list[int] = []
    try:
        children = psutil.Process(raylet_pid).children()
    except psutil.Error:
        return lowered
    for child in children:
        try:
            if is_agent(child.cmdline()):
                for thread in child.threads():
                    nice = os.getpriority(os.PRIO_PROCESS, thread.id)  # never raised: lowered, or left
                    os.setpriority(os.PRIO_PROCESS, thread.id, max(nice, AGENT_NICE))
                lowered.append(child.pid)
        except (psutil.Error, OSError):  # gone already, or not ours to change: left as it is
            continue
    return lowered


def is_agent(cmdline: list[str]) -> bool:
    """Whether a child of the raylet is one of its agents, by its arguments (one of them the agent's script) or
    its title.  Not by a mere mention: a child the raylet has forked but not yet turned into a worker still
    has the raylet's arguments, which hold the agents' whole command lines."""
    return (any(arg.endswith(AGENT_SCRIPTS) for arg in cmdline)
            or bool(cmdline) and cmdline[0].split(" ", 1)[0] in AGENT_TITLES)


def free_port() -> int:
    """A TCP port free on every address now (the runtime-env agent binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        port: int = s.getsockname()[1]
        return port


__all__ = ["quick_start", "quick_node_class", "missing_api", "enabled", "agent_ports", "free_port",
           "minimal_agent", "prewrite_agent_ports", "lower_agents", "is_agent", "ENV"]
