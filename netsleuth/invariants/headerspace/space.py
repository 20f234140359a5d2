"""Header spaces: unions of ternary wildcard expressions over the OpenFlow 1.0 header.

Header Space Analysis (Kazemian et al., NSDI 2012) treats a packet header as
a point in {0,1}^L and a set of headers as a union of wildcard expressions
(one of 0, 1, x per bit).  Here the header is the OpenFlow 1.0 12-tuple
without ``in_port`` (which the engine handles per hop: it is the port a
copy arrives on, not a header bit): eleven fields, 248 bits, packed into one
Python int.  A wildcard is a pair of ints ``(value, mask)`` with
``value & ~mask == 0``; bit i is fixed to ``value``'s bit where ``mask`` has
a 1 and free elsewhere.  Intersection is two ORs and a conflict test.

Differences are kept lazy, as the HSA paper recommends: a :class:`Term` is
a base wildcard minus a list of wildcards (each inside the base), so
``all - 1000 exact flows`` costs 1000 list entries instead of an explosion
of disjoint pieces.  Emptiness is decided exactly (counting pre-check, then
splitting on one subtracted wildcard at a time).

Set-field actions are transfer functions on these sets.  OpenFlow 1.0 set
actions are conditional on what the packet carries (``mod_nw_src`` does
nothing to an ARP frame, ``mod_vlan_pcp`` pushes a tag on an untagged
frame); :data:`netsleuth.model.packet.Packet`'s set methods define it and
:func:`rewrite_for` mirrors them on the 12-tuple, assuming well-formed
frames (an IPv4 frame whose header parses, a TCP/UDP header behind
``nw_proto`` 6/17 of a first fragment).  Images and preimages are exact.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

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
from netsleuth.model.addr import int_to_ip, int_to_mac
from netsleuth.model.headerbits import (  # noqa: F401
    _LAYOUT,
    _ORDER,
    ALL_BITS,
    FIELD_MASK,
    SHIFT,
    SHIFT_BY_NAME,
    WIDTH,
    interner,
    pack,
    packer,
)
from netsleuth.model.match import FIELDS, FULL_MASKS, Match

Wildcard = tuple[int, int]


def unpack(header: int, in_port: int = 0) -> tuple[int, ...]:
    """The inverse of :func:`pack`: a 12-tuple with ``in_port``."""
    out = [in_port] + [0] * 11
    for i, off, width in _LAYOUT:
        out[i] = (header >> off) & ((1 << width) - 1)
    return tuple(out)


def match_wildcard(match: Match) -> tuple[int | None, int, int]:
    """``(in_port or None, value, mask)`` of an OpenFlow match."""
    vals, masks = match.values, match.masks
    return (vals[0] if masks[0] else None, pack(vals), pack(masks))


def field_wildcard(**fields: int | tuple[int, int]) -> Wildcard:
    """A wildcard fixing the given fields: ``dl_type=0x800`` or ``nw_src=(value, mask)``."""
    v = m = 0
    for name, spec in fields.items():
        sh = SHIFT_BY_NAME[name]
        full = FIELD_MASK[name] >> sh
        if isinstance(spec, tuple):
            val, fm = spec
            fm &= full
        else:
            val, fm = spec, full
        v |= (val & fm) << sh
        m |= fm << sh
    return (v, m)


# --------------------------------------------------------------------------- wildcards
def wc_intersect(a: Wildcard, b: Wildcard) -> Wildcard | None:
    av, am = a
    bv, bm = b
    if (av ^ bv) & am & bm:
        return None
    return (av | bv, am | bm)


def wc_overlaps(a: Wildcard, b: Wildcard) -> bool:
    return not ((a[0] ^ b[0]) & a[1] & b[1])


def wc_covers(a: Wildcard, b: Wildcard) -> bool:
    """Every header of ``b`` is in ``a``."""
    return not (a[1] & ~b[1]) and not ((a[0] ^ b[0]) & a[1])


def wc_pieces(v: int, m: int, dv: int, dm: int) -> Iterator[Wildcard]:
    """Disjoint wildcards whose union is ``(v, m) - (dv, dm)``, given ``(dv, dm)`` inside ``(v, m)``."""
    free = dm & ~m
    fixed = 0
    while free:
        bit = free & -free
        free ^= bit
        yield ((v | (dv & fixed) | (~dv & bit)), m | fixed | bit)
        fixed |= bit


# --------------------------------------------------------------------------- terms
# A term is (value, mask, diffs): the base wildcard minus each wildcard in
# ``diffs``; every diff lies inside the base and none equals it.
Term = tuple[int, int, tuple[Wildcard, ...]]


def make_term(v: int, m: int, diffs: Iterable[Wildcard] = ()) -> Term | None:
    """Normalize: clip diffs to the base, drop disjoint ones; None when a diff covers the base."""
    out: list[Wildcard] = []
    for dv, dm in diffs:
        if (dv ^ v) & dm & m:
            continue
        nm = dm | m
        if nm == m:
            return None
        out.append((dv | v, nm))
    if len(out) > 1:
        out = list(dict.fromkeys(out))
    return (v, m, tuple(out))


def _covered(v: int, m: int, ds: list[Wildcard], width: int = WIDTH) -> bool:
    """Whether ``(v, m)`` lies inside the union of ``ds`` (each already inside ``(v, m)``), in a
    header of ``width`` bits (the count of headers it holds depends on the layout's width)."""
    if not ds:
        return False
    free = width - m.bit_count()
    total = 0
    for _dv, dm in ds:
        if dm == m:
            return True
        total += 1 << (width - dm.bit_count())
    if total < (1 << free):
        return False  # not enough headers to cover it
    ds = sorted(ds, key=lambda d: d[1].bit_count())
    dv, dm = ds[0]
    rest = ds[1:]
    for pv, pm in wc_pieces(v, m, dv, dm):
        sub = [((ev | pv), (em | pm)) for ev, em in rest if not ((ev ^ pv) & em & pm)]
        if not _covered(pv, pm, sub, width):
            return False
    return True


def term_empty(t: Term, width: int = WIDTH) -> bool:
    """Whether a term holds no header (its differences cover its base)."""
    return bool(t[2]) and _covered(t[0], t[1], list(t[2]), width)


def _witness(v: int, m: int, ds: list[Wildcard]) -> int | None:
    """A header in ``(v, m)`` outside every wildcard of ``ds`` (free bits 0 where possible)."""
    hit = None
    for d in ds:
        if (v & d[1]) == d[0]:
            hit = d
            break
    if hit is None:
        return v
    dv, dm = hit
    for pv, pm in wc_pieces(v, m, dv, dm):
        sub = [((ev | pv), (em | pm)) for ev, em in ds if not ((ev ^ pv) & em & pm)]
        if sub and any(em == pm for _ev, em in sub):
            continue
        w = _witness(pv, pm, sub)
        if w is not None:
            return w
    return None


def expand(v: int, m: int, ds: Sequence[Wildcard]) -> list[Wildcard]:
    """Disjoint wildcards whose union is ``(v, m)`` minus the union of ``ds``."""
    ds = [d for d in ds if not ((d[0] ^ v) & d[1] & m)]
    if not ds:
        return [(v, m)]
    for _dv, dm in ds:
        if not (dm & ~m):  # overlaps and fixes nothing the base leaves free: covers it
            return []
    dv, dm = ds[0]
    dv, dm = dv | v, dm | m
    if dm == m:
        return []
    out: list[Wildcard] = []
    for pv, pm in wc_pieces(v, m, dv, dm):
        out.extend(expand(pv, pm, ds[1:]))
    return out


def expand_limited(v: int, m: int, ds: Sequence[Wildcard], limit: int) -> list[Wildcard] | None:
    """:func:`expand`, or None as soon as it would take more than ``limit`` pieces."""
    out: list[Wildcard] = []

    def rec(v: int, m: int, ds: list[Wildcard]) -> bool:
        ds = [d for d in ds if not ((d[0] ^ v) & d[1] & m)]
        if not ds:
            out.append((v, m))
            return len(out) <= limit
        for _dv, dm in ds:
            if not (dm & ~m):
                return True
        dv, dm = ds[0]
        dv, dm = dv | v, dm | m
        for pv, pm in wc_pieces(v, m, dv, dm):
            if not rec(pv, pm, ds[1:]):
                return False
        return True

    return out if rec(v, m, list(ds)) else None


def _term_minus(x: Term, y: Term, width: int) -> list[Term]:
    v, m, ds = x
    ov, om, ods = y
    if (ov ^ v) & om & m:
        return [x]
    bv, bm = ov | v, om | m
    clipped = [(dv | bv, dm | bm) for dv, dm in ods if not ((dv ^ bv) & dm & bm)]
    if clipped and ds and all(any(wc_covers(d, c) for d in ds) for c in clipped):
        clipped = []  # what y leaves out, x leaves out already: subtract y's base alone
    if not clipped:
        if bm == m:
            return []
        t = make_term(v, m, ds + ((bv, bm),))
        return [] if t is None else [t]
    if any(cm == bm for _cv, cm in clipped):
        return [x]
    pieces = expand_limited(bv, bm, clipped, 16)
    if pieces is not None:
        t = make_term(v, m, ds + tuple(pieces))
        return [] if t is None else [t]
    out = []
    t = make_term(v, m, ds + ((bv, bm),))
    if t is not None:
        out.append(t)
    for dv, dm in clipped:  # the parts of x inside B that D gives back
        t = make_term(dv, dm, ds)
        if t is not None and not term_empty(t, width):
            out.append(t)
    return out


def term_contains(t: Term, h: int) -> bool:
    v, m, ds = t
    if h & m != v:
        return False
    return not any(h & dm == dv for dv, dm in ds)


# --------------------------------------------------------------------------- header spaces
_HS = TypeVar("_HS", bound="HeaderSet")


class HeaderSet:
    """A set of headers of one packed layout: the union of its terms (which may overlap).

    The algebra does not depend on the layout but for its width (emptiness counts
    headers); a layout is a subclass that says its width, its fields (for values and
    text) and how it renders: :class:`HeaderSpace` for OpenFlow 1.0, ``HS13`` (in
    :mod:`netsleuth.invariants.headerspace.of13.space`) for 1.3.  Operations return the
    operand's own class."""

    __slots__ = ("terms",)
    WIDTH = WIDTH
    SHIFTS: dict[str, int] = {}     # field -> bit offset
    FULLS: dict[str, int] = {}      # field -> its full (unshifted) mask
    DST = ""                        # the destination MAC field

    def __init__(self, terms: Iterable[Term] = ()) -> None:
        self.terms: tuple[Term, ...] = tuple(terms)

    # -- building
    @classmethod
    def all(cls: type[_HS]) -> _HS:
        return cls(((0, 0, ()),))

    @classmethod
    def empty(cls: type[_HS]) -> _HS:
        return cls(())

    @classmethod
    def wildcard(cls: type[_HS], v: int, m: int) -> _HS:
        return cls(((v & m, m, ()),))

    @classmethod
    def union(cls: type[_HS], spaces: Iterable[HeaderSet]) -> _HS:
        """One set holding every term of ``spaces`` (no simplification)."""
        terms: list[Term] = []
        for hs in spaces:
            terms.extend(hs.terms)
        return cls(terms)

    # -- algebra
    def __or__(self: _HS, other: HeaderSet) -> _HS:
        return type(self)(self.terms + other.terms)

    def intersect_wc(self: _HS, w: Wildcard) -> _HS:
        wv, wm = w
        out = []
        for v, m, ds in self.terms:
            if (v ^ wv) & m & wm:
                continue
            t = make_term(v | wv, m | wm, ds)
            if t is not None:
                out.append(t)
        return type(self)(out)

    def minus_wc(self: _HS, w: Wildcard) -> _HS:
        wv, wm = w
        out = []
        for t in self.terms:
            v, m, ds = t
            if (v ^ wv) & m & wm:
                out.append(t)
                continue
            if not (wm & ~m):  # w covers the base
                continue
            out.append((v, m, ds + ((wv | v, wm | m),)))
        return type(self)(out)

    def __and__(self: _HS, other: HeaderSet) -> _HS:
        return self._meet(other, True)

    def clip_to(self: _HS, other: HeaderSet) -> _HS:
        """The set cut down to the bases of ``other``'s terms: the same set as far as ``other``
        is concerned, with the differences that do not meet it gone (cheaper to subtract)."""
        return self._meet(other, False)

    def _meet(self: _HS, other: HeaderSet, with_diffs: bool) -> _HS:
        out = []
        for v1, m1, d1 in self.terms:
            for v2, m2, d2 in other.terms:
                if (v1 ^ v2) & m1 & m2:
                    continue
                t = make_term(v1 | v2, m1 | m2, d1 + d2 if with_diffs else d1)
                if t is not None:
                    out.append(t)
        return type(self)(out)

    def __sub__(self: _HS, other: HeaderSet) -> _HS:
        """Set difference.  A subtrahend term with differences of its own is clipped to the
        base it is taken from, then either split into a few disjoint wildcards (the result
        keeps one term with more lazy differences) or, when that would take many pieces,
        handled as ``x - (B - D) = (x - B) | (x & each d)``."""
        cur = list(self.terms)
        width = self.WIDTH
        for y in other.terms:
            nxt: list[Term] = []
            for x in cur:
                nxt.extend(_term_minus(x, y, width))
            cur = nxt
            if not cur:
                break
        return type(self)(cur)

    def minus_values(self: _HS, name: str, values: Iterable[int]) -> _HS:
        """The set without the headers whose field ``name`` is one of ``values``."""
        vals = set(values)
        if not vals:
            return self
        sh, fm = self.SHIFTS[name], self.FULLS[name]
        full = fm << sh
        terms = []
        for t in self.terms:
            if t[1] & full == full:
                if (t[0] >> sh) & fm not in vals:
                    terms.append(t)
                continue
            cur = type(self)((t,))
            for val in sorted(vals):
                cur = cur.minus_wc(((val & fm) << sh, full))
            terms.extend(cur.terms)
        return type(self)(terms)

    # -- questions
    def is_empty(self) -> bool:
        width = self.WIDTH
        return all(term_empty(t, width) for t in self.terms)

    def __bool__(self) -> bool:
        return not self.is_empty()

    def prune(self: _HS) -> _HS:
        """The same set without empty terms."""
        width = self.WIDTH
        return type(self)(t for t in dict.fromkeys(self.terms) if not term_empty(t, width))

    def contains(self, header: int) -> bool:
        """Whether a packed header is in the set."""
        return any(term_contains(t, header) for t in self.terms)

    def witness(self) -> int | None:
        """Some header of the set (packed), or None when it is empty."""
        for v, m, ds in self.terms:
            w = _witness(v, m, list(ds))
            if w is not None:
                return w
        return None

    def fixed_field(self, name: str) -> set[int] | None:
        """The values of field ``name`` if every term fixes it exactly, else None."""
        sh, fm = self.SHIFTS[name], self.FULLS[name]
        full = fm << sh
        out = set()
        for v, m, _ds in self.terms:
            if m & full != full:
                return None
            out.add((v >> sh) & fm)
        return out

    def __len__(self) -> int:
        return len(self.terms)

    # -- text
    @staticmethod
    def wildcard_text(v: int, m: int) -> str:
        """ovs-ofctl-like ``field=value[/mask]`` for the fixed fields; ``*`` for everything."""
        raise NotImplementedError

    def display_terms(self) -> list[Term]:
        """The terms as people should read them (a layout may merge or trim them)."""
        return list(self.terms)

    def term_text(self, t: Term, max_diffs: int = 3) -> str:
        v, m, ds = t
        text = self.wildcard_text(v, m)
        if ds:
            shown = [self.wildcard_text(dv, dm) for dv, dm in ds[:max_diffs]]
            more = f" and {len(ds) - max_diffs} more" if len(ds) > max_diffs else ""
            text += " except " + "; ".join(f"[{s}]" for s in shown) + more
        return text

    def describe(self, max_terms: int = 3, max_diffs: int = 3) -> str:
        """Readable text (at most ``max_terms`` terms, then a count)."""
        if not self.terms:
            return "(no headers)"
        terms = self.display_terms()
        text = " | ".join(self.term_text(t, max_diffs) for t in terms[:max_terms])
        if len(terms) > max_terms:
            text += f" | ... ({len(terms) - max_terms} more terms)"
        return text

    def header_fields(self, header: int) -> dict[str, object]:
        """A packed header of this layout as readable fields."""
        raise NotImplementedError

    def witness_fields(self) -> dict[str, object] | None:
        """One header of the set as readable fields (None when the set is empty)."""
        w = self.witness()
        return None if w is None else self.header_fields(w)

    def __str__(self) -> str:
        return self.describe()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self})"


class HeaderSpace(HeaderSet):
    """A set of OpenFlow 1.0 headers (the 12-tuple without in_port, :mod:`headerbits`)."""

    __slots__ = ()
    SHIFTS = SHIFT_BY_NAME
    FULLS = {name: FIELD_MASK[name] >> SHIFT_BY_NAME[name] for name in SHIFT_BY_NAME}
    DST = "dl_dst"

    @classmethod
    def from_match(cls, match: Match) -> HeaderSpace:
        """The headers ``match`` accepts, whatever their in_port."""
        _ip, v, m = match_wildcard(match)
        return cls.wildcard(v, m)

    @classmethod
    def fields(cls, **fields: int | tuple[int, int]) -> HeaderSpace:
        """``HeaderSpace.fields(dl_type=0x800, nw_dst=(0x0a000000, 0xff000000))``."""
        return cls.wildcard(*field_wildcard(**fields))

    def compact(self) -> HeaderSpace:
        """The same set without empty terms and without terms inside another plain term."""
        terms = [t for t in dict.fromkeys(self.terms) if not term_empty(t)]
        out = []
        for i, (v, m, ds) in enumerate(terms):
            inside = False
            for j, (pv, pm, pds) in enumerate(terms):
                if j == i or pds or (pm & ~m) or ((pv ^ v) & pm):
                    continue
                if pm == m and not ds and j > i:
                    continue  # an identical plain term: keep the first
                inside = True
                break
            if not inside:
                out.append((v, m, ds))
        return HeaderSpace(out)

    def contains(self, header: int | Sequence[int]) -> bool:
        """Whether a packed header (or a 12-tuple) is in the set."""
        h = header if isinstance(header, int) else pack(header)
        return any(term_contains(t, h) for t in self.terms)

    @staticmethod
    def wildcard_text(v: int, m: int) -> str:
        return wildcard_text(v, m)

    def header_fields(self, header: int) -> dict[str, object]:
        f = unpack(header)
        return {"dl_src": int_to_mac(f[1]), "dl_dst": int_to_mac(f[2]), "dl_vlan": f[3], "dl_vlan_pcp": f[4],
                "dl_type": f[5], "nw_tos": f[6], "nw_proto": f[7], "nw_src": int_to_ip(f[8]),
                "nw_dst": int_to_ip(f[9]), "tp_src": f[10], "tp_dst": f[11]}


# --------------------------------------------------------------------------- text
def _field_text(idx: int, val: int, fmask: int, full: int) -> str:
    name = FIELDS[idx]
    if name in ("dl_src", "dl_dst"):
        text = int_to_mac(val)
        return text if fmask == full else f"{text}/{int_to_mac(fmask)}"
    if name in ("nw_src", "nw_dst"):
        text = int_to_ip(val)
        plen = fmask.bit_count()
        if fmask == full:
            return text
        if fmask == (0xFFFFFFFF << (32 - plen)) & 0xFFFFFFFF:
            return f"{text}/{plen}"
        return f"{text}/{int_to_ip(fmask)}"
    if name == "dl_type":
        return f"0x{val:04x}" if fmask == full else f"0x{val:04x}/0x{fmask:04x}"
    if name == "dl_vlan":
        return f"0x{val:04x}" if fmask == full else f"0x{val:04x}/0x{fmask:04x}"
    return str(val) if fmask == full else f"{val}/{fmask:#x}"


def wildcard_text(v: int, m: int) -> str:
    """ovs-ofctl-like text, ``field=value[/mask]`` for the fixed fields; ``*`` for everything."""
    parts = []
    for i, off, width in _ORDER:
        fm = (m >> off) & ((1 << width) - 1)
        if not fm:
            continue
        full = FULL_MASKS[i]
        fv = (v >> off) & ((1 << width) - 1)
        if FIELDS[i] == "nw_tos":
            fm2 = fm & 0xFC
            if not fm2:
                continue
            fm = fm2
            fv &= fm
        parts.append(f"{FIELDS[i]}={_field_text(i, fv, fm, full)}")
    return ",".join(parts) or "*"


def term_text(t: Term, max_diffs: int = 3) -> str:
    return HeaderSpace().term_text(t, max_diffs)


def describe_headerspace(hs: HeaderSet, max_terms: int = 3, max_diffs: int = 3) -> str:
    """Readable text for a header space (at most ``max_terms`` terms, then a count)."""
    return hs.describe(max_terms, max_diffs)


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
