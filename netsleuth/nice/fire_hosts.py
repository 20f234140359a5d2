"""Host transitions of the model: a host sends a ping or a discovered packet, sends a reply from
its outbox, takes a frame off its wire, or moves to another switch port.

Each ``fire_<kind>(system, state, transition, effects)`` changes the child state ``state``
(copy-on-write: a host is copied before it changes) and records its footprint and the
property callbacks' violations in ``effects``; :class:`~netsleuth.nice.system.System`
picks the function by the transition's kind. A host's step is memoized by the host's
canonical key and the input, as the switches' and the controller's are (system.py).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from netsleuth.model.packet import Packet, arp_request
from netsleuth.nice.effects import Effects
from netsleuth.nice.firing import FiringSystem
from netsleuth.nice.interning import obj_hash, pushed_frame, remember, tail
from netsleuth.nice.state import HostState, SystemState
from netsleuth.nice.transitions import RECV, SEND, Transition


def _mut_host(system: FiringSystem, st: SystemState, i: int) -> HostState:
    hs = st.hosts[i].copy()
    st.hosts[i] = hs
    return hs


def host_emit(system: FiringSystem, st: SystemState, hs: HostState, frame: Packet, fx: Effects) -> None:
    pid = None
    if system.lineage:
        # ``sent`` is a multiset {(frame, count)} as a frozenset: hashing it never depends on order.
        count = 0
        for f, n in hs.sent:
            if f == frame:
                count = n
                break
        hs.sent = (hs.sent - {(frame, count)}) | {(frame, count + 1)}
        pid = (hs.host.name, frame, count)
    tag = (pid, ()) if system.lineage else None
    where = hs.location
    push(system, st, where, frame, tag, fx)
    cbs = system._cb["on_host_send"]
    if cbs:
        name = hs.host.name
        system._props(st, cbs, fx, name, pid, frame)


def push(system: FiringSystem, st: SystemState, where: tuple[str, int], frame: Packet, tag: Any, fx: Effects) -> None:
    if fx.footprint:
        fx.writes.add(("q",) + where)
    st.inq[where] = pushed_frame(st.inq.get(where, ()), frame, tag, where)


def fire_sendpkt(system: FiringSystem, st: SystemState, t: Transition, fx: Effects) -> None:
    _, i, frame = t
    hs = _mut_host(system, st, i)
    fx.writes.add(("host", i))
    if system.sendpkt_reads_ctl:
        fx.reads.add(("ctl",))  # discovered packets depend on the controller state (DPOR)
    host_emit(system, st, hs, frame, fx)


def fire_send(system: FiringSystem, st: SystemState, t: Transition, fx: Effects) -> None:
    i = t[1]
    fx.writes.add(("host", i))
    if system.memo:
        old = st.hosts[i]
        # ``received`` is not state (nothing in the model reads it) but callers may: keyed too
        mk = (old.hash_value(), SEND, i, old.host.received)
        hit = system._host_memo.get(mk)
        if hit is not None and (hit[0] is old._key or hit[0] == old._key):
            hs, frames = hit[1], hit[2]
        else:
            hs = old.copy()
            frames = _start_ping(system, hs, i)
            if hit is None:
                system._host_memo[mk] = (old.key(), hs, frames)
        if system.lineage:
            # emitting counts the frames in the host: a copy of the shared result (the frames
            # stay the memo's objects, so the queues they join are found by identity)
            hs = hs.copy()
        st.hosts[i] = hs
    else:
        hs = _mut_host(system, st, i)
        frames = _start_ping(system, hs, i)
    for frame in frames:
        host_emit(system, st, hs, frame, fx)


def _start_ping(system: FiringSystem, hs: HostState, i: int) -> list[Packet]:
    dst = hs.to_send[0]
    hs.to_send = hs.to_send[1:]
    seq = hs.next_seq
    hs.next_seq += 1
    if hs.credits is not None:
        hs.credits -= 1
    return hs.host.ping(system.ip_of[dst], i + 1, seq)


def fire_out(system: FiringSystem, st: SystemState, t: Transition, fx: Effects) -> None:
    i = t[1]
    hs = _mut_host(system, st, i)
    fx.writes.add(("host", i))
    frame = hs.outbox[0]
    hs.outbox = hs.outbox[1:]
    hs.replies_sent += 1
    host_emit(system, st, hs, frame, fx)


def fire_recv(system: FiringSystem, st: SystemState, t: Transition, fx: Effects) -> None:
    i = t[1]
    old = st.hosts[i]
    name = old.host.name
    where = (name, 0)
    if fx.footprint:
        fx.writes.add(("host", i))
        fx.writes.add(("q",) + where)
    q = st.inq[where]
    (frame, tag), st.inq[where] = q[0], tail(q)
    if system.memo:
        ik = (id(old), id(frame))   # by identity first (see fire_switches.fire_pkt)
        seen = system._recv_seen.get(ik)
        if seen is not None:
            hs = seen[2]
        else:
            hs = _recv_step(system, old, frame)
            remember(system._recv_seen, ik, (old, frame, hs))
        st.hosts[i] = hs
    else:
        _host_receive(system, _mut_host(system, st, i), frame)
    cbs = system._cb["on_host_receive"]
    if cbs:
        pid = tag[0] if tag is not None else None
        system._props(st, cbs, fx, name, pid, frame)


def _recv_step(system: FiringSystem, old: HostState, frame: Packet) -> HostState:
    """Host ``old`` receiving ``frame``, memoized by content."""
    mk = (old.hash_value(), RECV, obj_hash(frame), old.host.received)
    hit = system._host_memo.get(mk)
    if hit is not None and (hit[0] is old._key or hit[0] == old._key) and (hit[2] is frame or hit[2] == frame):
        return hit[1]
    hs = old.copy()
    _host_receive(system, hs, frame)
    if hit is None:
        system._host_memo[mk] = (old.key(), hs, frame)
    return hs


def _host_receive(system: FiringSystem, hs: HostState, frame: Packet) -> None:
    replies = hs.host.receive(frame)
    if hs.credits is not None and frame.eth_dst == hs.host.mac:
        hs.credits += 1
    if replies and system.config.reply:
        hs.outbox = hs.outbox + tuple(replies)


def fire_move(system: FiringSystem, st: SystemState, t: Transition, fx: Effects) -> None:
    i = t[1]
    hs = _mut_host(system, st, i)
    fx.writes.add(("host", i))
    fx.writes.add(("wiring",))
    old = hs.location
    hs.location = hs.moves_left[0]
    hs.moves_left = hs.moves_left[1:]
    name = hs.host.name
    cbs = system._cb["on_host_move"]
    if cbs:
        new = hs.location
        system._props(st, cbs, fx, name, old, new)
    # Tell the network where we are now (NICE's "mobility inform"): a gratuitous ARP.
    h = hs.host
    host_emit(system, st, hs, _gratuitous_arp(h.mac, h.ip), fx)


@lru_cache(maxsize=256)
def _gratuitous_arp(mac: int, ip: Any) -> Packet:
    """The ARP request a host announces itself with, one object per host: every move of a
    search sends the same frame, and a shared frame lets the queues it joins be interned."""
    return arp_request(mac, ip, ip)
