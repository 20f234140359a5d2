"""OpenFlow 1.0 matches and flow mods with POX's semantics, as SDNRacer judged them.

SDNRacer decides commutativity with POX's ``ofp_match`` (the ``hb`` branch of
jmiserez/pox).  Its semantics differ from a literal OpenFlow 1.0 match
(:mod:`netsleuth.model.match`) in ways that change race counts, so to agree
with SDNRacer's numbers this module reproduces them:

* decoding a flow mod "unwires" its wildcards: fields that the protocol makes
  irrelevant are wildcarded, judged from the *raw* ``dl_type``/``nw_proto``
  (a wildcarded ``dl_type`` whose wire value is 0 wildcards all nw/tp fields);
* SDNRacer's trace reader re-encodes every flow mod once (``decode(encode(x))``),
  which zeroes wildcarded fields, re-derives the wildcards and sets
  ``max_len`` of output actions to 0 unless the port is CONTROLLER;
* equality compares the wildcards and each non-wildcarded field, with
  ``nw_src``/``nw_dst`` compared as raw addresses (host bits under a prefix
  count);
* ``matches_with_wildcards`` (subset) tests the non-prefix wildcard bits,
  each non-wildcarded field, and prefix containment where the containing
  prefix must have no host bits set;
* a packet's match (``from_packet``) carries ``nw_tos`` as the whole ToS byte,
  ICMP type/code in ``tp_src``/``tp_dst``, and ARP's opcode in ``nw_proto``.

Everything here is pure data: values are ints (MACs as 48-bit ints).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

# OpenFlow 1.0 wildcard bits.
OFPFW_IN_PORT = 1 << 0
OFPFW_DL_VLAN = 1 << 1
OFPFW_DL_SRC = 1 << 2
OFPFW_DL_DST = 1 << 3
OFPFW_DL_TYPE = 1 << 4
OFPFW_NW_PROTO = 1 << 5
OFPFW_TP_SRC = 1 << 6
OFPFW_TP_DST = 1 << 7
OFPFW_NW_SRC_SHIFT = 8
OFPFW_NW_SRC_MASK = 0x3F << 8
OFPFW_NW_SRC_ALL = 32 << 8
OFPFW_NW_DST_SHIFT = 14
OFPFW_NW_DST_MASK = 0x3F << 14
OFPFW_NW_DST_ALL = 32 << 14
OFPFW_DL_VLAN_PCP = 1 << 20
OFPFW_NW_TOS = 1 << 21
OFPFW_ALL = (1 << 22) - 1
_PREFIX_BITS = OFPFW_NW_SRC_MASK | OFPFW_NW_DST_MASK

OFPFC_ADD, OFPFC_MODIFY, OFPFC_MODIFY_STRICT, OFPFC_DELETE, OFPFC_DELETE_STRICT = range(5)
COMMAND_NAMES = {0: "ADD", 1: "MODIFY", 2: "MODIFY_STRICT", 3: "DELETE", 4: "DELETE_STRICT"}
OFPFF_SEND_FLOW_REM = 1
OFPFF_CHECK_OVERLAP = 2
OFPP_CONTROLLER = 0xFFFD
OFPP_NONE = 0xFFFF
OFP_VLAN_NONE = 0xFFFF
OFP_DEFAULT_PRIORITY = 0x8000

ETH_IPV4, ETH_ARP, ETH_VLAN = 0x0800, 0x0806, 0x8100
PROTO_ICMP, PROTO_TCP, PROTO_UDP = 1, 6, 17

# Field order of the 12-tuple; the flag bit of each non-prefix field.
FIELDS = ("in_port", "dl_src", "dl_dst", "dl_vlan", "dl_vlan_pcp", "dl_type",
          "nw_tos", "nw_proto", "nw_src", "nw_dst", "tp_src", "tp_dst")
_FLAG = {"in_port": OFPFW_IN_PORT, "dl_src": OFPFW_DL_SRC, "dl_dst": OFPFW_DL_DST,
         "dl_vlan": OFPFW_DL_VLAN, "dl_vlan_pcp": OFPFW_DL_VLAN_PCP, "dl_type": OFPFW_DL_TYPE,
         "nw_tos": OFPFW_NW_TOS, "nw_proto": OFPFW_NW_PROTO, "tp_src": OFPFW_TP_SRC,
         "tp_dst": OFPFW_TP_DST}
# The order POX's matches_with_wildcards checks the non-prefix fields in.
_SUBSET_FIELDS = ("in_port", "dl_vlan", "dl_src", "dl_dst", "dl_type", "nw_proto",
                  "tp_src", "tp_dst", "dl_vlan_pcp", "nw_tos")
_IDX = {name: i for i, name in enumerate(FIELDS)}

_MATCH = struct.Struct("!LH6s6sHBxHBBxxLLHH")
_FM_TAIL = struct.Struct("!QHHHHLHH")


def normalize_wildcards(wc: int) -> int:
    """Prefix wildcard counts above 32 mean 32."""
    if ((wc & OFPFW_NW_SRC_MASK) >> OFPFW_NW_SRC_SHIFT) > 32:
        wc = (wc & ~OFPFW_NW_SRC_MASK) | OFPFW_NW_SRC_ALL
    if ((wc & OFPFW_NW_DST_MASK) >> OFPFW_NW_DST_SHIFT) > 32:
        wc = (wc & ~OFPFW_NW_DST_MASK) | OFPFW_NW_DST_ALL
    return wc


def unwire_wildcards(wc: int, raw_dl_type: int, raw_nw_proto: int) -> int:
    """POX's ``_unwire_wildcards``: wildcard what the protocol makes irrelevant (raw values)."""
    if raw_dl_type == ETH_IPV4:
        if raw_nw_proto not in (PROTO_ICMP, PROTO_TCP, PROTO_UDP):
            return wc | OFPFW_TP_SRC | OFPFW_TP_DST
        return wc
    if raw_dl_type == ETH_ARP:
        return wc | OFPFW_NW_TOS | OFPFW_TP_SRC | OFPFW_TP_DST
    return wc | (OFPFW_NW_TOS | OFPFW_NW_PROTO | OFPFW_NW_SRC_MASK | OFPFW_NW_DST_MASK
                 | OFPFW_TP_SRC | OFPFW_TP_DST)


@dataclass(frozen=True, slots=True, eq=False)
class PoxMatch:
    """A POX ``ofp_match``: raw field values plus (unwired, normalized) wildcards.

    ``raw`` holds the 12 values in :data:`FIELDS` order as they were on the
    wire or set from a packet; :meth:`get` gives POX's view (None when
    wildcarded).  ``==`` and ``hash`` follow POX's ``__eq__``.
    """

    wildcards: int
    raw: tuple[int, ...]
    _view: tuple = field(init=False, repr=False)

    def __post_init__(self) -> None:
        wc = self.wildcards
        view: list[int | None] = [wc]
        for name in FIELDS:
            view.append(self._get(name))
        object.__setattr__(self, "_view", tuple(view))

    # -- POX attribute access ------------------------------------------------
    def _get(self, name: str) -> int | None:
        wc = self.wildcards
        if name == "nw_src":
            return self.nw_src_prefix()[0]
        if name == "nw_dst":
            return self.nw_dst_prefix()[0]
        return None if wc & _FLAG[name] else self.raw[_IDX[name]]

    def get(self, name: str) -> int | None:
        """The field as POX's ``__getattr__`` returns it (None when wildcarded)."""
        return self._view[1 + _IDX[name]]

    def nw_src_prefix(self) -> tuple[int | None, int]:
        """POX ``get_nw_src``: (raw address or None, prefix length)."""
        wc = self.wildcards
        if (wc & OFPFW_NW_SRC_ALL) == OFPFW_NW_SRC_ALL:
            return (None, 0)
        w = (wc & OFPFW_NW_SRC_MASK) >> OFPFW_NW_SRC_SHIFT
        return (self.raw[8], 32 - w if w <= 32 else 0)

    def nw_dst_prefix(self) -> tuple[int | None, int]:
        """POX ``get_nw_dst``: (raw address or None, prefix length)."""
        wc = self.wildcards
        if (wc & OFPFW_NW_DST_ALL) == OFPFW_NW_DST_ALL:
            return (None, 0)
        w = (wc & OFPFW_NW_DST_MASK) >> OFPFW_NW_DST_SHIFT
        return (self.raw[9], 32 - w if w <= 32 else 0)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PoxMatch) and self._view == other._view

    def __hash__(self) -> int:
        return hash(self._view)

    # -- semantics -------------------------------------------------------------
    def matches_with_wildcards(self, other: PoxMatch, consider_other_wildcards: bool = True) -> bool:
        """POX: does ``self`` encompass ``other`` (every packet of ``other`` matches ``self``)?"""
        if self._view == other._view:
            return True
        if consider_other_wildcards:
            self_bits = self.wildcards & ~_PREFIX_BITS
            other_bits = other.wildcards & ~_PREFIX_BITS
            if (self_bits | other_bits) != self_bits:
                return False
        sv, ov = self._view, other._view
        for name in _SUBSET_FIELDS:
            i = 1 + _IDX[name]
            mine = sv[i]
            if mine is not None and mine != ov[i]:
                return False
        for mine, theirs in ((self.nw_src_prefix(), other.nw_src_prefix()),
                             (self.nw_dst_prefix(), other.nw_dst_prefix())):
            if mine[0] is not None:
                if mine[1] > theirs[1]:
                    return False
                # POX: IPAddr(other).inNetwork((self_addr, wild_bits)); the
                # network address is compared unmasked.
                wild = 32 - mine[1]
                # theirs is at least as long as mine, so not wildcarded
                if (theirs[0] & ~((1 << wild) - 1)) != mine[0]:  # type: ignore[operator]
                    return False
        return True

    def overlaps(self, other: PoxMatch) -> bool:
        """Some packet matches both (header-space intersection).

        SDNRacer calls POX's ``check_overlap`` only for non-strict MODIFY and
        for flow mods with CHECK_OVERLAP; none of the reference traces has
        either, so this is our own (exact) definition, not POX's.
        """
        sv, ov = self._view, other._view
        for name in FIELDS:
            if name in ("nw_src", "nw_dst"):
                continue
            i = 1 + _IDX[name]
            if sv[i] is not None and ov[i] is not None and sv[i] != ov[i]:
                return False
        for a, b in ((self.nw_src_prefix(), other.nw_src_prefix()),
                     (self.nw_dst_prefix(), other.nw_dst_prefix())):
            if a[0] is None or b[0] is None:
                continue
            plen = min(a[1], b[1])
            mask = (0xFFFFFFFF << (32 - plen)) & 0xFFFFFFFF
            if a[0] & mask != b[0] & mask:
                return False
        return True

    # -- wire ------------------------------------------------------------------
    @classmethod
    def unpack(cls, data: bytes, offset: int = 0, flow_mod: bool = True) -> PoxMatch:
        """POX ``ofp_match.unpack``; ``flow_mod`` unwires the wildcards."""
        (wc, in_port, dl_src, dl_dst, dl_vlan, pcp, dl_type, tos, proto,
         nw_src, nw_dst, tp_src, tp_dst) = _MATCH.unpack_from(data, offset)
        if flow_mod:
            wc = unwire_wildcards(wc, dl_type, proto)
        raw = (in_port, int.from_bytes(dl_src, "big"), int.from_bytes(dl_dst, "big"), dl_vlan, pcp,
               dl_type, tos, proto, nw_src, nw_dst, tp_src, tp_dst)
        return cls(normalize_wildcards(wc), raw)

    def pack(self, flow_mod: bool = True) -> bytes:
        """POX ``ofp_match.pack``: wildcarded fields as 0, wildcards "wired"."""
        g = self.get
        dl_type = g("dl_type")
        nw_proto = g("nw_proto")
        wc = self.wildcards
        if flow_mod:
            if dl_type == ETH_IPV4:
                if nw_proto not in (PROTO_ICMP, PROTO_TCP, PROTO_UDP):
                    wc &= ~(OFPFW_TP_SRC | OFPFW_TP_DST)
            elif dl_type == ETH_ARP:
                wc &= ~(OFPFW_NW_TOS | OFPFW_TP_SRC | OFPFW_TP_DST)
            else:
                wc &= ~(OFPFW_NW_TOS | OFPFW_NW_PROTO | OFPFW_NW_SRC_MASK | OFPFW_NW_DST_MASK
                        | OFPFW_TP_SRC | OFPFW_TP_DST)
        is_ip = dl_type == ETH_IPV4
        ip_or_arp = is_ip or dl_type == ETH_ARP
        is_tp = is_ip and nw_proto in (PROTO_ICMP, PROTO_TCP, PROTO_UDP)
        nw_src, nw_dst = g("nw_src"), g("nw_dst")
        return _MATCH.pack(
            wc, g("in_port") or 0, (g("dl_src") or 0).to_bytes(6, "big"), (g("dl_dst") or 0).to_bytes(6, "big"),
            g("dl_vlan") or 0, g("dl_vlan_pcp") or 0, dl_type or 0,
            (g("nw_tos") or 0) if is_ip else 0, (nw_proto or 0) if ip_or_arp else 0,
            (nw_src or 0) if ip_or_arp else 0, (nw_dst or 0) if ip_or_arp else 0,
            (g("tp_src") or 0) if is_tp else 0, (g("tp_dst") or 0) if is_tp else 0)

    @classmethod
    def from_fields(cls, **fields: int) -> PoxMatch:
        """Exact on the given fields (POX attribute assignment), everything else wildcarded."""
        wc = normalize_wildcards(OFPFW_ALL)
        raw = [0] * 12
        for name, value in fields.items():
            if value is None:
                continue
            raw[_IDX[name]] = value
            if name == "nw_src":
                wc &= ~OFPFW_NW_SRC_MASK
            elif name == "nw_dst":
                wc &= ~OFPFW_NW_DST_MASK
            else:
                wc &= ~_FLAG[name]
        return cls(wc, tuple(raw))

    @classmethod
    def from_packet(cls, frame: bytes, in_port: int | None) -> PoxMatch:
        """POX ``ofp_match.from_packet`` followed by unwire/normalize (SDNRacer's packet match)."""
        from netsleuth.model.packet import ICMP, TCP, UDP, Arp, IPv4, Packet

        pkt = Packet.from_bytes(frame)
        f: dict[str, int] = {}
        if in_port is not None:
            f["in_port"] = in_port
        f["dl_src"] = pkt.eth_src
        f["dl_dst"] = pkt.eth_dst
        if pkt.vlan is not None:
            # POX keeps the outer ethertype (0x8100) in dl_type.
            f["dl_type"] = ETH_VLAN
            f["dl_vlan"] = pkt.vlan.vid
            f["dl_vlan_pcp"] = pkt.vlan.pcp
        else:
            f["dl_type"] = pkt.eth_type
            f["dl_vlan"] = OFP_VLAN_NONE
            f["dl_vlan_pcp"] = 0
        l3 = pkt.l3
        if type(l3) is IPv4:
            f["nw_src"], f["nw_dst"], f["nw_proto"], f["nw_tos"] = l3.src, l3.dst, l3.proto, l3.tos
            l4 = pkt.l4
            if isinstance(l4, (TCP, UDP)):  # final classes: the same test as type(l4) in (TCP, UDP)
                f["tp_src"], f["tp_dst"] = l4.src_port, l4.dst_port
            elif type(l4) is ICMP:
                f["tp_src"], f["tp_dst"] = l4.type, l4.code
        elif type(l3) is Arp and l3.is_ethernet_ipv4():
            if l3.op <= 255:
                f["nw_proto"], f["nw_src"], f["nw_dst"] = l3.op, l3.spa, l3.tpa
        m = cls.from_fields(**f)
        wc = normalize_wildcards(unwire_wildcards(m.wildcards, m.raw[5], m.raw[7]))
        return cls(wc, m.raw)

    # -- text --------------------------------------------------------------------
    def __str__(self) -> str:
        parts = []
        for name in FIELDS:
            v = self.get(name)
            if v is None:
                continue
            if name in ("dl_src", "dl_dst"):
                text = ":".join(f"{(v >> s) & 0xFF:02x}" for s in range(40, -8, -8))
            elif name in ("nw_src", "nw_dst"):
                plen = (self.nw_src_prefix() if name == "nw_src" else self.nw_dst_prefix())[1]
                text = ".".join(str((v >> s) & 0xFF) for s in (24, 16, 8, 0))
                if plen != 32:
                    text += f"/{plen}"
            elif name == "dl_type":
                text = f"0x{v:04x}"
            else:
                text = str(v)
            parts.append(f"{name}={text}")
        return ",".join(parts) or "*"


def _parse_actions(data: bytes, start: int, end: int) -> tuple[tuple, ...]:
    """Actions as the tuples POX's action ``__eq__`` compares, after POX re-packing."""
    out: list[tuple[Any, ...]] = []
    off = start
    while off + 4 <= end:
        atype, alen = struct.unpack_from("!HH", data, off)
        if alen < 8 or off + alen > end:
            break
        body = data[off:off + alen]
        if atype == 0:  # OUTPUT; POX's pack zeroes max_len unless the port is CONTROLLER
            port, max_len = struct.unpack_from("!HH", body, 4)
            out.append((atype, alen, port, max_len if port == OFPP_CONTROLLER else 0))
        elif atype in (1, 2, 8):  # SET_VLAN_VID (H), SET_VLAN_PCP (B), SET_NW_TOS (B)
            out.append((atype, alen, struct.unpack_from("!H" if atype == 1 else "!B", body, 4)[0]))
        elif atype == 3:  # STRIP_VLAN
            out.append((atype, alen))
        elif atype in (4, 5):  # SET_DL_SRC/DST
            out.append((atype, alen, body[4:10]))
        elif atype in (6, 7):  # SET_NW_SRC/DST
            out.append((atype, alen, struct.unpack_from("!L", body, 4)[0]))
        elif atype in (9, 10):  # SET_TP_SRC/DST
            out.append((atype, alen, struct.unpack_from("!H", body, 4)[0]))
        elif atype == 11:  # ENQUEUE
            out.append((atype, alen, struct.unpack_from("!H", body, 4)[0], struct.unpack_from("!L", body, 12)[0]))
        else:
            out.append((atype, alen))
        off += alen
    return tuple(out)


def output_ports(actions: tuple[tuple, ...]) -> tuple[int, ...]:
    """Ports of OUTPUT and ENQUEUE actions."""
    return tuple(a[2] for a in actions if a[0] in (0, 11))


@dataclass(frozen=True, slots=True, eq=False)
class PoxFlowMod:
    """A POX ``ofp_flow_mod`` as SDNRacer's reader leaves it (decoded, re-encoded, decoded)."""

    match: PoxMatch
    command: int
    priority: int
    actions: tuple[tuple, ...] = ()
    cookie: int = 0
    idle_timeout: int = 0
    hard_timeout: int = 0
    buffer_id: int = -1
    out_port: int = OFPP_NONE
    flags: int = 0

    @classmethod
    def from_wire(cls, data: bytes) -> PoxFlowMod:
        """Decode an OFPT_FLOW_MOD message the way SDNRacer's trace reader does."""
        if len(data) < 72:
            raise ValueError(f"flow mod of {len(data)} bytes (need 72)")
        first = PoxMatch.unpack(data, 8, flow_mod=True)
        match = PoxMatch.unpack(first.pack(flow_mod=True), 0, flow_mod=True)
        cookie, command, idle, hard, prio, buf, out_port, flags = _FM_TAIL.unpack_from(data, 48)
        (length,) = struct.unpack_from("!H", data, 2)
        end = min(length, len(data)) if length >= 72 else len(data)
        return cls(match, command, prio, _parse_actions(data, 72, end), cookie, idle, hard,
                   -1 if buf == 0xFFFFFFFF else buf, out_port, flags)

    @property
    def command_name(self) -> str:
        return COMMAND_NAMES.get(self.command, str(self.command))

    def is_add(self) -> bool:
        return self.command == OFPFC_ADD

    def is_del(self) -> bool:
        return self.command in (OFPFC_DELETE, OFPFC_DELETE_STRICT)

    def is_mod(self) -> bool:
        return self.command in (OFPFC_MODIFY, OFPFC_MODIFY_STRICT)

    def is_strict(self) -> bool:
        return self.command in (OFPFC_DELETE_STRICT, OFPFC_MODIFY_STRICT)

    def check_overlap(self) -> bool:
        return bool(self.flags & OFPFF_CHECK_OVERLAP)

    def describe(self) -> str:
        acts = [action_text(a) for a in self.actions]
        return (f"{self.command_name} priority={self.priority} match[{self.match}]"
                f" actions=[{','.join(acts) or 'drop'}]")


def _mac_text(raw: bytes) -> str:
    return ":".join(f"{b:02x}" for b in raw)


def _ip_text(v: int) -> str:
    return ".".join(str((v >> s) & 0xFF) for s in (24, 16, 8, 0))


_ACTION_NAMES = {1: "set_vlan_vid", 2: "set_vlan_pcp", 3: "strip_vlan", 4: "set_dl_src", 5: "set_dl_dst",
                 6: "set_nw_src", 7: "set_nw_dst", 8: "set_nw_tos", 9: "set_tp_src", 10: "set_tp_dst",
                 11: "enqueue"}


def action_text(a: tuple) -> str:
    """ovs-ofctl-like text of one action tuple."""
    t = a[0]
    if t == 0:
        return f"output:{_port_name(a[2])}"
    name = _ACTION_NAMES.get(t, f"action{t}")
    if t in (4, 5):
        return f"{name}:{_mac_text(a[2])}"
    if t in (6, 7):
        return f"{name}:{_ip_text(a[2])}"
    if t == 11:
        return f"{name}:{_port_name(a[2])}:{a[3]}"
    if len(a) > 2:
        return f"{name}:{a[2]}"
    return name


def _port_name(port: int) -> str:
    return {0xFFF8: "IN_PORT", 0xFFF9: "TABLE", 0xFFFA: "NORMAL", 0xFFFB: "FLOOD", 0xFFFC: "ALL",
            0xFFFD: "CONTROLLER", 0xFFFE: "LOCAL", 0xFFFF: "NONE"}.get(port, str(port))
