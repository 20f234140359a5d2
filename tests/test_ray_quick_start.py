"""The quick start of a local Ray instance (minimize/ray_local.py) against the installed Ray, without starting it.

It rests on Ray's private API: here the installed Ray must have all of it
(a Ray upgrade that drops a piece fails this test, naming the piece), a Ray
without it must be refused with an error that says what is missing and how
to do without, and the runtime-env agent's port given to the raylet must be free.
"""

from __future__ import annotations

import socket
import types

import pytest

from netsleuth.minimize.errors import RayUnavailableError
from netsleuth.minimize.ray_local import ENV, agent_ports, enabled, is_agent, missing_api, quick_start

ray = pytest.importorskip("ray")


def test_the_installed_ray_has_everything_the_quick_start_uses() -> None:
    assert missing_api(ray) == []
    plain = ray._private.node.Node  # noqa: SLF001
    with quick_start(ray):
        quick = ray._private.node.Node  # noqa: SLF001 - what ray.init builds within
        assert quick.__name__ == "QuickNode" and quick is not plain and issubclass(quick, plain)
    assert ray._private.node.Node is plain  # noqa: SLF001 - put back on leaving


def test_a_ray_without_that_api_is_refused_naming_what_is_missing() -> None:
    class Node:  # a head node class without the methods the quick start overrides
        def get_gcs_client(self) -> None: ...

    fake = types.SimpleNamespace(__version__="9.9.9", _private=types.SimpleNamespace(
        node=types.SimpleNamespace(Node=Node), parameter=ray._private.parameter))  # noqa: SLF001
    missing = missing_api(fake)
    assert "Node.start_api_server" in missing and "ray._raylet.persist_port" in missing
    assert "ray._raylet.DASHBOARD_AGENT_LISTEN_PORT_NAME" in missing and "Node.node_id" in missing
    with pytest.raises(RayUnavailableError) as err:
        quick_start(fake)
    line = err.value.one_line()
    assert "Ray 9.9.9" in line and "Node.start_ray_processes" in line and f"{ENV}=0" in line
    assert fake._private.node.Node is Node  # noqa: SLF001 - nothing was swapped


def test_the_runtime_env_agent_gets_a_free_port_unless_one_was_chosen() -> None:
    params = ray._private.parameter.RayParams()  # noqa: SLF001
    params.runtime_env_agent_port = 0  # what Node sets before starting the raylet when none was given
    preset = agent_ports(params)
    assert list(preset) == ["runtime_env_agent_port"]
    with socket.socket() as s:
        s.bind(("", preset["runtime_env_agent_port"]))  # free, as the agent will find it
    params.runtime_env_agent_port = 40001  # a port the user chose is kept
    assert agent_ports(params) == {}


def test_the_environment_variable_turns_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    assert enabled()
    for off in ("0", "false", "off"):
        monkeypatch.setenv(ENV, off)
        assert not enabled()


def test_the_agents_are_told_apart_from_a_raylet_child_not_yet_a_worker() -> None:
    python = "/venv/bin/python"
    agent = [python, "-u", "/venv/lib/ray/dashboard/agent.py", "--node-id=ab", "--minimal"]
    assert is_agent(agent) and is_agent([python, "-u", "/venv/lib/ray/_private/runtime_env/agent/main.py"])
    assert is_agent(["ray::DashboardAgent" + " " * 30]) and is_agent(["ray::RuntimeEnvAgent"])
    # forked by the raylet, not yet a worker: the raylet's own arguments, which name the agents' scripts
    raylet = ["/venv/lib/ray/core/src/ray/raylet/raylet", "--raylet_socket_name=/tmp/s",
              f"--dashboard_agent_command={' '.join(agent)}",
              f"--runtime_env_agent_command={python} -u /venv/lib/ray/_private/runtime_env/agent/main.py --a=1"]
    assert not is_agent(raylet)
    assert not is_agent(["ray::IDLE"]) and not is_agent([python, "/venv/lib/ray/_private/workers/default_worker.py"])
    assert not is_agent([])
