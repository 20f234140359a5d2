"""A switch refusing a controller's message with an OpenFlow ERROR (the `openflow-errors` invariant).

A controller that sends a FLOW_MOD the switch refuses believes a rule is in place that is not;
most controllers log the ERROR at best.  The violation names the error (type and code, as the
spec names them), the message it answered (type, xid and a short rendering) and the switch.
Its identity (``details["group"]``) is the error and the message type: the same refusal on
another switch, or with another xid, is the same defect.
"""

from __future__ import annotations

from typing import Any

from os_ken.ofproto import ofproto_v1_0 as of10
from os_ken.ofproto import ofproto_v1_3 as of13

from netsleuth.invariants.forwarding import Finding
from netsleuth.model.actions import action_from_ofp
from netsleuth.model.match import Match
from netsleuth.openflow.codec import msg_type_name

# error type name -> the prefix of its codes' names (the same in both versions where both have it)
_CODES = {"HELLO_FAILED": "OFPHFC_", "BAD_REQUEST": "OFPBRC_", "BAD_ACTION": "OFPBAC_", "BAD_INSTRUCTION": "OFPBIC_",
          "BAD_MATCH": "OFPBMC_", "FLOW_MOD_FAILED": "OFPFMFC_", "GROUP_MOD_FAILED": "OFPGMFC_",
          "PORT_MOD_FAILED": "OFPPMFC_", "TABLE_MOD_FAILED": "OFPTMFC_", "QUEUE_OP_FAILED": "OFPQOFC_",
          "SWITCH_CONFIG_FAILED": "OFPSCFC_", "ROLE_REQUEST_FAILED": "OFPRRFC_", "METER_MOD_FAILED": "OFPMMFC_",
          "TABLE_FEATURES_FAILED": "OFPTFFC_"}
RENDER_WIDTH = 110


def error_names(version: int, err_type: int, err_code: int) -> tuple[str, str]:
    """("BAD_ACTION", "BAD_OUT_PORT") for OpenFlow 1.0's (2, 4): the spec's names, without prefixes."""
    mod = of13 if version == 4 else of10
    tname = next((n[len("OFPET_"):] for n in sorted(dir(mod))
                  if n.startswith("OFPET_") and getattr(mod, n) == err_type), f"type {err_type}")
    prefix = _CODES.get(tname, "")
    cname = next((n[len(prefix):] for n in sorted(dir(mod))
                  if prefix and n.startswith(prefix) and getattr(mod, n) == err_code), f"code {err_code}")
    return tname, cname


def message_type(msg: Any) -> str:
    """FLOW_MOD for an os-ken OFPFlowMod of either version."""
    if msg is None:
        return "a message that did not decode"
    return msg_type_name(msg)


def render(msg: Any, version: int) -> str:
    """A short rendering of the refused message: a FLOW_MOD's command, priority, match and actions."""
    if msg is None:
        return ""
    kind = type(msg).__name__
    try:
        if kind == "OFPFlowMod":
            return _clip(_flow_mod(msg, version))
        if kind == "OFPPacketOut":
            acts = ",".join(str(a) for a in _actions(msg.actions, version))
            return _clip(f"buffer_id={msg.buffer_id:#x} in_port={msg.in_port} actions={acts or 'drop'}")
    except (AttributeError, ValueError, TypeError, KeyError):
        pass
    return ""


def _flow_mod(msg: Any, version: int) -> str:
    commands = ("ADD", "MODIFY", "MODIFY_STRICT", "DELETE", "DELETE_STRICT")
    cmd = commands[msg.command] if 0 <= msg.command < len(commands) else str(msg.command)
    if version == 4:
        match = ",".join(f"{k}={v}" for k, v in msg.match.items()) or "any"
        instr = ";".join(_instruction(i) for i in msg.instructions) or "drop"
        return f"{cmd} table={msg.table_id} priority={msg.priority} {match} -> {instr}"
    acts = ",".join(str(a) for a in _actions(msg.actions, version)) or "drop"
    return f"{cmd} priority={msg.priority} {Match.from_ofp(msg.match) or 'any'} -> {acts}"


def _actions(actions: Any, version: int) -> list[Any]:
    if version == 4:
        return [type(a).__name__.replace("OFPAction", "").lower() + (f":{a.port}" if hasattr(a, "port") else "")
                for a in actions]
    return [action_from_ofp(a) for a in actions]


def _instruction(i: Any) -> str:
    name = type(i).__name__.replace("OFPInstruction", "")
    if hasattr(i, "actions"):
        kind = {of13.OFPIT_APPLY_ACTIONS: "apply", of13.OFPIT_WRITE_ACTIONS: "write",
                of13.OFPIT_CLEAR_ACTIONS: "clear"}.get(getattr(i, "type", None), name.lower())
        return f"{kind}:" + ",".join(_actions(i.actions, 4))
    if hasattr(i, "table_id"):
        return f"goto:{i.table_id}"
    return name.lower()


def _clip(text: str) -> str:
    return text if len(text) <= RENDER_WIDTH else text[:RENDER_WIDTH - 3] + "..."


def finding(switch: str, controller: str, version: int, msg: Any, err_type: int, err_code: int, xid: int,
            seq: int | None, count: int = 1) -> Finding:
    tname, cname = error_names(version, err_type, err_code)
    mtype = message_type(msg)
    shown = render(msg, version)
    at = f" (trace seq {seq})" if seq is not None else ""
    details: dict = {"group": [tname, cname, mtype], "error_type": tname, "error_code": cname,
                     "error": [err_type, err_code], "request": mtype, "xid": xid, "controller": controller,
                     "count": count,
                     "request_text": f"{mtype} xid {xid}{at}" + (f": {shown}" if shown else "")}
    if seq is not None:
        details["seq"] = seq
    return Finding("openflow-errors", f"{switch} refused {controller}'s {mtype} with ERROR {tname}/{cname}",
                   switches=(switch,), details=details)


__all__ = ["error_names", "finding", "render"]
