"""A running daemon network, driven one DEFINED message at a time.

:class:`LiveNet` brings a :class:`~.spec.DaemonNet` up (:class:`~.host.NamespaceHost`),
tells the relay to hold BGP UPDATEs, and then works in *groups*: a group
closes when every BGP session is Established and no new message has
arrived for ``quiet`` seconds (or ``expect`` messages are held). Each held
message is tagged like any DEFINED message -- group, the link's estimated
delay, origin (the sending router), its number among the messages the origin sent on that link -- and
:meth:`deliver` hands exactly one to its receiver, returning only once the
receiver's TCP stack has acknowledged it *and* the daemon reports through
its control socket that it has processed it. So the daemons see the
messages in the order netsleuth chooses, and nothing else.

There are no process checkpoints (CRIU cannot dump these daemons here), so
another order is explored by running again from the start: the daemons'
start-up is deterministic up to the held messages, which is the point of
holding them.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from pathlib import Path

from netsleuth.defined.daemons import control
from netsleuth.defined.daemons.clock import FakeTimeClock
from netsleuth.defined.daemons.host import NamespaceHost, check_environment
from netsleuth.defined.daemons.reader import Reader
from netsleuth.defined.daemons.spec import DaemonNet
from netsleuth.defined.message import Tags
from netsleuth.defined.ordering import Ordering, by_name
from netsleuth.errors import NetsleuthError

# How long a released message may take to reach the receiver's socket before the receiver is poked
# anyway: every IP packet the relay releases is counted once the kernel has delivered or dropped it,
# so this bounds only a frame the kernel drops without counting it (one to another host's MAC address).
RECEIVED_WAIT = 5.0


class LiveNetError(NetsleuthError):
    """The daemon network did not reach a state netsleuth waits for."""


@dataclass
class Held:
    """A message the relay holds, with its DEFINED tags."""

    id: int
    src: str
    dst: str
    tags: Tags
    messages: list[dict]
    arrival: int
    delivered: bool = False
    dropped: bool = False      # lost while the relay held it: its link was cut or its connection closed

    def words(self) -> str:
        parts = []
        for m in self.messages:
            if m.get("type") != "UPDATE" or m.get("eor"):
                parts.append("End-of-RIB" if m.get("eor") else m.get("type", "?"))
                continue
            bits = [f"announce {','.join(m['nlri'])}" if m.get("nlri") else "",
                    f"withdraw {','.join(m['withdrawn'])}" if m.get("withdrawn") else "",
                    f"as_path {' '.join(map(str, m.get('as_path', [])))}" if m.get("as_path") else "",
                    f"med {m['med']}" if m.get("med") is not None else "",
                    f"next_hop {m['next_hop']}" if m.get("next_hop") else ""]
            parts.append("UPDATE " + " ".join(b for b in bits if b))
        return f"#{self.id} g{self.tags.group} {self.src}->{self.dst}: " + "; ".join(parts)

    def identity(self) -> tuple[str, str, int]:
        """What names this message across runs: sender, receiver and its number on that link direction."""
        return (self.src, self.dst, self.tags.oseq)


@dataclass
class LiveNet:
    net: DaemonNet
    daemon: str
    ordering: Ordering = field(default_factory=lambda: by_name("defined"))
    hold: bool = True
    env: dict[str, str] = field(default_factory=dict)
    rundir: Path | None = None
    timeout: float = 30.0
    clocked: bool = False          # run the daemons on a virtual clock (libfaketime)
    seed: int = 0

    def __post_init__(self) -> None:
        self.host: NamespaceHost | None = None
        self.reader: Reader | None = None
        self.held: dict[int, Held] = {}
        self._open: dict[int, Held] = {}   # held and not yet delivered nor lost (pruned by pending())
        self.group = 0
        self.oseq: dict[str, int] = {}
        self.rbuf = b""
        self._ctl_timeout: float | None = None   # the timeout last set on the relay's control socket
        self.log: list[dict] = []     # what happened, in order: deliveries and what the receiver then held
        self.clock: FakeTimeClock | None = None
        self.dead: set[str] = set()
        self.boot_seconds = 0.0
        self.on_delivery: Callable[[Held], None] | None = None   # called after each delivered datagram
        self.on_poke: Callable[[], None] | None = None            # called after each round of pokes (timers ran)

    # -- life cycle ----------------------------------------------------------
    def __enter__(self) -> LiveNet:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        check_environment(self.daemon, clock=self.clocked)
        self.host = NamespaceHost(self.net, self.daemon, self.rundir, hold=self.hold, hold_datagrams=self.clocked)
        if self.clocked:
            self.clock = FakeTimeClock(self.host.rundir / "clock", self.seed)
            self.host.env = {r.name: self.clock.env(r.index, self.daemon) for r in self.net.routers}
        self.host.start()
        reader = self.reader = Reader(self.net, self.daemon, self.host.rundir)
        host = self.host
        try:
            control.wait_for(lambda: all(reader.reachable(r.name) for r in self.net.routers),
                             self.timeout, "every daemon's control socket")
        except control.ControlError:
            down = [r.name for r in self.net.routers if not reader.reachable(r.name)]
            raise LiveNetError(f"the daemons of {', '.join(down)} did not start", "see their logs (below)",
                               "\n".join(host.log_tail(r) for r in down)) from None
        if self.clocked:
            self._boot()

    def _boot(self, limit: int = 30) -> None:
        """Advance the clock, delivering nothing, until RIP runs on every link of every router.

        No RIP message may reach a daemon before its RIP runs on the link (it would be dropped).
        BIRD brings RIP and OSPF up on its event loop, with no timer: that happens at virtual
        time 0, before the clock first moves (else a busy machine would let some routers start a
        second later than others, with one Hello fewer). FRR's ripd enables its interfaces only
        once zebra has told it about them, after the clock has moved; so the clock moves one
        second, then waits (in real time) for that.
        """
        reader, clock = self.reader, self.clock
        assert reader is not None and clock is not None
        rip = [r.name for r in self.net.routers if r.rip or r.ospf]
        if self.daemon == "bird":
            control.wait_for(lambda: all(reader.igp_ready(r) for r in rip), self.timeout,
                             "RIP/OSPF to start at virtual time 0", step=0.02)
            self._quiet(self.stats(), 200)   # and to send what it sends as it starts, at that time
        # FRR's ripd enables its interfaces on a timer it sets once connected to zebra: wait (in real
        # time) for the connections, then move the clock one second -- the same boot in every run
        control.wait_for(lambda: all(reader.zebra_clients_ready(r) for r in rip), self.timeout,
                         "the routing daemons to connect to zebra", step=0.02)
        if self.daemon == "frr":
            time.sleep(1.0)   # and for zebra's news of the interfaces to reach them (no counter shows it)
        clock.set(clock.now + 1)
        self.poke()
        self.poke()
        while True:
            # zebra talks to ripd in real time: give each virtual second real time to take effect, so
            # that the number of boot seconds does not depend on how busy the machine is
            try:
                # 15 s: zebra's news reaches ripd in well under a second on an idle machine; a loaded
                # one must not make the boot one virtual second longer (the histories would shift)
                control.wait_for(lambda: all(reader.igp_ready(r) for r in rip), 15.0, "RIP/OSPF", step=0.02)
                break
            except control.ControlError:
                pass
            if clock.now >= limit:
                raise LiveNetError(f"RIP/OSPF did not start on every link in {limit} virtual seconds",
                                   "see the routers' logs in the run directory")
            clock.set(clock.now + 1)
            self.poke()
            self.poke()
        # Start-up work that does not wait on the clock (netlink news of interfaces and addresses the
        # daemons have queued, the first messages on links that just came up) is done on the pokes: poke
        # until a round of pokes adds nothing at the relay (not until nothing happened for a while, which
        # a busy machine stretches), so that the first group holds all of it.
        self._quiet(self.stats(), 200)
        self.boot_seconds = clock.now
        for h in self.held.values():   # what the boot held is one group, the first: that of its last second
            h.tags = replace(h.tags, group=int(clock.now))

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()
            self.reader = None
        if self.host is not None:
            self.host.close()
            self.host = None

    # -- relay channel -----------------------------------------------------------
    @property
    def _ctl(self) -> socket.socket:
        assert self.host is not None and self.host.relay_ctl is not None
        return self.host.relay_ctl

    def _send(self, *ds: dict) -> None:
        """Commands to the relay, one JSON line each, in one write."""
        self._ctl.sendall("".join(json.dumps(d) + "\n" for d in ds).encode())

    def _events(self, timeout: float) -> list[dict]:
        """Relay events that arrive within ``timeout`` seconds (at least those already there)."""
        if timeout != self._ctl_timeout:   # (each change is a system call; most waits use the same few values)
            self._ctl.settimeout(timeout)
            self._ctl_timeout = timeout
        try:
            data = self._ctl.recv(65536)
            if not data:
                raise LiveNetError("the relay stopped", "see relay.log in the run directory")
            self.rbuf += data
        except (TimeoutError, BlockingIOError):
            pass
        if b"\n" not in self.rbuf:
            return []
        *lines, self.rbuf = self.rbuf.split(b"\n")
        out = []
        for line in lines:
            ev = json.loads(line.decode())
            self._apply(ev)
            out.append(ev)
        return out

    def _apply(self, ev: dict) -> None:
        """Book one relay event: a message held, or one lost (its link cut, its connection closed)."""
        if ev.get("ev") == "held":
            self._note_held(ev["unit"])
        elif ev.get("ev") in ("dropped", "reset") and ev["id"] in self.held:
            h = self.held[ev["id"]]
            h.delivered = h.dropped = True
            if ev["ev"] == "reset":
                self._renumber_after(h)
            self.log.append({ev["ev"]: h.id, "src": h.src, "dst": h.dst, "group": h.tags.group})

    def _wait_event(self, kind: str, timeout: float, uids: Collection[int] = ()) -> None:
        """Wait for the relay's ``kind`` event: one for each of ``uids`` when given."""
        left = set(uids)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            # in steps of at most half a second, the same for every wait (see _events)
            for ev in self._events(min(0.5, max(0.001, deadline - time.monotonic()))):
                if ev.get("ev") == kind:
                    left.discard(ev.get("id"))
                    if not left:
                        return
        raise LiveNetError(f"timed out waiting for the relay's {kind!r}", "see relay.log in the run directory")

    def _note_held(self, u: dict) -> None:
        # numbered per link direction: the relay reads each direction's frames in order, but two
        # directions' frames in whatever order its sockets wake (so a per-sender count would not repeat)
        src, key = u["src"], f"{u['src']}>{u['dst']}"
        seq = self.oseq.get(key, 0)
        self.oseq[key] = seq + 1
        ln = self.net.link_between(src, u["dst"])
        group = int(self.clock.now) if self.clock is not None else self.group   # on the clock: one group a second
        tags = Tags(group, ln.delay_us, 1, src, seq, "msg", src, ln.index)
        self.held[u["id"]] = self._open[u["id"]] = Held(u["id"], src, u["dst"], tags, u["messages"], u["arrival"])

    def _renumber_after(self, gone: Held) -> None:
        """A unit whose connection closed never counts: the later ones of its link direction move up.

        A message's identity across runs is its number on its link direction; the daemon
        sends the same announcement again on its next session, which must get the number
        the lost one had, as in a run where the first connection stayed.
        """
        key = f"{gone.src}>{gone.dst}"
        self.oseq[key] = self.oseq.get(key, 1) - 1
        for h in self.held.values():
            if h.src == gone.src and h.dst == gone.dst and h.tags.oseq > gone.tags.oseq:
                h.tags = replace(h.tags, oseq=h.tags.oseq - 1)

    # -- groups ------------------------------------------------------------------
    def find(self, ident: tuple[str, str, int]) -> Held | None:
        """The pending message named ``ident`` (see :meth:`Held.identity`), if this run holds it.

        A message whose connection closed before its delivery keeps its old number but is
        gone: the daemon announces it again on its next session, and that new message, which
        took over the number, is the one the identity names. (A busy machine can make a
        speaker's session flap while the first group gathers; the run then goes on with the
        new session, as a run whose first session stayed would.)
        """
        for h in self._open.values():   # (every undelivered message is among them, in the order held)
            if not h.delivered and h.identity() == ident:
                return h
        return None

    def pending(self) -> list[Held]:
        """Held messages not yet delivered, in the ordering function's order."""
        # from the messages still open, in the order they were held (sorted() keeps it among equal keys),
        # not from every message the run ever held: a long replay holds thousands
        self._open = {k: h for k, h in self._open.items() if not h.delivered}
        return sorted(self._open.values(), key=lambda h: self.ordering.key(h.tags))

    def collect(self, quiet: float = 1.0, expect: int | None = None) -> list[Held]:
        """Close the current group: wait for the sessions and for ``quiet`` seconds without a new message.

        With ``expect``, the group closes as soon as that many messages are pending.
        """
        assert self.reader is not None
        deadline = time.monotonic() + self.timeout
        routers = [r.name for r in self.net.routers if r.bgp]
        while not all(self.reader.sessions_up(r) for r in routers):
            self._events(0.05)
            if time.monotonic() > deadline:
                assert self.host is not None
                down = [r for r in routers if not self.reader.sessions_up(r)]
                raise LiveNetError(f"BGP sessions did not come up at {', '.join(down)}",
                                   "see the routers' logs (below)",
                                   "\n".join(self.host.log_tail(r.name) for r in self.net.routers))
        last, n = time.monotonic(), len(self.held)
        while True:
            if expect is not None and len(self.pending()) >= expect:
                break
            self._events(0.05)
            if len(self.held) != n:
                last, n = time.monotonic(), len(self.held)
            elif time.monotonic() - last >= quiet and expect is None:
                break
            if time.monotonic() > deadline:
                raise LiveNetError(f"only {len(self.pending())} of {expect} messages arrived",
                                   "see the routers' logs in the run directory")
        return self.pending()

    def deliver(self, uid: int) -> Held:
        """Hand one held message to its receiver and wait until the receiver has processed it."""
        reader = self.reader
        assert reader is not None
        h = self.held[uid]
        if _datagram(h):
            self._deliver_datagrams([h])
            return h
        before = reader.processed(h.dst, h.src)
        self._send({"cmd": "release", "id": uid})
        need = sum(_weight(m, self.daemon) for m in h.messages)
        # The daemon's own counter is the test; the receiver's TCP acknowledgement (the relay's
        # "acked" event) comes first and is only recorded. A session that closes meanwhile
        # ends the wait: its receiver will never process the message.

        def processed() -> bool:
            self._events(0.0)   # a "reset" marks h dropped
            return h.dropped or reader.processed(h.dst, h.src) >= before + need

        try:
            control.wait_for(processed, self.timeout, f"{h.dst} to process message #{uid}")
        except control.ControlError as exc:
            assert self.host is not None
            raise LiveNetError(exc.problem, "see the relay's state and the receiver's log (below)",
                               self._dump_state() + "\n" + self.host.log_tail(h.dst)) from None
        if h.dropped:
            raise LiveNetError(f"the BGP session {h.src} -> {h.dst} closed while message #{uid} was held",
                               "see relay-state.json and the daemons' logs (keep them with NETSLEUTH_KEEP_RUNDIR=DIR)",
                               self._dump_state())
        h.delivered = True
        self.log.append({"delivered": uid, "src": h.src, "dst": h.dst, "group": h.tags.group})
        return h

    def _dump_state(self) -> str:
        """The relay's state and what this run did, also written to relay-state.json in the run directory."""
        self._send({"cmd": "dump"})
        dump = [e for e in self._events(2.0) if e.get("ev") == "dump"]
        text = json.dumps({"relay": dump[:1], "log": self.log})
        if self.host is not None:
            with contextlib.suppress(OSError):
                (self.host.rundir / "relay-state.json").write_text(text + "\n")
        return text

    def _deliver_datagrams(self, batch: list[Held]) -> None:
        """RIP or OSPF messages, each to a router of its own: nothing acknowledges them, so each receiver
        is poked until it has read its message.

        The relay says "released" once a frame is on the receiver's veth; the receiver's kernel
        queues it for the daemon's socket in a softirq that a busy machine may run later. Nor does
        an answered poke show that the daemon has read it: BIRD reads a protocol socket only in a
        turn of its event loop with no other work pending, and a poke leaves some. A daemon that
        has not read the message by the next delivery reads it in another turn, maybe with the
        next one delivered to it, in whatever order its sockets come up (or after the round has
        closed, so that its answers join a later one). So: wait until the kernel has delivered the
        packet to the socket (:meth:`~.host.NamespaceHost.ip_delivered`), then poke until the
        daemon's routing sockets are empty -- it has read the message, and the daemons handle a
        packet in the turn that reads it -- and once more, so that the work that turn left for the
        next one has run too.

        The receivers are distinct and the relay holds whatever they send, so each sees just what
        it would if the messages went one after the other (its own message, then pokes, nothing
        from the others): they are released and waited for side by side, and only then told to
        ``on_delivery``, in ``batch`` order, each receiver's table read as it stood after its message.
        """
        assert self.reader is not None and self.host is not None
        host = self.host
        live = [h.dst for h in batch if h.dst not in self.dead]
        before = {r: host.ip_delivered(r) for r in live}
        self._send(*({"cmd": "release", "id": h.id} for h in batch))
        self._wait_event("released", self.timeout, [h.id for h in batch])
        what = f"message #{batch[0].id}" if len(batch) == 1 else f"messages #{', #'.join(str(h.id) for h in batch)}"
        if live:
            waiting = list(live)

            def arrived() -> bool:
                waiting[:] = [r for r in waiting if host.ip_delivered(r) == before[r]]
                return not waiting

            # a frame the kernel drops before IP input counts nowhere: not worth failing the run for
            with contextlib.suppress(control.ControlError):
                control.wait_for(arrived, RECEIVED_WAIT, f"the receivers' kernels to deliver {what}", step=0.001)
            self._read_all(live, what)
        for h in batch:
            h.delivered = True
            self.log.append({"delivered": h.id, "src": h.src, "dst": h.dst, "group": h.tags.group})
            if self.on_delivery is not None:
                self.on_delivery(h)

    def _read_all(self, routers: list[str], what: str) -> None:
        """Poke ``routers`` until their daemons have read every routing message waiting for them, then once more.

        The sockets are looked at before the first poke: a daemon asleep in poll() wakes on the message
        by itself and has mostly read it by now. The poke that ends the wait is sent after the read
        was seen either way, so its answer comes from a turn after the one that read the message."""
        assert self.reader is not None and self.host is not None
        host = self.host
        deadline = time.monotonic() + self.timeout
        while queued := [r for r in routers if host.routing_queued(r) > 0]:
            if time.monotonic() > deadline:
                raise LiveNetError(f"{queued[0]}'s daemon did not read {what} in {self.timeout:.0f} s of pokes",
                                   "see its log in the run directory")
            self.reader.poke_all(queued)
        self.reader.poke_all(routers)

    def next_group(self) -> None:
        self.group += 1

    # -- virtual time --------------------------------------------------------------
    def stats(self, exact: bool = False) -> dict:
        """The relay's counters: frames carried, RIP frames per "src>dst".

        ``exact``: after every frame the kernel has counted on the relay's interfaces is read, those
        a busy machine has not yet handed to the relay's sockets too.
        """
        self._send({"cmd": "stats", "exact": True} if exact else {"cmd": "stats"})
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            for ev in self._events(0.5):
                if ev.get("ev") == "stats":
                    return ev
        raise LiveNetError("the relay did not answer", "see relay.log in the run directory")

    def poke(self, routers: Collection[str] | None = None) -> None:
        """Make every live daemon (of ``routers``) run its event loop once: timers due on the virtual clock fire."""
        assert self.reader is not None
        self.reader.poke_all([r.name for r in self.net.routers if r.name not in self.dead
                              and (routers is None or r.name in routers)])

    def settle(self, rounds: int = 200) -> None:
        """Poke until the relay carries nothing new between two pokes: the network is idle at this time.

        On the virtual clock the relay holds every RIP message; here they are delivered, one at a
        time in the ordering function's order, until no daemon sends anything more at this time.

        The first round pokes every daemon (the clock moved, or a link or router changed). When the
        relay holds every message the routers exchange (no BGP: only OSPF and RIP datagrams), a later
        round pokes only the routers that were handed a message in it: any other one was idle when the
        round before it closed, and since then neither its clock nor its input has changed.
        """
        before = self.stats()
        held_all = self.clock is not None and not any(r.bgp for r in self.net.routers)
        routers: set[str] | None = None
        for _ in range(rounds):
            before = self._quiet(before, rounds, routers)
            pending = self.pending()
            if not pending:
                return
            # held messages of this round, in the ordering function's order: datagrams to distinct
            # receivers side by side (see _deliver_datagrams), any other message on its own
            for run in _side_by_side(pending):
                if _datagram(run[0]):
                    self._deliver_datagrams(run)
                else:
                    self.deliver(run[0].id)
            routers = {h.dst for h in pending} if held_all else None
            before = self.stats()
        raise LiveNetError(f"the network did not go idle at virtual time {self.clock.now if self.clock else 0}",
                           "the daemons keep sending: look for a loop in their logs")

    def _quiet(self, before: dict, rounds: int, routers: set[str] | None = None) -> dict:
        """Poke until a round of pokes adds nothing at the relay; its counters then.

        What a daemon sends in answer to a poke reaches the relay in real time (through a veth, and on a
        busy machine the kernel may finish that later); a round whose held messages were taken while one
        was still on its way would deliver that one a round later, in another order than a run that saw
        it in time. A round of pokes that moves no counter, after which no daemon has a routing message
        left unread in its sockets, closes the round: everything sent is held. (A daemon's event loop
        may put off reading a socket while it has other work, pokes included: that a round of pokes
        was answered does not show that it has read what it was given.) Only ``routers`` are poked
        and looked at for unread messages when given (see :meth:`settle`: every other router was idle,
        with nothing unread, when the round before closed, and has been handed nothing since), and any
        of them found with a message unread.
        """
        for _ in range(rounds):
            self.poke(routers)
            self.poke(routers)
            if self.on_poke is not None:
                self.on_poke()
            # an exact barrier: a frame still in the kernel on its way to the relay is part of this round (most
            # rounds of pokes add nothing, and a plain barrier first would then cost a second trip to the relay)
            after = self.stats(exact=True)
            if after == before:
                unread = self.unread(routers)
                if not unread:
                    return after
                if routers is not None:
                    routers = routers | set(unread)
            before = after
        raise LiveNetError(f"the network did not go idle at virtual time {self.clock.now if self.clock else 0}",
                           "the daemons keep sending: look for a loop in their logs")

    def unread(self, routers: Collection[str] | None = None) -> list[str]:
        """Live routers (of ``routers``) whose daemons have not yet read every routing message their kernel
        queued for them."""
        assert self.host is not None
        host = self.host
        return [r.name for r in self.net.routers if r.name not in self.dead and (routers is None or r.name in routers)
                and host.routing_queued(r.name) > 0]

    def advance(self, t: float) -> None:
        """Move the virtual clock to ``t`` and let every daemon catch up."""
        if self.clock is None:
            raise LiveNetError("this network runs on the wall clock", "start it with clocked=True")
        self.clock.set(t)
        self.settle()

    def crash(self, router: str) -> None:
        assert self.host is not None and self.reader is not None
        self.host.kill_router(router)
        self.reader.forget(router)
        self.dead.add(router)

    def restart(self, router: str) -> None:
        """Start a crashed router's daemons again, on the current virtual time, and wait until they run."""
        assert self.host is not None and self.reader is not None
        reader = self.reader
        self.host.start_router(router)
        control.wait_for(lambda: reader.reachable(router), self.timeout, f"{router}'s daemons to restart")
        if self.net.router(router).rip or self.net.router(router).ospf:
            control.wait_for(lambda: reader.igp_ready(router), self.timeout, f"{router}'s interfaces", step=0.01)
        self.dead.discard(router)

    def set_link(self, a: str, b: str, up: bool) -> None:
        """Cut or mend the link a-b at the relay (the routers' interfaces stay up: their timers notice)."""
        assert self.host is not None
        ln = self.net.link_between(a, b)
        ifaces = [self.host.relay_if(ln.index, ln.a), self.host.relay_if(ln.index, ln.b)]
        self._send({"cmd": "link", "ifaces": ifaces, "up": up})
        self._wait_event("link", self.timeout)


def _weight(m: dict, daemon: str) -> int:
    """How much one message moves the receiver's processed counter (see Reader.processed)."""
    if m.get("type") != "UPDATE":
        return 0
    if daemon == "frr":
        return 1
    return len(m.get("nlri", [])) + len(m.get("withdrawn", []))


def _datagram(h: Held) -> bool:
    """A RIP or OSPF message (nothing acknowledges it)."""
    return any(m.get("type") in ("RIP", "OSPF") for m in h.messages)


def _side_by_side(pending: list[Held]) -> list[list[Held]]:
    """``pending`` in order, cut into runs to deliver at once: datagrams to distinct receivers; any other alone."""
    runs: list[list[Held]] = []
    dsts: set[str] = set()
    for h in pending:
        if not _datagram(h):
            runs.append([h])
            dsts = set()
            continue
        if not runs or h.dst in dsts or not _datagram(runs[-1][0]):
            runs.append([])
            dsts = set()
        runs[-1].append(h)
        dsts.add(h.dst)
    return runs
