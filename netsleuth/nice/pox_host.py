"""Unmodified POX components as controller apps of the model checker (``pox:COMPONENTS``).

NICE model-checked NOX apps; POX is NOX's Python successor, and this is the
same thing for it: ``netsleuth check pox:forwarding.l2_learning --scenario
mobile`` runs the components of the user's POX checkout (``NETSLEUTH_POX``
or ``check --pox DIR``) on a real POX core, with netsleuth's model switches
in place of the switches POX would meet over TCP.

The components run in a handler server of their own
(``netsleuth/controllers/pox_handler_server.py``), POX's twin of the os-ken
apps' server, driven through the same :class:`HandlerServer` plumbing and
the same app class: a handler run is a pure function (state, event) ->
(state, OpenFlow messages sent), the state is the server's pickle of the
POX world plus its canonical, hashable form, and results are memoized on
(state, event, now).  The server docstring says why pickling (and not a
deep copy kept in the server or the re-execution of a state's history) is
how a state is saved and restored.

What differs from the os-ken host is only the edge: the spec's words are
POX's command line (components, each followed by its ``--options``); each
is checked to be a module of the checkout before anything starts (a typo
is one line with the fix, exit 2); the server runs under the Python that
runs POX for ``--controller pox:`` (controllers/external.py); and POX
speaks OpenFlow 1.0 only.  The switches' connections are POX's own
``of_01.Connection`` objects over stand-in sockets, so POX's own parser,
handshake and event dispatch run on the model switches' bytes.
"""

from __future__ import annotations

from collections.abc import Callable

from netsleuth.controllers import pox
from netsleuth.controllers.external import pox_python
from netsleuth.controllers.spec import validate
from netsleuth.errors import ControllerError
from netsleuth.nice.app import App
from netsleuth.nice.osken_host import SERVER, HandlerServer, OsKenApp, shared_server, shutdown_servers
from netsleuth.trace.controller_spec import POX_EXAMPLE, ControllerSpec, Kind

POX_SERVER = SERVER.with_name("pox_handler_server.py")


class PoxHostError(ControllerError):
    """The POX handler server or the hosted components failed (the message says which and how to fix it)."""


def parse_pox_spec(spec: str | ControllerSpec) -> ControllerSpec:
    """``[app:]pox:WORDS`` -> the real controller's spec, every component checked to exist in the checkout."""
    parsed = (spec if isinstance(spec, ControllerSpec) else ControllerSpec.parse(spec.strip())).real()
    if parsed.kind is not Kind.POX:
        raise PoxHostError(f"'{spec}' is not a POX spec", f"use {POX_EXAMPLE}")
    return validate(parsed)


class PoxHandlerServer(HandlerServer):
    """The handler server of one POX command line (see the module docstring)."""

    script = POX_SERVER
    what = "the POX handler server"
    app_kind = "POX components"
    setup_fix = "runs POX (Python 3, standard library only)"
    log_prefix = "netsleuth-pox-"
    error = PoxHostError

    def __init__(self, words: tuple[str, ...], home: str) -> None:
        super().__init__(words, python=pox_python())
        self.home = home

    def init_request(self) -> dict:
        return {"op": "init", "home": self.home, "words": list(self.modules)}


def server_for(words: tuple[str, ...], home: str) -> PoxHandlerServer:
    """The shared server for this command line and checkout (started on first use, stopped at exit)."""
    srv = shared_server(("pox", tuple(words), home), lambda: PoxHandlerServer(tuple(words), home))
    assert isinstance(srv, PoxHandlerServer)
    return srv


class PoxApp(OsKenApp):
    """The hosted POX components as a model-checker app; subclassed per spec by :func:`load_pox_app`.

    All of POX's state -- connections and their listeners, pending timers
    included -- is in the server's pickle, so ``dps`` stays empty: the join
    and leave events are POX's own handshake and disconnection on its
    Connection objects.  The timers the components have pending are posted
    as the model's timers after every event; firing one runs its callback
    in the server (a recurring timer stays pending).
    """

    name = "pox"
    kind_words = "POX components"
    #: What the components send on ConnectionUp (a hub's flood rule, discovery's LLDP rule and first
    #: frames) is applied before the search, as the handshake is (System._configure13 says why).
    configure_on_join = True

    def timer(self, name: str) -> None:
        """A pending recoco timer of the components expires (POX's ``Timer``, ``core.call_delayed``)."""
        self._deliver(("timer", 0, name.encode()))


def load_pox_app(spec: str | ControllerSpec) -> Callable[[], App]:
    """The :class:`PoxApp` class for ``[app:]pox:WORDS`` (starts or reuses its server)."""
    parsed = parse_pox_spec(spec)
    words = parsed.command
    srv = server_for(words, str(pox.pox_home()))
    return type("Pox_" + "_".join(w.rpartition(".")[2] for w in words if not w.startswith("-")),
                (PoxApp,), {"name": str(parsed), "_server": srv, "_memo": {}, "openflow_version": 1})


__all__ = ["PoxApp", "PoxHandlerServer", "PoxHostError", "load_pox_app",
           "parse_pox_spec", "server_for", "shutdown_servers"]
