"""Controller transitions of the model: the app handles one message from a switch's channel,
a timer, or a discovered port-stats reply.

A handler runs on a copy of the app and its outputs go onto the switches' channels;
``run_handler`` memoizes it by the app's canonical key and the event (system.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from netsleuth.nice import messages as m
from netsleuth.nice.app import App, ControllerAPI
from netsleuth.nice.effects import Effects
from netsleuth.nice.firing import FiringSystem
from netsleuth.nice.interning import obj_hash, pushed, remember, tail
from netsleuth.nice.state import SystemState
from netsleuth.nice.transitions import CTL, TIMER, Transition


def fire_stats(system: FiringSystem, st: SystemState, t: Transition, fx: Effects) -> None:
    """discover_stats: the controller handles the PortStatsReply at the head of switch i's
    channel with discovered counters ``stats`` (a reply the switch could send after more traffic)."""
    _, i, stats = t
    q = st.to_ctrl[i]
    st.to_ctrl[i] = tail(q)
    fx.writes.add(("toctl", i))
    dpid = system.dpid_of[i]
    run_handler(system, st, lambda a: a.port_stats_in(dpid, stats), fx, i)


def run_handler(system: FiringSystem, st: SystemState, call: Callable[[App], None], fx: Effects, i: int | None,
                 event: Any = None) -> None:
    """Run a handler on a copy of the app; ``event`` (hashable, naming the call) memoizes it."""
    if event is not None and system.memo:
        # by identity first (see fire_switches.fire_pkt): the app object and the message or timer name
        parent = st.app
        ik = (id(parent), event[0], event[1], id(event[-1]))
        seen = system._ctl_seen.get(ik)
        if seen is not None:
            _, _, app, out, timers, st.appkey, st.apphash = seen
            st.app = app
            _handler_effects(system, st, out, timers, fx)
            return
        ak = st.app_key()
        # the event's last item is the message (hashed once per object), the rest is small
        mk = (st.app_hash(), *event[:-1], obj_hash(event[-1]))
        hit = system._ctl_memo.get(mk)
        if hit is not None and (hit[0] is ak or hit[0] == ak) and hit[6] == event:
            _, app, out, timers, new_key, new_hash, _ = hit
        else:
            app, out, timers = _call_app(system, st.app, call)
            new_key = app.key()
            new_hash = hash(new_key)
            if hit is None:
                system._ctl_memo[mk] = (ak, app, out, timers, new_key, new_hash, event)
        remember(system._ctl_seen, ik, (parent, event[-1], app, out, timers, new_key, new_hash))
        st.app, st.appkey, st.apphash = app, new_key, new_hash
    else:
        st.app, out, timers = _call_app(system, st.app, call)
        st.appkey = st.apphash = None
    _handler_effects(system, st, out, timers, fx)


def _call_app(system: FiringSystem, parent: App, call: Callable[[App], None]) -> tuple[App, list, list]:
    app = parent.copy()
    api = ControllerAPI(system.now, system.links, system.uses_stats)
    app._api = api
    try:
        call(app)
    finally:
        app._api = None
    return app, api.out, api.timers


def _handler_effects(system: FiringSystem, st: SystemState, out: list, timers: list, fx: Effects) -> None:
    fp = fx.footprint
    if fp:
        fx.writes.add(("ctl",))
    order = []
    for dpid, msg in out:
        j = system.index_of_dpid.get(dpid)
        if j is None:
            continue  # a switch the network does not have: the message goes nowhere
        st.to_sw[j] = pushed(st.to_sw[j], msg, j)
        if fp:
            fx.writes.add(("tosw", j))
        if j not in order:
            order.append(j)
    if timers:
        st.timers = tuple(sorted(set(st.timers) | set(timers)))
    if system.config.track_issue_order:
        # Only a handler that addressed several switches gives UNUSUAL something to reverse;
        # remembering single-switch orders would only split states.
        new = tuple(order) if len(order) > 1 else ()
        if new != st.extra[1]:
            st.extra = (st.extra[0], new)


def fire_ctl(system: FiringSystem, st: SystemState, t: Transition, fx: Effects) -> None:
    i = t[1]
    q = st.to_ctrl[i]
    msg, st.to_ctrl[i] = q[0], tail(q)
    if fx.footprint:
        fx.writes.add(("toctl", i))
    dpid = system.dpid_of[i]
    mtype = type(msg)
    if mtype is m.PacketIn:
        cbs = system._cb["on_packet_in"]
        if cbs:
            pid = msg.tag[0] if msg.tag is not None else None
            name = system.sw_names[i]
            system._props(st, cbs, fx, name, pid, msg)
        if system.of13:  # the hosted app gets the whole 1.3 PACKET_IN (table, cookie, lineage)
            run_handler(system, st, lambda a: a.packet_in13(dpid, msg), fx, i)
            return
        run_handler(system, st, lambda a: a.packet_in(dpid, msg.in_port, msg.reason, msg.total_len,
                                                    msg.buffer_id, msg.packet), fx, i, (CTL, dpid, msg))
    elif mtype is m.FromSwitch13:
        run_handler(system, st, lambda a: a.message13(dpid, msg.data), fx, i)
    elif mtype is m.PortStatus:
        run_handler(system, st, lambda a: a.port_status(dpid, msg.reason, msg.port_no, msg.link_up), fx, i,
                          (CTL, dpid, msg))
    elif mtype is m.FlowRemoved:
        run_handler(system, st, lambda a: a.flow_removed(dpid, msg.match, msg.priority, msg.reason,
                                                       msg.cookie), fx, i, (CTL, dpid, msg))
    elif mtype is m.PortStatsReply:
        run_handler(system, st, lambda a: a.port_stats_in(dpid, msg.stats), fx, i)


def fire_timer(system: FiringSystem, st: SystemState, t: Transition, fx: Effects) -> None:
    name = t[1]
    st.timers = tuple(x for x in st.timers if x != name)
    run_handler(system, st, lambda a: a.timer(name), fx, None, (TIMER, name))
