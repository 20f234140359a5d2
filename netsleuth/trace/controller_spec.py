"""The controller spec: one typed value from ``--controller`` to a trace header's ``controller`` field and back.

The text users write and traces carry (a header joins several with `` + ``)::

    osken:APP[,APP...] [OPTIONS]     os-ken apps (dotted module names or .py files) and ryu-manager options
    ryu:APP[,APP...] [OPTIONS]       Ryu apps, run unmodified by os-ken under Ryu's module names
    faucet:auto | faucet:CONFIG      Faucet, with a config generated from the topology or the user's YAML file
    pox:WORDS                        POX's own command line: components, each followed by its --options
    cmd:COMMAND                      any OpenFlow controller program; one of its words holds {port}
    tcp:HOST:PORT                    a controller that is already listening
    app:NAME | app:MODULE:CLASS      an in-process app of the model checker (a header may omit ``app:``)
    app:osken:... app:ryu:... app:pox:...   a real app the model checker hosts
    defined:NAME                     the node program of a DEFINED run

:meth:`ControllerSpec.parse` is the only reader of that text and
:meth:`ControllerSpec.to_text` (``str(spec)``) the only writer, so
``parse(str(spec)) == spec``. Parsing is syntax only and touches no file:
a header recorded on another machine parses the same here. Whether the
files a spec names exist, whether a POX component is in the checkout and
whether a spec read from a trace may run are one check over the parsed
value, ``netsleuth.controllers.spec.validate``; it also makes paths absolute.

The type lives in the trace layer because the trace header holds it and
every layer that reads a header (the trace's own validator included) needs
it; it imports nothing of netsleuth but the errors.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import StrEnum

from netsleuth.errors import ControllerError

FORMS = ('osken:<app module>[,<app>...], ryu:<app module or .py file>[,<app>...] [--observe-links], '
         'faucet:auto, faucet:<config.yaml>, pox:"<components and options>", cmd:"<command with {port}>", '
         'or tcp:HOST:PORT')
POX_EXAMPLE = 'pox:forwarding.l2_learning or pox:"openflow.discovery forwarding.l2_multi"'
#: What joins the specs of several controllers in a trace header.
SEPARATOR = " + "
#: The prefix of the model checker's apps.
IN_MODEL = "app:"
AUTO = "auto"  # faucet:auto, a config generated from the topology


class Kind(StrEnum):
    """What runs the controller; the value is the spec's prefix."""

    OSKEN = "osken"
    RYU = "ryu"
    FAUCET = "faucet"
    POX = "pox"
    CMD = "cmd"
    TCP = "tcp"
    APP = "app"            # an in-process app of the model checker
    DEFINED = "defined"    # a DEFINED run's node program (its traces' header)


#: Kinds a live session runs (``--controller``).
RUNNABLE = (Kind.OSKEN, Kind.RYU, Kind.FAUCET, Kind.POX, Kind.CMD, Kind.TCP)
#: Kinds whose apps os-ken's manager runs (``ryu:`` under Ryu's module names).
APP_KINDS = (Kind.OSKEN, Kind.RYU)
#: Real controllers the model checker hosts in a handler server (``app:osken:...``).
HOSTED = (Kind.OSKEN, Kind.RYU, Kind.POX)
_NOT_HOSTED = (Kind.CMD, Kind.TCP)  # no app to host: a command, a controller already running

# ryu-manager options that take a value (``--name VALUE`` as well as ``--name=VALUE``); the
# rest of the ``--`` options apps rely on are flags (``--observe-links``, ``--verbose``).
VALUE_OPTIONS = frozenset({"--config-file", "--config-dir", "--default-log-level", "--log-config-file",
                           "--log-dir", "--log-file", "--log-file-mode", "--wsapi-host", "--wsapi-port",
                           "--app-lists", "--neutron-url", "--tunnel-type"})
PATH_OPTIONS = frozenset({"--config-file", "--config-dir"})
# Chosen by netsleuth (it picks the port the switches connect to) or run code of their own.
_OWNED_OPTIONS = frozenset({"--ofp-tcp-listen-port", "--ofp-listen-host", "--ofp-ssl-listen-port",
                            "--user-flags", "--pid-file", "--enable-debugger"})
# POX components netsleuth runs itself (the listening port) or an interactive shell that would wait on a terminal.
POX_OWNED = frozenset({"openflow.of_01", "openflow.of_01:launch", "py"})
MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
_COMPONENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*(:[A-Za-z_][A-Za-z0-9_]*)?\Z")


@dataclass(frozen=True, slots=True)
class ControllerSpec:
    """One controller as a value; which fields mean something depends on ``kind``."""

    kind: Kind
    apps: tuple[str, ...] = ()      # osken/ryu: module names and paths of app files
    options: tuple[str, ...] = ()   # osken/ryu: ryu-manager options, ``--flag`` or ``--name=VALUE``
    command: tuple[str, ...] = ()   # pox: POX's command-line words; cmd: the argv, one word holding {port}
    host: str = "127.0.0.1"         # tcp
    port: int = 0                   # tcp
    config: str = ""                # faucet: "auto" or the path of the user's YAML file
    name: str = ""                  # app: a builtin name or module:Class; defined: the scenario
    in_model: bool = False          # written ``app:...``: the model checker runs it, not a live session

    @classmethod
    def parse(cls, text: str) -> ControllerSpec:
        """The spec ``text`` writes; :class:`ControllerError` with the fix when it is not one."""
        if text.startswith(IN_MODEL):
            rest = text[len(IN_MODEL):]
            if not rest:
                raise ControllerError(f"controller spec '{text}' names no app",
                                      "e.g. app:pyswitch, app:package.module:Class or app:osken:MODULE")
            inner, sep, _ = rest.partition(":")
            if sep and inner in _NOT_HOSTED:
                raise ControllerError(f"controller spec '{text}' asks the model checker to host a {inner}: "
                                      "controller", "the model checker hosts osken:, ryu: and pox: apps")
            if sep and inner in HOSTED:
                return replace(_parse_real(Kind(inner), rest), in_model=True)
            return cls(Kind.APP, name=rest, in_model=True)
        kind, sep, rest = text.partition(":")
        if kind in RUNNABLE and sep:
            return _parse_real(Kind(kind), text)
        if kind == Kind.DEFINED and sep and rest:
            return cls(Kind.DEFINED, name=rest)
        if not text.strip():
            raise ControllerError("the controller spec is empty", f"use {FORMS}")
        return cls(Kind.APP, name=text)  # a bare name: the model checker's app (pyswitch), an STS controller (c1)

    def to_text(self) -> str:
        """The spec as users write it and trace headers carry it (words quoted only where they must be)."""
        lead = IN_MODEL if self.in_model else ""
        if self.kind is Kind.APP:
            return lead + self.name
        if self.kind in APP_KINDS:
            body = " ".join(_quote(w) for w in (",".join(self.apps), *self.options))
        elif self.kind in (Kind.POX, Kind.CMD):
            body = " ".join(_quote(w) for w in self.command)
        elif self.kind is Kind.FAUCET:
            body = self.config
        elif self.kind is Kind.TCP:
            body = f"{self.host}:{self.port}"
        else:
            body = self.name  # defined
        return f"{lead}{self.kind.value}:{body}"

    def __str__(self) -> str:
        return self.to_text()

    def real(self) -> ControllerSpec:
        """The live controller a hosted app runs in (``app:osken:M`` -> ``osken:M``)."""
        return replace(self, in_model=False) if self.kind in HOSTED else self

    def hosted(self) -> ControllerSpec:
        """The model checker's spec of this app (``osken:M`` -> ``app:osken:M``, ``pyswitch`` -> ``app:pyswitch``)."""
        if self.kind not in (*HOSTED, Kind.APP):
            raise ControllerError(f"the model checker cannot run the controller '{self}'",
                                  "check an in-process app (pyswitch, package.module:Class) or a hosted one "
                                  "(osken:MODULE, ryu:APP, pox:COMPONENTS)")
        return replace(self, in_model=True)


def parse_all(text: str) -> tuple[ControllerSpec, ...]:
    """The specs of a trace header's ``controller`` field, in order (``c0``, ``c1``, ...); none for ``""``."""
    return tuple(ControllerSpec.parse(t) for t in text.split(SEPARATOR)) if text else ()


def join_all(specs: Iterable[ControllerSpec]) -> str:
    """The header field of these specs: the inverse of :func:`parse_all`."""
    return SEPARATOR.join(s.to_text() for s in specs)


def _quote(word: str) -> str:
    """``word`` as one shell word: bare when it reads back as itself (``ptcp:{port}``), else quoted."""
    try:
        if shlex.split(word) == [word]:
            return word
    except ValueError:
        pass
    return shlex.quote(word)


def _split(text: str, rest: str, example: str) -> list[str]:
    try:
        return shlex.split(rest)
    except ValueError as exc:
        raise ControllerError(f"controller spec '{text}' cannot be split into words: {exc}",
                              f"quote it as one argument, e.g. --controller '{example}'") from None


def _parse_real(kind: Kind, text: str) -> ControllerSpec:
    """``text`` (``KIND:REST``) as a spec of a controller that runs as a program of its own."""
    rest = text.partition(":")[2]
    if not rest:
        raise ControllerError(f"controller spec '{text}' is not understood", f"use {FORMS}")
    if kind in APP_KINDS:
        apps, options = _apps_and_options(kind, text, rest)
        return ControllerSpec(kind, apps=apps, options=options)
    if kind is Kind.FAUCET:
        return ControllerSpec(kind, config=rest)
    if kind is Kind.POX:
        return ControllerSpec(kind, command=_pox_words(text, rest))
    if kind is Kind.CMD:
        argv = tuple(_split(text, rest, "cmd:my-controller --port {port}"))
        if not any("{port}" in a for a in argv):
            raise ControllerError(f"controller command '{rest}' has no {{port}} placeholder",
                                  "put {port} where the command takes its OpenFlow listen port")
        return ControllerSpec(kind, command=argv)
    host, sep, port = rest.rpartition(":")
    if not sep or not (port.isascii() and port.isdigit()) or not host:
        raise ControllerError(f"controller spec '{text}' needs HOST:PORT", "e.g. tcp:127.0.0.1:6633")
    return ControllerSpec(kind, host=host, port=int(port))


def _apps_and_options(kind: Kind, text: str, rest: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``app.py,pkg.mod --observe-links --config-file x.conf`` -> (apps, options), as ryu-manager reads them."""
    example = "osken:os_ken.app.simple_switch" if kind is Kind.OSKEN else "ryu:./my_switch.py"
    tokens = _split(text, rest, f"{example} --observe-links")
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
            if name in VALUE_OPTIONS and not eq:
                if i >= len(tokens):
                    raise ControllerError(f"option {name} in controller spec '{text}' has no value",
                                          f"write {name}=VALUE")
                value, eq = tokens[i], "="
                i += 1
            options.append(f"{name}{eq}{value}")
            continue
        for app in (a.strip() for a in tok.split(",")):
            if not app:
                continue
            if not (is_app_file(app) or MODULE.match(app)):
                raise ControllerError(f"'{app}' in controller spec '{text}' is neither a module name nor a "
                                      ".py file", f"e.g. {example}")
            apps.append(app)
    if not apps:
        what = "os-ken" if kind is Kind.OSKEN else "Ryu"
        raise ControllerError(f"controller spec '{text}' names no {what} app", f"e.g. {example}")
    return tuple(apps), tuple(options)


def is_app_file(app: str) -> bool:
    """An app named by its file (``./sw.py``, ``/abs/sw.py``) rather than by a module name."""
    return app.endswith(".py") or "/" in app


def _pox_words(text: str, rest: str) -> tuple[str, ...]:
    """The POX command line of a spec: components are module names, options follow one."""
    words = tuple(_split(text, rest, POX_EXAMPLE))
    components = [w for w in words if not w.startswith("-")]
    if not components:
        raise ControllerError(f"controller spec '{text}' names no POX component", f"e.g. {POX_EXAMPLE}")
    for w in components:
        if not _COMPONENT.match(w):
            raise ControllerError(f"'{w}' in controller spec '{text}' is not a POX component name",
                                  f"name components as POX's command line does, e.g. {POX_EXAMPLE}")
        if w in POX_OWNED:
            raise ControllerError(f"controller spec '{text}' names {w}, which netsleuth runs itself",
                                  f"leave {w} out of the spec (netsleuth adds openflow.of_01 --port=P)")
    return words


__all__ = ["APP_KINDS", "AUTO", "FORMS", "HOSTED", "IN_MODEL", "Kind", "MODULE", "PATH_OPTIONS", "RUNNABLE",
           "SEPARATOR", "VALUE_OPTIONS", "ControllerSpec", "is_app_file", "join_all", "parse_all"]
