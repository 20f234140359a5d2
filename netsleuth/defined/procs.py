"""Nodes as OS processes over loopback TCP: the same node code, real asynchrony.

Every node is a forked process with its own event loop (``selectors``): one
TCP connection per directed link (FIFO, like the simulated links), a
control pipe to the coordinator, beacons from the beacon node by the wall
clock, and an emulated link delay (netem-style: each message is held for
``mean * U(1-j, 1+j)`` drawn from the OS's entropy, so runs really differ).
The substrate is the very same :class:`~netsleuth.defined.rollback.RBRuntime`
(or arrival-order delivery for ``plain``); messages cross the wire as JSON
lines.

RB checkpoints are forked processes, as in the paper (section 3): see
:class:`ForkCheckpointer` (``fork_checkpoints=False`` uses the in-process
pickled snapshots instead).
"""

from __future__ import annotations

import collections
import heapq
import json
import multiprocessing as mp
import os
import pickle
import random
import selectors
import socket
import time
from typing import Any

from netsleuth.defined.message import START_OSEQ, Entry, Tags
from netsleuth.defined.node_runtime import NodeRuntime
from netsleuth.defined.ordering import by_name
from netsleuth.defined.rollback import RBRuntime, Transport
from netsleuth.defined.scenarios import Scenario
from netsleuth.defined.sim import RunResult, SimConfig
from netsleuth.errors import NetsleuthError


def _enc(obj: dict) -> bytes:
    return (json.dumps(obj, separators=(",", ":")) + "\n").encode()


def _entry_json(e: Entry) -> dict:
    return {"uid": e.uid, "kind": e.kind, "dst": e.dst, "src": e.src, "tags": e.tags.to_json(),
            "payload": e.payload, "name": e.name}


def _entry(d: dict) -> Entry:
    return Entry(int(d["uid"]), d["kind"], d["dst"], d["src"], Tags.from_json(d["tags"]), d["payload"], d["name"])


class Resumed(Exception):
    """Raised in a checkpoint process the moment it takes over from the live node."""


class ForkCheckpointer:
    """Checkpoints as forked processes (the paper's section 3).

    ``take``: ``fork()``; the child goes on as the live node, the parent stays
    frozen at this point, blocked on a pipe. ``resume``: the live node writes
    everything the checkpoint cannot know -- the substrate's history, limbo
    and counters, the node's socket buffers and held-back sends, but *not*
    the software's state, which the checkpoint's own memory holds as it was --
    down the pipe and exits; the checkpoint adopts it and raises
    :class:`Resumed` to rejoin the event loop. ``discard``: tell a checkpoint
    to exit. Sockets, pipes and the epoll set are shared by all the processes
    of a node; only the live one uses them.
    """

    HOST_SKIP = ("st", "ordering", "transport", "new_uid", "checkpointer", "_sent_now")
    LOOP_KEEP = ("heap", "seq_n", "last_depart", "beacon_seen", "sent", "received", "uid_next", "bufs", "inbox",
                 "next_beacon", "rng", "forks", "resumes")

    def __init__(self, loop: _Loop) -> None:
        self.loop = loop

    def take(self, host: RBRuntime) -> tuple[int, int]:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            self.loop.forks += 1
            return (os.getppid(), w)
        os.close(w)
        with os.fdopen(r, "rb") as f:
            tag = f.read(1)
            if tag != b"R":
                os._exit(0)
            blob = f.read()
        host_part, loop_part = pickle.loads(blob)
        for k, v in host_part.items():
            setattr(host, k, v)
        for k, v in loop_part.items():
            setattr(self.loop, k, v)
        self.loop.resumes += 1
        raise Resumed()

    def discard(self, token: tuple[int, int]) -> None:
        _pid, w = token
        try:
            os.write(w, b"D")
            os.close(w)
        except OSError:
            pass

    def resume(self, host: RBRuntime, token: tuple[int, int]) -> None:
        host_part = {k: v for k, v in vars(host).items() if k not in self.HOST_SKIP}
        loop_part = {k: getattr(self.loop, k) for k in self.LOOP_KEEP}
        blob = pickle.dumps((host_part, loop_part), protocol=pickle.HIGHEST_PROTOCOL)
        _pid, w = token
        with os.fdopen(w, "wb") as f:
            f.write(b"R" + blob)
        os._exit(0)

    def discard_all(self, host: RBRuntime) -> None:
        for tok in host.ckpts:
            if tok is not None:
                # with a ForkCheckpointer installed, ckpts hold its (pid, fd) tokens
                self.discard(tok)  # type: ignore[arg-type]
        host.ckpts = [None] * len(host.ckpts)


class _Loop:
    """One node process: sockets, delayed sends, beacons, the host.

    All loop state lives on ``self`` (nothing in locals across iterations), so
    a fork checkpoint that takes over can adopt it and carry on.
    """

    def __init__(self, name: str, sc: Scenario, cfg: SimConfig, index: int, listeners: dict[str, socket.socket],
                 ports: dict[str, int], ctl: Any, fork_checkpoints: bool) -> None:
        self.name = name
        self.cfg = cfg
        self.ctl = ctl
        self.rng = random.Random(os.urandom(16))  # real, unseeded: production timing
        self.delays = sc.net.delays()[name]
        self.heap: list[tuple] = []
        self.seq_n = 0
        self.uid_next = index << 40
        self.last_depart: dict[str, float] = {}
        self.beacon_seen = 0
        self.recorded: list[dict] = []
        self.timers: list[tuple] = []
        self.sent = 0       # lines written to links (messages, rollback notices, beacons)
        self.received = 0   # lines read from links
        self.t_end = float("inf")
        self.bufs: dict[int, bytes] = {}
        self.inbox: collections.deque = collections.deque()
        self.next_beacon = 1
        self.forks = 0
        self.resumes = 0
        loop = self

        class LoopTransport:
            def transmit(self, e: Entry, depart: float) -> None:
                loop.send(e.dst, {"t": "msg", "e": _entry_json(e)})

            def transmit_anti(self, src: str, dst: str, uid: int, depart: float) -> None:
                loop.send(dst, {"t": "anti", "uid": uid})

        common: dict[str, Any] = dict(interval=cfg.interval, hop_bound=cfg.hop_bound, new_uid=self.new_uid)
        app = sc.factory(name)
        self.forker: ForkCheckpointer | None = None
        if cfg.mode == "rb":
            # LoopTransport has no transmit_batch: batch_rollback is off for node processes
            transport: Transport = LoopTransport()  # type: ignore[assignment]
            self.host: NodeRuntime = RBRuntime(name, app, self.delays, rng_seed=f"defined:{name}",
                                     ordering=by_name(cfg.ordering), transport=transport, horizon=cfg.horizon,
                                     window=cfg.window, proc_time=0.0, restore_time=0.0,
                                     checkpoint_every=cfg.checkpoint_every, **common)
            if fork_checkpoints:
                self.forker = ForkCheckpointer(self)
                self.host.checkpointer = self.forker
        else:
            self.host = _ProcPlainRuntime(name, app, self.delays, rng_seed=f"{os.getpid()}:{name}", loop=self, **common)
        self.listener = listeners[name]
        for other, s in listeners.items():
            if other != name:
                s.close()
        self.ports = ports

    def new_uid(self) -> int:
        self.uid_next += 1
        return self.uid_next

    def next_seq(self) -> int:
        self.seq_n += 1
        return self.seq_n

    # ------------------------------------------------------------- wiring
    def connect(self) -> None:
        self.out: dict[str, socket.socket] = {}
        for nb in self.host.neighbors:
            s = socket.create_connection(("127.0.0.1", self.ports[nb]))
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.sendall(_enc({"hello": self.name}))
            self.out[nb] = s
        self.inbound: list[socket.socket] = []
        for _ in self.host.neighbors:
            c, _addr = self.listener.accept()
            self.inbound.append(c)
        self.listener.close()

    def send(self, dst: str, obj: dict) -> None:
        mean = self.delays[dst] / 1e6
        j = self.cfg.jitter
        at = max(time.monotonic() + mean * self.rng.uniform(1 - j, 1 + j), self.last_depart.get(dst, 0.0))
        self.last_depart[dst] = at  # FIFO per link, as TCP
        heapq.heappush(self.heap, (at, self.next_seq(), dst, _enc(obj)))

    # ---------------------------------------------------------------- run
    def run(self) -> None:
        self.connect()
        self.ctl.send("ready")
        self.t0 = self.ctl.recv()
        self.t_end = self.t0 + (self.cfg.horizon + 1) * self.cfg.interval
        self.sel = selectors.DefaultSelector()
        for c in self.inbound:
            c.setblocking(False)
            self.sel.register(c, selectors.EVENT_READ)
            self.bufs[c.fileno()] = b""
        self.sel.register(self.ctl.fileno(), selectors.EVENT_READ, data="ctl")
        self.source = self.name == (self.cfg.beacon_source or min(self.ports))
        self.stopped = False
        self._guard(self._start)
        while not self.stopped:
            self._guard(self._step)

    def _guard(self, fn: Any) -> None:
        """Run ``fn``; if this process is a checkpoint that just took over, finish its replay first."""
        while True:
            try:
                fn()
                return
            except Resumed:
                fn = self.host.run  # type: ignore[attr-defined]  # an RB or plain runtime

    def _start(self) -> None:
        if isinstance(self.host, RBRuntime):
            self.host.start()
        else:
            # an RB or plain runtime
            self.host.deliver(Entry(self.host.new_uid(), "start", self.name, self.name,  # type: ignore[attr-defined]
                                    Tags(0, 0, 0, self.name, START_OSEQ, "start", self.name, 0)))

    def _step(self) -> None:
        while self.inbox:
            self._handle(self.inbox.popleft())
        now = time.monotonic()
        while self.heap and self.heap[0][0] <= now:
            _, _, dst, data = heapq.heappop(self.heap)
            self.out[dst].sendall(data)
            self.sent += 1
        while self.timers and self.timers[0][0] <= now:
            _, _, e = heapq.heappop(self.timers)
            self.host.deliver(e)  # type: ignore[attr-defined]  # an RB or plain runtime
        nb = self.next_beacon
        if self.source and nb <= self.cfg.horizon and now >= self.t0 + nb * self.cfg.interval:
            self.next_beacon += 1
            self._beacon(nb, None)
            return
        wake = [h[0] for h in (self.heap[:1] + self.timers[:1])]
        if self.source and nb <= self.cfg.horizon:
            wake.append(self.t0 + nb * self.cfg.interval)
        timeout = max(0.0, min(wake) - now) if wake else 0.5
        for key, _ in self.sel.select(timeout):
            if key.data == "ctl":
                msg = self.ctl.recv()
                if msg["t"] == "stop":
                    self.ctl.send(self._report())
                    if self.forker is not None:
                        # fork checkpoints run with RB only
                        self.forker.discard_all(self.host)  # type: ignore[arg-type]
                    self.stopped = True
                    return
                if msg["t"] == "stat":
                    self.ctl.send({"sent": self.sent, "received": self.received,
                                   "pending": len(self.heap) + len(self.timers) + len(self.inbox)})
                    continue
                self.inbox.append(msg)
                continue
            sock = key.fileobj
            try:
                chunk = sock.recv(65536)  # type: ignore[union-attr]  # only sockets are registered
            except BlockingIOError:
                continue
            if not chunk:
                self.sel.unregister(sock)
                continue
            buf = self.bufs[sock.fileno()] + chunk  # type: ignore[union-attr]  # only sockets are registered
            # only sockets are registered
            *lines, self.bufs[sock.fileno()] = buf.split(b"\n")  # type: ignore[union-attr]
            for line in lines:
                m = json.loads(line)
                if "hello" not in m:
                    self.received += 1
                    self.inbox.append(m)

    def _handle(self, m: dict) -> None:
        h = self.host
        if m["t"] == "msg":
            e = _entry(m["e"])
            # an RB or plain runtime
            h.arrive(e) if isinstance(h, RBRuntime) else h.deliver(e)  # type: ignore[attr-defined]
        elif m["t"] == "anti":
            h.anti(int(m["uid"]))  # type: ignore[attr-defined]  # an RB or plain runtime
        elif m["t"] == "beacon":
            self._beacon(int(m["g"]), m["from"])
        elif m["t"] == "ext":
            self._external(m["event"])

    def _beacon(self, g: int, frm: str | None) -> None:
        if frm is not None:
            self.host.counters.beacons += 1
        if g <= self.beacon_seen:
            return
        self.beacon_seen = g
        for nb in self.host.neighbors:
            if nb != frm and nb not in self.host.st.down:
                self.send(nb, {"t": "beacon", "g": g, "from": self.name})
        if isinstance(self.host, RBRuntime):
            self.host.advance(g)

    def _external(self, event: dict) -> None:
        h = self.host
        if isinstance(h, RBRuntime):
            h.external(event)  # recorded in h.ext_log
        else:
            rec: dict[str, Any] = {"node": self.name, "group": 0, "oseq": len(self.recorded), "event": event}
            self.recorded.append(rec)
            # an RB or plain runtime
            h.deliver(Entry(h.new_uid(), "ext", self.name, self.name,  # type: ignore[attr-defined]
                            Tags(0, 0, 0, self.name, rec["oseq"], "ext", self.name, 0), event))

    def _report(self) -> dict:
        h = self.host
        ext = h.ext_log if isinstance(h, RBRuntime) else self.recorded
        # an RB or plain runtime
        return {"deliveries": h.delivery_sequence(), "routes": h.st.app.routes(),  # type: ignore[attr-defined]
                "state": h.st.app.state(), "counters": h.counters, "externals": ext,
                "forks": self.forks, "resumes": self.resumes}


class _ProcPlainRuntime(NodeRuntime):
    def __init__(self, *args: Any, loop: _Loop, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.loop = loop
        self.records: list[tuple] = []
        self.t0 = time.monotonic()

    def virtual_now(self, entry: Entry) -> float:
        return time.monotonic() - self.t0

    def _out_msg(self, e: Entry) -> Entry:
        self.counters.sends += 1
        self.loop.send(e.dst, {"t": "msg", "e": _entry_json(e)})
        return e

    def _out_timer(self, e: Entry, seconds: float) -> Entry:
        at = time.monotonic() + seconds
        if at <= self.loop.t_end:  # like the simulator: no timer fires past the horizon
            heapq.heappush(self.loop.timers, (at, self.loop.next_seq(), e))
        return e

    def deliver(self, e: Entry) -> None:
        rec = self.dispatch(e)
        if rec is not None:
            self.records.append(rec)

    def delivery_sequence(self) -> list[tuple]:
        return list(self.records)


def _child(name: str, sc: Scenario, cfg: SimConfig, index: int, listeners: dict, ports: dict, ctl: Any,
           fork_checkpoints: bool) -> None:
    _Loop(name, sc, cfg, index, listeners, ports, ctl, fork_checkpoints).run()


class ProcessRunError(NetsleuthError):
    pass


def _quiesce(ctls: dict, deadline: float) -> None:
    """Wait until every line sent has been read and nothing is held back, twice in a row."""
    calm = 0
    while time.monotonic() < deadline:
        stats = []
        for c in ctls.values():
            c.send({"t": "stat"})
        for n, c in ctls.items():
            if not c.poll(10):
                raise ProcessRunError(f"node process {n} stopped answering",
                                      "see its traceback above; rerun without --processes to debug")
            stats.append(c.recv())
        if sum(s["sent"] for s in stats) == sum(s["received"] for s in stats) and \
                not any(s["pending"] for s in stats):
            calm += 1
            if calm == 2:
                return
        else:
            calm = 0
        time.sleep(0.05)
    raise ProcessRunError("the node processes never went quiet",
                          "the machine may be overloaded; rerun with fewer --runs or without --processes")


def run_processes(sc: Scenario, cfg: SimConfig, timeout: float = 60.0, fork_checkpoints: bool = True) -> RunResult:
    """One run with every node in its own process; blocks for about horizon * interval seconds.

    ``fork_checkpoints``: RB checkpoints are forked processes (default), else pickled snapshots.
    """
    ctx = mp.get_context("fork")  # the scenario's node factory is a closure: inherit it, do not pickle it
    listeners = {}
    for n in sc.net.nodes:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(64)
        listeners[n] = s
    ports = {n: s.getsockname()[1] for n, s in listeners.items()}
    procs, ctls = [], {}
    try:
        for i, n in enumerate(sc.net.nodes):
            parent, child = ctx.Pipe()
            p = ctx.Process(target=_child, args=(n, sc, cfg, i + 1, listeners, ports, child, fork_checkpoints),
                            daemon=True)
            p.start()
            procs.append(p)
            ctls[n] = parent
        for s in listeners.values():
            s.close()
        for n, c in ctls.items():
            if not c.poll(10) or c.recv() != "ready":
                raise ProcessRunError(f"node process {n} did not come up",
                                      "check that loopback TCP works here; rerun without --processes")
        t0 = time.monotonic() + 0.05
        for c in ctls.values():
            c.send(t0)
        for x in sorted(sc.externals, key=lambda x: (x.t, x.node)):
            time.sleep(max(0.0, t0 + x.t - time.monotonic()))
            ctls[x.node].send({"t": "ext", "event": x.event})
        time.sleep(max(0.0, t0 + (cfg.horizon + 1) * cfg.interval - time.monotonic()))
        _quiesce(ctls, time.monotonic() + timeout)
        reports = {}
        for c in ctls.values():
            c.send({"t": "stop"})
        for n, c in ctls.items():
            if not c.poll(10):
                raise ProcessRunError(f"node process {n} did not report",
                                      "see its traceback above; rerun without --processes to debug")
            reports[n] = c.recv()
    finally:
        for p in procs:
            p.join(timeout=2)
            if p.is_alive():
                p.kill()
    ext = sorted((x for r in reports.values() for x in r["externals"]), key=lambda x: (x["group"], x["node"],
                                                                                     x["oseq"]))
    return RunResult(mode=cfg.mode, ordering=cfg.ordering, seed=cfg.seed,
                     deliveries={n: reports[n]["deliveries"] for n in sc.net.nodes},
                     routes={n: reports[n]["routes"] for n in sc.net.nodes},
                     states={n: reports[n]["state"] for n in sc.net.nodes},
                     counters={n: reports[n]["counters"] for n in sc.net.nodes},
                     externals=ext, last_activity=0.0, first_external=None, events=0,
                     extra={"forks": sum(r["forks"] for r in reports.values()),
                            "resumes": sum(r["resumes"] for r in reports.values())})
