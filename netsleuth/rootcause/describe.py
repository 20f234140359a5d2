"""One line of plain words per trace event, and which nodes an event touches.

The stepper prints these lines, the space-time diagram shows them on
hover and ``netsleuth diff`` lists its differences with them, so every tool
speaks about an event the same way. ``nodes_of`` is what
the stepper's filters and the diagram's lanes agree on: a control message
belongs to its switch and its controller, a packet to the node it reached,
an input to every node it changes.
"""

from __future__ import annotations

from typing import Any

from netsleuth.trace import schema as ts

_SPECIAL_PORTS = {0xFFF8: "in_port", 0xFFF9: "table", 0xFFFA: "normal", 0xFFFB: "flood", 0xFFFC: "all",
                  0xFFFD: "controller", 0xFFFE: "local", 0xFFFF: "none"}
_FLOW_MOD_CMDS = {0: "add", 1: "modify", 2: "modify_strict", 3: "delete", 4: "delete_strict"}


def switch_name(dpid: int) -> str:
    """Switches are named sN for dpid N throughout netsleuth's topologies."""
    return f"s{dpid}"


def _port(p: Any) -> str:
    return _SPECIAL_PORTS.get(p, str(p)) if isinstance(p, int) else str(p)


def _actions(acts: list) -> str:
    out = []
    for a in acts or []:
        (name, body), = a.items() if isinstance(a, dict) and len(a) == 1 else (("?", {}),)
        if name == "OFPActionOutput":
            out.append(f"output:{_port(body.get('port'))}")
        else:
            short = name.replace("OFPAction", "").lower()
            val = ",".join(f"{v}" for k, v in sorted(body.items()) if k not in ("type", "len"))
            out.append(f"{short}:{val}" if val else short)
    return ",".join(out) or "drop"


def _match(m: dict) -> str:
    """The non-wildcarded fields of an os-ken OFPMatch JSON (best effort, for display only)."""
    body = m.get("OFPMatch", m) if isinstance(m, dict) else {}
    w = body.get("wildcards", 0)
    bits = {"in_port": 1 << 0, "dl_vlan": 1 << 1, "dl_src": 1 << 2, "dl_dst": 1 << 3, "dl_type": 1 << 4,
            "nw_proto": 1 << 5, "tp_src": 1 << 6, "tp_dst": 1 << 7, "dl_vlan_pcp": 1 << 20, "nw_tos": 1 << 21}
    parts = [f"{k}={body[k]}" for k, bit in bits.items() if k in body and not (w & bit)]
    for k, shift in (("nw_src", 8), ("nw_dst", 14)):
        if k in body and ((w >> shift) & 0x3F) < 32:
            parts.append(f"{k}={body[k]}")
    return ",".join(parts) or "*"


_SPECIAL_PORTS_13 = {0xFFFFFFF8: "in_port", 0xFFFFFFF9: "table", 0xFFFFFFFA: "normal", 0xFFFFFFFB: "flood",
                     0xFFFFFFFC: "all", 0xFFFFFFFD: "controller", 0xFFFFFFFE: "local", 0xFFFFFFFF: "any"}
_INSTRUCTIONS_13 = {1: "goto_table", 2: "write_metadata", 3: "write_actions", 4: "apply_actions",
                    5: "clear_actions", 6: "meter"}


def _port13(p: Any) -> str:
    return _SPECIAL_PORTS_13.get(p, str(p)) if isinstance(p, int) else str(p)


def _oxm(m: Any) -> dict:
    """{field: value or value/mask} of an OpenFlow 1.3 OFPMatch JSON."""
    body = m.get("OFPMatch", m) if isinstance(m, dict) else {}
    out = {}
    for tlv in body.get("oxm_fields", []) if isinstance(body, dict) else []:
        f = tlv.get("OXMTlv", {}) if isinstance(tlv, dict) else {}
        if "field" in f:
            out[str(f["field"])] = f"{f.get('value')}" + (f"/{f['mask']}" if f.get("mask") is not None else "")
    return out


def _actions13(acts: list) -> str:
    out = []
    for a in acts or []:
        (name, body), = a.items() if isinstance(a, dict) and len(a) == 1 else (("?", {}),)
        if name == "OFPActionOutput":
            out.append(f"output:{_port13(body.get('port'))}")
        elif name == "OFPActionSetField":
            field = body.get("field", {})
            tlv = field.get("OXMTlv", {}) if isinstance(field, dict) else {}
            out.append(f"set_field:{tlv.get('field', '?')}={tlv.get('value', '?')}")
        else:
            short = name.replace("OFPAction", "").lower()
            val = ",".join(f"{v}" for k, v in sorted(body.items()) if k not in ("type", "len"))
            out.append(f"{short}:{val}" if val else short)
    return ",".join(out)


def _instructions13(insts: list[Any]) -> str:
    out: list[str] = []
    for i in insts or []:
        (name, body), = i.items() if isinstance(i, dict) and len(i) == 1 else (("?", {}),)
        kind = str(_INSTRUCTIONS_13.get(body.get("type"), name))
        if "actions" in body:
            out.append(f"{kind}({_actions13(body['actions'])})")
        elif "table_id" in body:
            out.append(f"goto_table:{body['table_id']}")
        elif "meter_id" in body:
            out.append(f"meter:{body['meter_id']}")
        else:
            out.append(kind)
    return ",".join(out) or "drop"


def _of13_summary(typ: str, body: dict[str, Any]) -> str | None:
    """The OpenFlow 1.3 form of the types whose fields differ from 1.0 (OXM matches, instructions)."""
    if typ == "FLOW_MOD":
        cmd = _FLOW_MOD_CMDS.get(int(body.get("command") or 0), str(body.get("command")))
        match = ",".join(f"{k}={v}" for k, v in _oxm(body.get("match", {})).items()) or "*"
        return (f"FLOW_MOD {cmd} table={body.get('table_id')} priority={body.get('priority')} {match} -> "
                f"{_instructions13(body.get('instructions', []))}")
    if typ == "PACKET_OUT":
        return (f"PACKET_OUT in_port={_port13(body.get('in_port'))} -> "
                f"{_actions13(body.get('actions', [])) or 'drop'}")
    if typ == "PACKET_IN":
        reason = {0: "no_match", 1: "action", 2: "invalid_ttl"}.get(int(body.get("reason") or 0), body.get("reason"))
        return (f"PACKET_IN in_port={_oxm(body.get('match', {})).get('in_port')} reason={reason} "
                f"table={body.get('table_id')} buffer={body.get('buffer_id')}")
    if typ == "FLOW_REMOVED":
        match = ",".join(f"{k}={v}" for k, v in _oxm(body.get("match", {})).items()) or "*"
        return f"FLOW_REMOVED table={body.get('table_id')} {match}"
    return None


def of_summary(msg: dict) -> str:
    """``FLOW_MOD add in_port=2,dl_dst=... -> output:1``; other types by name plus their key field."""
    typ = msg.get("type", "?")
    body: dict[str, Any] = next(iter(msg.get("body", {}).values()), {}) if isinstance(msg.get("body"), dict) else {}
    if msg.get("version") == 4 and isinstance(body, dict):
        text = _of13_summary(typ, body)
        if text is not None:
            return text
    if typ == "FLOW_MOD":
        # a missing command maps to its str
        cmd = _FLOW_MOD_CMDS.get(int(body.get("command") or 0), str(body.get("command")))
        return f"FLOW_MOD {cmd} {_match(body.get('match', {}))} -> {_actions(body.get('actions', []))}"
    if typ == "PACKET_OUT":
        return f"PACKET_OUT in_port={_port(body.get('in_port'))} -> {_actions(body.get('actions', []))}"
    if typ == "PACKET_IN":
        return f"PACKET_IN in_port={body.get('in_port')} buffer={body.get('buffer_id')}"
    if typ == "PORT_STATUS":
        raw_reason = body.get("reason")
        # a missing or unknown reason is shown as it is
        reason = {0: "add", 1: "delete", 2: "modify"}.get(raw_reason, raw_reason)  # type: ignore[arg-type]
        desc: dict[str, Any] = (next(iter(body.get("desc", {}).values()), {}) if isinstance(body.get("desc"), dict)
                                else {})
        return f"PORT_STATUS {reason} port {desc.get('port_no', '?')}"
    if typ == "FLOW_REMOVED":
        return f"FLOW_REMOVED {_match(body.get('match', {}))}"
    return str(typ)


def describe(e: ts.Event) -> str:
    """One line of plain words for any event."""
    if isinstance(e, ts.ControlToSwitch):
        return f"{e.controller} -> {switch_name(e.dpid)}: {of_summary(e.msg)}"
    if isinstance(e, ts.ControlToController):
        return f"{switch_name(e.dpid)} -> {e.controller}: {of_summary(e.msg)}"
    if isinstance(e, ts.SwitchConnected):
        return f"{switch_name(e.dpid)} connected to {e.controller} (conn {e.conn})"
    if isinstance(e, ts.SwitchDisconnected):
        return f"{switch_name(e.dpid)} disconnected from {e.controller}: {e.reason}"
    if isinstance(e, ts.PacketArrival):
        return f"packet #{e.pid} reaches {e.node}:{e.port} ({_packet_words(e.packet)})"
    if isinstance(e, ts.TrafficInjection):
        return f"input {e.id}: {e.host} sends {_packet_words(e.packet)} to {e.dst or '?'}"
    if isinstance(e, ts.HostMigration):
        return f"input {e.id}: {e.host} moves {e.old_switch}:{e.old_port} -> {e.new_switch}:{e.new_port}"
    if isinstance(e, (ts.LinkFailure, ts.LinkRecovery)):
        what = "fails" if isinstance(e, ts.LinkFailure) else "recovers"
        if e.one_way:
            return f"input {e.id}: link direction {e.node1}:{e.port1} -> {e.node2}:{e.port2} {what} (one way)"
        return f"input {e.id}: link {e.node1}:{e.port1}-{e.node2}:{e.port2} {what}"
    if isinstance(e, ts.ConfigChange):
        return f"input {e.id}: {e.controller}'s config changes: {e.edit} (sha256 {e.sha256[:12]})"
    if isinstance(e, ts.Violation):
        from netsleuth.invariants.violation_text import violation_lines

        lines = violation_lines(e)
        return f"{'persistent' if e.persistent else 'transient'} " + "\n  ".join(lines)
    if isinstance(e, ts.PingResult):
        return f"ping {e.src} -> {e.dst} {'ok' if e.ok else 'lost'}"
    if isinstance(e, ts.ControllerEvent):
        return f"controller {e.controller} {e.what}: {e.detail}"
    if isinstance(e, ts.InputEvent):
        fields = ", ".join(f"{k}={getattr(e, k)}" for k in e.__dataclass_fields__
                           if k not in ("seq", "t", "id", "deps", "fp"))
        return f"input {e.id}: {e.kind} {fields}".rstrip()
    return e.kind


def _packet_words(p: dict) -> str:
    l3 = p.get("l3") or {}
    kind = l3.get("kind")
    if kind == "arp":
        return f"ARP {'request' if l3.get('op') == 1 else 'reply'} {l3.get('spa')} -> {l3.get('tpa')}"
    if kind == "ipv4":
        l4 = (p.get("l4") or {}).get("kind", f"proto {l3.get('proto')}")
        return f"{str(l4).upper()} {l3.get('src')} -> {l3.get('dst')}"
    return f"eth {p.get('eth_src')} -> {p.get('eth_dst')}"


def nodes_of(e: ts.Event) -> tuple[str, ...]:
    """The switches, hosts and controllers an event involves, in a stable order."""
    out: list[str] = []
    dpid = getattr(e, "dpid", None)
    if isinstance(dpid, int):
        out.append(switch_name(dpid))
    for name in ("switch", "node", "node1", "node2", "old_switch", "new_switch", "host", "dst", "src",
                 "controller"):
        v = getattr(e, name, None)
        if isinstance(v, str) and v:
            out.append(v)
    for name in ("hosts", "switches"):
        out.extend(getattr(e, name, ()) or ())
    return tuple(dict.fromkeys(out))
