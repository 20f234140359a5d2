"""Set-field actions of OpenFlow 1.0 as transfer functions on header spaces (:class:`Rewrite`), with
exact images and preimages.  The set actions are conditional on what the packet carries
(``mod_nw_src`` does nothing to an ARP frame, ``mod_vlan_pcp`` pushes a tag on an untagged
frame): :class:`netsleuth.model.packet.Packet`'s set methods define it and :func:`rewrite_for`
mirrors them on the 12-tuple, assuming well-formed frames (an IPv4 frame whose header parses, a
TCP/UDP header behind ``nw_proto`` 6/17 of a first fragment).
"""


from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from netsleuth.invariants.headerspace.space import HeaderSpace, field_wildcard
from netsleuth.invariants.headerspace.terms import Term, Wildcard, expand, make_term
from netsleuth.model.actions import (
    SetDlDst,
    SetDlSrc,
    SetNwDst,
    SetNwSrc,
    SetNwTos,
    SetTpDst,
    SetTpSrc,
    SetVlanPcp,
    SetVlanVid,
    StripVlan,
)
from netsleuth.model.headerbits import FIELD_MASK, SHIFT_BY_NAME


# --------------------------------------------------------------------------- rewrites
@dataclass(frozen=True, slots=True)
class Rewrite:
    """A conditional set-field transfer function.

    ``cases`` are tried in order: the first whose condition wildcard holds
    sets the bits ``fmask`` to ``value`` (``fmask == 0``: leaves the header
    alone); headers no condition holds get ``default``.
    """

    name: str
    cases: tuple[tuple[Wildcard, int, int], ...]
    default: tuple[int, int]  # (fmask, value)

    def _parts(self) -> list[tuple[Wildcard | None, tuple[Wildcard, ...], int, int]]:
        out: list[tuple[Wildcard | None, tuple[Wildcard, ...], int, int]] = []
        prior: list[Wildcard] = []
        for cond, fm, val in self.cases:
            out.append((cond, tuple(prior), fm, val))
            prior.append(cond)
        out.append((None, tuple(prior), self.default[0], self.default[1]))
        return out

    def image(self, hs: HeaderSpace) -> HeaderSpace:
        out: list[Term] = []
        for cond, prior, fm, val in self._parts():
            part = hs if cond is None else hs.intersect_wc(cond)
            for p in prior:
                part = part.minus_wc(p)
            for t in part.terms:
                out.extend(_image_set(t, fm, val))
        return HeaderSpace(out)

    def preimage(self, hs: HeaderSpace) -> HeaderSpace:
        out = HeaderSpace()
        for v, m, ds in hs.terms:
            pre = self._pre_wc(v, m)
            for d in ds:
                if not pre.terms:
                    break
                pre = pre - self._pre_wc(*d)
            out = out | pre
        return out

    def _pre_wc(self, v: int, m: int) -> HeaderSpace:
        terms: list[Term] = []
        for cond, prior, fm, val in self._parts():
            if fm:
                if (v ^ val) & m & fm:
                    continue
                base = (v & ~fm, m & ~fm)
            else:
                base = (v, m)
            part = HeaderSpace.wildcard(*base)
            if cond is not None:
                part = part.intersect_wc(cond)
            for p in prior:
                part = part.minus_wc(p)
            terms.extend(part.terms)
        return HeaderSpace(terms)


def _image_set(t: Term, fm: int, val: int) -> list[Term]:
    """Exact image of a term under "set the bits ``fm`` to ``val``"."""
    if not fm:
        return [t]
    v, m, ds = t
    d1, d2 = [], []  # type: ignore[var-annotated]  # differences (Wildcards), like ds
    for d in ds:
        (d2 if d[1] & fm & ~m else d1).append(d)
    nf = ~fm
    if d2:
        # A header h' is missing from the image only if the differences cover its whole
        # preimage slice inside the base (2^free-bits-of-F headers).  Those in d2 cover only
        # part of a slice each; if all of them together are too few, none is ever covered.
        slice_bits = (fm & ~m).bit_count()
        total = sum(1 << (fm & ~dm).bit_count() for _dv, dm in d2)
        if total < (1 << slice_bits):
            d2 = []
    if not d2:
        nt = make_term((v & nf) | val, m | fm, [((dv & nf) | val, dm | fm) for dv, dm in d1])
        return [nt] if nt is not None else []
    out = []
    for pv, pm in expand(v, m, d2):
        rel = [(dv | pv, dm | pm) for dv, dm in d1 if not ((dv ^ pv) & dm & pm)]
        nt = make_term((pv & nf) | val, pm | fm, [((dv & nf) | val, dm | fm) for dv, dm in rel])
        if nt is not None:
            out.append(nt)
    return out


_RAW = field_wildcard(dl_type=0)           # sub-Ethernet frames: every set action is a no-op
_IPV4 = field_wildcard(dl_type=0x0800)
_TCP = field_wildcard(dl_type=0x0800, nw_proto=6)
_UDP = field_wildcard(dl_type=0x0800, nw_proto=17)
_UNTAGGED = field_wildcard(dl_vlan=0xFFFF)


def _set(name: str, value: int) -> tuple[int, int]:
    return FIELD_MASK[name], (value << SHIFT_BY_NAME[name]) & FIELD_MASK[name]


def rewrite_for(action: Any) -> Rewrite:
    """The transfer function of a set-field action (mirrors ``Packet.set_*``)."""
    t = type(action)
    if t is SetDlSrc:
        return Rewrite(str(action), ((_RAW, 0, 0),), _set("dl_src", action.mac))
    if t is SetDlDst:
        return Rewrite(str(action), ((_RAW, 0, 0),), _set("dl_dst", action.mac))
    if t is SetVlanVid:
        return Rewrite(str(action), ((_RAW, 0, 0),), _set("dl_vlan", action.vid & 0xFFF))
    if t is SetVlanPcp:
        fm_v, val_v = _set("dl_vlan", 0)
        fm_p, val_p = _set("dl_vlan_pcp", action.pcp & 7)
        return Rewrite(str(action), ((_RAW, 0, 0), (_UNTAGGED, fm_v | fm_p, val_v | val_p)), (fm_p, val_p))
    if t is StripVlan:
        fm_v, val_v = _set("dl_vlan", 0xFFFF)
        fm_p, val_p = _set("dl_vlan_pcp", 0)
        return Rewrite(str(action), (), (fm_v | fm_p, val_v | val_p))
    if t in (SetNwSrc, SetNwDst):
        fm, val = _set("nw_src" if t is SetNwSrc else "nw_dst", action.ip)
        return Rewrite(str(action), ((_IPV4, fm, val),), (0, 0))
    if t is SetNwTos:
        fm, val = _set("nw_tos", action.tos & 0xFC)
        return Rewrite(str(action), ((_IPV4, fm, val),), (0, 0))
    if t in (SetTpSrc, SetTpDst):
        fm, val = _set("tp_src" if t is SetTpSrc else "tp_dst", action.port)
        return Rewrite(str(action), ((_TCP, fm, val), (_UDP, fm, val)), (0, 0))
    raise TypeError(f"{action!r} is not a set-field action")


def image(hs: HeaderSpace, chain: Sequence[Rewrite]) -> HeaderSpace:
    for rw in chain:
        hs = rw.image(hs)
    return hs


def preimage(hs: HeaderSpace, chain: Sequence[Rewrite]) -> HeaderSpace:
    for rw in reversed(chain):
        hs = rw.preimage(hs)
    return hs
