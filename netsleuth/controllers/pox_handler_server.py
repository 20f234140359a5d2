"""Handler server: unmodified POX components as a pure function (POX state, event) -> (POX state, messages).

The POX twin of ``osken_handler_server.py``, run as a subprocess by the
model checker (``netsleuth/nice/pox_host.py``) with the user's POX checkout
first on ``sys.path``.  It imports only the standard library and POX (never
netsleuth): POX is pure Python, and a process of its own gives every check a
fresh POX core (POX keeps one core per process, and its modules hold it from
import time on).

What runs is POX's own code: ``pox.core.initialize`` makes the core,
``pox.openflow.launch`` registers the OpenFlow nexus and arbiter, the
components are imported and launched the way ``pox.boot`` does it (``pox.``
first, then the bare name; ``--options`` become the launch function's
arguments), and each switch is an unmodified ``of_01.Connection`` whose
socket is a stand-in: ``send`` captures the bytes POX writes, ``recv`` hands
it the bytes the model's switch sent, and ``Connection.read`` -- POX's own
parser and handler dispatch -- runs on them.  Nothing listens, no thread
runs: the core's recoco scheduler is a stand-in that runs ``call_later``
calls when the event's handlers are done and keeps recoco timers as the
model's timers (the model checker fires them as transitions of their own),
and ``time.time`` is the model's clock, so a handler run is a function of
the state and the event alone.

**State: pickling, not deep copy or re-execution.**  Each request restores
the whole mutable POX world from bytes and saves it back after the event:
the registered components (the nexus with its connections and their
listeners, the arbiter, the components' own objects), the core's listeners
and waiters, and the module globals of the components' modules (l2_multi
and spanning_tree keep their state there).  One pickle holds them all, so
an object referred to from several places (a Connection from the nexus and
from the learning switch that listens to it) is one object again after the
restore.  Re-execution (replaying a state's event history on a fresh core)
would cost a process start per backtrack; a deep copy kept in the server
would hold every state the search ever reached in the server's memory.
Pickled bytes are what the model checker's copy-on-write states already
carry for os-ken apps: immutable, shared, and sent back only when needed.
The core, the scheduler, modules and POX's shared handler tables are
infrastructure and travel by name (persistent ids); how is in
``pox_state.py``, which the server imports as a top-level module.

The hashable key of a state is a canonical freeze of the same world minus
the counters POX hands out ids from (message xids, listener ids,
connection numbers): they differ between paths to the same state and name
messages rather than decide anything (the os-ken host starts every
datapath's xid afresh for the same reason).  As in the os-ken host, dicts
and sets are frozen sorted: their insertion order is not part of the key.

Protocol: the os-ken server's (4-byte length + pickle frames).  ``init``
{"home", "words"} -> {"apps", "state", "key", "version": 1}; ``event``
{"state", "datapaths", "event": (kind, dpid, bytes), "now"} ->
{"state", "key", "out": [(dpid, bytes)], "errors", "datapaths": {}, "timers"}:
kind is join, msg, leave or timer (bytes: the timer's name); ``timers``
names the timers pending after the event (init answers them too);
``quit``.  A component that does not exist answers {"error", "fix",
"import_error": [...]}.
"""

import io
import logging
import os
import struct
import sys
import time
import traceback
import types

import handler_protocol  # beside this file
import pox_state  # beside this file
from pox_state import Freezer, FunctionTable, StatePickler, StateUnpickler

PoxUserError = handler_protocol.HandlerRequestError


# ---------------------------------------------------------------- the model's clock and scheduler
class ModelClock:
    now = 0.0

    @classmethod
    def time(cls):
        return cls.now


class ModelScheduler:
    """Stands in for recoco's Scheduler: no thread, no clock of its own.

    ``callLater`` calls run when the event's handlers are done.  A recoco
    ``Timer`` (``core.call_delayed`` makes one too) becomes a timer of the
    model: it is kept, by name, among the pending timers (part of the
    state), the model checker may fire it at any point as a transition of
    its own (NICE's timer events), and a recurring one stays pending after
    it fired.  Other recoco tasks (sockets, blocking calls) are not
    modelled and never run.
    """

    def __init__(self):
        self.calls = []
        self.pending = {}     # name -> Timer
        self.other_tasks = 0
        self._hasQuit = False
        self._allDone = False
        self._thread = None

    def callLater(self, func, *args, **kw):
        self.calls.append((func, args, kw))

    def schedule(self, task, first=False):
        if not isinstance(task, pox_state.RECOCO.Timer):
            self.other_tasks += 1
            return
        for name, t in list(self.pending.items()):  # a cancelled timer that never fired: gone
            if t._cancelled:
                del self.pending[name]
        cb = task._callback
        base = getattr(getattr(cb, "__func__", cb), "__qualname__", type(cb).__name__)
        name, n = base, 1
        while name in self.pending:
            n += 1
            name = f"{base}#{n}"
        self.pending[name] = task

    fast_schedule = schedule

    def unschedule(self, task):
        pass

    def fire(self, name):
        """A pending timer's expiry: its callback runs as recoco's Timer.run would run it."""
        t = self.pending.pop(name, None)
        if t is None or t._cancelled:
            return
        rv = t._callback(*t._args, **t._kw)
        if t._recurring and not t._cancelled and not (t._self_stoppable and rv is False):
            self.pending[name] = t

    def quit(self):
        self._hasQuit = True


class DeferredSenderStandIn:
    """of_01's DeferredSender (a thread) for sockets that never block: nothing is ever deferred."""

    sending = False

    def send(self, con, data):
        raise RuntimeError("the model's stand-in socket never defers a send")

    def kill(self, con):
        pass


class ModelSocket:
    """A Connection's socket: what POX sends is captured, what the switch sent is read from ``inbox``."""

    def __init__(self, dpid):
        self.dpid = dpid
        self.inbox = b""

    def send(self, data):
        """One message per entry: POX writes several at once (a FLOW_MOD with data is followed by a
        PACKET_OUT of that data; the handshake's features and description requests go together)."""
        data = bytes(data)
        at = 0
        while at + 8 <= len(data):
            n = max(8, struct.unpack_from("!H", data, at + 2)[0])
            _SENT.append((self.dpid, data[at:at + n]))
            at += n
        if at < len(data):
            _SENT.append((self.dpid, data[at:]))  # a truncated message: the codec says so
        return len(data)

    def recv(self, n):
        data, self.inbox = self.inbox[:n], self.inbox[n:]
        return data

    def fileno(self):
        return -1

    def shutdown(self, how):
        pass

    def close(self):
        pass


_SENT: list = []  # (dpid, bytes) POX wrote during the current event


class XidCounter:
    """libopenflow's xid generator (a generator, which cannot be pickled), as a picklable counter."""

    def __init__(self, start=1, stop=0x7FFFFFFF):
        self.i, self.start, self.stop = start, start, stop

    def __call__(self):
        i = self.i
        self.i = self.start if i + 1 > self.stop else i + 1
        return i


class ErrorLog(logging.Handler):
    """The exceptions POX logs and swallows while handling an event (its handlers' crashes)."""

    def __init__(self):
        super().__init__(logging.ERROR)
        self.records = []

    def emit(self, record):
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            tb = record.exc_info[2]
            frame = traceback.extract_tb(tb)[-1] if tb is not None else None
            where = f"{os.path.basename(frame.filename)}:{frame.lineno} {frame.name}: " if frame else ""
            self.records.append(f"{where}{type(exc).__name__}: {exc}")


# ---------------------------------------------------------------- the POX side
_INFRA_MODULES = ("pox.core", "pox.boot", "pox.openflow.of_01", "pox.openflow.libopenflow_01", "pox.openflow.util",
                  "pox.lib.")


def _state_modules(new, home):
    """The modules whose globals are state: those launching the components imported from the checkout,
    but for POX's own infrastructure (the core, OpenFlow's wire library and connections, pox.lib)."""
    out = []
    for name in sorted(new):
        mod = sys.modules.get(name)
        path = getattr(mod, "__file__", None) or ""
        if path and os.path.abspath(path).startswith(home + os.sep) and not name.startswith(_INFRA_MODULES):
            out.append(name)
    return out


class PoxComponentsServer:
    """One POX core and the components of one spec (see the module docstring)."""

    def __init__(self):
        self.core = None
        self.of = None
        self.of_01 = None
        self.modules = []       # the components' modules: their globals are state
        self.infra = {}         # name -> object that travels by name
        self.names = {}         # id(object) -> name
        self.functions = FunctionTable()
        self.errors = ErrorLog()
        self.sched = ModelScheduler()

    # ---- init
    def init(self, home, words):
        home = os.path.abspath(home)
        for p in (os.path.join(home, "ext"), home):
            if p not in sys.path:
                sys.path.insert(0, p)
        time.time = ModelClock.time  # every POX time.time() reads the model's clock
        import pox.lib.recoco as recoco
        import pox.lib.recoco.recoco as recoco_impl
        import pox.lib.revent.revent as revent

        pox_state.RECOCO = recoco_impl
        recoco.Scheduler = lambda *a, **k: self.sched  # the core's scheduler: no thread
        recoco_impl.defaultScheduler = self.sched       # timers made without naming a scheduler
        import pox.core

        core = self.core = pox.core.initialize(threaded_selecthub=False, epoll_selecthub=False,
                                               handle_signals=False)
        import pox.openflow
        import pox.openflow.libopenflow_01 as of
        import pox.openflow.of_01 as of_01

        self.of, self.of_01, self.revent = of, of_01, revent
        of.generate_xid = XidCounter()
        of._logger = core.getLogger("libopenflow_01")
        of_01.deferredSender = DeferredSenderStandIn()
        logging.getLogger().addHandler(self.errors)
        before = set(sys.modules)
        pox.openflow.launch()
        self._launch(list(words))
        core.goUp()
        self._drain()
        self.modules = _state_modules(set(sys.modules) - before, home)
        self.infra = {"core": core, "scheduler": self.sched, "default_handlers": of_01._default_handlers,
                      "default_handler_table": of_01._default_handlers.handlers, "unpackers": of_01.unpackers,
                      "dummy_nexus": of_01._dummyOFNexus, "deferred_sender": of_01.deferredSender}
        self.names = {id(v): k for k, v in self.infra.items()}
        self.errors.records.clear()
        self.sched.calls.clear()
        state, key = self.save()
        apps = sorted(n for n in core.components if n not in ("core", "openflow", "OpenFlowConnectionArbiter"))
        return {"apps": apps, "state": state, "key": key, "version": 1, "timers": sorted(self.sched.pending)}

    def _launch(self, words):
        """Import and launch the components as ``pox.boot._do_launch`` does, with boot's own import rules."""
        import pox.boot as boot

        order, params = [], []
        cur = None
        for w in words:
            if not w.startswith("-"):
                name, _, first = w.partition("=")
                cur = {None: first} if first else {}
                order.append(name)
                params.append(cur)
            elif cur is not None:
                k, eq, v = w.lstrip("-").partition("=")
                cur[k.replace("-", "_")] = v if eq else True
        for name, kw in zip(order, params, strict=True):
            mod_name, _, func = name.partition(":")
            found = boot._do_import(mod_name)
            if found is False:
                err = PoxUserError(f"POX component '{mod_name}' cannot be imported (see the log)",
                                "check the component's name and that its module imports")
                err.import_error = [mod_name, mod_name, "cannot be imported"]
                raise err
            launch = getattr(sys.modules[found], func or "launch", None)
            if not isinstance(launch, types.FunctionType):
                raise PoxUserError(f"POX component '{name}' has no launch function",
                                "name a component module that defines launch()")
            first = kw.pop(None, None)
            try:
                if launch(*((first,) if first is not None else ()), **kw) is False:
                    raise PoxUserError(f"POX component '{name}' refused to start (its launch returned False)",
                                    "check its options")
            except TypeError as exc:
                raise PoxUserError(f"POX component '{name}' does not take these options: {exc}",
                                "give the options its launch() function takes") from None

    # ---- state
    def _root(self):
        core = self.core
        return {"components": {k: v for k, v in core.components.items() if k != "core"},
                "core_handlers": getattr(core, "_eventMixin_handlers", {}),
                "waiters": core._waiters,
                "timers": self.sched.pending,
                "globals": {m: {k: v for k, v in vars(sys.modules[m]).items()
                                if not k.startswith("__") and not isinstance(v, types.ModuleType)
                                and not isinstance(v, type) and not callable(v)}
                            for m in self.modules}}

    def _counters(self):
        return {"xid": self.of.generate_xid, "con_id": self.of_01.Connection.ID,
                "eid": getattr(self.revent, "_nextEventID", None)}

    def save(self):
        root = self._root()
        buf = io.BytesIO()
        try:
            StatePickler(buf, self.names, self.functions).dump((root, self._counters()))
        except Exception as exc:
            raise PoxUserError(f"cannot save the POX components' state: {exc}",
                            "the model checker saves POX's objects with pickle; components that keep "
                            "threads, sockets or generators in their state cannot be model-checked") from None
        freeze = Freezer(self.names)
        key = (freeze(root["components"]), freeze.handlers(root["core_handlers"]), freeze(root["waiters"]),
               freeze(root["globals"]), freeze(root["timers"]))
        return buf.getvalue(), key

    def restore(self, data):
        root, counters = StateUnpickler(io.BytesIO(data), self.infra, self.functions).load()
        core = self.core
        core.components.clear()
        core.components["core"] = core
        core.components.update(root["components"])
        core._eventMixin_handlers = root["core_handlers"]
        core._waiters = root["waiters"]
        self.sched.pending = root["timers"]
        for m, values in root["globals"].items():
            vars(sys.modules[m]).update(values)
        self.of.generate_xid = counters["xid"]
        self.of_01.Connection.ID = counters["con_id"]
        if counters["eid"] is not None:
            self.revent._nextEventID = counters["eid"]

    # ---- events
    def event(self, state, event, now=0.0):
        ModelClock.now = float(now)
        self.restore(state)
        del _SENT[:]
        self.errors.records.clear()
        kind, dpid, data = event
        if kind == "join":
            self._join(dpid, data)
        elif kind == "msg":
            con = self._connection(dpid)
            self._feed(con, data)
        elif kind == "timer":
            try:
                self.sched.fire(data.decode())
            except Exception:  # recoco logs a task's exception and the task ends; so does the timer here
                logging.getLogger("recoco").exception("Exception in timer %s", data.decode())
        elif kind == "leave":
            con = self.core.openflow.getConnection(dpid)
            if con is not None:
                con.disconnect()
        else:
            raise PoxUserError(f"unknown event kind {kind!r}", "use join, msg, timer or leave")
        self._drain()
        out = list(_SENT)
        new_state, key = self.save()
        return {"state": new_state, "key": key, "out": out, "errors": list(self.errors.records),
                "datapaths": {}, "timers": sorted(self.sched.pending)}

    def _connection(self, dpid):
        con = self.core.openflow.getConnection(dpid)
        if con is None:
            raise PoxUserError(f"message from switch {dpid}, which has not joined", "deliver a join event first")
        return con

    def _feed(self, con, data):
        con.sock.inbox += data
        while con.sock.inbox:
            if not con.read():
                break

    def _join(self, dpid, features):
        """POX's handshake with a switch: HELLO, FEATURES_REPLY, then the reply to POX's barrier.

        What POX sends before the connection is up (HELLO, the features and
        description requests, SET_CONFIG, its delete-all FLOW_MOD and the
        barrier) is the handshake, not part of the model (the model's
        switches start empty); what the components send on ConnectionUp is.
        """
        of = self.of
        con = self.of_01.Connection(ModelSocket(dpid))
        hello = of.ofp_hello()
        hello.xid = 0
        self._feed(con, hello.pack())
        self._feed(con, features)
        barrier = [d for _, d in _SENT if len(d) >= 8 and d[1] == of.OFPT_BARRIER_REQUEST]
        if not barrier:
            raise PoxUserError(f"POX did not finish the handshake with switch {dpid}",
                            "check the log: the arbiter or a component refused the connection")
        del _SENT[:]
        reply = of.ofp_barrier_reply()
        reply.xid = struct.unpack("!I", barrier[-1][4:8])[0]
        self._feed(con, reply.pack())

    def _drain(self):
        calls = self.sched.calls
        while calls:
            func, args, kw = calls.pop(0)
            try:
                func(*args, **kw)
            except Exception:
                logging.getLogger("recoco").exception("Exception calling %s", func)


def _handle(server, req):
    op = req.get("op")
    if op == "init":
        return server.init(req["home"], list(req["words"]))
    if op == "event":
        return server.event(req["state"], tuple(req["event"]), req.get("now", 0.0))
    raise PoxUserError(f"unknown request {op!r}", "send init, event or quit")


def main():
    server = PoxComponentsServer()
    return handler_protocol.serve(lambda req: _handle(server, req), "NETSLEUTH_POX_LOGLEVEL")


if __name__ == "__main__":
    sys.exit(main())
