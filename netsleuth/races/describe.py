"""Races and their subgraphs in plain words: which switch, which two messages or packets, which flow entry.

Works on any :class:`HbGraph`; when the events came from a netsleuth trace,
its plain-words ``labels`` (eid -> text) name the events instead.
"""

from __future__ import annotations

import struct
from typing import Any

from netsleuth.races.detect import Race
from netsleuth.races.events import (
    CONTROLLER_HANDLE,
    CONTROLLER_SEND,
    FLOW_EXPIRY,
    HOST_HANDLE,
    HOST_SEND,
    MESSAGE_HANDLE,
    MESSAGE_SEND,
    PACKET_HANDLE,
    PACKET_SEND,
    READ,
    WRITE,
    FlowOp,
    HbEvent,
)
from netsleuth.races.hb import MID, HbGraph
from netsleuth.races.poxmatch import action_text

_SHORT = {MESSAGE_SEND: "MessageSend", MESSAGE_HANDLE: "MessageHandle", CONTROLLER_HANDLE: "ControllerHandle",
          CONTROLLER_SEND: "ControllerSend", PACKET_HANDLE: "PacketHandle", PACKET_SEND: "PacketSend",
          HOST_HANDLE: "HostHandle", HOST_SEND: "HostSend", FLOW_EXPIRY: "FlowExpiry"}


_ALL_IDS = (0xFF, 0xFFFFFFFC, 0xFFFFFFFF)   # OFPTT_ALL, OFPG_ALL, OFPM_ALL


def short_kind(kind: str) -> str:
    return _SHORT.get(kind, kind)


def msg_name(msg_type: str | None) -> str:
    return (msg_type or "message").removeprefix("OFPT_")


def _pkt(frame: bytes | None) -> str:
    if not frame:
        return "a packet"
    from netsleuth.races.job import packet_summary

    return packet_summary(frame)


def _decode13(m: bytes) -> Any:
    from netsleuth.openflow.codec import decode

    try:
        return decode(m, None)
    except Exception:  # pragma: no cover - recorded messages went through the codec already
        return None


def packet_out_actions13(m: bytes) -> list[Any]:
    """The os-ken actions of an OpenFlow 1.3 PACKET_OUT (or [] for another message)."""
    msg = _decode13(m)
    return list(getattr(msg, "actions", None) or []) if type(msg).__name__ == "OFPPacketOut" else []


def message_packet(ev: HbEvent) -> bytes | None:
    """The frame carried by a PACKET_IN or PACKET_OUT message, if any."""
    m = ev.msg
    if not m:
        return None
    if m[0] == 4:   # OpenFlow 1.3: variable-length matches; the codec finds the data
        msg = _decode13(m)
        return bytes(getattr(msg, "data", None) or b"") or None
    if ev.msg_type == "OFPT_PACKET_IN" and len(m) > 18:
        return m[18:]
    if ev.msg_type == "OFPT_PACKET_OUT" and len(m) >= 16:
        (alen,) = struct.unpack_from("!H", m, 14)
        data = m[16 + alen:]
        return data or None
    return None


def packet_out_actions(ev: HbEvent) -> list[str]:
    m = ev.msg
    if m and m[0] == 4:
        from netsleuth.model.of13.actions import action_from_ofp, render_action

        return [render_action(action_from_ofp(a)) for a in packet_out_actions13(m)]
    if not m or len(m) < 16:
        return []
    (alen,) = struct.unpack_from("!H", m, 14)
    out, off, end = [], 16, min(16 + alen, len(m))
    while off + 8 <= end:
        atype, length = struct.unpack_from("!HH", m, off)
        if length < 8:
            break
        if atype == 0:
            out.append(action_text((0, length, struct.unpack_from("!H", m, off + 4)[0])))
        else:
            out.append(f"action{atype}")
        off += length
    return out


def entry_words(op: FlowOp) -> str:
    """The flow entry a read hit (or the table miss), or the flow mod a write applied."""
    if op.kind == READ:
        return f"entry {op.flow_mod.describe().split(' ', 1)[1]}" if op.flow_mod else "no entry (table miss)"
    if op.flow_mod is None:
        return "an unknown flow mod"
    return f"FLOW_MOD {op.flow_mod.describe()}"


def event_words(g: HbGraph, node: int, labels: dict[int, str] | None = None) -> str:
    """One event in plain words."""
    ev = g.events[node]
    if labels and ev.eid in labels:
        return labels[ev.eid]
    sw = f"switch {ev.dpid}"
    k = ev.kind
    if k == HOST_SEND:
        return f"host {ev.hid} sends {_pkt(ev.packet)}"
    if k == HOST_HANDLE:
        return f"host {ev.hid} receives {_pkt(ev.packet)}"
    if k == PACKET_HANDLE:
        port = f" on port {ev.in_port}" if ev.in_port is not None else ""
        return f"{sw} receives {_pkt(ev.packet)}{port}"
    if k == PACKET_SEND:
        port = f" out of port {ev.out_port}" if ev.out_port is not None else ""
        return f"{sw} forwards {_pkt(ev.packet)}{port}"
    if k == MESSAGE_SEND:
        if ev.msg_type == "OFPT_PACKET_IN":
            return f"{sw} sends PACKET_IN for {_pkt(message_packet(ev))} to the controller"
        return f"{sw} sends {msg_name(ev.msg_type)} to the controller"
    if k == CONTROLLER_HANDLE:
        return "the controller handles a message"
    if k == CONTROLLER_SEND:
        return "the controller sends a message"
    if k == FLOW_EXPIRY:
        fm = next((op.flow_mod for op in ev.ops if op.flow_mod is not None), None)
        return f"{sw}: entry {fm.describe().split(' ', 1)[1] if fm else '?'} expires"
    if k == MESSAGE_HANDLE:
        w = next((op for op in ev.ops if op.kind == WRITE), None)
        if w is not None:
            return f"{sw} applies {entry_words(w)}"
        if ev.msg_type == "OFPT_PACKET_OUT":
            acts = ",".join(packet_out_actions(ev)) or "drop"
            return f"{sw} handles PACKET_OUT of {_pkt(message_packet(ev))} actions=[{acts}]"
        return f"{sw} handles {msg_name(ev.msg_type)}"
    return f"{short_kind(k)} event"


def trigger_of(g: HbGraph, node: int) -> int | None:
    """For a switch's handling of a controller message: the switch-to-controller message that led to it."""
    seen = {node}
    stack = [node]
    while stack:
        v = stack.pop()
        for u in g.pred[v]:
            if u in seen or g.rel[(u, v)] != MID:
                continue
            seen.add(u)
            if g.events[u].kind == MESSAGE_SEND:
                return u
            stack.append(u)
    return None


def op_words(g: HbGraph, node: int, op: FlowOp, labels: dict[int, str] | None = None) -> str:
    """A race's operation: the event and what it did to the flow table (a netsleuth label says both)."""
    ev = g.events[node]
    if labels and ev.eid in labels:
        text = labels[ev.eid]
    elif op.kind == READ:
        if ev.kind == PACKET_HANDLE:
            what = f"packet {_pkt(ev.packet)} arriving on port {ev.in_port}"
        else:
            what = f"{msg_name(ev.msg_type)} of {_pkt(message_packet(ev) or ev.packet)}"
        text = f"{what} matched {entry_words(op)}"
    else:
        text = entry_words(op)
    if op.target is not None:   # OpenFlow 1.3: which of the switch's tables, groups or meters
        kind, oid = op.target
        text += f" ({'reads' if op.kind == READ else 'writes'} {kind} {'all' if oid in _ALL_IDS else oid})"
    if op.kind != READ and ev.kind == MESSAGE_HANDLE:
        t = trigger_of(g, node)
        if t is not None:
            text += f", sent in reply to: {event_words(g, t, labels)} (event {g.events[t].eid})"
        else:
            text += ", sent proactively (no switch message led to it)"
    return f"{text} (event {ev.eid})"


def race_words(g: HbGraph, race: Race, labels: dict[int, str] | None = None) -> dict[str, Any]:
    """Which switch, the two operations (messages or packets), the flow entries involved."""
    dpid = g.events[race.i].dpid
    first = op_words(g, race.i, race.i_op, labels)
    second = op_words(g, race.k, race.k_op, labels)
    kind = "read/write" if race.kind == "r/w" else "write/write"
    return {"switch": dpid, "type": race.kind, "first": first, "second": second,
            "text": f"{kind} race on switch {dpid}: {first}  vs  {second}"}


def roots_words(g: HbGraph, roots: list[int], labels: dict[int, str] | None = None, limit: int = 6) -> list[str]:
    out = [f"{event_words(g, n, labels)} (event {g.events[n].eid})" for n in roots[:limit]]
    if len(roots) > limit:
        out.append(f"... and {len(roots) - limit} more")
    return out


__all__ = ["event_words", "op_words", "race_words", "roots_words", "short_kind", "entry_words", "trigger_of",
           "message_packet", "packet_out_actions", "packet_out_actions13"]
