"""Handler server: unmodified os-ken apps as a pure function (app state, event) -> (app state, messages).

Run by the controller environment's Python (``.venv-controller``, os-ken
1.4.1, the last release with the sample apps) and therefore imports only the
stdlib and os_ken -- never netsleuth, whose own os-ken is 4.2.2.  The model
checker (``netsleuth/nice/osken_host.py``) talks to it over stdin/stdout.

Why a server and not os-ken's own manager: the model checker needs every
handler run to be a deterministic function of a state it can save, restore
and hash (copy-on-write states, backtracking), which a running controller
with sockets and green threads is not.  So the apps are loaded and
instantiated by os-ken's own ``AppManager`` (required apps such as
``ofp_handler`` included, handlers registered by os-ken), but no thread is
started: each request restores the apps' own attributes (everything their
``__init__`` and handlers added beyond os-ken's ``OSKenApp`` base), feeds one
OpenFlow message through the same code path as ``Datapath._recv_loop``
(``ofp_msg_to_ev``, ``send_event_to_observers``, the ofp brick's direct
handlers), drains every app's event queue exactly as ``OSKenApp._event_loop``
would (``get_handlers(ev, state)``, exceptions logged and swallowed, as
os-ken does), and returns what the apps sent through the stand-in datapath as
OpenFlow bytes (os-ken's own ``send_msg`` -> ``serialize``).

Protocol: frames of a 4-byte big-endian length and a pickle (protocol 4;
only builtin types cross the pipe).  Requests are dicts with ``op``:

``init``   {"modules": [...], "ryu": bool, "options": [...]}
           -> {"apps": [...], "state": bytes, "key": ..., "version": 1 | 4}
           modules may be ``.py`` paths; ``ryu`` serves Ryu's module names from
           os-ken and ``options`` are os-ken manager options (``--config-file``)
           (both as ``osken_apps.py`` and ``osken_main.py`` do for a real run).
           ``version`` is the OpenFlow wire version the apps are served in (see
           :func:`served_version`): every datapath of this server speaks it.
``event``  {"state": bytes, "datapaths": {dpid: ports}, "event": (kind, dpid, bytes), "now": float}
           kind is "join" (the switch's handshake replies: FEATURES_REPLY, and on
           1.3 the PORT_DESC reply after it), "msg" (any switch->controller
           message) or "leave"; -> {"state", "key", "out": [(dpid, bytes)], "errors": [...],
           "datapaths"}.  ``datapaths`` are the joined switches as os-ken's
           Datapath objects hold them (ports as OFPPhyPort / OFPPort tuples), returned by
           one event and passed to the next: they are state too.  What os-ken's
           own ofp_handler sends (the 1.3 PORT_DESC request of the handshake) is
           handshake, not part of the model, and is not returned.
``quit``   ends the server (so does EOF on stdin: the server never outlives netsleuth).

Any failure answers {"error": "...", "traceback": "..."}; an app that cannot be
imported answers {"error", "fix", "import_error": [module, app, message]}.
"""

import io
import pickle
import sys
import traceback
from typing import Any

# os-ken 1.4.1 imports eventlet.wsgi.ALREADY_HANDLED, which newer eventlet
# removed (the same shim as osken_main.py).
import eventlet.wsgi

if not hasattr(eventlet.wsgi, "ALREADY_HANDLED"):
    eventlet.wsgi.ALREADY_HANDLED = object()

import handler_protocol  # noqa: E402  (beside this file)
import osken_apps  # noqa: E402  (beside this file)

osken_apps.forget_launcher_dir(__file__)

PROTOCOL = handler_protocol.PROTOCOL
UserError = handler_protocol.HandlerRequestError


# ---------------------------------------------------------------- canonical keys
def freeze(value, _depth=0):
    """A hashable, canonical form of an app attribute built from builtin types only.

    Dicts and sets are sorted (their insertion order is not state the model
    checker distinguishes); datapaths are named by their id; other objects by
    their class and attributes.
    """
    if _depth > 50:
        return ("deep", repr(type(value)))
    d = _depth + 1
    t = type(value)
    if value is None or t in (bool, int, float, str, bytes):
        return value
    if t in (dict,) or isinstance(value, dict):
        items = [(freeze(k, d), freeze(v, d)) for k, v in value.items()]
        items.sort(key=_sort_key)
        return ("d", tuple(items))
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v, d) for v in value)
    if isinstance(value, (set, frozenset)):
        items = [freeze(v, d) for v in value]
        items.sort(key=_sort_key)
        return ("s", tuple(items))
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, StandInDatapath):
        return ("datapath", value.id)
    if isinstance(value, _app_manager.OSKenApp):
        return ("app", value.name)
    if hasattr(value, "__dict__"):
        attrs = {k: v for k, v in vars(value).items() if k != "datapath"}
        return (t.__module__ + "." + t.__qualname__, freeze(attrs, d))
    return (t.__module__ + "." + t.__qualname__, repr(value))


def _sort_key(x):
    return (type(x).__name__, repr(x))


# ---------------------------------------------------------------- the os-ken side
StandInDatapath = None  # defined in _load_osken (needs os-ken imported)
_REGISTRY: dict[int, Any] = {}  # dpid -> stand-in datapath of the current request


def _datapath_ref(dpid):
    """Unpickling a datapath an app kept in its state: the current request's datapath of that id."""
    dp = _REGISTRY.get(dpid)
    if dp is None:
        dp = StandInDatapath(dpid, {})
        dp.state = _handler.DEAD_DISPATCHER
        _REGISTRY[dpid] = dp
    return dp


class _StatePickler(pickle.Pickler):
    """Datapaths and other apps an app refers to are saved by name, not by value: they are the
    server's objects (a datapath is rebuilt per request; an app's own state is saved separately)."""

    def persistent_id(self, obj):
        if StandInDatapath is not None and isinstance(obj, StandInDatapath):
            return ("datapath", obj.id)
        if isinstance(obj, _app_manager.OSKenApp):
            return ("app", obj.name)
        return None


class _StateUnpickler(pickle.Unpickler):
    def persistent_load(self, pid):
        kind, name = pid
        if kind == "datapath":
            return _datapath_ref(name)
        app = _app_manager.lookup_service_brick(name)
        if app is None:
            raise pickle.UnpicklingError(f"app {name!r} is not loaded")
        return app


def _load_osken(options=()):
    global StandInDatapath, _handler, _ofp_event, _app_manager, ofproto_v1_0, ofproto_v1_0_parser
    global ofproto_parser, ofproto_v1_3_parser
    from os_ken import cfg
    from os_ken.base import app_manager as _app_manager
    from os_ken.cmd import manager as _manager  # noqa: F401  (registers the manager's options)
    from os_ken.controller import controller as _controller
    from os_ken.controller import handler as _handler
    from os_ken.controller import ofp_event as _ofp_event
    from os_ken.ofproto import ofproto_parser, ofproto_v1_0, ofproto_v1_0_parser, ofproto_v1_3_parser
    from os_ken.ofproto.ofproto_protocol import ProtocolDesc
    from oslo_config import cfg as oslo_cfg

    try:
        cfg.CONF(args=list(options), project="os_ken")
    except (oslo_cfg.Error, SystemExit) as exc:  # argparse exits on an option it does not know
        why = "" if isinstance(exc, SystemExit) else f": {exc}"  # argparse said why on stderr (the log)
        raise UserError(f"os-ken does not accept the options {' '.join(options)}{why}",
                        "use ryu-manager options os-ken 1.4.1 knows (e.g. --config-file FILE, --observe-links)"
                        ) from None
    # Events are stamped with the model's clock, not the wall clock (ofp_event does time.time()):
    # a handler must be a function of (state, event) alone.
    _ofp_event.time = _ModelClock

    class _StandInDatapath(_controller.Datapath):
        """os-ken's Datapath without a socket: ``send`` captures the serialized bytes.

        Subclassing the real class keeps every helper an app may call
        (``send_msg``, ``set_xid``, ``send_barrier``, the deprecated OF1.0
        ``send_flow_mod``/``send_packet_out``, ``set_state``) os-ken's own code.
        """

        version = 1  # the OpenFlow wire version every datapath of this server speaks (set by init)

        def __init__(self, dpid, ports):  # deliberately not Datapath.__init__ (no socket, no queues)
            ProtocolDesc.__init__(self, self.version)
            self.socket = None
            self.address = ("model", dpid)
            self.is_active = True
            self.xid = 0            # deterministic (os-ken starts at a random xid)
            self.id = dpid
            self._ports = None
            self.ports = ports
            self.flow_format = ofproto_v1_0.NXFF_OPENFLOW10  # what Datapath.__init__ sets, whatever the version
            self.ofp_brick = _app_manager.lookup_service_brick("ofp_event")
            self.state = None
            self.unreplied_echo_requests = []
            self.model_dpid = dpid  # ``id`` is None until os-ken has read the FEATURES_REPLY

        def send(self, buf, close_socket=False):
            _SENT.append((self.model_dpid, bytes(buf)))
            return True

        def close(self):
            self.set_state(_handler.DEAD_DISPATCHER)

    StandInDatapath = _StandInDatapath
    _StandInDatapath.__module__ = "__main__"
    _StandInDatapath.__qualname__ = "StandInDatapath"


_SENT: list[Any] = []


class _ModelClock:
    """Stands in for the ``time`` module inside os-ken's ofp_event: ``time()`` is the model's now."""

    now = 0.0

    @classmethod
    def time(cls):
        return cls.now


MODELLED_VERSIONS = (1, 4)  # OpenFlow 1.0 and 1.3, as wire numbers: the versions the model checker's switches speak


def served_version(app_classes):
    """The OpenFlow version (wire number) the model checker runs these apps in.

    What a real switch offering 1.0 and 1.3 would negotiate with them, except
    that 1.0 comes first: an app that speaks 1.0 (or declares no
    ``OFP_VERSIONS``, which os-ken reads as "any") is checked in 1.0, as it
    always was, so its counts and counterexamples stay what they were; an
    app that speaks 1.3 but not 1.0 (``simple_switch_13``) is checked in 1.3.
    Several apps share one datapath, so they must share the version.
    """
    common = set(MODELLED_VERSIONS)
    for name, cls in sorted(app_classes.items()):
        versions = getattr(cls, "OFP_VERSIONS", None)
        if versions is None:
            continue
        if not common & set(versions):
            spoken = ", ".join(_VERSION_NAMES.get(v, hex(v)) for v in sorted(versions))
            raise UserError(f"app {cls.__name__} ({name}) speaks OpenFlow {spoken}, and the model checker "
                            "models 1.0 and 1.3" + ("" if common == set(MODELLED_VERSIONS) else
                                                    " as the other apps speak them"),
                            "host apps that speak OpenFlow 1.0 or 1.3 (OFP_VERSIONS), all the same one")
        common &= set(versions)
    return min(common)


_VERSION_NAMES = {1: "1.0", 2: "1.1", 3: "1.2", 4: "1.3", 5: "1.4", 6: "1.5"}


class Server:
    """The apps of one server process and the requests that drive them (see the module docstring)."""

    def __init__(self):
        self.mgr = None
        self.apps = []       # the OSKenApp instances whose attributes are state (all but the ofp brick)
        self.base_attrs = frozenset()

    # ---- init
    def init(self, apps, ryu=False, options=()):
        _load_osken(options)
        if ryu:
            osken_apps.install_ryu_alias()
        try:
            modules = osken_apps.module_names(apps, ryu=ryu)
        except ValueError as exc:
            raise UserError(f"cannot load the apps: {exc}", "rename one of the app files") from None
        failed = osken_apps.find_import_error(modules, dict(zip(modules, apps, strict=True)))
        if failed is not None:
            err = UserError(f"cannot import os-ken app module {failed[1]!r}: {failed[2]}",
                            "check the module name (e.g. os_ken.app.simple_switch) and that it is "
                            "importable by the controller environment's Python")
            err.import_error = list(failed)
            raise err
        mgr = _app_manager.AppManager.get_instance()
        for mod in modules:
            if mgr.load_app(mod) is None:
                raise UserError(f"module {mod!r} defines no OSKenApp subclass",
                                "name a module that defines an os-ken app (class deriving from OSKenApp)")
        mgr.load_apps(list(modules))
        version = served_version(mgr.applications_cls)
        StandInDatapath.version = version
        for key, cls in mgr.contexts_cls.items():
            if not issubclass(cls, _app_manager.OSKenApp):
                raise UserError(f"app context {key!r} ({cls.__name__}) is not supported in the model checker",
                                "host apps without non-app _CONTEXTS, or run them with `netsleuth run`")
        contexts = mgr.create_contexts()
        for app_name, cls in mgr.applications_cls.items():
            mgr._instantiate(app_name, cls, **contexts)
        mgr._update_bricks()
        # No app.start(): no thread runs; requests drive the handlers synchronously.
        self.mgr = mgr
        base = _app_manager.OSKenApp()
        self.base_attrs = frozenset(vars(base))
        _app_manager.SERVICE_BRICKS.pop(base.name, None)
        self.apps = [a for name, a in mgr.applications.items() if name != "ofp_event"]
        self.ofp_brick = _app_manager.lookup_service_brick("ofp_event")
        if self.ofp_brick is None:
            raise UserError("os-ken's ofp_handler was not loaded", "host an app that handles OpenFlow events")
        state, key = self.save()
        return {"apps": [type(a).__module__ + "." + type(a).__name__ for a in self.apps],
                "state": state, "key": key, "version": version}

    # ---- state
    def state_attrs(self, app):
        return sorted(k for k in vars(app) if k not in self.base_attrs)

    def save(self):
        blob = {}
        for app in self.apps:
            blob[app.name] = {k: getattr(app, k) for k in self.state_attrs(app)}
        try:
            buf = io.BytesIO()
            _StatePickler(buf, protocol=PROTOCOL).dump(blob)
            data = buf.getvalue()
        except Exception as exc:
            where = "?"
            for name, attrs in sorted(blob.items()):
                for k, v in sorted(attrs.items()):
                    try:
                        _StatePickler(io.BytesIO(), protocol=PROTOCOL).dump(v)
                    except Exception:
                        where = f"{name}.{k}"
                        break
                if where != "?":
                    break
            raise UserError(f"cannot save the state of the os-ken app(s): attribute {where}: {exc}",
                            "the model checker saves app attributes with pickle; apps that keep threads, "
                            "locks or sockets in their attributes cannot be model-checked") from None
        key = tuple((name, freeze(attrs)) for name, attrs in sorted(blob.items()))
        return data, key

    def restore(self, data):
        blob = _StateUnpickler(io.BytesIO(data)).load()
        for app in self.apps:
            attrs = blob.get(app.name, {})
            for k in self.state_attrs(app):
                if k not in attrs:
                    delattr(app, k)
            for k, v in attrs.items():
                setattr(app, k, v)
            # a handler that crashed mid-way must not leave events behind
            while not app.events.empty():
                app.events.get()
                app._events_sem.release()

    # ---- events
    def event(self, state, datapaths, event, now=0.0):
        _ModelClock.now = float(now)
        _REGISTRY.clear()
        for dpid in sorted(datapaths):
            _REGISTRY[dpid] = self._datapath(dpid, datapaths[dpid])
        self.restore(state)
        del _SENT[:]
        errors = []
        kind, dpid, data = event
        if kind == "join":
            dp = StandInDatapath(dpid, {})
            dp.id = None  # os-ken learns the id from the FEATURES_REPLY (ofp_handler.switch_features_handler)
            _REGISTRY[dpid] = dp
            # What Datapath.__init__ and the hello handshake do before FEATURES_REPLY arrives.
            dp.set_state(_handler.HANDSHAKE_DISPATCHER)
            self.drain(errors)
            dp.set_state(_handler.CONFIG_DISPATCHER)
            self.drain(errors)
            del _SENT[:]  # the handshake's own messages are not part of the model
            self.receive(dp, data, errors)  # FEATURES_REPLY (1.3: then the PORT_DESC reply)
        elif kind == "msg":
            dp = _REGISTRY.get(dpid)
            if dp is None:
                raise UserError(f"message from switch {dpid}, which has not joined",
                                "deliver a join event first")
            self.receive(dp, data, errors)
        elif kind == "leave":
            dp = _REGISTRY.get(dpid)
            if dp is not None:
                dp.close()
                self.drain(errors)
        else:
            raise UserError(f"unknown event kind {kind!r}", "use join, msg or leave")
        new_state, key = self.save()
        # The datapaths' own state (os-ken's ofp_handler keeps dp.ports up to date from PORT_STATUS)
        # goes back with the app state, as plain tuples.
        dps = {}
        for d, dp in sorted(_REGISTRY.items()):
            if dp.state == _handler.MAIN_DISPATCHER and dp.id is not None:
                dps[d] = tuple(sorted((no, tuple(port)) for no, port in (dp.ports or {}).items()))
        return {"state": new_state, "key": key, "out": list(_SENT), "errors": errors, "datapaths": dps}

    def _datapath(self, dpid, ports):
        """A joined switch's datapath: MAIN_DISPATCHER, id and ports as os-ken last knew them."""
        port_cls = ofproto_v1_0_parser.OFPPhyPort if StandInDatapath.version == 1 else ofproto_v1_3_parser.OFPPort
        dp = StandInDatapath(dpid, {no: port_cls(*fields) for no, fields in ports})
        dp.state = _handler.MAIN_DISPATCHER  # joined earlier: no state-change event now
        return dp

    def receive(self, dp, data, errors):
        """Datapath._recv_loop's body for each message in ``data`` (one or several, back to back)."""
        while data:
            version, msg_type, msg_len, xid = ofproto_parser.header(data)
            if msg_len < 8 or msg_len > len(data):
                raise UserError(f"a truncated OpenFlow message ({len(data)} of {msg_len} bytes)",
                                "send whole messages")
            msg = ofproto_parser.msg(dp, version, msg_type, msg_len, xid, data[:msg_len])
            data = data[msg_len:]
            if msg:
                ev = _ofp_event.ofp_msg_to_ev(msg)
                self.ofp_brick.send_event_to_observers(ev, dp.state)

                def dispatchers(x, ev=ev):
                    return x.callers[ev.__class__].dispatchers

                handlers = [h for h in self.ofp_brick.get_handlers(ev) if dp.state in dispatchers(h)]
                sent = len(_SENT)
                for h in handlers:
                    self._call(h, ev, errors)
                # os-ken's ofp_handler answers only handshake and keepalive (the 1.3 PORT_DESC
                # request after FEATURES_REPLY, echo replies): not the app's messages, not modelled.
                del _SENT[sent:]
            self.drain(errors)

    def drain(self, errors):
        """Run queued events to completion, as each app's _event_loop would (apps in load order)."""
        bricks = [self.ofp_brick] + self.apps
        progress = True
        while progress:
            progress = False
            for app in bricks:
                while not app.events.empty():
                    progress = True
                    ev, st = app.events.get()
                    app._events_sem.release()
                    for h in app.get_handlers(ev, st):
                        self._call(h, ev, errors)

    def _call(self, handler, ev, errors):
        try:
            handler(ev)
        except Exception as exc:  # os-ken logs and swallows handler exceptions; so do we, and report them
            owner = getattr(getattr(handler, "__self__", None), "name", "?")
            errors.append("{}.{}: {}: {}".format(owner, getattr(handler, "__name__", "handler"),
                                             type(exc).__name__, exc))
            traceback.print_exc(file=sys.stderr)


def _handle(server, req):
    op = req.get("op")
    if op == "init":
        return server.init(list(req["modules"]), bool(req.get("ryu")), list(req.get("options", ())))
    if op == "event":
        return server.event(req["state"], req["datapaths"], tuple(req["event"]), req.get("now", 0.0))
    raise UserError(f"unknown request {op!r}", "send init, event or quit")


def main():
    server = Server()
    return handler_protocol.serve(lambda req: _handle(server, req), "NETSLEUTH_OSKEN_LOGLEVEL")


if __name__ == "__main__":
    sys.exit(main())
