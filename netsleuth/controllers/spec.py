"""Parse ``--controller`` specifications.

Six forms cover every controller a user has: ``osken:<app>[,<app>...]``
(os-ken apps launched from the controller environment), ``ryu:<app>[,<app>...]``
(Ryu apps, unmodified, run by os-ken under Ryu's module names), ``faucet:auto`` or
``faucet:<config.yaml>`` (Faucet from its own environment, with a config
generated from the topology or the user's), ``pox:"<components and options>"``
(POX from the user's checkout, controllers/pox.py), ``cmd:"<command with {port}>"``
(any OpenFlow controller program) and ``tcp:HOST:PORT`` (one that is
already running).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from netsleuth.controllers import pox
from netsleuth.controllers.faucet import AUTO, check_yaml_file
from netsleuth.errors import ControllerError

FORMS = ('osken:<app module>[,<app>...], ryu:<app module or .py file>[,<app>...] [--observe-links], '
         'faucet:auto, faucet:<config.yaml>, pox:"<components and options>", cmd:"<command with {port}>", '
         'or tcp:HOST:PORT')


#: Spec kinds whose apps os-ken's manager runs (``ryu:`` under Ryu's module names).
APP_KINDS = ("osken", "ryu")

# ryu-manager options that take a value (``--name VALUE`` as well as ``--name=VALUE``); the
# rest of the ``--`` options apps rely on are flags (``--observe-links``, ``--verbose``).
_VALUE_OPTIONS = frozenset({"--config-file", "--config-dir", "--default-log-level", "--log-config-file",
                            "--log-dir", "--log-file", "--log-file-mode", "--wsapi-host", "--wsapi-port",
                            "--app-lists", "--neutron-url", "--tunnel-type"})
_PATH_OPTIONS = frozenset({"--config-file", "--config-dir"})
# Chosen by netsleuth (it picks the port the switches connect to) or run code of their own.
_OWNED_OPTIONS = frozenset({"--ofp-tcp-listen-port", "--ofp-listen-host", "--ofp-ssl-listen-port",
                            "--user-flags", "--pid-file", "--enable-debugger"})


@dataclass(frozen=True, slots=True)
class ControllerSpec:
    kind: str                 # "osken" | "ryu" | "faucet" | "pox" | "cmd" | "tcp"
    text: str                 # what the user wrote
    apps: tuple[str, ...] = ()      # osken/ryu: module names and absolute paths of app files
    options: tuple[str, ...] = ()   # osken/ryu: ryu-manager options (``--observe-links``, ``--config-file=F``)
    command: tuple[str, ...] = ()
    host: str = "127.0.0.1"
    port: int = 0
    config: str = ""          # faucet: "auto" or the absolute path of the user's YAML file
    home: str = ""            # pox: the POX checkout (pox.py's folder)


def parse_controller(text: str) -> ControllerSpec:
    kind, sep, rest = text.partition(":")
    if not sep or not rest:
        raise ControllerError(f"controller spec '{text}' is not understood", f"use {FORMS}")
    if kind in APP_KINDS:
        apps, options = _apps_and_options(kind, text, rest)
        return ControllerSpec(kind, text, apps=apps, options=options)
    if kind == "faucet":
        if rest == AUTO:
            return ControllerSpec("faucet", text, config=AUTO)
        path = Path(rest).expanduser().resolve()
        check_yaml_file(path)
        return ControllerSpec("faucet", text, config=str(path))
    if kind == "pox":
        words = pox.split_words(text, rest)
        home = pox.pox_home()
        pox.check_components(words, home)
        return ControllerSpec("pox", text, command=words, home=str(home))
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


def _apps_and_options(kind: str, text: str, rest: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``app.py,pkg.mod --observe-links --config-file x.conf`` -> (apps, options), as ryu-manager reads them.

    App files and option files are made absolute: the controller, a replay
    or the model checker may run from another folder.
    """
    example = "osken:os_ken.app.simple_switch" if kind == "osken" else "ryu:./my_switch.py"
    try:
        tokens = shlex.split(rest)
    except ValueError as exc:
        raise ControllerError(f"controller spec '{text}' cannot be split into words: {exc}",
                              f"quote it as one argument, e.g. --controller '{example} --observe-links'") from None
    apps: list[str] = []
    options: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        if tok.startswith("-"):
            name, eq, value = tok.partition("=")
            if name in _OWNED_OPTIONS:
                raise ControllerError(f"controller spec '{text}' sets {name}, which netsleuth chooses itself",
                                      f"leave {name} out of the spec")
            if name in _VALUE_OPTIONS and not eq:
                if i >= len(tokens):
                    raise ControllerError(f"option {name} in controller spec '{text}' has no value",
                                          f"write {name}=VALUE")
                value, eq = tokens[i], "="
                i += 1
            if name in _PATH_OPTIONS:
                path = Path(value).expanduser().resolve()
                if not path.exists():
                    raise ControllerError(f"{name} {value}: no such file or folder",
                                          f"check the path (relative paths are from {Path.cwd()})")
                value = str(path)
            options.append(f"{name}{eq}{value}")
            continue
        for app in (a.strip() for a in tok.split(",")):
            if not app:
                continue
            if app.endswith(".py") or "/" in app:
                path = Path(app).expanduser().resolve()
                if not path.is_file():
                    raise ControllerError(f"app file {app} does not exist",
                                          f"check the path (relative paths are from {Path.cwd()})")
                apps.append(str(path))
            elif _MODULE.match(app):
                apps.append(app)
            else:
                raise ControllerError(f"'{app}' in controller spec '{text}' is neither a module name nor a "
                                      ".py file", f"e.g. {example}")
    if not apps:
        what = "os-ken" if kind == "osken" else "Ryu"
        raise ControllerError(f"controller spec '{text}' names no {what} app", f"e.g. {example}")
    return tuple(apps), tuple(options)


# ----------------------------------------------------------------------------- specs from traces
# A trace is a file people share.  Its header names the controller it was recorded
# with, and replaying it starts that controller: a ``cmd:`` spec there is a shell
# command chosen by whoever wrote the file.  So a spec read from a trace is run only
# when the user chose it: ``--controller`` (which replaces the header's) or
# ``--trust-trace-controller``.  ``osken:``/``ryu:`` specs name Python modules that
# os-ken imports, and they also take file paths and manager options (some load
# files of code), so a header's may name dotted module names and the flag
# options of :data:`_TRACE_SAFE_OPTIONS` only.  A ``pox:`` spec names components
# of the user's own POX checkout; a header's may give them options with plain
# values (addresses, numbers), never paths (controllers/pox.py).

_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
# app:NAME or package.module:Class -- the in-process apps of the model checker
_APP = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*(:[A-Za-z_][A-Za-z0-9_]*)?\Z")
_TRACE_SAFE_OPTIONS = frozenset({"--observe-links", "--verbose", "--explicit-drop", "--noexplicit-drop",
                                 "--install-lldp-flow", "--noinstall-lldp-flow"})


class UntrustedControllerError(ControllerError):
    """A trace's header asks to run a command the user did not choose."""


def check_trace_spec(text: str, source: str, *, trust: bool = False) -> ControllerSpec | None:
    """Refuse an ``osken:``/``ryu:``/``app:`` spec from ``source`` (a trace) that is not plain module names.

    ``trust`` (the user's ``--trust-trace-controller``) lets app files and options through.
    """
    kind = text.partition(":")[0]
    if kind == "app" and text[4:].partition(":")[0] in ("osken", "ryu", "cmd", "tcp"):
        inner = check_trace_spec(text[4:], source, trust=trust)  # the model checker hosting a real app
        if inner is not None and inner.kind not in APP_KINDS:
            raise UntrustedControllerError(f"{source} names the app '{text}', which is not an os-ken app",
                                           "use a counterexample written by `netsleuth check`")
        return None
    if kind == "app" and text[4:].startswith("pox:"):  # POX components the model checker hosts
        check_trace_spec(text[4:], source, trust=trust)
        return None
    if kind == "pox":
        bad = [] if trust else pox.trace_safe(text.partition(":")[2].split())
        if bad:
            raise UntrustedControllerError(
                f"{source} gives POX the option '{bad[0]}', which is not a plain flag or value",
                "pass --controller pox:... to choose the components yourself, or --trust-trace-controller "
                "if you trust the trace")
        return parse_controller(text)
    if kind not in ("osken", "ryu", "cmd", "tcp"):  # a model-checker app: NAME, app:NAME, package.module:Class
        name = text[4:] if kind == "app" else text
        if not _APP.match(name):
            raise UntrustedControllerError(f"{source} names the app '{name}', which is not a module name",
                                           "use a trace recorded by netsleuth, or pass --controller")
        return None
    if kind in APP_KINDS and not trust:
        words = text.partition(":")[2].split()
        bad = [w for w in words if w.startswith("-") and w not in _TRACE_SAFE_OPTIONS]
        bad += [a for w in words if not w.startswith("-") for a in w.split(",")
                if a and (not _MODULE.match(a) or a.endswith(".py"))]  # x.py is a file, not module x.py
        if bad:
            raise UntrustedControllerError(
                f"{source} names the {kind} app or option '{bad[0]}', which is not a dotted module name "
                "or a plain flag", f"pass --controller {kind}:APP to choose the app yourself, or "
                "--trust-trace-controller if you trust the trace")
    return parse_controller(text)


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
        spec = check_trace_spec(text, source, trust=trust)
        if spec is not None and spec.kind == "cmd" and not trust:
            raise UntrustedControllerError(
                f"{source} asks to run the command `{text[len('cmd:'):]}` as its controller; "
                "netsleuth does not run commands from a trace by itself",
                "pass --controller SPEC to choose the controller (e.g. the same command if you trust it), "
                "or --trust-trace-controller to run the trace's")
    return texts
