"""Parse ``--controller`` specifications.

Four forms cover every controller a user has: ``osken:<app>[,<app>...]``
(os-ken apps launched from the controller environment), ``faucet:auto`` or
``faucet:<config.yaml>`` (Faucet from its own environment, with a config
generated from the topology or the user's), ``cmd:"<command with {port}>"``
(any OpenFlow controller program) and ``tcp:HOST:PORT`` (one that is
already running).
"""

from __future__ import annotations

import re
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


# ----------------------------------------------------------------------------- specs from traces
# A trace is a file people share.  Its header names the controller it was recorded
# with, and replaying it starts that controller: a ``cmd:`` spec there is a shell
# command chosen by whoever wrote the file.  So a spec read from a trace is run only
# when the user chose it: ``--controller`` (which replaces the header's) or
# ``--trust-trace-controller``.  ``osken:`` specs name Python modules that os-ken
# imports, and os-ken also accepts file paths and its own options there, so a
# header's may name dotted module names only.

_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
# app:NAME or package.module:Class -- the in-process apps of the model checker
_APP = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*(:[A-Za-z_][A-Za-z0-9_]*)?\Z")


class UntrustedControllerError(ControllerError):
    """A trace's header asks to run a command the user did not choose."""


def check_trace_spec(text: str, source: str) -> ControllerSpec | None:
    """Refuse an ``osken:``/``app:`` spec from ``source`` (a trace) that is not plain module names."""
    kind = text.partition(":")[0]
    if kind == "app" and text[4:].partition(":")[0] in ("osken", "cmd", "tcp"):
        inner = check_trace_spec(text[4:], source)  # the model checker hosting a real app: app:osken:...
        if inner is not None and inner.kind != "osken":
            raise UntrustedControllerError(f"{source} names the app '{text}', which is not an os-ken app",
                                           "use a counterexample written by `netsleuth check`")
        return None
    if kind not in ("osken", "cmd", "tcp"):  # a model-checker app: NAME, app:NAME, package.module:Class
        name = text[4:] if kind == "app" else text
        if not _APP.match(name):
            raise UntrustedControllerError(f"{source} names the app '{name}', which is not a module name",
                                           "use a trace recorded by netsleuth, or pass --controller")
        return None
    spec = parse_controller(text)
    if spec.kind == "osken":
        bad = [a for a in spec.apps if not _MODULE.match(a)]
        if bad:
            raise UntrustedControllerError(
                f"{source} names os-ken app '{bad[0]}', which is not a dotted module name",
                "pass --controller osken:MODULE to choose the app yourself")
    return spec


def controllers_for_trace(header_controller: str, override: list[str] | tuple[str, ...] | None, *,
                          trust: bool = False, source: str = "the trace") -> list[str]:
    """The controller specs to run for a recorded trace; see the comment above.

    ``override`` (the user's ``--controller``) wins.  Otherwise every spec of
    the header is checked, and a ``cmd:`` one needs ``trust``.
    """
    if override:
        return list(override)
    texts = header_controller.split(" + ")
    for text in texts:
        spec = check_trace_spec(text, source)
        if spec is not None and spec.kind == "cmd" and not trust:
            raise UntrustedControllerError(
                f"{source} asks to run the command `{text[len('cmd:'):]}` as its controller; "
                "netsleuth does not run commands from a trace by itself",
                "pass --controller SPEC to choose the controller (e.g. the same command if you trust it), "
                "or --trust-trace-controller to run the trace's")
    return texts
