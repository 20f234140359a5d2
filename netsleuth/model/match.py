"""OpenFlow 1.0 matches as normalized, hashable values.

A controller can say the same thing many ways on the wire (garbage in
wildcarded fields, host bits under a prefix, a source prefix of 40 bits);
the flow table must treat all of them as one rule, and the model checker
must hash them to one state.  So a :class:`Match` is normalized when it is
built: afterwards ``==`` is semantic equality and every field is stored as
``value & mask``.  Seeing every field as a (mask, value) pair is also what
makes ``matches``, ``covers`` and ``overlaps`` exact, prefixes included,
with a couple of bit operations per field.

Fields whose prerequisite is absent are ignored, as Open vSwitch ignores
them (OpenFlow 1.0.1 calls them "ignored fields"; controllers such as POX
send them zero but not wildcarded): ``nw_src``, ``nw_dst`` and ``nw_proto``
need ``dl_type`` IPv4 or ARP, ``nw_tos`` needs IPv4, ``tp_src``/``tp_dst``
need IPv4 with ``nw_proto`` TCP, UDP, ICMP or SCTP.  A wildcard match gets
their wildcard bits set; a match with no wildcard bit at all (which OpenFlow
1.0 ranks above every other entry, by its wire form) stays exact, with those
fields' values zeroed: the 12-tuple of a real packet has zeros there, so it
matches the same packets.  ``nw_tos`` carries only the DSCP bits (``&
0xfc``), as in OVS.  This module does not depend on the packet model:
``matches`` takes the 12-tuple that ``Packet.match_fields`` produces.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

from os_ken.ofproto import ofproto_v1_0 as ofp
from os_ken.ofproto import ofproto_v1_0_parser as ofp_parser

from netsleuth.errors import NetsleuthError
from netsleuth.model.addr import int_to_ip, int_to_mac, ip_to_int, mac_to_bytes, mac_to_int

FIELDS = ("in_port", "dl_src", "dl_dst", "dl_vlan", "dl_vlan_pcp", "dl_type",
          "nw_tos", "nw_proto", "nw_src", "nw_dst", "tp_src", "tp_dst")

# Index of each field in the 12-tuple.
IN_PORT, DL_SRC, DL_DST, DL_VLAN, DL_VLAN_PCP, DL_TYPE, NW_TOS, NW_PROTO, NW_SRC, NW_DST, TP_SRC, TP_DST = range(12)

# Bits a field can have when it is matched exactly (nw_tos: DSCP bits only).
FULL_MASKS: tuple[int, ...] = (0xFFFF, (1 << 48) - 1, (1 << 48) - 1, 0xFFFF, 0xFF, 0xFFFF,
                               0xFC, 0xFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFF, 0xFFFF)
_WIDTH_LIMITS: tuple[int, ...] = (0xFFFF, (1 << 48) - 1, (1 << 48) - 1, 0xFFFF, 0xFF, 0xFFFF,
                                  0xFF, 0xFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFF, 0xFFFF)

# The single wildcard bit of every field except the two prefix fields.
_FLAG_BITS: dict[int, int] = {
    IN_PORT: ofp.OFPFW_IN_PORT, DL_SRC: ofp.OFPFW_DL_SRC, DL_DST: ofp.OFPFW_DL_DST,
    DL_VLAN: ofp.OFPFW_DL_VLAN, DL_VLAN_PCP: ofp.OFPFW_DL_VLAN_PCP, DL_TYPE: ofp.OFPFW_DL_TYPE,
    NW_TOS: ofp.OFPFW_NW_TOS, NW_PROTO: ofp.OFPFW_NW_PROTO, TP_SRC: ofp.OFPFW_TP_SRC,
    TP_DST: ofp.OFPFW_TP_DST,
}
_FLAG_FIELDS: tuple[tuple[int, int], ...] = tuple(sorted(_FLAG_BITS.items()))
_PREFIX_BITS = ofp.OFPFW_NW_SRC_MASK | ofp.OFPFW_NW_DST_MASK

ETH_IP, ETH_ARP = 0x0800, 0x0806
# nw_proto values under which OVS lets a match use tp_src/tp_dst (ICMP type/code, TCP/UDP/SCTP ports)
TP_PROTOS = frozenset({1, 6, 17, 132})
_NW_ALL: int = ofp.OFPFW_NW_SRC_ALL | ofp.OFPFW_NW_DST_ALL
_TP_BITS: int = ofp.OFPFW_TP_SRC | ofp.OFPFW_TP_DST
_IGNORE_NON_IP: int = ofp.OFPFW_NW_TOS | ofp.OFPFW_NW_PROTO | _NW_ALL | _TP_BITS
_IGNORE_ARP: int = ofp.OFPFW_NW_TOS | _TP_BITS
# Wildcard bits -> the fields they name, for zeroing an exact match's ignored fields.
_IGNORED_FIELDS: dict[int, tuple[int, ...]] = {
    _IGNORE_NON_IP: (NW_TOS, NW_PROTO, NW_SRC, NW_DST, TP_SRC, TP_DST),
    _IGNORE_ARP: (NW_TOS, TP_SRC, TP_DST), _TP_BITS: (TP_SRC, TP_DST), 0: ()}


def ignored_bits(wildcards: int, dl_type: int, nw_proto: int) -> int:
    """The wildcard bits of the fields Open vSwitch ignores for want of their prerequisite.

    What ``ofputil_normalize_match`` clears in OVS: ``dl_type`` (as matched,
    0 when wildcarded) decides whether the network fields count, ``nw_proto``
    (likewise) whether the transport ones do.
    """
    et = 0 if wildcards & ofp.OFPFW_DL_TYPE else dl_type
    if et == ETH_ARP:
        return _IGNORE_ARP
    if et != ETH_IP:
        return _IGNORE_NON_IP
    proto = 0 if wildcards & ofp.OFPFW_NW_PROTO else nw_proto
    return 0 if proto in TP_PROTOS else _TP_BITS
_MAC_FIELDS = (DL_SRC, DL_DST)
_IP_FIELDS = (NW_SRC, NW_DST)


class MatchError(NetsleuthError, ValueError):
    """A match field is out of range or unknown."""


def _prefix_mask(wildcard_bits: int) -> int:
    """The address mask for a count of wildcarded low bits (0..32)."""
    return (0xFFFFFFFF << wildcard_bits) & 0xFFFFFFFF


def _parse_prefix(name: str, value: Any) -> tuple[int, int]:
    """(address, prefix length) from 10.0.0.0/8, (int, len), an int or a dotted quad."""
    if isinstance(value, tuple):
        if len(value) != 2:
            raise MatchError(f"{name}={value!r} is not an (address, prefixlen) pair",
                             f"pass {name}=(ip, prefixlen), e.g. (0x0a000000, 8)")
        addr, plen = value
    elif isinstance(value, str) and "/" in value:
        addr, _, plen_text = value.partition("/")
        try:
            plen = int(plen_text)
        except ValueError:
            raise MatchError(f"{name}={value!r} has a bad prefix length",
                             f"write {name} as a.b.c.d/len with len 0..32") from None
    else:
        addr, plen = value, 32
    if not isinstance(plen, int) or not 0 <= plen <= 32:
        raise MatchError(f"{name}={value!r}: prefix length must be 0..32",
                         f"write {name} as a.b.c.d/len with len 0..32")
    try:
        return ip_to_int(addr), plen
    except (ValueError, TypeError, AttributeError):
        raise MatchError(f"{name}={value!r} is not an IPv4 address",
                         f"write {name} as a dotted quad, a.b.c.d/len or an int") from None


def _shape(wc: int) -> tuple[tuple[int, ...], tuple[tuple[int, int], ...], int]:
    """What a normalized wildcards value fixes: the masks per field, (index, mask) of each
    matched field, and the count of matched bits."""
    src_bits = (wc & ofp.OFPFW_NW_SRC_MASK) >> ofp.OFPFW_NW_SRC_SHIFT
    dst_bits = (wc & ofp.OFPFW_NW_DST_MASK) >> ofp.OFPFW_NW_DST_SHIFT
    masks = list(FULL_MASKS)
    for i, bit in _FLAG_FIELDS:
        if wc & bit:
            masks[i] = 0
    masks[NW_SRC] = _prefix_mask(src_bits)
    masks[NW_DST] = _prefix_mask(dst_bits)
    return (tuple(masks), tuple((i, m) for i, m in enumerate(masks) if m), sum(m.bit_count() for m in masks))


# normalized wildcards -> its shape (see _shape); a few entries per process
_SHAPES: dict[int, tuple[tuple[int, ...], tuple[tuple[int, int], ...], int]] = {}


@dataclass(frozen=True, slots=True)
class Match:
    """An OpenFlow 1.0 ``ofp_match``, normalized (see the module docstring)."""

    wildcards: int
    in_port: int = 0
    dl_src: int = 0
    dl_dst: int = 0
    dl_vlan: int = 0
    dl_vlan_pcp: int = 0
    dl_type: int = 0
    nw_tos: int = 0
    nw_proto: int = 0
    nw_src: int = 0
    nw_dst: int = 0
    tp_src: int = 0
    tp_dst: int = 0
    # Derived in __post_init__; not part of equality, hashing or repr.
    _masks: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _values: tuple[int, ...] = field(init=False, repr=False, compare=False)
    # (field index, mask) of each matched field: shared by every match of one wildcards value
    _checks: tuple[tuple[int, int], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        values = [self.in_port, self.dl_src, self.dl_dst, self.dl_vlan, self.dl_vlan_pcp, self.dl_type,
                  self.nw_tos, self.nw_proto, self.nw_src, self.nw_dst, self.tp_src, self.tp_dst]
        if not isinstance(self.wildcards, int) or self.wildcards < 0:
            raise MatchError(f"wildcards={self.wildcards!r} is not a non-negative int",
                             "pass OFPFW_* bits or use Match.build()")
        for i, v in enumerate(values):
            if not isinstance(v, int) or not 0 <= v <= _WIDTH_LIMITS[i]:
                raise MatchError(f"match field {FIELDS[i]}={v!r} is out of range",
                                 f"give {FIELDS[i]} as an int in 0..{_WIDTH_LIMITS[i]:#x}"
                                 " (Match.build accepts strings for addresses)")
        wc = self.wildcards & ofp.OFPFW_ALL
        src_bits = min((wc & ofp.OFPFW_NW_SRC_MASK) >> ofp.OFPFW_NW_SRC_SHIFT, 32)
        dst_bits = min((wc & ofp.OFPFW_NW_DST_MASK) >> ofp.OFPFW_NW_DST_SHIFT, 32)
        wc = (wc & ~_PREFIX_BITS) | (src_bits << ofp.OFPFW_NW_SRC_SHIFT) | (dst_bits << ofp.OFPFW_NW_DST_SHIFT)
        # int.__int__ reads the plain value of an int subclass without calling its own __int__: an
        # app's symbolic ints under concolic execution (nice/concolic) would record their value as a
        # constraint of the app's path there, and which fields OVS ignores is the model's business
        ignored = ignored_bits(wc, int.__int__(self.dl_type), int.__int__(self.nw_proto))
        if ignored:
            if wc:
                wc = (wc & ~_PREFIX_BITS if ignored & _NW_ALL else wc) | ignored
            else:  # exact on the wire: stays exact, the ignored fields read as a real packet has them
                for i in _IGNORED_FIELDS[ignored]:
                    values[i] = 0
        shape = _SHAPES.get(wc)
        if shape is None:
            shape = _SHAPES[wc] = _shape(wc)
        masks, checks = shape[0], shape[1]
        values = [v & m for v, m in zip(values, masks, strict=True)]
        setattr_ = object.__setattr__
        setattr_(self, "wildcards", wc)
        for name, v in zip(FIELDS, values, strict=True):
            setattr_(self, name, v)
        # Millions of matches share a few wildcards values: their masks and checks are
        # shared tuples (a network of simple_switch flows stores one of each, not one per rule).
        setattr_(self, "_masks", masks)
        setattr_(self, "_values", tuple(values))
        setattr_(self, "_checks", checks)

    # ------------------------------------------------------------ building
    @classmethod
    def build(cls, **fields: Any) -> Match:
        """Exact on the given fields, everything else wildcarded.

        MACs may be ints, "aa:bb:..." or 6 bytes; ``nw_src``/``nw_dst`` may be
        ints, "10.0.0.1", "10.0.0.0/8" or ``(int, prefixlen)``.
        """
        wc = ofp.OFPFW_ALL
        kwargs: dict[str, int] = {}
        for name, value in fields.items():
            if name not in FIELDS:
                raise MatchError(f"unknown match field {name!r}", f"use one of {', '.join(FIELDS)}")
            if name in ("nw_src", "nw_dst"):
                addr, plen = _parse_prefix(name, value)
                shift = ofp.OFPFW_NW_SRC_SHIFT if name == "nw_src" else ofp.OFPFW_NW_DST_SHIFT
                mask = ofp.OFPFW_NW_SRC_MASK if name == "nw_src" else ofp.OFPFW_NW_DST_MASK
                wc = (wc & ~mask) | ((32 - plen) << shift)
                kwargs[name] = addr
                continue
            if name in ("dl_src", "dl_dst"):
                try:
                    value = mac_to_int(value)
                except (ValueError, TypeError, AttributeError):
                    raise MatchError(f"{name}={value!r} is not a MAC address",
                                     f"write {name} as aa:bb:cc:dd:ee:ff, 6 bytes or an int") from None
            wc &= ~_FLAG_BITS[FIELDS.index(name)]
            kwargs[name] = value
        return cls(wc, **kwargs)

    @classmethod
    def catch_all(cls) -> Match:
        """The match every packet satisfies."""
        return cls(ofp.OFPFW_ALL)

    @classmethod
    def exact(cls, fields: tuple[int, ...]) -> Match:
        """The exact match for one packet's 12-tuple."""
        return cls(0, *fields)

    # ------------------------------------------------------------ os-ken
    @classmethod
    def from_ofp(cls, ofpmatch: Any) -> Match:
        """From os-ken's v1.0 ``OFPMatch`` (MACs as bytes, IPs as ints; strings tolerated)."""
        return cls(
            ofpmatch.wildcards, ofpmatch.in_port, mac_to_int(ofpmatch.dl_src), mac_to_int(ofpmatch.dl_dst),
            ofpmatch.dl_vlan, ofpmatch.dl_vlan_pcp, ofpmatch.dl_type, ofpmatch.nw_tos, ofpmatch.nw_proto,
            ip_to_int(ofpmatch.nw_src), ip_to_int(ofpmatch.nw_dst), ofpmatch.tp_src, ofpmatch.tp_dst)

    def to_ofp(self) -> Any:
        """As os-ken's v1.0 ``OFPMatch`` with explicit wildcards (serializable as is)."""
        return ofp_parser.OFPMatch(
            wildcards=self.wildcards, in_port=self.in_port, dl_src=mac_to_bytes(self.dl_src),
            dl_dst=mac_to_bytes(self.dl_dst), dl_vlan=self.dl_vlan, dl_vlan_pcp=self.dl_vlan_pcp,
            dl_type=self.dl_type, nw_tos=self.nw_tos, nw_proto=self.nw_proto, nw_src=self.nw_src,
            nw_dst=self.nw_dst, tp_src=self.tp_src, tp_dst=self.tp_dst)

    # ------------------------------------------------------------ semantics
    @property
    def masks(self) -> tuple[int, ...]:
        """Per-field bit masks in FIELDS order (0 = wildcarded)."""
        return self._masks

    @property
    def values(self) -> tuple[int, ...]:
        """Field values in FIELDS order (already ANDed with ``masks``)."""
        return self._values

    @property
    def nw_src_prefixlen(self) -> int:
        # os-ken's constants are untyped ints
        return 32 - ((self.wildcards & ofp.OFPFW_NW_SRC_MASK) >> ofp.OFPFW_NW_SRC_SHIFT)  # type: ignore[no-any-return]

    @property
    def nw_dst_prefixlen(self) -> int:
        # os-ken's constants are untyped ints
        return 32 - ((self.wildcards & ofp.OFPFW_NW_DST_MASK) >> ofp.OFPFW_NW_DST_SHIFT)  # type: ignore[no-any-return]

    def matches(self, fields: tuple[int, ...]) -> bool:
        """Whether a packet with this OpenFlow 12-tuple matches."""
        values = self._values
        for i, m in self._checks:
            if fields[i] & m != values[i]:
                return False
        return True

    def covers(self, other: Match) -> bool:
        """Every packet ``other`` matches, ``self`` matches too."""
        for m1, v1, m2, v2 in zip(self._masks, self._values, other._masks, other._values, strict=True):
            if m1 & m2 != m1 or v2 & m1 != v1:
                return False
        return True

    def overlaps(self, other: Match) -> bool:
        """Some packet is matched by both."""
        for m1, v1, m2, v2 in zip(self._masks, self._values, other._masks, other._values, strict=True):
            common = m1 & m2
            if v1 & common != v2 & common:
                return False
        return True

    def is_exact(self) -> bool:
        """No field wildcarded (OpenFlow 1.0 ranks such entries above all others)."""
        return self.wildcards == 0

    def masked(self, fields: tuple[int, ...]) -> tuple[int, ...]:
        """``fields`` with this match's masks applied (equal to ``values`` iff it matches)."""
        return tuple(map(operator.and_, fields, self._masks))

    def sort_key(self) -> tuple[int, ...]:
        """A total order: more matched bits first, then wildcards, then values."""
        return (-_SHAPES[self.wildcards][2], self.wildcards, *self._values)

    # ------------------------------------------------------------ text
    def to_json(self) -> dict[str, Any]:
        """Wildcards plus the non-wildcarded fields, addresses as strings (lossless)."""
        out: dict[str, Any] = {"wildcards": self.wildcards}
        for i, name in enumerate(FIELDS):
            if not self._masks[i]:
                continue
            v = self._values[i]
            if i in _MAC_FIELDS:
                out[name] = int_to_mac(v)
            elif i in _IP_FIELDS:
                out[name] = int_to_ip(v)
            else:
                out[name] = v
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Match:
        try:
            kwargs: dict[str, int] = {}
            for name in FIELDS:
                if name in d:
                    v = d[name]
                    if name in ("dl_src", "dl_dst"):
                        v = mac_to_int(v)
                    elif name in ("nw_src", "nw_dst"):
                        v = ip_to_int(v)
                    kwargs[name] = v
            return cls(d["wildcards"], **kwargs)
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            if isinstance(exc, MatchError):
                raise
            raise MatchError(f"bad match JSON {d!r}: {exc}",
                             "produce it with Match.to_json()") from None

    def __str__(self) -> str:
        """ovs-ofctl syntax: ``in_port=1,dl_type=0x0800,nw_src=10.0.0.0/8``; catch-all is ""."""
        parts: list[str] = []
        for i, name in enumerate(FIELDS):
            m = self._masks[i]
            if not m:
                continue
            v = self._values[i]
            if i in _MAC_FIELDS:
                text = int_to_mac(v)
            elif i in _IP_FIELDS:
                text = int_to_ip(v)
                plen = m.bit_count()
                if plen != 32:
                    text += f"/{plen}"
            elif i == DL_TYPE:
                text = f"0x{v:04x}"
            elif i == DL_VLAN and v == ofp.OFP_VLAN_NONE:
                text = "0xffff"
            else:
                text = str(v)
            parts.append(f"{name}={text}")
        return ",".join(parts)
