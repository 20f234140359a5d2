"""A local Ray instance of our own (``init_ray`` without an address): how it starts and how it ends.

Its worker processes start with the raylet and import the modules they are
given before taking any work, so an actor's start-up finds netsleuth
already imported; and its shutdown ends every process it started, quickly.
Started the quick way (minimize/ray_local.py, the default) the instance has
no autoscaler monitor, no API server and no log monitor, its raylet was given the runtime-env agent's
port (the port the agent listens on), it started its workers without waiting for the dashboard
agent, and its agents run at a lower CPU priority than its workers (which run at the driver's);
started with Ray's own ``ray.init`` (``NETSLEUTH_RAY_QUICK_START=0``) it has a monitor, which the shutdown ends
without waiting the second Ray gives it to answer SIGTERM.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import psutil
import pytest
from test_campaign import all_gone

from netsleuth.minimize.executors import RayExecutor
from netsleuth.minimize.ray_executor import init_ray, shutdown_ray
from netsleuth.minimize.ray_local import AGENT_NICE, ENV

ray = pytest.importorskip("ray")

pytestmark = [pytest.mark.real, pytest.mark.slow]

PRELOADED = "netsleuth.campaign.signature"  # not imported by Ray's worker, nor by this module's own code


def imported_before_init(_worker_id: int) -> bool:
    """The actor's state: was PRELOADED imported before the actor was built?"""
    return PRELOADED in sys.modules


def state(loaded: bool, _payload: Any) -> bool:
    return loaded


# A shutdown that waited Ray's second on each process that does not answer SIGTERM at once would take
# several seconds; one that does not takes a fraction of one, a little more on a busy machine.
QUICK_SHUTDOWN = 3.0


def run_and_stop(monkeypatch: pytest.MonkeyPatch, quick: bool) -> tuple[str, Any, float, list[int], dict[str, str]]:
    """Start a local instance, run 4 tasks on 2 actors, shut it down: (its processes' command lines, each
    followed by its niceness, its node's Node, the shutdown's seconds, the processes left after it, the
    raylet's environment)."""
    monkeypatch.setenv(ENV, "1" if quick else "0")
    assert not ray.is_initialized()
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # Ray's workers cannot import tests/
    before = {p.pid for p in psutil.Process().children(recursive=True)}  # not Ray's (a resource tracker...)
    assert init_ray(None, 2, preload=(PRELOADED,)) is True
    pool = RayExecutor(None, 2)
    monitors: list[Any] = []
    try:
        pool.start(imported_before_init)
        assert [pool.submit(state, None).result(timeout=60) for _ in range(4)] == [True] * 4
        tree = [p.pid for p in psutil.Process().children(recursive=True) if p.pid not in before]
        procs = [(psutil.Process(pid).cmdline(), psutil.Process(pid).nice()) for pid in tree]
        names = "\n".join(f"{' '.join(cmdline)} nice={nice}" for cmdline, nice in procs)
        node = ray._private.worker._global_node  # noqa: SLF001 - its ports are those the raylet registered
        monitors.extend(info.process for info in node.all_processes.get("monitor", []))
        raylet_env = psutil.Process(node.all_processes["raylet"][0].process.pid).environ()
    finally:
        pool.close()  # not the owner of the instance: its actors end, Ray stays up
        assert ray.is_initialized()
        t0 = time.monotonic()
        gone: list[float] = []
        watch = threading.Thread(target=lambda: gone.extend(_exit_time(m, t0) for m in monitors))
        watch.start()
        shutdown_ray(ray)
        took = time.monotonic() - t0
        watch.join(10)
    assert not ray.is_initialized()
    # the autoscaler monitor (plain start only) is killed first thing, not sent SIGTERM and given the
    # second Ray waits for a process to answer it
    assert bool(monitors) != quick and all(t < MONITOR_GONE for t in gone), gone
    return names, node, took, all_gone(tree), raylet_env


MONITOR_GONE = 0.9   # seconds after the shutdown began: before Ray's own second of waiting could end


def _exit_time(proc: Any, t0: float) -> float:
    while proc.poll() is None:
        time.sleep(0.005)
    return time.monotonic() - t0


def stamp(log: Path, text: str) -> datetime | None:
    """The time of the first line of Ray's ``log`` that holds ``text`` (Ray's lines start with it), if any."""
    for line in (log.read_text() if log.exists() else "").splitlines():
        if text in line:
            found = re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}", line)
            assert found, line
            return datetime.strptime(found.group(), "%Y-%m-%d %H:%M:%S,%f")
    return None


def test_quick_start_runs_the_preloaded_workers_without_a_monitor_and_leaves_no_process(
        monkeypatch: pytest.MonkeyPatch) -> None:
    names, node, took, left, raylet_env = run_and_stop(monkeypatch, quick=True)
    assert type(node).__name__ == "QuickNode"  # ray.init still builds its head node from ray._private.node.Node
    assert "raylet" in names and "dashboard/agent.py" in names and "runtime_env/agent/main.py" in names
    assert "monitor.py" not in names and "dashboard/dashboard.py" not in names  # nor the log monitor
    port = node.runtime_env_agent_port
    assert port > 0
    assert f"--runtime-env-agent-port={port}" in names  # given to the agent and registered by the raylet
    lines = names.splitlines()  # one per process, its arguments joined: an agent is told by its title or script
    agents = [line for line in lines if line.startswith(("ray::DashboardAgent", "ray::RuntimeEnvAgent"))
              or re.match(r"\S+python\S* -u \S+(/dashboard/agent\.py|/runtime_env/agent/main\.py) ", line)]
    workers = [line for line in lines if line.startswith("ray::RayWorker")]
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    assert len(agents) == 2 and all(line.endswith(f"nice={max(mine, AGENT_NICE)}") for line in agents), agents
    assert len(workers) == 2 and all(line.endswith(f"nice={mine}") for line in workers), workers  # the driver's
    assert node.dashboard_agent_listen_port == -1  # what the minimal agent reports, registered before it did
    logs = Path(node.get_session_dir_path()) / "logs"
    started = stamp(logs / "raylet.out", "Started worker process")
    agent_up = stamp(logs / "dashboard_agent.log", "Loaded ")  # its modules loaded, just before it writes its port
    assert started is not None
    # (at its lower priority on a busy machine, the agent may not have got that far before the shutdown)
    assert agent_up is None or started < agent_up, f"the raylet started its workers at {started}, after the " \
                                                   f"agent at {agent_up}"
    assert left == []
    assert took < QUICK_SHUTDOWN, f"shutdown took {took:.2f} s"
    assert_no_task_events_nor_metrics(logs, raylet_env)


def assert_no_task_events_nor_metrics(logs: Path, raylet_env: dict[str, str]) -> None:
    """The instance's processes (the driver's core worker, which reads the switch from its environment, and the
    head processes, which inherited it) collect no metrics, and neither the driver nor the workers buffer task
    events (their core workers' first stats dump says so); the driver's environment is as it was."""
    assert raylet_env.get("RAY_enable_metrics_collection") == "0"
    assert "RAY_enable_metrics_collection" not in os.environ
    cores = sorted(logs.glob("python-core-driver-*.log")) + sorted(logs.glob("python-core-worker-*.log"))
    assert len(cores) >= 3, cores
    assert all("Task Event Buffer is disabled." in log.read_text() for log in cores), cores


def test_plain_start_has_its_monitor_and_the_shutdown_does_not_wait_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    names, node, took, left, raylet_env = run_and_stop(monkeypatch, quick=False)
    assert "raylet" in names and "monitor.py" in names.replace("log_monitor.py", "")
    assert "dashboard/dashboard.py" in names
    assert left == []
    assert took < QUICK_SHUTDOWN, f"shutdown took {took:.2f} s"
    assert_no_task_events_nor_metrics(Path(node.get_session_dir_path()) / "logs", raylet_env)
