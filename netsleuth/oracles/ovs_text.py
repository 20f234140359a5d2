"""The text Open vSwitch speaks, both ways: rules out for ovs-ofctl, ofproto/trace output in.

Pure functions over strings (no process, no socket), split from the sandbox
in ``oracles/ovs.py`` so the two halves can be read and tested apart.

* Rules are rendered for ``ovs-ofctl -O OpenFlow10 -F openflow10`` from the
  match's masks and values, not ``str(match)``: ovs-ofctl's text parser reads
  ``dl_vlan=0xffff,dl_vlan_pcp=N`` as "VLAN id 0", while on the wire OVS
  ignores the PCP of an untagged match.
* "Datapath actions:" of a trace is the ground truth of what leaves the
  switch.  It is replayed on the header values OVS parsed ("Flow:"), so each
  output carries the header fields that differ from the input at the moment
  it is sent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from os_ken.ofproto import ofproto_v1_0 as ofp

from netsleuth.errors import NetsleuthError
from netsleuth.model.actions import Action, Output
from netsleuth.model.addr import int_to_ip, int_to_mac, ip_to_int, mac_to_int
from netsleuth.model.match import FIELDS, Match

# The OpenFlow 1.0 fields a switch can rewrite, in FIELDS order: the header
# state compared per output.
HEADER_FIELDS = ("dl_src", "dl_dst", "dl_vlan", "dl_vlan_pcp", "nw_tos", "nw_src", "nw_dst",
                 "tp_src", "tp_dst")
_VLAN_NONE = ofp.OFP_VLAN_NONE


class OvsRuleError(NetsleuthError):
    """A rule cannot be rendered for, or was rejected by, ovs-ofctl."""


class OvsTraceError(NetsleuthError):
    """ofproto/trace output that this module cannot read."""


# --------------------------------------------------------------------- results
@dataclass(frozen=True, slots=True)
class OvsOutput:
    """One copy of the packet leaving the switch.

    ``port`` is an OpenFlow port number (OFPP_CONTROLLER for a packet-in,
    OFPP_LOCAL for the bridge's internal port); ``changes`` holds the
    HEADER_FIELDS whose value differs from the input packet, sorted by name.
    """

    port: int
    changes: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class OvsDecision:
    """What OVS does with one packet, normalized from an ofproto/trace."""

    matched: bool                           # False: "No match" (table miss)
    outputs: tuple[OvsOutput, ...]          # in datapath order, controller included
    initial: tuple[tuple[str, int], ...]    # OF1.0 header values OVS parsed from the packet
    trace_text: str = field(default="", compare=False, repr=False)

    @property
    def to_controller(self) -> bool:
        return any(o.port == ofp.OFPP_CONTROLLER for o in self.outputs)

    @property
    def dropped(self) -> bool:
        return not self.outputs


@dataclass(frozen=True, slots=True)
class Normalization:
    """ovs-ofctl changed a match before sending it (dropped fields, usually prerequisites)."""

    before: str
    after: str


# --------------------------------------------------------------------- rendering
_SPECIAL_PORTS = {ofp.OFPP_IN_PORT: "IN_PORT", ofp.OFPP_TABLE: "TABLE", ofp.OFPP_NORMAL: "NORMAL",
                  ofp.OFPP_FLOOD: "FLOOD", ofp.OFPP_ALL: "ALL", ofp.OFPP_LOCAL: "LOCAL"}


def render_match(match: Match) -> str:
    """ovs-ofctl text whose OpenFlow 1.0 encoding has the same wildcards and values.

    Uses the match's ``masks``/``values`` (netsleuth.model.match.Match).  The
    PCP of an untagged (dl_vlan=0xffff) match is left out: OVS ignores it on
    the wire, but its text parser would turn it into "tagged, VLAN id 0".
    """
    masks, values = match.masks, match.values
    parts: list[str] = []
    for i, name in enumerate(FIELDS):
        mask, value = masks[i], values[i]
        if not mask:
            continue
        if name == "dl_vlan_pcp" and masks[3] and values[3] == _VLAN_NONE:
            continue
        if name in ("dl_src", "dl_dst"):
            text = int_to_mac(value)
        elif name in ("nw_src", "nw_dst"):
            text = f"{int_to_ip(value)}/{mask.bit_count()}"
        elif name == "dl_type":
            text = f"0x{value:04x}"
        elif name == "dl_vlan" and value == _VLAN_NONE:
            text = "0xffff"
        else:
            text = str(value)
        parts.append(f"{name}={text}")
    return ",".join(parts)


def render_action(action: Action) -> str:
    """ovs-ofctl text of one netsleuth action (their ``str`` is that syntax)."""
    if isinstance(action, Output):
        port = action.port
        if port == ofp.OFPP_CONTROLLER:
            return f"CONTROLLER:{action.max_len}"
        if port in _SPECIAL_PORTS:
            return _SPECIAL_PORTS[port]
        if port > ofp.OFPP_MAX:
            raise OvsRuleError(f"output to port {port:#x} has no ovs-ofctl spelling",
                               "output to a physical port or IN_PORT/TABLE/NORMAL/FLOOD/ALL/CONTROLLER/LOCAL")
    return str(action)


def render_rule(match: Match, priority: int, actions: Sequence[Action]) -> str:
    """One ``add-flows`` line: ``priority=P,<match>,actions=<actions>``."""
    acts = ",".join(render_action(a) for a in actions) or "drop"
    text = render_match(match)
    return f"priority={priority}" + (f",{text}" if text else "") + f",actions={acts}"


# --------------------------------------------------------------------- trace parsing
def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _num(text: str) -> int:
    """An int, MAC or IPv4 address as printed by OVS."""
    if ":" in text:
        return mac_to_int(text)
    if text.count(".") == 3:
        return ip_to_int(text)
    return int(text, 0)


def parse_flow_line(flow: str) -> dict[str, int]:
    """OpenFlow 1.0 header values from a trace's ``Flow:`` line.

    ARP addresses/opcode and ICMP type/code appear under the 1.0 names
    (nw_src/nw_dst/nw_proto, tp_src/tp_dst), as in an ``ofp_match``.
    """
    kv: dict[str, str] = {}
    for token in _split_top(flow):
        key, sep, value = token.partition("=")
        if sep:
            kv[key] = value
    state = {name: 0 for name in HEADER_FIELDS}
    state["dl_src"] = _num(kv.get("dl_src", "0"))
    state["dl_dst"] = _num(kv.get("dl_dst", "0"))
    if "dl_vlan" in kv:
        state["dl_vlan"] = int(kv["dl_vlan"], 0)
        state["dl_vlan_pcp"] = int(kv.get("dl_vlan_pcp", "0"), 0)
    else:
        tci = int(kv.get("vlan_tci", "0"), 0)
        state["dl_vlan"] = tci & 0xFFF if tci & 0x1000 else _VLAN_NONE
        state["dl_vlan_pcp"] = tci >> 13 if tci & 0x1000 else 0
    aliases = {"nw_src": ("nw_src", "arp_spa"), "nw_dst": ("nw_dst", "arp_tpa"),
               "tp_src": ("tp_src", "icmp_type"), "tp_dst": ("tp_dst", "icmp_code")}
    for name, keys in aliases.items():
        for key in keys:
            if key in kv:
                state[name] = _num(kv[key])
    state["nw_tos"] = int(kv.get("nw_tos", "0"), 0) & 0xFC
    return state


def _masked(old: int, text: str) -> int:
    value, _, mask = text.partition("/")
    if not mask:
        return _num(value)
    m = _num(mask)
    return (old & ~m) | (_num(value) & m)


# datapath set(...) key -> {attribute: OF1.0 field}; others (ttl, proto, frag, ...) ignored
_SET_KEYS: dict[str, dict[str, str]] = {
    "eth": {"src": "dl_src", "dst": "dl_dst"},
    "ipv4": {"src": "nw_src", "dst": "nw_dst", "tos": "nw_tos"},
    "arp": {"sip": "nw_src", "tip": "nw_dst"},
    "tcp": {"src": "tp_src", "dst": "tp_dst"},
    "udp": {"src": "tp_src", "dst": "tp_dst"},
    "sctp": {"src": "tp_src", "dst": "tp_dst"},
    "icmp": {"type": "tp_src", "code": "tp_dst"},
}
_SET_RE = re.compile(r"^set\((\w+)\((.*)\)\)$")
_PUSH_VLAN_RE = re.compile(r"^push_vlan\((.*)\)$")


def _apply_set(state: dict[str, int], key: str, body: str, action: str) -> None:
    attrs = _SET_KEYS.get(key)
    if attrs is None:
        raise OvsTraceError(f"unexpected datapath action {action!r}",
                            "extend netsleuth.oracles.ovs_text._SET_KEYS if OVS gained a header")
    for item in _split_top(body):
        attr, _, value = item.partition("=")
        name = attrs.get(attr)
        if name is not None:
            state[name] = _masked(state[name], value) & (0xFC if name == "nw_tos" else -1)


def parse_datapath_actions(text: str, initial: Mapping[str, int],
                           dp_to_of: Mapping[int, int]) -> tuple[OvsOutput, ...]:
    """Replay datapath actions on ``initial``; one OvsOutput per copy sent."""
    state = dict(initial)
    outputs: list[OvsOutput] = []

    def emit(port: int) -> None:
        changes = tuple(sorted((k, v) for k, v in state.items() if v != initial[k]))
        outputs.append(OvsOutput(port, changes))

    for action in _split_top(text):
        if action == "drop":
            continue
        if action.isdigit():
            dp_port = int(action)
            if dp_port not in dp_to_of:
                raise OvsTraceError(f"datapath port {dp_port} is not on the bridge",
                                    "the port map is stale: recreate the sandbox")
            emit(dp_to_of[dp_port])
        elif action == "pop_vlan":
            state["dl_vlan"], state["dl_vlan_pcp"] = _VLAN_NONE, 0
        elif m := _PUSH_VLAN_RE.match(action):
            fields = dict(item.partition("=")[::2] for item in _split_top(m.group(1)))
            state["dl_vlan"] = int(fields.get("vid", "0"), 0)
            state["dl_vlan_pcp"] = int(fields.get("pcp", "0"), 0)
        elif m := _SET_RE.match(action):
            _apply_set(state, m.group(1), m.group(2), action)
        elif action.startswith("userspace(") and "controller(" in action:
            emit(ofp.OFPP_CONTROLLER)
        else:
            raise OvsTraceError(f"unexpected datapath action {action!r}",
                                "only OpenFlow 1.0 actions are expected; check the installed rules")
    return tuple(outputs)


def parse_trace(text: str, dp_to_of: Mapping[int, int]) -> OvsDecision:
    """An OvsDecision from the full text of ``ofproto/trace``."""
    flow = re.search(r"^Flow: (.*)$", text, re.M)
    actions = re.search(r"^Datapath actions: (.*)$", text, re.M)
    if flow is None or actions is None:
        raise OvsTraceError("ofproto/trace printed no Flow:/Datapath actions: line",
                            "check the packet and bridge name", details=text)
    initial = parse_flow_line(flow.group(1))
    # "No match." (drop) or "No match, and a "packet-in" is called for."
    matched = re.search(r"^\s*0\. No match\b", text, re.M) is None
    outputs = parse_datapath_actions(actions.group(1), initial, dp_to_of)
    return OvsDecision(matched, outputs, tuple(sorted(initial.items())), text)


def parse_dpif_show(text: str, bridge: str) -> dict[int, int]:
    """{datapath port: OpenFlow port} for ``bridge`` from ``dpif/show``."""
    mapping: dict[int, int] = {}
    current = None
    for line in text.splitlines():
        if re.match(r"^  \S+:$", line):
            current = line.strip()[:-1]
        elif current == bridge and (m := re.match(r"^\s+\S+ (\d+)/(\d+):", line)):
            mapping[int(m.group(2))] = int(m.group(1))
    return mapping

