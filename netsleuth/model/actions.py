"""OpenFlow 1.0 actions as small immutable values.

os-ken's action objects are mutable, compare by identity and keep MACs as
bytes; flow entries, traces and model-checker states need actions that hash,
compare by value, serialize to JSON and print like ``ovs-ofctl``.  These
classes are that vocabulary; os-ken's classes stay at the wire boundary
(``action_from_ofp`` / ``action_to_ofp``).

Values are validated as OVS validates an OpenFlow 1.0 flow_mod (VLAN id 12
bits, PCP 3 bits, ToS only DSCP bits); the :class:`ActionError` carries the
OFPBAC_* code to answer with.  Output ports are only range-checked: whether a
port exists is the switch's business.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from os_ken.ofproto import ofproto_v1_0 as ofp
from os_ken.ofproto import ofproto_v1_0_parser as ofp_parser

from netsleuth.errors import NetsleuthError
from netsleuth.model.addr import int_to_ip, int_to_mac, ip_to_int, mac_to_bytes, mac_to_int


class ActionError(NetsleuthError, ValueError):
    """An action the switch cannot accept; ``err_code`` is the OFPBAC_* code to reply with."""

    err_type = ofp.OFPET_BAD_ACTION

    def __init__(self, problem: str, fix: str = "", err_code: int = ofp.OFPBAC_BAD_ARGUMENT) -> None:
        super().__init__(problem, fix)
        self.err_code = err_code


def _check(name: str, value: Any, limit: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= limit:
        raise ActionError(f"action argument {name}={value!r} is out of range",
                          f"give {name} as an int in 0..{limit:#x}")


def _special_port(port: int) -> str:
    names = {ofp.OFPP_IN_PORT: "IN_PORT", ofp.OFPP_TABLE: "TABLE", ofp.OFPP_NORMAL: "NORMAL",
             ofp.OFPP_FLOOD: "FLOOD", ofp.OFPP_ALL: "ALL", ofp.OFPP_CONTROLLER: "CONTROLLER",
             ofp.OFPP_LOCAL: "LOCAL", ofp.OFPP_NONE: "NONE"}
    return names.get(port, str(port))


@dataclass(frozen=True, slots=True)
class Output:
    port: int
    max_len: int = 0xFFE5

    def __post_init__(self) -> None:
        _check("port", self.port, 0xFFFF)
        _check("max_len", self.max_len, 0xFFFF)

    def __str__(self) -> str:
        if self.port == ofp.OFPP_CONTROLLER:
            return f"CONTROLLER:{self.max_len}"
        if self.port > ofp.OFPP_MAX:
            return _special_port(self.port)
        return f"output:{self.port}"


@dataclass(frozen=True, slots=True)
class SetVlanVid:
    vid: int

    def __post_init__(self) -> None:
        _check("vid", self.vid, 0xFFF)

    def __str__(self) -> str:
        return f"mod_vlan_vid:{self.vid}"


@dataclass(frozen=True, slots=True)
class SetVlanPcp:
    pcp: int

    def __post_init__(self) -> None:
        _check("pcp", self.pcp, 7)

    def __str__(self) -> str:
        return f"mod_vlan_pcp:{self.pcp}"


@dataclass(frozen=True, slots=True)
class StripVlan:
    def __str__(self) -> str:
        return "strip_vlan"


@dataclass(frozen=True, slots=True)
class SetDlSrc:
    mac: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "mac", _mac(self.mac))

    def __str__(self) -> str:
        return f"mod_dl_src:{int_to_mac(self.mac)}"


@dataclass(frozen=True, slots=True)
class SetDlDst:
    mac: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "mac", _mac(self.mac))

    def __str__(self) -> str:
        return f"mod_dl_dst:{int_to_mac(self.mac)}"


@dataclass(frozen=True, slots=True)
class SetNwSrc:
    ip: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "ip", _ip(self.ip))

    def __str__(self) -> str:
        return f"mod_nw_src:{int_to_ip(self.ip)}"


@dataclass(frozen=True, slots=True)
class SetNwDst:
    ip: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "ip", _ip(self.ip))

    def __str__(self) -> str:
        return f"mod_nw_dst:{int_to_ip(self.ip)}"


@dataclass(frozen=True, slots=True)
class SetNwTos:
    tos: int

    def __post_init__(self) -> None:
        _check("tos", self.tos, 0xFF)
        if self.tos & 0x03:
            raise ActionError(f"set_nw_tos {self.tos:#x} sets the ECN bits",
                              "OpenFlow 1.0 sets only the DSCP bits: use a multiple of 4")

    def __str__(self) -> str:
        return f"mod_nw_tos:{self.tos}"


@dataclass(frozen=True, slots=True)
class SetTpSrc:
    port: int

    def __post_init__(self) -> None:
        _check("port", self.port, 0xFFFF)

    def __str__(self) -> str:
        return f"mod_tp_src:{self.port}"


@dataclass(frozen=True, slots=True)
class SetTpDst:
    port: int

    def __post_init__(self) -> None:
        _check("port", self.port, 0xFFFF)

    def __str__(self) -> str:
        return f"mod_tp_dst:{self.port}"


@dataclass(frozen=True, slots=True)
class Enqueue:
    port: int
    queue_id: int

    def __post_init__(self) -> None:
        _check("port", self.port, 0xFFFF)
        _check("queue_id", self.queue_id, 0xFFFFFFFF)

    def __str__(self) -> str:
        return f"enqueue:{self.port}:{self.queue_id}"


Action = (Output | SetVlanVid | SetVlanPcp | StripVlan | SetDlSrc | SetDlDst | SetNwSrc | SetNwDst
          | SetNwTos | SetTpSrc | SetTpDst | Enqueue)


def _mac(value: Any) -> int:
    try:
        mac = mac_to_int(value)
    except (ValueError, TypeError, AttributeError):
        raise ActionError(f"{value!r} is not a MAC address",
                          "write it as aa:bb:cc:dd:ee:ff, 6 bytes or an int") from None
    _check("mac", mac, (1 << 48) - 1)
    return mac


def _ip(value: Any) -> int:
    try:
        ip = ip_to_int(value)
    except (ValueError, TypeError, AttributeError):
        raise ActionError(f"{value!r} is not an IPv4 address",
                          "write it as a.b.c.d or an int") from None
    _check("ip", ip, 0xFFFFFFFF)
    return ip


# (OFPAT code, JSON name, class, os-ken class, dataclass field names) for each action.
_TABLE: tuple[tuple[int, str, type, type, tuple[str, ...]], ...] = (
    (ofp.OFPAT_OUTPUT, "output", Output, ofp_parser.OFPActionOutput, ("port", "max_len")),
    (ofp.OFPAT_SET_VLAN_VID, "set_vlan_vid", SetVlanVid, ofp_parser.OFPActionVlanVid, ("vid",)),
    (ofp.OFPAT_SET_VLAN_PCP, "set_vlan_pcp", SetVlanPcp, ofp_parser.OFPActionVlanPcp, ("pcp",)),
    (ofp.OFPAT_STRIP_VLAN, "strip_vlan", StripVlan, ofp_parser.OFPActionStripVlan, ()),
    (ofp.OFPAT_SET_DL_SRC, "set_dl_src", SetDlSrc, ofp_parser.OFPActionSetDlSrc, ("mac",)),
    (ofp.OFPAT_SET_DL_DST, "set_dl_dst", SetDlDst, ofp_parser.OFPActionSetDlDst, ("mac",)),
    (ofp.OFPAT_SET_NW_SRC, "set_nw_src", SetNwSrc, ofp_parser.OFPActionSetNwSrc, ("ip",)),
    (ofp.OFPAT_SET_NW_DST, "set_nw_dst", SetNwDst, ofp_parser.OFPActionSetNwDst, ("ip",)),
    (ofp.OFPAT_SET_NW_TOS, "set_nw_tos", SetNwTos, ofp_parser.OFPActionSetNwTos, ("tos",)),
    (ofp.OFPAT_SET_TP_SRC, "set_tp_src", SetTpSrc, ofp_parser.OFPActionSetTpSrc, ("port",)),
    (ofp.OFPAT_SET_TP_DST, "set_tp_dst", SetTpDst, ofp_parser.OFPActionSetTpDst, ("port",)),
    (ofp.OFPAT_ENQUEUE, "enqueue", Enqueue, ofp_parser.OFPActionEnqueue, ("port", "queue_id")),
)
_BY_CLASS = {row[2]: row for row in _TABLE}
_BY_OFP_CLASS = {row[3]: row for row in _TABLE}
_BY_NAME = {row[1]: row for row in _TABLE}


def action_code(action: Action) -> int:
    """The OFPAT_* type of an action."""
    return _BY_CLASS[type(action)][0]


def action_key(action: Action) -> tuple[int, ...]:
    """A plain tuple of ints (type code, arguments): stable to hash and to order."""
    row = _BY_CLASS[type(action)]
    return (row[0], *(getattr(action, f) for f in row[4]))


def action_from_ofp(a: Any) -> Action:
    """From an os-ken v1.0 action object; vendor actions raise :class:`ActionError`."""
    if isinstance(a, ofp_parser.OFPActionVendor):
        raise ActionError(f"vendor action {type(a).__name__} is not supported",
                          "use standard OpenFlow 1.0 actions", err_code=ofp.OFPBAC_BAD_VENDOR)
    row = _BY_OFP_CLASS.get(type(a))
    if row is None:
        raise ActionError(f"unknown action {a!r}", "use standard OpenFlow 1.0 actions",
                          err_code=ofp.OFPBAC_BAD_TYPE)
    cls = row[2]
    if cls is Output:
        return Output(a.port, a.max_len)
    if cls is SetVlanVid:
        return SetVlanVid(a.vlan_vid)
    if cls is SetVlanPcp:
        return SetVlanPcp(a.vlan_pcp)
    if cls is StripVlan:
        return StripVlan()
    if cls in (SetDlSrc, SetDlDst):
        return cls(a.dl_addr)
    if cls in (SetNwSrc, SetNwDst):
        return cls(a.nw_addr)
    if cls is SetNwTos:
        return SetNwTos(a.tos)
    if cls in (SetTpSrc, SetTpDst):
        return cls(a.tp)
    return Enqueue(a.port, a.queue_id)


def action_to_ofp(action: Action) -> Any:
    """As an os-ken v1.0 action object (MACs as bytes, IPs as ints)."""
    row = _BY_CLASS.get(type(action))
    if row is None:
        raise ActionError(f"{action!r} is not a netsleuth action", "build actions from netsleuth.model.actions",
                          err_code=ofp.OFPBAC_BAD_TYPE)
    ofp_cls = row[3]
    if isinstance(action, (SetDlSrc, SetDlDst)):
        return ofp_cls(mac_to_bytes(action.mac))
    return ofp_cls(*(getattr(action, f) for f in row[4]))


def action_to_json(action: Action) -> dict[str, Any]:
    """``{"type": "set_dl_src", "mac": "aa:bb:..."}``; addresses as strings."""
    row = _BY_CLASS[type(action)]
    out: dict[str, Any] = {"type": row[1]}
    for f in row[4]:
        v = getattr(action, f)
        out[f] = int_to_mac(v) if f == "mac" else int_to_ip(v) if f == "ip" else v
    return out


def action_from_json(d: dict[str, Any]) -> Action:
    # a missing type finds no row
    row = _BY_NAME.get(d.get("type")) if isinstance(d, dict) else None  # type: ignore[arg-type]
    if row is None:
        raise ActionError(f"bad action JSON {d!r}", f"type must be one of {', '.join(_BY_NAME)}",
                          err_code=ofp.OFPBAC_BAD_TYPE)
    try:
        return row[2](*(d[f] for f in row[4]))  # type: ignore[no-any-return]  # row[2] is the action class
    except KeyError as exc:
        raise ActionError(f"action JSON {d!r} lacks {exc}", "produce it with action_to_json()") from None


_APPLY: dict[type, Callable[[Any, Any], Any]] = {
    SetVlanVid: lambda p, a: p.set_vlan_vid(a.vid),
    SetVlanPcp: lambda p, a: p.set_vlan_pcp(a.pcp),
    StripVlan: lambda p, a: p.strip_vlan(),
    SetDlSrc: lambda p, a: p.set_dl_src(a.mac),
    SetDlDst: lambda p, a: p.set_dl_dst(a.mac),
    SetNwSrc: lambda p, a: p.set_nw_src(a.ip),
    SetNwDst: lambda p, a: p.set_nw_dst(a.ip),
    SetNwTos: lambda p, a: p.set_nw_tos(a.tos),
    SetTpSrc: lambda p, a: p.set_tp_src(a.port),
    SetTpDst: lambda p, a: p.set_tp_dst(a.port),
}


def apply_action(packet: Any, action: Action) -> Any:
    """The packet after a set-field action; Output and Enqueue return it unchanged."""
    fn = _APPLY.get(type(action))
    if fn is None:
        if type(action) in (Output, Enqueue):
            return packet
        raise ActionError(f"{action!r} is not a netsleuth action", "build actions from netsleuth.model.actions",
                          err_code=ofp.OFPBAC_BAD_TYPE)
    return fn(packet, action)
