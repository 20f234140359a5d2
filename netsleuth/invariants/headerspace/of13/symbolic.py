"""The 1.3 engine's symbolic header (see ``engine.py``): per branch, what the packet's current header
is in terms of the injected one (:class:`Sym`: each field a constant or an injected field), with
the injected headers it stands for (:class:`St`), and the rewrites of a 1.3 pipeline on it
(set_field, push and pop of VLAN tags and MPLS labels), each splitting the branch where the
model's conditions do.
"""


from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from netsleuth.errors import NetsleuthError
from netsleuth.invariants.headerspace.of13.space import HS13
from netsleuth.model.of13.actions import (
    CopyTtlIn,
    CopyTtlOut,
    DecMplsTtl,
    DecNwTtl,
    PopPbb,
    PushPbb,
    SetMplsTtl,
    SetNwTtl,
)
from netsleuth.model.of13.fieldspec import VID_PRESENT
from netsleuth.model.of13.headerbits import FULL13, SHIFT13, TAG_SHAPES
from netsleuth.model.of13.headers import ETH_PBB, MPLS_TYPES

Src = int | str          # a constant value, or the injected header's field of that name


class Unsupported13(NetsleuthError):
    """The 1.3 header-space engine cannot decide a rule exactly."""


# --------------------------------------------------------------------------- symbolic header
_L3_NAMES = frozenset((
    "ip_dscp", "ip_ecn", "ip_proto", "ipv4_src", "ipv4_dst", "tcp_src", "tcp_dst", "udp_src", "udp_dst",
    "sctp_src", "sctp_dst", "icmpv4_type", "icmpv4_code", "arp_op", "arp_spa", "arp_tpa", "arp_sha", "arp_tha",
    "ipv6_src", "ipv6_dst", "ipv6_flabel", "icmpv6_type", "icmpv6_code", "ipv6_nd_target", "ipv6_nd_sll",
    "ipv6_nd_tll", "ipv6_exthdr", "pbb_isid"))
_V4_SET = frozenset(("ipv4_src", "ipv4_dst"))
_V6_SET = frozenset(("ipv6_src", "ipv6_dst", "ipv6_flabel"))
_IP_SET = frozenset(("ip_dscp", "ip_ecn"))
_ARP_SET = frozenset(("arp_op", "arp_spa", "arp_tpa", "arp_sha", "arp_tha"))
_L4_SET: dict[str, tuple[tuple[int, ...], int]] = {   # field -> (eth types, ip_proto)
    "tcp_src": ((0x0800, 0x86DD), 6), "tcp_dst": ((0x0800, 0x86DD), 6),
    "udp_src": ((0x0800, 0x86DD), 17), "udp_dst": ((0x0800, 0x86DD), 17),
    "sctp_src": ((0x0800, 0x86DD), 132), "sctp_dst": ((0x0800, 0x86DD), 132),
    "icmpv4_type": ((0x0800,), 1), "icmpv4_code": ((0x0800,), 1),
    "icmpv6_type": ((0x86DD,), 58), "icmpv6_code": ((0x86DD,), 58),
}
Tag = tuple[Src, Src]     # (vid with OFPVID_PRESENT, pcp)
Label = tuple[int, int, int]  # (label, tc, bos)


class Sym:
    """The current header in terms of the injected one (immutable; hashable by ``key``).

    ``f``: fields changed from the injected header (eth_src/eth_dst/eth_type, L3/L4);
    ``tags``: None while the injected tags were never split by count, else outermost
    first; ``mpls``: labels pushed here, top first.  The IP header is visible when no
    label is on and the current eth_type is the injected one (``f`` has no eth_type):
    after a pop_mpls to another ethertype the payload does not parse as it."""

    __slots__ = ("f", "tags", "mpls", "key")

    def __init__(self, f: Mapping[str, Src] | None = None, tags: tuple[Tag, ...] | None = None,
                 mpls: tuple[Label, ...] = ()) -> None:
        self.f: dict[str, Src] = dict(f or {})
        self.tags = tags
        self.mpls = mpls
        self.key = (tuple(sorted(self.f.items(), key=lambda kv: kv[0])), tags, mpls)

    def replace(self, **kw: Any) -> Sym:
        return Sym(kw.get("f", self.f), kw.get("tags", self.tags), kw.get("mpls", self.mpls))

    @property
    def l3_visible(self) -> bool:
        return not self.mpls and "eth_type" not in self.f

    def view(self, name: str) -> Src:
        """What OXM field ``name`` reads (``fields.oxm_fields`` of the current frame)."""
        if name in _L3_NAMES:
            if not self.l3_visible:
                return 0
            return self.f.get(name, name)
        if name in ("vlan_vid", "vlan_pcp"):
            if self.tags is None:
                return name
            if not self.tags:
                return 0
            return self.tags[0][0 if name == "vlan_vid" else 1]
        if name in ("mpls_label", "mpls_tc", "mpls_bos"):
            if not self.mpls:
                return 0
            return self.mpls[0][("mpls_label", "mpls_tc", "mpls_bos").index(name)]
        return self.f.get(name, name)

    def value(self, src: Src, h: int) -> int:
        """A source's value for the injected header ``h`` (packed)."""
        return src if isinstance(src, int) else (h >> SHIFT13[src]) & FULL13[src]

    def frame_of(self, h: int) -> dict[str, Any]:
        """The current header for injected header ``h``: OXM fields as a match reads them,
        plus ``tags`` (every VLAN tag as (vid with OFPVID_PRESENT, pcp), outermost first)."""
        out: dict[str, Any] = {n: self.value(self.view(n), h) for n in _FRAME_FIELDS}
        tags = self.tags
        if tags is None:
            tags = tuple(t for t in (("vlan_vid", "vlan_pcp"), ("vlan1_vid", "vlan1_pcp"))
                         if self.value(t[0], h) & VID_PRESENT)
        out["tags"] = tuple((self.value(v, h), self.value(p, h)) for v, p in tags)
        out["labels"] = self.mpls
        return out


IDENTITY = Sym()
_FRAME_FIELDS = ("eth_dst", "eth_src", "eth_type", "vlan_vid", "vlan_pcp", "mpls_label", "mpls_tc", "mpls_bos",
                 *sorted(_L3_NAMES))


@dataclass(slots=True)
class St:
    """One branch inside a switch: injected headers, current header, pipeline state."""

    orig: HS13
    sym: Sym
    metadata: int = 0
    tunnel_id: int = 0

    def with_orig(self, orig: HS13) -> St:
        return St(orig, self.sym, self.metadata, self.tunnel_id)


def _split_eq(st: St, name: str, values: Sequence[int]) -> list[tuple[bool, St]]:
    """``st`` split by whether current field ``name`` is one of ``values`` (empty parts left out)."""
    s = st.sym.view(name)
    if isinstance(s, int):
        return [(s in values, st)]
    sh = SHIFT13[s]
    full = FULL13[s] << sh
    out: list[tuple[bool, St]] = []
    rest = st.orig
    for val in values:
        w = (val << sh, full)
        part = st.orig.intersect_wc(w)
        if part.terms and not part.is_empty():
            out.append((True, st.with_orig(part)))
        rest = rest.minus_wc(w)
    rest = rest.prune()
    if rest.terms:
        out.append((False, st.with_orig(rest)))
    return out


def _split_tags(st: St) -> list[St]:
    """``st`` with the injected tag count made explicit (0, 1 or 2 tags)."""
    if st.sym.tags is not None:
        return [st]
    out = []
    for n, w in TAG_SHAPES:
        part = st.orig.intersect_wc(w).prune()
        if part.terms:
            tags = (("vlan_vid", "vlan_pcp"), ("vlan1_vid", "vlan1_pcp"))[:n]
            out.append(St(part, st.sym.replace(tags=tags), st.metadata, st.tunnel_id))
    return out


# --------------------------------------------------------------------------- rewrites
def _set_field(st: St, name: str, value: int) -> list[St]:
    """set_field as ``actions.set_field`` does it (no-op where the header is absent)."""
    sym = st.sym
    if name in ("eth_dst", "eth_src"):
        return [st_with(st, sym.replace(f={**sym.f, name: value}))]
    if name in ("vlan_vid", "vlan_pcp"):
        out = []
        for p in _split_tags(st):
            tags = p.sym.tags
            if not tags:
                out.append(p)
                continue
            vid, pcp = tags[0]
            top: Tag = (VID_PRESENT | (value & 0xFFF), pcp) if name == "vlan_vid" else (vid, value)
            out.append(st_with(p, p.sym.replace(tags=(top, *tags[1:]))))
        return out
    if name in ("mpls_label", "mpls_tc"):
        if not sym.mpls:
            return [st]
        lab, tc, bos = sym.mpls[0]
        label: Label = (value, tc, bos) if name == "mpls_label" else (lab, value, bos)
        return [st_with(st, sym.replace(mpls=(label, *sym.mpls[1:])))]
    if name == "tunnel_id":
        return [St(st.orig, sym, st.metadata, value)]
    if name in ("ipv6_nd_target", "ipv6_nd_sll", "ipv6_nd_tll"):
        raise Unsupported13(f"set_field {name} (rewrites depend on the ND options a packet carries)",
                            "leave IPv6 ND fields unmodified, or check this network with concrete packets")
    if not sym.l3_visible or name == "pbb_isid":
        return [st]
    if name in _V4_SET or name in _V6_SET or name in _IP_SET or name in _ARP_SET:
        types = ((0x0800,) if name in _V4_SET else (0x86DD,) if name in _V6_SET else
                 (0x0806,) if name in _ARP_SET else (0x0800, 0x86DD))
        return [st_with(p, sym.replace(f={**sym.f, name: value})) if hit else p
                for hit, p in _split_eq(st, "eth_type", types)]
    spec = _L4_SET.get(name)
    if spec is None:
        return [st]
    l4_types, proto = spec
    out = []
    for hit, p in _split_eq(st, "eth_type", l4_types):
        if not hit:
            out.append(p)
            continue
        for hit2, q in _split_eq(p, "ip_proto", (proto,)):
            out.append(st_with(q, sym.replace(f={**sym.f, name: value})) if hit2 else q)
    return out


def st_with(st: St, sym: Sym) -> St:
    return St(st.orig, sym, st.metadata, st.tunnel_id)


def _push_vlan(st: St) -> list[St]:
    out = []
    for p in _split_tags(st):
        tags = p.sym.tags or ()
        new: Tag = tags[0] if tags else (VID_PRESENT, 0)
        out.append(st_with(p, p.sym.replace(tags=(new, *tags))))
    return out


def _pop_vlan(st: St) -> list[St]:
    out = []
    for p in _split_tags(st):
        tags = p.sym.tags
        out.append(st_with(p, p.sym.replace(tags=tags[1:])) if tags else p)
    return out


def _push_mpls(st: St, ethertype: int) -> list[St]:
    sym = st.sym
    if sym.mpls:
        lab, tc, _bos = sym.mpls[0]
        return [st_with(st, sym.replace(f={**sym.f, "eth_type": ethertype}, mpls=((lab, tc, 0), *sym.mpls)))]
    return [st_with(st, sym.replace(f={**sym.f, "eth_type": ethertype}, mpls=((0, 0, 1),)))]


def _pop_mpls(st: St, ethertype: int) -> list[St]:
    sym = st.sym
    if not sym.mpls:
        return [st]
    rest = sym.mpls[1:]
    if rest:
        if ethertype not in MPLS_TYPES:
            raise Unsupported13(f"pop_mpls:{ethertype:#06x} with labels left below (the model rejects the frame)",
                                "pop inner labels with an MPLS ethertype (0x8847/0x8848)")
        return [st_with(st, sym.replace(f={**sym.f, "eth_type": ethertype}, mpls=rest))]
    # The payload is re-read as ``ethertype``: the injected L3 header again when that is what
    # it was, else a header that does not parse (IPv4/IPv6 check their version nibble).
    f_vis = {k: v for k, v in sym.f.items() if k != "eth_type"}
    out = []
    for hit, p in _split_eq(St(st.orig, Sym(f_vis, sym.tags), st.metadata, st.tunnel_id), "eth_type",
                            (ethertype,)):
        if hit:
            out.append(p)
        else:
            if ethertype in (0x0806, ETH_PBB):
                raise Unsupported13(f"pop_mpls:{ethertype:#06x} of a payload that may be another protocol",
                                    "pop to the ethertype the packet carried before its labels")
            out.append(st_with(p, Sym({**f_vis, "eth_type": ethertype}, sym.tags)))
    return out


_UNSUPPORTED = (CopyTtlIn, CopyTtlOut, DecMplsTtl, DecNwTtl, SetMplsTtl, SetNwTtl, PushPbb, PopPbb)
