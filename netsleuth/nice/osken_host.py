"""Unmodified os-ken 1.4.1 apps as controller apps of the model checker (``osken:MODULE[,MODULE]``).

Ryu apps (``ryu:APP``) are hosted the same way: the server serves Ryu's
module names from os-ken (``controllers/osken_apps.py``), and either form
takes ``.py`` files as well as module names.

The apps run in the handler server (``netsleuth/controllers/osken_handler_server.py``),
a long-lived subprocess of the controller environment's Python: netsleuth's
own os-ken (4.2.2, the wire codec) has no sample apps, and the apps under
test must be the real, unmodified ones.  The server makes a handler run a
pure function (app state, event) -> (app state, OpenFlow messages sent),
which is exactly what the model checker's copy-on-write states need:

* :class:`OsKenApp` is an :class:`~netsleuth.nice.app.App` whose whole state
  is the server's opaque pickle of the apps' attributes plus the canonical,
  hashable form the server computed from them (``key``), and the
  datapaths os-ken holds (ids and ports, which os-ken's own ofp_handler
  updates on PORT_STATUS).  Copying is sharing: all of it is immutable.
* each handler encodes its event as the bytes a switch would send
  (PACKET_IN, FEATURES_REPLY, PORT_STATUS, FLOW_REMOVED, with netsleuth's
  codec), and decodes what the app sent (``codec.decode``) into the model's
  channel messages;
* events are stamped with the model's clock (``App.now``), not the wall clock;
* results are memoized on (state key, datapaths, event, now): in a search the same
  handler call repeats across thousands of states, and only the first one
  crosses the pipe.

The OpenFlow version is the app's: the server serves the apps in 1.0 when
they speak it (or do not say), else in 1.3 (``simple_switch_13``,
``OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]``), and the class says which
(``openflow_version``) so the model checker's switches speak the same.  On
1.3 the join carries FEATURES_REPLY and the PORT_DESC reply (os-ken's
ofp_handler moves the datapath to MAIN_DISPATCHER on the latter, after the
app's own EventOFPSwitchFeatures handler installed its table-miss entry),
PACKET_INs are 1.3's (``msg.match['in_port']``, table id, cookie), and the
app's messages go to the switch as their bytes
(:class:`~netsleuth.nice.messages.ToSwitch13`), every other switch message
back to the app as the switch sent it.

Packets the hosts send come from the scenario's hosts (concrete domain: the
model's pings, replies and a moving host's gratuitous ARP), not from
symbolic execution of the app's bytes-level parsing.
"""

from __future__ import annotations

import atexit
import dataclasses
import logging
import os
import pickle
import select
import struct
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from netsleuth.controllers.external import Lifeline, find_controller_python, import_error_for
from netsleuth.controllers.spec import validate
from netsleuth.errors import CodecError, ControllerError
from netsleuth.model import switch as sw
from netsleuth.model.actions import ActionError, action_from_ofp
from netsleuth.model.match import Match
from netsleuth.model.ofdp import DATAPATH, DATAPATH13, ofp13, ofp13_parser, ofp_parser
from netsleuth.model.packet import Packet
from netsleuth.nice import messages as m
from netsleuth.nice.app import App
from netsleuth.openflow import codec
from netsleuth.trace.controller_spec import APP_KINDS, ControllerSpec, Kind

log = logging.getLogger(__name__)
SERVER = Path(__file__).resolve().parents[1] / "controllers" / "osken_handler_server.py"
PROTOCOL = 4
_LEN = struct.Struct("!I")
START_TIMEOUT = 60.0     # importing os-ken and the apps on a busy machine
CALL_TIMEOUT = 30.0      # one handler run; an app that takes longer is stuck
OFP_VERSION_10 = 1
OFP_VERSION_13 = ofp13.OFP_VERSION


class OsKenHostError(ControllerError):
    """The handler server or the hosted app failed (the message says which and how to fix it)."""


def parse_app_spec(spec: str | ControllerSpec) -> ControllerSpec:
    """``[app:]osken:``/``ryu:`` spec -> the real controller's spec, validated (errors as the real controller's).

    ``netsleuth check`` records every app spec as ``app:...`` (so a
    counterexample's header says it replays in the model); for a hosted
    os-ken app that is ``app:osken:MODULE``, and the real controller the
    app runs in is ``osken:MODULE``, with app files by absolute path.
    """
    try:
        parsed = (spec if isinstance(spec, ControllerSpec) else ControllerSpec.parse(spec.strip())).real()
        if parsed.kind not in APP_KINDS:
            raise OsKenHostError(f"'{spec}' is not an os-ken or Ryu app spec", "use osken:MODULE or ryu:APP")
        return validate(parsed)
    except ControllerError as exc:
        raise OsKenHostError(exc.problem, exc.fix) from None


# ---------------------------------------------------------------------------- the server process
class HandlerServer:
    """One handler-server subprocess for one set of app modules (see the module docstring).

    The POX host (``pox_host.py``) runs its own server through this class:
    the class attributes below are what differs (the script, the words of
    its messages, the error it raises and the request that starts it).
    """

    script = SERVER
    what = "the os-ken handler server"
    app_kind = "os-ken app"
    setup_fix = "has os-ken 1.4.1 (`make setup`)"
    log_prefix = "netsleuth-osken-"
    error: type[ControllerError] = OsKenHostError

    def __init__(self, modules: tuple[str, ...], python: str | None = None, *, ryu: bool = False,
                 options: tuple[str, ...] = ()) -> None:
        self.modules = tuple(modules)
        self.ryu = ryu
        self.options = tuple(options)
        self.python = python or find_controller_python()
        self.proc: subprocess.Popen | None = None
        self._lifeline: Lifeline | None = None
        self._log = tempfile.NamedTemporaryFile(prefix=self.log_prefix, suffix=".log", delete=False)
        self.log_path = Path(self._log.name)
        self.keep_log = False  # set when an error message points the user at the log
        self.calls = 0
        self.handler_errors: list[str] = []   # exceptions the apps raised (os-ken logs and swallows them)
        self.unmodelled: dict[str, int] = {}  # message types the app sent that the model does not apply
        self.apps: list[str] = []
        self.initial_state: bytes = b""
        self.initial_key: Any = None
        self.version = OFP_VERSION_10  # the OpenFlow wire version the server speaks to the apps

    def start(self) -> HandlerServer:
        try:
            # Under a guard (controllers/guard.py): the server dies with netsleuth even on SIGKILL.
            self._lifeline = Lifeline()
            self.proc = subprocess.Popen(self._lifeline.wrap([self.python, str(self.script)]), stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=self._log,
                                         env=dict(os.environ, PYTHONUNBUFFERED="1"), start_new_session=True,
                                         pass_fds=(self._lifeline.read_fd,))
            self._lifeline.started()
        except OSError as exc:
            if self._lifeline is not None:
                self._lifeline.release()
            raise self.error(f"cannot start {self.what} with {self.python}: {exc}",
                             "run `make setup` (it creates .venv-controller) or set "
                             "NETSLEUTH_CONTROLLER_PYTHON") from None
        r = self.call(self.init_request(), timeout=START_TIMEOUT)
        self.apps = list(r["apps"])
        self.initial_state, self.initial_key = r["state"], r["key"]
        self.version = int(r.get("version", OFP_VERSION_10))
        return self

    def init_request(self) -> dict:
        """The request that loads the apps into a new server."""
        return {"op": "init", "modules": list(self.modules), "ryu": self.ryu, "options": list(self.options)}

    def call(self, req: dict, timeout: float | None = None) -> dict:
        """One request, one answer; a server error becomes :class:`OsKenHostError`."""
        timeout = CALL_TIMEOUT if timeout is None else timeout
        proc = self.proc
        if proc is None or proc.poll() is not None:
            raise self._died("is not running")
        data = pickle.dumps(req, protocol=PROTOCOL)
        try:
            proc.stdin.write(_LEN.pack(len(data)) + data)  # type: ignore[union-attr]  # started with stdin=PIPE
            proc.stdin.flush()  # type: ignore[union-attr]  # started with stdin=PIPE
            head = self._read(4, timeout)
            body = self._read(_LEN.unpack(head)[0], timeout)
        except (BrokenPipeError, EOFError):
            raise self._died("exited") from None
        self.calls += 1
        resp = pickle.loads(body)
        if "error" in resp:
            if resp.get("import_error"):  # the same one-line error as a real run's start gives
                err = import_error_for("ryu" if self.ryu else "osken", *resp["import_error"])
                raise self.error(err.problem, err.fix)
            if resp.get("fix"):  # the server's own diagnosis of bad input: it names the problem
                raise self.error(resp["error"], resp["fix"])
            self.keep_log = True
            raise self.error(f"{self.app_kind} {','.join(self.modules)}: {resp['error']}",
                             f"see the handler server's log {self.log_path}", details=resp.get("traceback", ""))
        return resp

    def _read(self, n: int, timeout: float) -> bytes:
        # only called while the server runs, started with stdout=PIPE
        fd = self.proc.stdout.fileno()  # type: ignore[union-attr]
        out = bytearray()
        deadline = time.monotonic() + timeout
        while len(out) < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                self.keep_log = True
                self.close(grace=0.0)  # it is stuck in a handler: do not wait for it
                raise self.error(f"{self.what} did not answer within {timeout:.0f}s "
                                 f"(app {','.join(self.modules)})",
                                 f"an app handler is stuck; see {self.log_path}")
            chunk = os.read(fd, n - len(out))
            if not chunk:
                raise EOFError
            out += chunk
        return bytes(out)

    def _died(self, how: str) -> ControllerError:
        self.keep_log = True
        code = None
        if self.proc is not None:
            try:
                code = self.proc.wait(timeout=2)  # its stdout closed: it is exiting
            except subprocess.TimeoutExpired:
                pass
        self.close(grace=0.0)
        tail = ""
        try:
            tail = "\n".join(self.log_path.read_text(errors="replace").splitlines()[-15:])
        except OSError:
            pass
        last = next((ln for ln in reversed(tail.splitlines()) if ln.strip()), "")
        return self.error(f"{self.what} {how} (exit code {code}){': ' + last if last else ''}",
                          f"check that {self.python} {self.setup_fix}; log: {self.log_path}",
                          details=tail)

    def close(self, grace: float = 3.0) -> None:
        """Stop the server: EOF on its stdin ends it; after ``grace`` seconds it is killed."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            if proc.poll() is None:
                try:
                    proc.stdin.close()  # type: ignore[union-attr]  # started with stdin=PIPE
                except OSError:
                    pass
                try:
                    proc.wait(timeout=grace)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=5)
        finally:
            if self._lifeline is not None:
                self._lifeline.release()
            for f in (proc.stdin, proc.stdout, self._log):
                try:
                    if f is not None:
                        f.close()
                except OSError:
                    pass
            if not self.keep_log:
                self.log_path.unlink(missing_ok=True)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


_SERVERS: dict[tuple[Any, ...], HandlerServer] = {}


def shared_server(key: tuple[Any, ...], make: Callable[[], HandlerServer]) -> HandlerServer:
    """The running server under ``key``, or a new one from ``make`` (started now, stopped at exit):
    one registry for every kind of handler server (os-ken's, POX's)."""
    srv = _SERVERS.get(key)
    if srv is None or not srv.alive():
        srv = make()
        try:
            srv.start()
        except BaseException:
            srv.close()
            raise
        _SERVERS[key] = srv
    return srv


def server_for(modules: tuple[str, ...], *, ryu: bool = False, options: tuple[str, ...] = ()) -> HandlerServer:
    """The shared server for these apps (started on first use, stopped at exit)."""
    return shared_server(("osken", tuple(modules), ryu, tuple(options)),
                         lambda: HandlerServer(tuple(modules), ryu=ryu, options=tuple(options)))


def shutdown_servers() -> None:
    """Stop every handler server this process started (os-ken's and POX's)."""
    for srv in list(_SERVERS.values()):
        srv.close()
    _SERVERS.clear()


atexit.register(shutdown_servers)


# ---------------------------------------------------------------------------- wire conversion
_FEATURES: dict[tuple, bytes] = {}


def features_bytes(dpid: int, ports: tuple[int, ...]) -> bytes:
    """The FEATURES_REPLY the model's switch would send (netsleuth's switch builds it)."""
    key = (dpid, tuple(ports))
    b = _FEATURES.get(key)
    if b is None:
        s = sw.Switch(dpid, ports)
        req = ofp_parser.OFPFeaturesRequest(DATAPATH)
        req.xid = 0
        # the reply is a ToController
        b = _FEATURES[key] = codec.encode(s.handle_message(0, req, 0.0)[0].msg)  # type: ignore[union-attr]
    return b


def features13_bytes(dpid: int, ports: tuple[int, ...]) -> bytes:
    """What an OpenFlow 1.3 switch answers os-ken's handshake with: FEATURES_REPLY, then PORT_DESC."""
    key = (dpid, tuple(ports), OFP_VERSION_13)
    b = _FEATURES.get(key)
    if b is None:
        s = sw.Switch(dpid, ports, openflow="1.3")
        s.use_version(OFP_VERSION_13)
        out = b""
        for req in (ofp13_parser.OFPFeaturesRequest(DATAPATH13), ofp13_parser.OFPPortDescStatsRequest(DATAPATH13, 0)):
            req.xid = 0
            for reply in s.handle_message(0, req, 0.0):
                out += codec.encode(reply.msg)  # type: ignore[union-attr]  # replies are ToController
        b = _FEATURES[key] = out
    return b


def packet_in13_bytes(msg: m.PacketIn) -> bytes:
    """The model's PACKET_IN as the OpenFlow 1.3 message: in_port in the match, table id and cookie."""
    pi = ofp13_parser.OFPPacketIn(DATAPATH13, buffer_id=msg.buffer_id, total_len=msg.total_len, reason=msg.reason,
                                  table_id=msg.table_id, cookie=msg.cookie,
                                  match=ofp13_parser.OFPMatch(in_port=msg.in_port), data=msg.packet.to_bytes())
    pi.xid = 0
    return codec.encode(pi)


def packet_in_bytes(in_port: int, reason: int, total_len: int, buffer_id: int, packet: Packet) -> bytes:
    msg = ofp_parser.OFPPacketIn(DATAPATH, buffer_id=buffer_id, total_len=total_len, in_port=in_port,
                                 reason=reason, data=packet.to_bytes())
    msg.xid = 0
    return codec.encode(msg)


def port_status_bytes(dpid: int, reason: int, port_no: int, link_up: bool) -> bytes:
    port = sw.Port(port_no, sw.port_hw_addr(dpid, port_no), f"s{dpid}-eth{port_no}", link_up)
    msg = ofp_parser.OFPPortStatus(DATAPATH, reason=reason, desc=port.phy())
    msg.xid = 0
    return codec.encode(msg)


def flow_removed_bytes(match: Match, priority: int, reason: int, cookie: int) -> bytes:
    msg = ofp_parser.OFPFlowRemoved(DATAPATH)
    msg.match, msg.cookie, msg.priority, msg.reason = match.to_ofp(), cookie, priority, reason
    msg.duration_sec = msg.duration_nsec = msg.idle_timeout = msg.packet_count = msg.byte_count = 0
    msg.xid = 0
    return codec.encode(msg)


def to_channel_message(data: bytes, version: int = OFP_VERSION_10) -> Any | None:
    """An app's OpenFlow bytes as the model's controller->switch message (None: not modelled)."""
    try:
        msg = codec.decode(data, version=version)
        if version == OFP_VERSION_13:
            # Statistics are not modelled for hosted apps (as for 1.0, below): a reply would carry
            # counters the state does not hash.  Everything else goes to the switch's 1.3 part.
            if isinstance(msg, ofp13_parser.OFPMultipartRequest):
                return None
            return m.ToSwitch13(codec.msg_type_name(msg), bytes(data))
    except CodecError as exc:
        raise OsKenHostError(f"the os-ken app sent a malformed OpenFlow message: {exc.problem}",
                             "this is a bug in the app (the real switch would answer with an ERROR)") from None
    t = type(msg)
    try:
        if t is ofp_parser.OFPFlowMod:
            return m.FlowMod(msg.command, Match.from_ofp(msg.match), msg.priority,
                             tuple(action_from_ofp(a) for a in msg.actions), msg.idle_timeout, msg.hard_timeout,
                             msg.buffer_id, msg.flags, msg.cookie, msg.out_port)
        if t is ofp_parser.OFPPacketOut:
            return m.PacketOut(msg.buffer_id, msg.in_port, tuple(action_from_ofp(a) for a in msg.actions),
                               bytes(msg.data or b""))
    except ActionError as exc:
        raise OsKenHostError(f"the os-ken app used an action the model does not support: {exc.problem}",
                             exc.fix) from None
    if t is ofp_parser.OFPBarrierRequest:
        return m.Barrier()
    # Statistics requests are not modelled for hosted apps: the model keeps counters only for
    # apps that declare uses_stats, and an os-ken app cannot declare it.
    return None


# ---------------------------------------------------------------------------- the App
class OsKenApp(App):
    """The hosted os-ken app(s) as a model-checker app; subclassed per spec by :func:`load_osken_app`."""

    name = "osken"
    kind_words = "os-ken app"  # what the warnings call the hosted code
    uses_stats = False
    #: The OpenFlow wire version the apps are served in (1: 1.0, 4: 1.3), the switches' too.
    openflow_version = OFP_VERSION_10
    _server: HandlerServer | None = None
    _memo: dict = {}

    def __init__(self) -> None:
        srv = self._srv()
        self.blob: bytes = srv.initial_state       # the server's pickle of the apps' attributes
        self.skey: Any = srv.initial_key           # its canonical, hashable form
        # Joined switches as os-ken's datapath objects hold them: ((dpid, ((port_no, OFPPhyPort fields), ...)), ...)
        self.dps: tuple = ()

    @classmethod
    def _srv(cls) -> HandlerServer:
        srv = cls._server
        if srv is None or not srv.alive():
            raise OsKenHostError(f"the os-ken handler server for {cls.name} is not running",
                                 "build the app with load_osken_app() and keep the server open while checking")
        return srv

    def copy(self) -> OsKenApp:
        new = object.__new__(type(self))
        new.blob, new.skey, new.dps = self.blob, self.skey, self.dps  # immutable: share
        return new

    def key(self) -> Any:
        return (self.skey, self.dps)

    def joined(self) -> tuple[int, ...]:
        """dpids of the switches os-ken holds a live datapath for."""
        return tuple(d for d, _ in self.dps)

    # ------------------------------------------------------------------ handlers
    def datapath_join(self, dpid: int, ports: tuple[int, ...]) -> None:
        if self.openflow_version == OFP_VERSION_13:
            self._deliver(("join", dpid, features13_bytes(dpid, tuple(sorted(ports)))))
            return
        self._deliver(("join", dpid, features_bytes(dpid, tuple(sorted(ports)))))

    def datapath_leave(self, dpid: int) -> None:
        self._deliver(("leave", dpid, b""))

    def packet_in(self, dpid, in_port, reason, total_len, buffer_id, packet) -> None:
        self._deliver(("msg", dpid, packet_in_bytes(in_port, reason, total_len, buffer_id, packet)))

    def port_status(self, dpid, reason, port_no, link_up) -> None:
        self._deliver(("msg", dpid, port_status_bytes(dpid, reason, port_no, link_up)))

    def flow_removed(self, dpid, match, priority, reason, cookie) -> None:
        self._deliver(("msg", dpid, flow_removed_bytes(match, priority, reason, cookie)))

    def packet_in13(self, dpid: int, msg: m.PacketIn) -> None:
        """An OpenFlow 1.3 PACKET_IN.

        A PACKET_OUT that sends back the very bytes of this packet-in (an
        unbuffered packet, ``data=msg.data``) carries the packet's lineage,
        as the same packet leaving again.
        """
        api = self._a()
        start = len(api.out)
        self._deliver(("msg", dpid, packet_in13_bytes(msg)))
        if msg.tag is None:
            return
        data = msg.packet.to_bytes()
        for k in range(start, len(api.out)):
            d, x = api.out[k]
            if type(x) is m.ToSwitch13 and x.type_name == "PACKET_OUT" \
                    and bytes(m.of13_message(x.data).data or b"") == data:
                api.out[k] = (d, dataclasses.replace(x, tag=msg.tag))

    def message13(self, dpid: int, data: bytes) -> None:
        """Any other OpenFlow 1.3 switch message (PORT_STATUS, FLOW_REMOVED, replies, errors), as sent."""
        self._deliver(("msg", dpid, data))

    # ------------------------------------------------------------------ plumbing
    def _deliver(self, event: tuple[str, int, bytes]) -> None:
        api = self._a()
        now = api.now_value  # events carry the model's clock as their timestamp
        memo_key = (self.skey, self.dps, event, now)
        hit = self._memo.get(memo_key)
        if hit is None:
            srv = self._srv()
            r = srv.call({"op": "event", "state": self.blob, "datapaths": dict(self.dps), "event": event,
                          "now": now})
            out = []
            for dpid, data in r["out"]:
                msg = to_channel_message(data, self.openflow_version)
                if msg is None:
                    name = codec.msg_type_name(codec.decode(data, version=self.openflow_version))
                    if name not in srv.unmodelled:
                        log.warning("%s %s sent %s, which the model checker does not apply", self.kind_words,
                                    self.name, name)
                    srv.unmodelled[name] = srv.unmodelled.get(name, 0) + 1
                    continue
                out.append((dpid, msg))
            for e in r["errors"]:
                if e not in srv.handler_errors:
                    log.warning("%s handler raised (it would log and go on): %s", self.kind_words, e)
                    srv.handler_errors.append(e)
            dps = tuple(sorted(r["datapaths"].items()))
            # timers the app has pending (the POX server models recoco's; os-ken's server has none)
            hit = (r["state"], _intern(r["key"]), _intern(dps), tuple(out), tuple(r.get("timers", ())))
            self._memo[memo_key] = hit
        self.blob, self.skey, self.dps, msgs, timers = hit
        api.out.extend(msgs)
        api.timers.extend(timers)


_KEYS: dict[Any, Any] = {}


def _intern(key: Any) -> Any:
    """One object per distinct app key, so equal states share it (cheap hashing and memory)."""
    return _KEYS.setdefault(key, key)


def load_osken_app(spec: str | ControllerSpec) -> Callable[[], App]:
    """The :class:`OsKenApp` class for ``[app:]osken:APP[,APP]`` or ``ryu:...`` (starts or reuses its server).

    Raises :class:`OsKenHostError` (an :class:`AppImportError` for an app
    that imports what the controller environment lacks) with the fix when
    the spec is malformed, the controller environment is missing, the
    server does not start or an app module cannot be imported.
    """
    parsed = parse_app_spec(spec)
    modules = parsed.apps
    srv = server_for(modules, ryu=parsed.kind is Kind.RYU, options=parsed.options)
    stems = [Path(mod).stem if mod.endswith(".py") else mod.rsplit(".", 1)[-1] for mod in modules]
    cls_name = ("Ryu_" if parsed.kind is Kind.RYU else "OsKen_") + "_".join(stems)
    name = str(parsed)
    return type(cls_name, (OsKenApp,), {"name": name, "_server": srv, "_memo": {},
                                        "openflow_version": srv.version})


__all__ = ["HandlerServer", "OsKenApp", "OsKenHostError", "load_osken_app", "parse_app_spec", "server_for",
           "shutdown_servers", "to_channel_message"]
