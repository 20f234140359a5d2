"""`netsleuth trace-packet TRACE EVENT`: one injected packet, hop by hop.

"The ping failed" is where debugging starts, not where it ends: which switch
lost it, which rule sent it where, which flow_mod installed that rule, did
the controller ever answer the PACKET_IN? The trace already holds every
dataplane hop (``packet`` events, one per port a packet arrived at, tagged
with the packet's lineage ``pid``) and every control message; this module
puts them together with the flow tables rebuilt headlessly at each hop's
time (:class:`~netsleuth.rootcause.tables.TableWalk`).

Finding the packet: the traffic input records the packet the host meant to
send, not its lineage. Lineage ids only grow, so the packet is the first
lineage newer than the input that enters the network at the host's port
with exactly those bytes. An IP packet to an unresolved neighbour waits in
the host for ARP; if it never leaves, the host's ARP request is followed
instead and the report says so.

A flooded packet branches (one lineage, many copies): a hop's parent is the
latest earlier hop at the node on the other end of its in-port's link, so
the hops form a tree and every leaf says how that copy ended.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

from os_ken.ofproto import ofproto_v1_0 as ofp

from netsleuth.errors import NetsleuthError, TraceFormatError
from netsleuth.model.actions import Enqueue, Output, action_from_ofp
from netsleuth.model.addr import int_to_ip
from netsleuth.model.flowtable import FlowEntry
from netsleuth.model.packet import Arp, IPv4, Packet
from netsleuth.model.switch import forward
from netsleuth.openflow.codec import msg_from_json
from netsleuth.rootcause.tables import TableWalk
from netsleuth.trace import schema as ts
from netsleuth.world.world import World

NO_BUFFER = 0xFFFFFFFF


class UnknownEventError(NetsleuthError):
    """The EVENT argument names no traffic input of the trace."""


@dataclass
class Hop:
    """The packet (one copy of it) arriving at one port."""

    index: int
    seq: int
    t: float
    node: str
    port: int
    packet: str
    parent: int | None = None             # the hop that sent it here (None: the source host)
    from_node: str | None = None          # the other end of the in-port's link
    from_port: int | None = None
    is_host: bool = False
    rule: str | None = None               # the entry it matched (switch hops)
    rule_flow_mods: list[int] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    to_controller: bool = False           # table miss or an output to CONTROLLER
    packet_in: dict | None = None
    reply: dict | None = None
    children: list[int] = field(default_factory=list)
    end: dict | None = None               # {"outcome", "why"} for a copy that went no further
    _state: dict = field(default_factory=dict, repr=False)

    def summary_packet(self) -> str:
        return self.packet

    def to_json(self) -> dict:
        return {"index": self.index, "seq": self.seq, "t": self.t, "node": self.node, "port": self.port,
                "packet": self.packet, "parent": self.parent, "from": self.from_node, "host": self.is_host,
                "rule": self.rule, "rule_flow_mods": self.rule_flow_mods, "outputs": self.outputs,
                "to_controller": self.to_controller, "packet_in": self.packet_in, "reply": self.reply,
                "children": self.children, "end": self.end}


@dataclass
class PacketTrace:
    input: ts.TrafficInjection
    followed: str              # "packet" | "arp" | "none"
    pid: int | None
    hops: list[Hop]
    outcome: str               # "delivered" | "dropped" | "looped" | "never sent"
    why: str
    arp_pid: int | None = None  # the ARP request the host sent first, if it had to

    def to_json(self) -> dict:
        e = self.input
        return {"input": {"id": e.id, "seq": e.seq, "t": e.t, "host": e.host, "dst": e.dst,
                          "packet": Packet.from_json(e.packet).summary()},
                "followed": self.followed, "pid": self.pid, "arp_pid": self.arp_pid,
                "outcome": self.outcome, "why": self.why,
                "hops": [h.to_json() for h in self.hops]}

    def _tree_order(self) -> list[tuple[Hop, int]]:
        """Hops depth-first (each copy's path reads top to bottom), siblings in seq order."""
        out: list[tuple[Hop, int]] = []
        stack = [(h, 0) for h in reversed(self.hops) if h.parent is None]
        while stack:
            h, depth = stack.pop()
            out.append((h, depth))
            stack.extend((self.hops[c], depth + 1) for c in reversed(h.children))
        return out

    def summary(self) -> list[str]:
        e = self.input
        lines = [f"input {e.id} (seq {e.seq}, t={e.t:.3f}): {e.host} sends "
                 f"{Packet.from_json(e.packet).summary()}" + (f" to {e.dst}" if e.dst else "")]
        if self.followed == "arp":
            lines.append(f"  the packet never left {e.host}: it waited for ARP; following its ARP request "
                         f"(lineage {self.pid})")
        elif self.pid is not None:
            lines.append(f"  lineage {self.pid}")
            if self.arp_pid is not None and self.hops:
                lines.append(f"  it left {e.host} only at t={self.hops[0].t:.3f}, after ARP resolution "
                             f"(first ARP request: lineage {self.arp_pid})")
        for h, depth in self._tree_order():
            pad = "  " + "  " * depth
            lines.append(f"{pad}[{h.index}] seq {h.seq} t={h.t:.3f} {h.node} port {h.port}"
                         + (f" (from {h.from_node})" if h.from_node else ""))
            if h.rule is not None:
                src = (f" (installed by flow_mod seq {', '.join(map(str, h.rule_flow_mods))})"
                       if h.rule_flow_mods else "")
                lines.append(f"{pad}    matched {h.rule}{src}")
            elif not h.is_host and "dead" not in h._state and "revisit" not in h._state:
                lines.append(f"{pad}    table miss -> to the controller")
            if h.packet_in is not None:
                lines.append(f"{pad}    PACKET_IN seq {h.packet_in['seq']} (buffer {h.packet_in['buffer_id']})")
            if h.reply is not None:
                lines.append(f"{pad}    controller answered: {h.reply['type']} seq {h.reply['seq']} "
                             f"actions={h.reply['actions']}")
            if h.outputs:
                lines.append(f"{pad}    out: {'; '.join(h.outputs)}")
            if h.end is not None:
                lines.append(f"{pad}    => {h.end['outcome']}: {h.end['why']}")
        lines.append(f"outcome: {self.outcome}: {self.why}")
        return lines


def find_traffic_input(events: list[ts.Event], ref: str) -> ts.TrafficInjection:
    """The traffic input named by its id ("i7") or its seq ("120")."""
    ref = ref.strip()
    for e in events:
        if isinstance(e, ts.TrafficInjection) and (e.id == ref or (ref.isdigit() and e.seq == int(ref))):
            return e
    traffic = [e for e in events if isinstance(e, ts.TrafficInjection)]
    other = next((e for e in events if (getattr(e, "id", None) == ref or (ref.isdigit() and e.seq == int(ref)))),
                 None)
    if other is not None:
        raise UnknownEventError(f"event {ref} is a {other.kind!r} event, not a traffic input",
                                _choices(traffic))
    raise UnknownEventError(f"the trace has no traffic input {ref!r}", _choices(traffic))


def _choices(traffic: list[ts.TrafficInjection]) -> str:
    if not traffic:
        return "this trace injected no traffic; record one with traffic (e.g. fuzz --rate traffic=0.3)"
    shown = ", ".join(f"{e.id} (seq {e.seq})" for e in traffic[:8])
    return f"give a traffic input's id or seq, e.g. {shown}" + (" ..." if len(traffic) > 8 else "")


def trace_packet(trace: ts.Trace, ref: str) -> PacketTrace:
    """Follow the packet of traffic input ``ref`` through the recorded network."""
    events = trace.events
    inj = find_traffic_input(events, ref)
    if not any(isinstance(e, ts.PacketArrival) for e in events):
        raise TraceFormatError("the trace records no dataplane hops ('packet' events)",
                               "re-record it without --no-packet-events")
    sent = Packet.from_json(inj.packet)
    sent_bytes = sent.to_bytes()
    walk = TableWalk(trace.header)
    attach: tuple[str, int] | None = None
    attach_note = ""
    max_pid_before = 0
    main_pid: int | None = None
    arp_pid: int | None = None
    hops: dict[int, list[Hop]] = {}
    moved_from: dict[tuple[str, int], ts.HostMigration] = {}
    loops: dict[int, ts.Violation] = {}
    loop_ports: dict[int, set[str]] = {}   # "node:port" where the World saw the lineage come back
    world: World | None = None
    for e, world in walk.walk(events):
        if isinstance(e, ts.HostMigration):
            moved_from[(e.old_switch, e.old_port)] = e
        if e.seq == inj.seq:
            attach = world.host_at.get(inj.host)
            if attach is not None and not world.switch_up.get(attach[0], True):
                attach_note = f"its switch {attach[0]} was down"
            elif attach is not None and not world.link_is_up(inj.host, world.host_iface[inj.host]):
                attach_note = f"its link to {attach[0]}:{attach[1]} was down"
            continue
        if isinstance(e, ts.Violation) and e.invariant == "dataplane-loops":
            pid = e.details.get("pid")
            if isinstance(pid, int):
                loops.setdefault(pid, e)
                loop_ports.setdefault(pid, set()).add(str(e.details.get("path", [""])[-1]))
                # The World records a revisit right after its arrival and does not process it.
                last = hops.get(pid, [])[-1:]
                if last and last[0].seq == e.seq - 1 and e.details.get("path", [""])[-1] == \
                        f"{last[0].node}:{last[0].port}":
                    _mark_revisit(last[0], e)
        if not isinstance(e, ts.PacketArrival):
            continue
        if attach is None:
            max_pid_before = max(max_pid_before, e.pid)
            continue
        if e.pid > max_pid_before and e.pid not in hops and (e.node, e.port) == attach:
            pkt = Packet.from_json(e.packet)
            if main_pid is None and pkt.to_bytes() == sent_bytes:
                main_pid = e.pid
                hops[e.pid] = []
            elif (main_pid is None and arp_pid is None and isinstance(pkt.l3, Arp) and pkt.l3.op == 1
                  and isinstance(sent.l3, IPv4) and pkt.eth_src == sent.eth_src and pkt.l3.tpa == sent.l3.dst):
                arp_pid = e.pid
                hops[e.pid] = []
        if e.pid in hops:
            hops[e.pid].append(_hop(walk, world, e, len(hops[e.pid])))
    if attach is None:
        raise TraceFormatError(f"traffic input {inj.id} is not followed by the network state",
                               "the trace is truncated; re-record it")
    if main_pid is not None:
        followed, pid = "packet", main_pid
    elif arp_pid is not None:
        followed, pid = "arp", arp_pid
    else:
        why = (f"{inj.host} sent nothing into the network after the input: "
               + (attach_note or f"no frame from it reached {attach[0]}:{attach[1]} (dropped on its link?)"))
        return PacketTrace(inj, "none", None, [], "never sent", why)
    chain = hops[pid]
    _control_plane(chain, events)
    _link_tree(chain)
    dst_host = _destination(trace, inj, followed)
    outcome, why = _ends(chain, dst_host, loops.get(pid), loop_ports.get(pid, set()), moved_from, followed, inj)
    return PacketTrace(inj, followed, pid, chain, outcome, why, arp_pid)


def _rule_text(e: FlowEntry) -> str:
    match = str(e.match)
    return f"priority={e.priority}" + (f",{match}" if match else "") + \
        f" actions={','.join(str(a) for a in e.actions) or 'drop'}"


def _hop(walk: TableWalk, world: World, e: ts.PacketArrival, index: int) -> Hop:
    """What the network did with this arrival, from the state the packet met."""
    pkt = Packet.from_json(e.packet)
    peer = world.peer.get((e.node, e.port))
    h = Hop(index, e.seq, e.t, e.node, e.port, pkt.summary(), from_node=peer[0] if peer else None,
            from_port=peer[1] if peer else None)
    switch = world.switches.get(e.node)
    if switch is None:
        h.is_host = True
        return h
    st = h._state
    st["dpid"] = switch.dpid
    st["bytes"] = pkt.to_bytes()
    if not world.switch_up.get(e.node, True):
        st["dead"] = f"{e.node} was down"
        return h
    port = switch.ports.get(e.port)
    if port is None or not port.usable:
        st["dead"] = f"in port {e.port} of {e.node} was down or gone"
        return h
    if switch.of13 is not None:
        return _hop13(h, switch, world, walk, e, pkt)
    entry = switch.table.peek(pkt.match_fields(e.port))
    if entry is None:
        h.to_controller = True
        return h
    h.rule = _rule_text(entry)
    h.rule_flow_mods = walk.origin(e.node, entry)
    outs = forward(entry.actions, pkt, e.port, switch.ports)
    for out_port, _, _ in outs:
        if out_port == ofp.OFPP_CONTROLLER:
            h.to_controller = True
            h.outputs.append("CONTROLLER")
        elif out_port == ofp.OFPP_TABLE:
            h.outputs.append("TABLE")
        else:
            nxt = world.peer.get((e.node, out_port))
            up = nxt is not None and world.link_is_up(e.node, out_port)  # the World's own notion of "up"
            h.outputs.append(f"port {out_port} -> " + (f"{nxt[0]}:{nxt[1]}" if nxt else "no link")
                             + ("" if up or nxt is None else " (link down)"))
    # Outputs forward() drops: to ports that are gone or down, or back out the in port.
    st["dead_outputs"] = [
        (a.port, _dead_port_reason(switch, world, e, a.port)) for a in entry.actions
        if isinstance(a, (Output, Enqueue)) and a.port <= ofp.OFPP_MAX and not any(o[0] == a.port for o in outs)]
    return h


def _hop13(h: Hop, switch: Any, world: World, walk: Any, e: ts.PacketArrival, pkt: Any) -> Hop:
    """An OpenFlow 1.3 switch: the packet through a copy of its pipeline (tables, groups), no side effects."""
    from os_ken.ofproto import ofproto_v1_3 as ofp13

    from netsleuth.model.of13.frame import Frame

    switch.of13.sync_ports()
    result = switch.of13.pipeline.copy().process(Frame.from_packet(pkt), e.port, e.t)
    hits = [entry for _, entry in result.path if entry is not None]
    if not hits:
        h._state["dead"] = (f"table miss in table {result.path[-1][0] if result.path else 0} with no table-miss "
                            f"entry (OpenFlow 1.3 drops it)")
        return h
    h.rule = " then ".join(str(entry) for entry in hits)
    h.rule_flow_mods = sorted({seq for entry in hits for seq in walk.origin(e.node, entry)})
    if result.ended == "table-miss":
        h._state["dead"] = (f"after {h.rule}: table miss in table {result.path[-1][0]} with no table-miss "
                            f"entry (OpenFlow 1.3 drops it)")
        return h
    dead = []
    for out in result.outputs:
        if out.port == ofp13.OFPP_CONTROLLER:
            h.to_controller = True
            h.outputs.append("CONTROLLER")
            continue
        port = switch.ports.get(out.port)
        if out.port > ofp13.OFPP_MAX:
            continue  # LOCAL, NORMAL: not modelled
        nxt = world.peer.get((e.node, out.port))
        if port is None or not port.usable or port.config & ofp13.OFPPC_NO_FWD:
            dead.append((out.port, _dead_port_reason(switch, world, e, out.port)))
            continue
        up = nxt is not None and world.link_is_up(e.node, out.port)
        h.outputs.append(f"port {out.port} -> " + (f"{nxt[0]}:{nxt[1]}" if nxt else "no link")
                         + ("" if up or nxt is None else " (link down)"))
    # outputs the pipeline itself dropped: to ports the switch no longer has
    for entry in hits:
        for a in entry.instructions.all_actions():
            port_no = getattr(a, "port", None)
            if (isinstance(port_no, int) and port_no <= ofp13.OFPP_MAX and port_no not in switch.ports
                    and all(p != port_no for p, _ in dead)):
                dead.append((port_no, _dead_port_reason(switch, world, e, port_no)))
    h._state["dead_outputs"] = dead
    return h


def _dead_port_reason(switch: Any, world: World, e: ts.PacketArrival, port: int) -> str:
    if port == e.port:
        return f"port {port} is its in port (OpenFlow 1.0 sends back only with IN_PORT)"
    if port not in switch.ports:
        return f"port {port}, which {e.node} no longer has"
    return f"port {port}, whose link is down"


def _mark_revisit(h: Hop, v: ts.Violation) -> None:
    """A copy that came back to a port it had passed: the World drops it unprocessed (a loop)."""
    h.rule, h.rule_flow_mods, h.outputs, h.to_controller = None, [], [], False
    h._state["revisit"] = v.message


def _emitted_at(h: Hop) -> int | None:
    """The seq from which this hop's copies were on the wire (None: it sent none)."""
    if h.is_host or "revisit" in h._state or "dead" in h._state:
        return None
    if h.reply is not None:
        return h.reply["seq"]
    if h.rule is not None and h.outputs:
        return h.seq
    return None


def _link_tree(chain: list[Hop]) -> None:
    """Parent of each hop: links are FIFO, so a copy arriving from node m came from the
    earliest hop at m that had sent by then and had not yet used that port."""
    used: dict[int, set[int]] = {}
    for h in chain:
        if h.from_node is None or h.from_port is None:
            continue
        best = None
        for c in chain[:h.index]:
            at = _emitted_at(c)
            if (c.node == h.from_node and at is not None and at < h.seq and h.from_port not in used.get(c.index, ())
                    and (best is None or at < _emitted_at(best))):  # type: ignore[operator]  # best was emitted
                best = c
        if best is None:  # no hop there could have sent it (a host's first send, or state we could not see)
            continue
        used.setdefault(best.index, set()).add(h.from_port)
        h.parent = best.index
        best.children.append(h.index)


def _control_plane(chain: list[Hop], events: list[ts.Event]) -> None:
    """Pair each trip to the controller with its PACKET_IN and the controller's answer.

    Copies of a flooded packet look alike, so each PACKET_IN (same switch, same
    in port, same bytes) and each answer is claimed by one hop only, in order.
    """
    claimed: set[int] = set()
    by_seq = {e.seq: i for i, e in enumerate(events)}
    for h in chain:
        if not h.to_controller or h.is_host or "revisit" in h._state:
            continue
        dpid, data = h._state["dpid"], h._state["bytes"]
        start = by_seq.get(h.seq, 0) + 1
        pin = None
        for e in events[start:]:
            if (isinstance(e, ts.ControlToController) and e.dpid == dpid and e.msg.get("type") == "PACKET_IN"
                    and e.seq not in claimed):
                body = e.msg["body"]["OFPPacketIn"]
                got = base64.b64decode(body.get("data", ""))
                if got and body.get("in_port") == h.port and data.startswith(got):
                    pin = (e, body)
                    break
        if pin is None:
            continue
        e, body = pin
        claimed.add(e.seq)
        buffer_id = body.get("buffer_id", NO_BUFFER)
        h.packet_in = {"seq": e.seq, "t": e.t, "buffer_id": buffer_id, "conn": e.conn}
        for r in events[by_seq[e.seq] + 1:]:
            if not (isinstance(r, ts.ControlToSwitch) and r.dpid == dpid) or r.seq in claimed:
                continue
            mtype = r.msg.get("type")
            if mtype not in ("PACKET_OUT", "FLOW_MOD"):
                continue
            rbody = next(iter(r.msg["body"].values()))
            if buffer_id != NO_BUFFER:
                hit = rbody.get("buffer_id") == buffer_id
            else:
                hit = mtype == "PACKET_OUT" and rbody.get("data") == body.get("data")
            if hit:
                claimed.add(r.seq)
                h.reply = {"seq": r.seq, "t": r.t, "type": mtype, "actions": _actions_text(r.msg)}
                break


def _actions_text(msg: dict) -> str:
    try:
        return ",".join(str(action_from_ofp(a)) for a in msg_from_json(msg).actions) or "drop"
    except Exception:  # noqa: BLE001 -- only for display
        return "?"


def _destination(trace: ts.Trace, inj: ts.TrafficInjection, followed: str) -> str | None:
    sent = Packet.from_json(inj.packet)
    if followed == "arp" or isinstance(sent.l3, Arp):
        ip = sent.l3.dst if isinstance(sent.l3, IPv4) else sent.l3.tpa  # type: ignore[union-attr]  # ARP here
        for h in trace.header.topology.get("hosts", []):
            if h.get("ip") == int_to_ip(ip):
                return h["name"]
        return None
    return inj.dst


def _ends(chain: list[Hop], dst: str | None, loop: ts.Violation | None, loop_ports: set[str],
          moved_from: dict[tuple[str, int], ts.HostMigration], followed: str,
          inj: ts.TrafficInjection) -> tuple[str, str]:
    """How each copy ended (leaves of the tree), then the packet's outcome: a loop first
    (it is the bug however many copies got through), then delivery, then drops."""
    delivered, drops, looped = [], [], []
    for h in chain:
        if h.children:
            continue
        if h.is_host:
            if h.node == dst:
                h.end = {"outcome": "delivered", "why": f"reached {h.node}"}
                delivered.append(h)
            else:
                h.end = {"outcome": "ignored", "why": f"reached {h.node}, which it was not addressed to"}
            continue
        if "revisit" in h._state:
            h.end = {"outcome": "looped", "why": f"came back to {h.node} port {h.port}, a port it had already "
                                                 f"passed: a forwarding loop ({h._state['revisit']})"}
            looped.append(h)
            continue
        if f"{h.node}:{h.port}" in loop_ports and h.packet_in is None and h.rule is None:
            # Back again where the World already reported this lineage looping (it reports each
            # place once) and, with no PACKET_IN, evidently not processed: the same loop.
            h.end = {"outcome": "looped", "why": f"came back to {h.node} port {h.port} again (the same loop)"}
            looped.append(h)
            continue
        h.end = {"outcome": "dropped", "why": _why_dropped(h, moved_from),
                 "dead_ports": [port for port, _ in h._state.get("dead_outputs", [])]}
        drops.append(h)
    what = "its ARP request" if followed == "arp" else "the packet"
    also = ""
    if delivered:
        also = f"; a copy still reached {delivered[0].node}"
    if looped or loop is not None:
        path = " -> ".join(loop.details.get("path", [])) if loop is not None else ""
        first = looped[0] if looped else None
        # loop is set when nothing looped
        where = f"back at {first.node} port {first.port} (t={first.t:.3f})" if first else loop.message  # type: ignore[union-attr]
        return "looped", f"{what} looped: {where}" + (f"; path {path}" if path else "") + also
    if delivered:
        h = delivered[0]
        hops = sum(1 for x in chain if not x.is_host and _is_ancestor(chain, x.index, h.index))
        extra = f"; {len(drops)} flooded copies dropped elsewhere" if drops else ""
        if followed == "arp":
            return "dropped", (f"{what} reached {h.node}, but the packet itself never left {inj.host} "
                               "(the ARP reply did not get back)")
        return "delivered", f"{what} reached {h.node} at t={h.t:.3f} after {hops} switch hop(s){extra}"
    if drops:
        first = drops[0]
        more = f" (and {len(drops) - 1} more copies)" if len(drops) > 1 else ""
        return "dropped", f"{what} was dropped at {first.node} (port {first.port} in, t={first.t:.3f}): " \
                          f"{first.end['why']}{more}"  # type: ignore[index]  # a drop has an end
    return "dropped", f"{what} reached no destination"


def _is_ancestor(chain: list[Hop], a: int, b: int) -> bool:
    while b is not None:
        if b == a:
            return True
        b = chain[b].parent  # type: ignore[assignment]  # stops at the root (None)
    return False


def _why_dropped(h: Hop, moved_from: dict[tuple[str, int], ts.HostMigration]) -> str:
    st = h._state
    if "dead" in st:
        return st["dead"]
    if h.to_controller:
        how = "table miss" if h.rule is None else "the rule sends it to the controller"
        if h.packet_in is None:
            return f"{how}, and no PACKET_IN for it was recorded (no connection up, or the trace ended)"
        if h.reply is None:
            return f"{how}; the controller never answered its PACKET_IN (seq {h.packet_in['seq']})"
        return (f"{how}; the controller's {h.reply['type']} (seq {h.reply['seq']}, "
                f"actions={h.reply['actions']}) sent it nowhere it arrived")
    dead = st.get("dead_outputs", [])
    if dead:
        text = "; ".join(reason for _, reason in dead)
        for port, _ in dead:
            m = moved_from.get((h.node, port))
            if m is not None and m.t <= h.t:
                text += f" ({m.host} moved from {h.node}:{port} to {m.new_switch}:{m.new_port} at seq {m.seq})"
        return f"blackholed: the rule sends it to {text}"
    if h.rule is not None and not h.outputs:
        return "the matched rule has no output (a drop rule)"
    if h.outputs and not h.children:
        return f"sent to {', '.join(h.outputs)}, but it never arrived (lost on the wire, or the trace ended)"
    return "it went no further"


__all__ = ["Hop", "PacketTrace", "UnknownEventError", "find_traffic_input", "trace_packet"]
