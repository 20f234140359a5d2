"""OpenFlow 1.3 actions: values, their effect on a frame, and os-ken conversion.

Each action is a frozen dataclass so rules hash and compare by value.
``apply`` rewrites a frame for the header-changing actions; outputs, groups
and queues are the pipeline's business (``pipeline.py``) and leave the frame
as it is.  A TTL that a decrement would take to zero is reported as
``TtlExpired`` rather than silently written: the spec drops such a packet
(or sends it to the controller with OFPR_INVALID_TTL) and only the pipeline
knows which.

Checksums: every rewrite of an L3/L4 field recomputes the checksums it
covers, as a switch does (a UDP checksum of 0, "none" over IPv4, stays 0).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

from os_ken.ofproto import ofproto_v1_3 as ofp
from os_ken.ofproto import ofproto_v1_3_parser as parser

from netsleuth.model.of13.errors import bad_action
from netsleuth.model.of13.fieldspec import BY_NAME, VID_PRESENT, ovs_name
from netsleuth.model.of13.frame import Frame, parse_l3
from netsleuth.model.of13.headers import ETH_IPV6, MPLS_TYPES, SCTP, VLAN_TPIDS, ICMPv6, IPv6, MplsLabel, VlanTag
from netsleuth.model.of13.oxm import parse_value, render_value
from netsleuth.model.packet import ICMP, RAW, TCP, UDP, Arp, IPv4, PacketError

OFPCML_NO_BUFFER = ofp.OFPCML_NO_BUFFER


@dataclass(frozen=True, slots=True)
class Output:
    port: int
    max_len: int = OFPCML_NO_BUFFER


@dataclass(frozen=True, slots=True)
class CopyTtlOut:
    pass


@dataclass(frozen=True, slots=True)
class CopyTtlIn:
    pass


@dataclass(frozen=True, slots=True)
class SetMplsTtl:
    ttl: int


@dataclass(frozen=True, slots=True)
class DecMplsTtl:
    pass


@dataclass(frozen=True, slots=True)
class PushVlan:
    ethertype: int = 0x8100


@dataclass(frozen=True, slots=True)
class PopVlan:
    pass


@dataclass(frozen=True, slots=True)
class PushMpls:
    ethertype: int = 0x8847


@dataclass(frozen=True, slots=True)
class PopMpls:
    ethertype: int = 0x0800


@dataclass(frozen=True, slots=True)
class SetQueue:
    queue_id: int


@dataclass(frozen=True, slots=True)
class Group:
    group_id: int


@dataclass(frozen=True, slots=True)
class SetNwTtl:
    ttl: int


@dataclass(frozen=True, slots=True)
class DecNwTtl:
    pass


@dataclass(frozen=True, slots=True)
class SetField:
    """set_field: an OXM field name and its new value (ints; vlan_vid with OFPVID_PRESENT)."""

    field: str
    value: int


@dataclass(frozen=True, slots=True)
class PushPbb:
    ethertype: int = 0x88E7


@dataclass(frozen=True, slots=True)
class PopPbb:
    pass


Action = (Output | CopyTtlOut | CopyTtlIn | SetMplsTtl | DecMplsTtl | PushVlan | PopVlan | PushMpls | PopMpls
          | SetQueue | Group | SetNwTtl | DecNwTtl | SetField | PushPbb | PopPbb)


class TtlExpired(Exception):
    """A TTL decrement (or copy) left a TTL of zero: the packet is invalid."""


# ---------------------------------------------------------------------------
# effect on a frame


def apply(frame: Frame, action: Action) -> Frame:
    """``frame`` after a header-changing action; other actions return it unchanged.

    Raises TtlExpired when dec_nw_ttl/dec_mpls_ttl meets a TTL of 0 or 1.
    Actions whose header is absent do nothing (a flow_mod that could run them
    on such a packet is refused by ``check_actions``).
    """
    kind = type(action)
    handler = _APPLY.get(kind)
    return frame if handler is None else handler(frame, action)


def _push_vlan(frame: Frame, a: Any) -> Frame:
    # Spec 7.2.5: a new outermost tag copies VID and PCP of the existing outer tag, else 0.
    outer = frame.tags[0] if frame.tags else None
    tag = VlanTag(outer.vid if outer else 0, outer.pcp if outer else 0, 0, a.ethertype)
    return replace(frame, tags=(tag, *frame.tags))


def _pop_vlan(frame: Frame, a: Any) -> Frame:
    return replace(frame, tags=frame.tags[1:]) if frame.tags else frame


def _push_mpls(frame: Frame, a: Any) -> Frame:
    # A new top label over existing ones copies label, TC and TTL of the label below (spec 7.2.5).
    if frame.eth_type == RAW:
        return frame
    if frame.mpls:
        top = frame.mpls[0]
        label = MplsLabel(top.label, top.tc, 0, top.ttl)
        return replace(frame, eth_type=a.ethertype, mpls=(label, *frame.mpls))
    # Spec 7.2.5 push-tag table: label and TC 0, TTL from the IP header, else 0.
    ttl = _nw_ttl(frame)
    label = MplsLabel(0, 0, 1, 0 if ttl is None else ttl)
    return Frame(frame.eth_src, frame.eth_dst, a.ethertype, frame.tags, (label,), None, None, frame.l3_bytes(),
                 frame.trailer)


def _pop_mpls(frame: Frame, a: Any) -> Frame:
    if not frame.mpls:
        return frame
    rest = frame.mpls[1:]
    if rest:
        return replace(frame, eth_type=a.ethertype, mpls=rest)
    parsed = parse_l3(a.ethertype, frame.payload, 0)
    if parsed is None:
        return Frame(frame.eth_src, frame.eth_dst, a.ethertype, frame.tags, (), None, None, frame.payload,
                     frame.trailer)
    l3, l4, payload, trailer = parsed
    return Frame(frame.eth_src, frame.eth_dst, a.ethertype, frame.tags, (), l3, l4, payload,
                 trailer + frame.trailer)


def _nw_ttl(frame: Frame) -> int | None:
    l3 = frame.l3
    if type(l3) is IPv4:
        return l3.ttl
    if type(l3) is IPv6:
        return l3.hop_limit
    return None


def _with_nw_ttl(frame: Frame, ttl: int) -> Frame:
    l3 = frame.l3
    if type(l3) is IPv4:
        return replace(frame, l3=replace(l3, ttl=ttl, csum=None))
    if type(l3) is IPv6:
        return replace(frame, l3=replace(l3, hop_limit=ttl))
    return frame


def _dec_nw_ttl(frame: Frame, a: Any) -> Frame:
    ttl = _nw_ttl(frame)
    if ttl is None:
        return frame
    if ttl <= 1:
        raise TtlExpired(f"IP TTL {ttl}")
    return _with_nw_ttl(frame, ttl - 1)


def _set_nw_ttl(frame: Frame, a: Any) -> Frame:
    return _with_nw_ttl(frame, a.ttl)


def _with_mpls_ttl(frame: Frame, ttl: int) -> Frame:
    top = frame.mpls[0]
    return replace(frame, mpls=(replace(top, ttl=ttl), *frame.mpls[1:]))


def _dec_mpls_ttl(frame: Frame, a: Any) -> Frame:
    if not frame.mpls:
        return frame
    if frame.mpls[0].ttl <= 1:
        raise TtlExpired(f"MPLS TTL {frame.mpls[0].ttl}")
    return _with_mpls_ttl(frame, frame.mpls[0].ttl - 1)


def _set_mpls_ttl(frame: Frame, a: Any) -> Frame:
    return _with_mpls_ttl(frame, a.ttl) if frame.mpls else frame


def _copy_ttl_out(frame: Frame, a: Any) -> Frame:
    """Next-to-outermost TTL to outermost: the label below (or the IP TTL) to the top label."""
    if not frame.mpls:
        return frame
    if len(frame.mpls) > 1:
        return _with_mpls_ttl(frame, frame.mpls[1].ttl)
    inner = parse_l3(ETH_IPV6 if frame.payload[:1] and frame.payload[0] >> 4 == 6 else 0x0800, frame.payload, 0)
    if inner is None or not isinstance(inner[0], (IPv4, IPv6)):
        return frame
    ip = inner[0]
    return _with_mpls_ttl(frame, ip.ttl if isinstance(ip, IPv4) else ip.hop_limit)


def _copy_ttl_in(frame: Frame, a: Any) -> Frame:
    """Outermost TTL to next-to-outermost: the top label's TTL to the label (or IP header) below."""
    if not frame.mpls:
        return frame
    ttl = frame.mpls[0].ttl
    if len(frame.mpls) > 1:
        below = replace(frame.mpls[1], ttl=ttl)
        return replace(frame, mpls=(frame.mpls[0], below, *frame.mpls[2:]))
    version = frame.payload[0] >> 4 if frame.payload else 0
    eth_type = {4: 0x0800, 6: ETH_IPV6}.get(version)
    if eth_type is None:
        return frame
    inner = parse_l3(eth_type, frame.payload, 0)
    if inner is None:
        return frame
    l3, l4, payload, trailer = inner
    inner_frame = Frame(0, 0, eth_type, (), (), l3, l4, payload, trailer)
    new_payload = _with_nw_ttl(inner_frame, ttl).l3_bytes() + trailer
    return replace(frame, payload=new_payload)


def _set_field(frame: Frame, a: Any) -> Frame:
    return set_field(frame, a.field, a.value)


_APPLY: dict[type, Any] = {
    PushVlan: _push_vlan, PopVlan: _pop_vlan, PushMpls: _push_mpls, PopMpls: _pop_mpls,
    DecNwTtl: _dec_nw_ttl, SetNwTtl: _set_nw_ttl, DecMplsTtl: _dec_mpls_ttl, SetMplsTtl: _set_mpls_ttl,
    CopyTtlOut: _copy_ttl_out, CopyTtlIn: _copy_ttl_in, SetField: _set_field,
}


def set_field(frame: Frame, name: str, value: int) -> Frame:
    """``frame`` with OXM field ``name`` set to ``value``; no-op when the header is absent."""
    if name == "eth_dst":
        return replace(frame, eth_dst=value)
    if name == "eth_src":
        return replace(frame, eth_src=value)
    if name in ("vlan_vid", "vlan_pcp"):
        if not frame.tags:
            return frame
        outer = frame.tags[0]
        outer = replace(outer, vid=value & 0xFFF) if name == "vlan_vid" else replace(outer, pcp=value)
        return replace(frame, tags=(outer, *frame.tags[1:]))
    if name in ("mpls_label", "mpls_tc"):
        if not frame.mpls:
            return frame
        top = replace(frame.mpls[0], **{name[5:]: value})
        return replace(frame, mpls=(top, *frame.mpls[1:]))
    if name == "tunnel_id":
        return frame  # metadata of the pipeline, not a header (see pipeline.py)
    l3, l4 = frame.l3, frame.l4
    if type(l3) is IPv4:
        ip = l3
        if name == "ipv4_src":
            ip = replace(l3, src=value)
        elif name == "ipv4_dst":
            ip = replace(l3, dst=value)
        elif name == "ip_dscp":
            ip = replace(l3, tos=(value << 2) | (l3.tos & 3))
        elif name == "ip_ecn":
            ip = replace(l3, tos=(l3.tos & 0xFC) | value)
        if ip is not l3:
            pseudo = name in ("ipv4_src", "ipv4_dst")
            return replace(frame, l3=replace(ip, csum=None), l4=_recsum(l4, pseudo, v6=False))
    elif type(l3) is IPv6:
        ip6 = l3
        if name == "ipv6_src":
            ip6 = replace(l3, src=value)
        elif name == "ipv6_dst":
            ip6 = replace(l3, dst=value)
        elif name == "ipv6_flabel":
            ip6 = replace(l3, flabel=value)
        elif name == "ip_dscp":
            ip6 = replace(l3, tc=(value << 2) | (l3.tc & 3))
        elif name == "ip_ecn":
            ip6 = replace(l3, tc=(l3.tc & 0xFC) | value)
        if ip6 is not l3:
            return replace(frame, l3=ip6, l4=_recsum(l4, name in ("ipv6_src", "ipv6_dst"), v6=True))
    elif type(l3) is Arp:
        attr = {"arp_op": "op", "arp_spa": "spa", "arp_tpa": "tpa", "arp_sha": "sha", "arp_tha": "tha"}.get(name)
        if attr is not None:
            return replace(frame, l3=replace(l3, **{attr: value}))
        return frame
    attr = _L4_ATTRS.get((type(l4), name))
    if attr is not None and l4 is not None:
        if type(l4) is ICMPv6 and name.startswith("ipv6_nd"):
            return replace(frame, l4=_set_nd(l4, name, value))
        changes: dict[str, Any] = {attr: value, "csum": 0 if _udp_no_csum(l4, l3) else None}
        return replace(frame, l4=replace(l4, **changes))
    return frame


_L4_ATTRS: dict[tuple[type, str], str] = {
    (TCP, "tcp_src"): "src_port", (TCP, "tcp_dst"): "dst_port",
    (UDP, "udp_src"): "src_port", (UDP, "udp_dst"): "dst_port",
    (SCTP, "sctp_src"): "src_port", (SCTP, "sctp_dst"): "dst_port",
    (ICMP, "icmpv4_type"): "type", (ICMP, "icmpv4_code"): "code",
    (ICMPv6, "icmpv6_type"): "type", (ICMPv6, "icmpv6_code"): "code",
    (ICMPv6, "ipv6_nd_target"): "target", (ICMPv6, "ipv6_nd_sll"): "options", (ICMPv6, "ipv6_nd_tll"): "options",
}


def _udp_no_csum(l4: Any, l3: Any) -> bool:
    return type(l4) is UDP and l4.csum == 0 and type(l3) is IPv4


def _recsum(l4: Any, pseudo: bool, v6: bool) -> Any:
    """The L4 header after an IP rewrite: checksums covering the addresses are recomputed."""
    if l4 is None or not pseudo:
        return l4
    if type(l4) is UDP and l4.csum == 0 and not v6:
        return l4
    if type(l4) in (TCP, UDP, ICMPv6):
        return replace(l4, csum=None)
    return l4


def _set_nd(l4: ICMPv6, name: str, value: int) -> ICMPv6:
    if l4.target is None:
        return l4
    if name == "ipv6_nd_target":
        return replace(l4, target=value, csum=None)
    kind = 1 if name == "ipv6_nd_sll" else 2
    mac = value.to_bytes(6, "big")
    opts = list(l4.options)
    for i, (k, v) in enumerate(opts):
        if k == kind and len(v) == 6:
            opts[i] = (k, mac)
            return replace(l4, options=tuple(opts), csum=None)
    return l4  # OVS rewrites an existing option only; none: nothing to set


# ---------------------------------------------------------------------------
# consistency with the match (OFPBAC_MATCH_INCONSISTENT and friends)

_SPECIAL_OUT = frozenset((ofp.OFPP_IN_PORT, ofp.OFPP_TABLE, ofp.OFPP_NORMAL, ofp.OFPP_FLOOD, ofp.OFPP_ALL,
                          ofp.OFPP_CONTROLLER, ofp.OFPP_LOCAL))


def check_output_port(port: int, *, packet_out: bool = False) -> None:
    """OFPBAC_BAD_OUT_PORT for port 0, OFPP_ANY, reserved numbers, and TABLE outside a packet-out."""
    if port == ofp.OFPP_TABLE and not packet_out:
        raise bad_action(ofp.OFPBAC_BAD_OUT_PORT, "output to TABLE in a flow entry",
                         "OFPP_TABLE is only valid in a packet-out's actions")
    if not (0 < port <= ofp.OFPP_MAX or port in _SPECIAL_OUT):
        raise bad_action(ofp.OFPBAC_BAD_OUT_PORT, f"output to port {port:#x}",
                         "output to a port 1..0xffffff00 or a reserved port (IN_PORT, FLOOD, ALL, CONTROLLER, ...)")


def check_action_value(action: Action) -> None:
    """Errors an action has by itself: bad set-field type/argument, bad push ethertype."""
    if type(action) is SetField:
        spec = BY_NAME.get(action.field)
        if spec is None:
            raise bad_action(ofp.OFPBAC_BAD_SET_TYPE, f"set_field of unknown field {action.field!r}",
                             "set an OXM basic field")
        if not spec.settable:
            # A known field that may not be set: the spec names no code; OVS says BAD_SET_ARGUMENT.
            raise bad_action(ofp.OFPBAC_BAD_SET_ARGUMENT, f"set_field {action.field} is not allowed",
                             "set only fields the spec marks settable (not in_port, eth_type, ip_proto, ...)")
        bad = action.value < 0 or action.value > spec.full
        if action.field == "vlan_vid":
            bad = bad or action.value & ~(VID_PRESENT | 0xFFF) != 0
        if bad:
            raise bad_action(ofp.OFPBAC_BAD_SET_ARGUMENT, f"set_field {action.field}={action.value:#x} out of range",
                             f"keep the value within {spec.bits} bits")
    elif type(action) is PushVlan and action.ethertype not in VLAN_TPIDS:
        raise bad_action(ofp.OFPBAC_BAD_ARGUMENT, f"push_vlan ethertype {action.ethertype:#06x}",
                         "push_vlan takes 0x8100 or 0x88a8")
    elif isinstance(action, PushMpls) and action.ethertype not in MPLS_TYPES:
        raise bad_action(ofp.OFPBAC_BAD_ARGUMENT, f"push_mpls ethertype {action.ethertype:#06x}",
                         "push_mpls takes 0x8847 or 0x8848")
    elif isinstance(action, Output):
        check_output_port(action.port)


def render_action(action: Action) -> str:
    """ovs-ofctl syntax of one action (OpenFlow 1.3 flavour)."""
    kind = type(action)
    if kind is Output:
        assert isinstance(action, Output)
        names = {ofp.OFPP_IN_PORT: "IN_PORT", ofp.OFPP_TABLE: "TABLE", ofp.OFPP_NORMAL: "NORMAL",
                 ofp.OFPP_FLOOD: "FLOOD", ofp.OFPP_ALL: "ALL", ofp.OFPP_LOCAL: "LOCAL"}
        if action.port == ofp.OFPP_CONTROLLER:
            return f"CONTROLLER:{action.max_len}"
        return names.get(action.port, f"output:{action.port}")
    if kind is SetField:
        assert isinstance(action, SetField)
        return f"set_field:{render_value(BY_NAME[action.field], action.value)}->{ovs_name(action.field)}"
    simple = {CopyTtlOut: "copy_ttl_out", CopyTtlIn: "copy_ttl_in", DecMplsTtl: "dec_mpls_ttl", PopVlan: "pop_vlan",
              DecNwTtl: "dec_ttl", PopPbb: "pop_pbb"}
    if kind in simple:
        return simple[kind]
    if isinstance(action, (SetMplsTtl, SetNwTtl)):
        return f"{'set_mpls_ttl' if kind is SetMplsTtl else 'mod_nw_ttl'}:{action.ttl}"
    if isinstance(action, (PushVlan, PushMpls, PopMpls, PushPbb)):
        name = {PushVlan: "push_vlan", PushMpls: "push_mpls", PopMpls: "pop_mpls", PushPbb: "push_pbb"}[kind]
        return f"{name}:{action.ethertype:#06x}"
    if isinstance(action, SetQueue):
        return f"set_queue:{action.queue_id}"
    assert isinstance(action, Group)
    return f"group:{action.group_id}"


# ---------------------------------------------------------------------------
# os-ken conversion

def action_to_ofp(action: Action) -> Any:
    """The os-ken ``ofproto_v1_3_parser`` action object."""
    kind = type(action)
    if isinstance(action, Output):
        return parser.OFPActionOutput(action.port, action.max_len)
    if isinstance(action, SetField):
        spec = BY_NAME[action.field]
        value: Any = render_value(spec, action.value) if spec.kind in ("mac", "ipv4", "ipv6") else action.value
        return parser.OFPActionSetField(**{action.field: value})
    if isinstance(action, Group):
        return parser.OFPActionGroup(action.group_id)
    if isinstance(action, SetQueue):
        return parser.OFPActionSetQueue(action.queue_id)
    if isinstance(action, SetMplsTtl):
        return parser.OFPActionSetMplsTtl(action.ttl)
    if isinstance(action, SetNwTtl):
        return parser.OFPActionSetNwTtl(action.ttl)
    if isinstance(action, (PushVlan, PushMpls, PopMpls, PushPbb)):
        cls = {PushVlan: parser.OFPActionPushVlan, PushMpls: parser.OFPActionPushMpls,
               PopMpls: parser.OFPActionPopMpls, PushPbb: parser.OFPActionPushPbb}[kind]
        return cls(action.ethertype)
    cls0 = {CopyTtlOut: parser.OFPActionCopyTtlOut, CopyTtlIn: parser.OFPActionCopyTtlIn,
            DecMplsTtl: parser.OFPActionDecMplsTtl, PopVlan: parser.OFPActionPopVlan,
            DecNwTtl: parser.OFPActionDecNwTtl, PopPbb: parser.OFPActionPopPbb}[kind]
    return cls0()


def action_from_ofp(a: Any) -> Action:
    """A model action from an os-ken action object; OFPBAC_BAD_TYPE for what 1.3 does not define."""
    name = type(a).__name__
    if name == "OFPActionOutput":
        return Output(a.port, a.max_len)
    if name == "OFPActionSetField":
        spec = BY_NAME.get(a.key)
        if spec is None:
            raise bad_action(ofp.OFPBAC_BAD_SET_TYPE, f"set_field of unknown field {a.key!r}", "set an OXM basic field")
        return SetField(a.key, parse_value(spec, a.value))
    if name == "OFPActionGroup":
        return Group(a.group_id)
    if name == "OFPActionSetQueue":
        return SetQueue(a.queue_id)
    if name == "OFPActionSetMplsTtl":
        return SetMplsTtl(a.mpls_ttl)
    if name == "OFPActionSetNwTtl":
        return SetNwTtl(a.nw_ttl)
    with_type: dict[str, Callable[[int], Action]] = {"OFPActionPushVlan": PushVlan, "OFPActionPushMpls": PushMpls, "OFPActionPopMpls": PopMpls,
                 "OFPActionPushPbb": PushPbb}
    if name in with_type:
        return with_type[name](a.ethertype)
    plain: dict[str, Callable[[], Action]] = {"OFPActionCopyTtlOut": CopyTtlOut, "OFPActionCopyTtlIn": CopyTtlIn, "OFPActionDecMplsTtl": DecMplsTtl,
             "OFPActionPopVlan": PopVlan, "OFPActionDecNwTtl": DecNwTtl, "OFPActionPopPbb": PopPbb}
    if name in plain:
        return plain[name]()
    raise bad_action(ofp.OFPBAC_BAD_TYPE, f"unsupported action {name}", "use an OpenFlow 1.3 action")


__all__ = ["Action", "CopyTtlIn", "CopyTtlOut", "DecMplsTtl", "DecNwTtl", "Group", "Output", "PacketError",
           "PopMpls", "PopPbb", "PopVlan", "PushMpls", "PushPbb", "PushVlan", "SetField", "SetMplsTtl",
           "SetNwTtl", "SetQueue", "TtlExpired", "action_from_ofp", "action_to_ofp", "apply", "check_action_value",
           "check_output_port", "render_action", "set_field"]
