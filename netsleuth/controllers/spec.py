"""Parse ``--controller`` specifications.

Four forms cover every controller a user has: ``osken:<app>[,<app>...]``
(os-ken apps launched from the controller environment), ``faucet:auto`` or
``faucet:<config.yaml>`` (Faucet from its own environment, with a config
generated from the topology or the user's), ``cmd:"<command with {port}>"``
(any OpenFlow controller program) and ``tcp:HOST:PORT`` (one that is
already running).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from netsleuth.controllers.faucet import AUTO, check_yaml_file
from netsleuth.errors import ControllerError

FORMS = ('osken:<app module>[,<app>...], faucet:auto, faucet:<config.yaml>, cmd:"<command with {port}>", '
         'or tcp:HOST:PORT')


@dataclass(frozen=True, slots=True)
class ControllerSpec:
    kind: str                 # "osken" | "faucet" | "cmd" | "tcp"
    text: str                 # what the user wrote
    apps: tuple[str, ...] = ()
    command: tuple[str, ...] = ()
    host: str = "127.0.0.1"
    port: int = 0
    config: str = ""          # faucet: "auto" or the absolute path of the user's YAML file


def parse_controller(text: str) -> ControllerSpec:
    kind, sep, rest = text.partition(":")
    if not sep or not rest:
        raise ControllerError(f"controller spec '{text}' is not understood", f"use {FORMS}")
    if kind == "osken":
        apps = tuple(a.strip() for a in rest.split(",") if a.strip())
        if not apps:
            raise ControllerError(f"controller spec '{text}' names no os-ken app",
                                  "e.g. osken:os_ken.app.simple_switch")
        return ControllerSpec("osken", text, apps=apps)
    if kind == "faucet":
        if rest == AUTO:
            return ControllerSpec("faucet", text, config=AUTO)
        path = Path(rest).expanduser().resolve()
        check_yaml_file(path)
        return ControllerSpec("faucet", text, config=str(path))
    if kind == "cmd":
        argv = tuple(shlex.split(rest))
        if not any("{port}" in a for a in argv):
            raise ControllerError(f"controller command '{rest}' has no {{port}} placeholder",
                                  'put {port} where the command takes its OpenFlow listen port')
        return ControllerSpec("cmd", text, command=argv)
    if kind == "tcp":
        host, sep, port = rest.rpartition(":")
        if not sep or not port.isdigit() or not host:
            raise ControllerError(f"controller spec '{text}' needs HOST:PORT", "e.g. tcp:127.0.0.1:6633")
        return ControllerSpec("tcp", text, host=host, port=int(port))
    raise ControllerError(f"unknown controller kind '{kind}'", f"use {FORMS}")
