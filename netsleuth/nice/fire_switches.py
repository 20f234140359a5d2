"""Switch transitions of the model: process_pkt (the head of every input port at once),
process_of (one controller message, OpenFlow 1.0 or 1.3), and the faults that touch a
switch or a wire: a rule expiring, a packet dropped or duplicated, a link failing.

Each ``fire_<kind>(system, state, transition, effects)`` changes the child state and
records its footprint (flow-table reads and writes for DPOR's sleep sets) in ``effects``.
A switch's step is memoized by the switch's key and its input, first by identity
(system.py's docstring says why).
"""

from __future__ import annotations

from typing import Any

from netsleuth.errors import NetsleuthError
from netsleuth.model import switch as sw
from netsleuth.model.freeze import freeze
from netsleuth.model.match import Match
from netsleuth.model.of13.oxm import OxmMatch
from netsleuth.model.ofdp import ofp, ofp13
from netsleuth.nice import messages as m
from netsleuth.nice.effects import Effects
from netsleuth.nice.fire_hosts import push
from netsleuth.nice.firing import FiringSystem
from netsleuth.nice.interning import obj_hash, pushed, remember, tail
from netsleuth.nice.of13 import packets_change_pipeline
from netsleuth.nice.state import MCSwitch, SystemState
from netsleuth.nice.transitions import DROP, Transition


def _peer_of(system: FiringSystem, st: SystemState, node: str, port: int) -> tuple[str, int] | None:
    p = system.peer.get((node, port))
    if p is not None:
        return p
    for hs in st.hosts:
        if hs.location == (node, port):
            return system._host_wire[hs.host.name]
    return None


def switch_outputs(system: FiringSystem, st: SystemState, i: int, s: MCSwitch, outputs: list, fx: Effects) -> None:
    fp = fx.footprint
    for o in outputs:
        if type(o) is sw.Emit:
            peer = _peer_of(system, st, s.name, o.port)
            if peer is None:
                continue  # nothing attached: the packet is dropped
            if fp and peer[1] == 0:
                fx.reads.add(("wiring",))
            tag = o.tag
            if tag is None and system.lineage:
                tag = (None, ())
            push(system, st, peer, o.packet, tag, fx)
        else:
            msg = o.msg
            if type(msg) is not m.PacketIn:
                msg = _from_ofp(msg)
            if fp:
                fx.writes.add(("toctl", i))
            st.to_ctrl[i] = pushed(st.to_ctrl[i], msg, i)


def fire_pkt(system: FiringSystem, st: SystemState, t: Transition, fx: Effects) -> None:
    i = t[1]
    cbs = system._cb["on_switch_receive"]
    if not system.memo or cbs or i in system._self_linked:
        _fire_pkt_direct(system, st, t, fx)
        return
    old = st.switches[i]
    name = old.name
    inq = st.inq
    fp = fx.footprint
    heads: list[tuple[int, Any, Any]] = []
    # the heads as queued: with lineage each tag is rebuilt below (a new object every time,
    # though a function of the queued tag, this switch and the port), so identity goes by these
    queued = [] if system.lineage else heads
    for p in old.ports:
        where = (name, p)
        if fp:
            fx.reads.add(("q",) + where)
        q = inq.get(where)
        if not q:
            continue
        if fp:
            fx.writes.add(("q",) + where)
        (frame, tag), inq[where] = q[0], tail(q)
        if system.lineage:
            queued.append((p, frame, tag))
            pid, hops = tag
            tag = (pid, hops + ((name, p),) if system.need_hops else hops)
        heads.append((p, frame, tag))
    # first by identity (the entry keeps the switch and the queued heads alive, so equal ids
    # are the same objects), then by content
    ik = (id(old), tuple([(p, id(frame), id(tag)) for p, frame, tag in queued]))
    seen = system._pkt_seen.get(ik)
    if seen is not None:
        s, per_port = seen[2], seen[3]
    else:
        s, per_port = _pkt_step(system, old, heads)
        remember(system._pkt_seen, ik, (old, queued, s, per_port))
    st.switches[i] = s
    for fields, outputs in per_port:
        if fp:
            fx.ft_reads.append((i, fields))
        if outputs:
            switch_outputs(system, st, i, s, outputs, fx)
    if fp:
        fx.writes.add(("buf", i))
        fx.reads.add(("ports", i))


def _pkt_step(system: FiringSystem, old: MCSwitch, heads: list) -> tuple[MCSwitch, tuple]:
    """Switch ``old`` taking the head packets ``heads``, memoized by content: (switch, per port
    (fields read, outputs))."""
    # the switch's name too: two switches with equal keys (the key leaves their names and dpids out) must
    # not share a result, which is the switch object itself
    mk = (old.name, old.hash_value(), tuple([(p, obj_hash(frame), hash(tag)) for p, frame, tag in heads]))
    hit = system._pkt_memo.get(mk)
    if hit is not None and (hit[0] is old._key or hit[0] == old._key) and hit[3] == heads:
        s, per_port = hit[1], hit[2]
    else:
        s = _copy_for_packets(system, old)
        per_port = tuple((_fields_read(system, frame, p), s.receive_packet(p, frame, system.now, tag))
                         for p, frame, tag in heads)
        if hit is None:
            system._pkt_memo[mk] = (old.key(), s, per_port, heads)
    return s, per_port


def _fields_read(system: FiringSystem, frame: Any, p: int) -> tuple | None:
    """What a packet's lookup reads of the flow table (the footprint sleep sets compare): its
    1.0 match fields, or None (the whole pipeline) on OpenFlow 1.3, where later tables see
    rewritten headers and metadata."""
    return None if system.of13 else frame.match_fields(p)


def _copy_for_packets(system: FiringSystem, s: MCSwitch) -> MCSwitch:
    """The copy of switch ``s`` that takes packets: its table and ports are copied only if packets
    change them (counters the app reads; a 1.3 pipeline whose meters or counters packets move)."""
    wc = system.uses_stats
    return s.copy(table=wc or (s.of13 is not None and packets_change_pipeline(s.of13)), ports=wc)


def _fire_pkt_direct(system: FiringSystem, st: SystemState, t: Transition, fx: Effects) -> None:
    i = t[1]
    s = st.switches[i] = _copy_for_packets(system, st.switches[i])
    name = s.name
    inq = st.inq
    cbs = system._cb["on_switch_receive"]
    for p in s.ports:
        where = (name, p)
        fx.reads.add(("q",) + where)
        q = inq.get(where)
        if not q:
            continue
        fx.writes.add(("q",) + where)
        (frame, tag), inq[where] = q[0], tail(q)
        if system.lineage:
            pid, hops = tag
            if cbs:
                system._props(st, cbs, fx, name, p, pid, hops, frame)
            tag = (pid, hops + ((name, p),) if system.need_hops else hops)
        fx.ft_reads.append((i, _fields_read(system, frame, p)))
        outputs = s.receive_packet(p, frame, system.now, tag)
        switch_outputs(system, st, i, s, outputs, fx)
    fx.writes.add(("buf", i))
    fx.reads.add(("ports", i))


def fire_of(system: FiringSystem, st: SystemState, t: Transition, fx: Effects) -> None:
    if system.of13:
        fire_of13(system, st, t, fx)
        return
    i = t[1]
    q = st.to_sw[i]
    msg, st.to_sw[i] = q[0], tail(q)
    is_mod = type(msg) is m.FlowMod
    old = st.switches[i]
    if fx.footprint:
        fx.writes.add(("tosw", i))
        _of_footprint(i, msg, is_mod, fx)
    if system.memo:
        ik = (id(old), id(msg))     # by identity first (see fire_pkt)
        seen = system._of_seen.get(ik)
        if seen is not None:
            s, outputs = seen[2], seen[3]
        else:
            mk = (i, old.hash_value(), obj_hash(msg))  # i: equal keys of two switches are two results
            hit = system._of_memo.get(mk)
            if hit is not None and (hit[0] is old._key or hit[0] == old._key) and (hit[3] is msg or hit[3] == msg):
                s, outputs = hit[1], hit[2]
            else:
                s = old.copy(table=is_mod, ports=system.uses_stats)
                outputs = s.handle_message(0, m.to_ofp(msg), system.now)
                if hit is None:
                    system._of_memo[mk] = (old.key(), s, outputs, msg)
            remember(system._of_seen, ik, (old, msg, s, outputs))
        st.switches[i] = s
        if outputs:
            _of_outputs(system, st, i, s, outputs, fx)
        return
    s = old.copy(table=is_mod, ports=system.uses_stats)
    st.switches[i] = s
    outputs = s.handle_message(0, m.to_ofp(msg), system.now)
    if outputs:
        _of_outputs(system, st, i, s, outputs, fx)


def _of_footprint(i: int, msg: Any, is_mod: bool, fx: Effects) -> None:
    if is_mod:
        fx.ft_writes.append((i, msg.match))
        if msg.buffer_id != m.NO_BUFFER:
            fx.writes.add(("buf", i))
    elif type(msg) is m.PacketOut:
        fx.writes.add(("buf", i))
    else:
        fx.writes.add(("counters", i))
    fx.reads.add(("ports", i))


def _of_outputs(system: FiringSystem, st: SystemState, i: int, s: MCSwitch, outputs: list, fx: Effects) -> None:
    if fx.footprint:
        for o in outputs:
            if type(o) is sw.Emit:
                fx.ft_reads.append((i, None))  # a released packet may be matched again: be conservative
                break
    switch_outputs(system, st, i, s, outputs, fx)


def fire_of13(system: FiringSystem, st: SystemState, t: Transition, fx: Effects) -> None:
    """An OpenFlow 1.3 message applied by the switch's 1.3 part (the app's bytes, decoded)."""
    i = t[1]
    q = st.to_sw[i]
    msg, st.to_sw[i] = q[0], tail(q)
    fx.writes.add(("tosw", i))
    kind = msg.type_name
    obj = m.of13_message(msg.data)
    changes_table = kind in ("FLOW_MOD", "GROUP_MOD", "METER_MOD")
    s = st.switches[i]
    part = s.of13
    assert part is not None
    # a PACKET_OUT to OFPP_TABLE runs the pipeline, whose meters spend tokens
    copy_table = changes_table or (kind == "PACKET_OUT" and packets_change_pipeline(part))
    s = s.copy(table=copy_table, ports=system.uses_stats or kind == "PORT_MOD")
    st.switches[i] = s
    if changes_table:
        # groups and meters act on any packet of any entry (the empty match conflicts with all),
        # and so does a FLOW_MOD whose match the switch will refuse
        written = OxmMatch()
        if kind == "FLOW_MOD":
            try:
                written = OxmMatch.from_ofp(obj.match)
            except NetsleuthError:
                pass
        fx.ft_writes.append((i, written))
    if kind == "PORT_MOD":
        fx.writes.add(("ports", i))
    if kind == "PACKET_OUT" or (kind == "FLOW_MOD" and obj.buffer_id != ofp13.OFP_NO_BUFFER):
        fx.writes.add(("buf", i))
    elif not changes_table:
        fx.writes.add(("counters", i))
    fx.reads.add(("ports", i))
    recent = s._recent_in
    if msg.tag is not None:
        # The PACKET_OUT resends the bytes of a packet-in: the switch continues its lineage
        # (what the live switch's packet-in cache does), for this message only.
        s._recent_in = {bytes(obj.data or b""): msg.tag}
    try:
        outputs = s.handle_message(0, obj, system.now)
    finally:
        s._recent_in = recent  # the stand-in that remembers nothing (state.py)
    for o in outputs:
        if type(o) is sw.Emit:
            fx.ft_reads.append((i, None))  # a released packet may be matched again: be conservative
            break
    switch_outputs(system, st, i, s, outputs, fx)


def fire_expire(system: FiringSystem, st: SystemState, t: Transition, fx: Effects) -> None:
    if system.of13:
        _fire_expire13(system, st, t, fx)
        return
    _, i, wildcards, values, priority = t
    s = st.switches[i].copy(table=True, ports=system.uses_stats)
    st.switches[i] = s
    match = Match(wildcards, *values)
    fx.ft_writes.append((i, match))
    removed = s.table.delete(match, strict=True, priority=priority)
    out = []
    for e in removed:
        if e.flags & ofp.OFPFF_SEND_FLOW_REM:
            out.append(sw.ToController(None, s._flow_removed(e, ofp.OFPRR_IDLE_TIMEOUT if e.idle_timeout
                                                             else ofp.OFPRR_HARD_TIMEOUT, system.now)))
    switch_outputs(system, st, i, s, out, fx)


def _fire_expire13(system: FiringSystem, st: SystemState, t: Transition, fx: Effects) -> None:
    """A 1.3 entry times out: removed as the pipeline's own expiry removes it (FLOW_REMOVED if flagged)."""
    _, i, table_id, entries, priority = t
    s = st.switches[i].copy(table=True, ports=system.uses_stats)
    st.switches[i] = s
    match = OxmMatch.from_entries(entries)
    fx.ft_writes.append((i, match))
    part = s.of13
    assert part is not None
    removed = part.pipeline.tables.delete(table_id, match, strict=True, priority=priority)
    for r in removed:
        r.reason = ofp13.OFPRR_IDLE_TIMEOUT if r.entry.idle_timeout else ofp13.OFPRR_HARD_TIMEOUT
    switch_outputs(system, st, i, s, part.flows_removed(removed, system.now), fx)


def fire_fault(system: FiringSystem, st: SystemState, t: Transition, fx: Effects) -> None:
    kind, node, port = t
    where = (node, port)
    fx.writes.add(("q",) + where)
    q = st.inq[where]
    st.extra = (st.extra[0] - 1,) + st.extra[1:]
    fx.writes.add(("faults",))
    if kind == DROP:
        st.inq[where] = tail(q)
    else:
        st.inq[where] = q + (q[0],)


def fire_linkdown(system: FiringSystem, st: SystemState, t: Transition, fx: Effects) -> None:
    """A switch-to-switch link fails: both ports go down (PORT_STATUS to the controller) and
    the packets on it are lost."""
    _, i, port = t
    name = system.sw_names[i]
    peer = system.peer[(name, port)]
    st.extra = (st.extra[0] - 1,) + st.extra[1:]
    fx.writes.add(("faults",))
    for node, p in ((name, port), peer):
        j = system.sw_index[node]
        s = st.switches[j].copy(table=False, ports=True)
        st.switches[j] = s
        fx.writes.add(("ports", j))
        fx.writes.add(("q", node, p))
        st.inq.pop((node, p), None)
        switch_outputs(system, st, j, s, s.set_link(p, False), fx)


def _from_ofp(msg: Any) -> Any:
    """A switch's os-ken message as a light channel message."""
    from netsleuth.openflow.codec import encode, msg_type_name, msg_version
    if msg_version(msg) == ofp13.OFP_VERSION:  # kept as sent: the hosted 1.3 app reads the bytes
        return m.FromSwitch13(msg_type_name(msg), encode(msg))
    name = type(msg).__name__
    if name == "OFPFlowRemoved":
        return m.FlowRemoved(Match.from_ofp(msg.match), msg.priority, msg.reason, msg.cookie)
    if name == "OFPPortStatus":
        return m.PortStatus(msg.reason, msg.desc.port_no, not (msg.desc.state & ofp.OFPPS_LINK_DOWN))
    if name == "OFPPortStatsReply":
        return m.PortStatsReply(tuple((b.port_no, b.rx_packets, b.tx_packets, b.rx_bytes, b.tx_bytes)
                                      for b in msg.body))
    from netsleuth.openflow.codec import msg_to_json
    js = msg_to_json(msg)
    js.pop("xid", None)
    return m.OtherToController(js.get("type", name), freeze(js))
