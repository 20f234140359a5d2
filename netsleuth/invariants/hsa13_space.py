"""Header spaces over the OpenFlow 1.3 layout (``model/headerbits13``).

The same algebra as :mod:`netsleuth.invariants.hsa_space` (a union of
terms, each a ternary wildcard minus lazy differences), over the wider 1.3
header.  The width-independent pieces (term normalization, splitting a
wildcard around another, witnesses) are shared; emptiness counts headers,
so it needs the layout's width and lives here, which leaves the 1.0 module
and its hot paths untouched.
"""

from __future__ import annotations

from collections.abc import Iterable

from netsleuth.invariants.hsa_space import (
    Term,
    Wildcard,
    _witness,
    expand_limited,
    make_term,
    term_contains,
    wc_covers,
    wc_pieces,
)
from netsleuth.model.headerbits13 import BITS13, FIELDS13, FULL13, NOT_INJECTED, SHIFT13, TAG_SHAPES, WIDTH13
from netsleuth.model.of13.fieldspec import BY_NAME, VID_PRESENT
from netsleuth.model.of13.oxm import render_value


def _covered(v: int, m: int, ds: list[Wildcard]) -> bool:
    """Whether ``(v, m)`` lies inside the union of ``ds`` (each already inside ``(v, m)``)."""
    if not ds:
        return False
    free = WIDTH13 - m.bit_count()
    total = 0
    for _dv, dm in ds:
        if dm == m:
            return True
        total += 1 << (WIDTH13 - dm.bit_count())
    if total < (1 << free):
        return False
    ds = sorted(ds, key=lambda d: d[1].bit_count())
    dv, dm = ds[0]
    rest = ds[1:]
    for pv, pm in wc_pieces(v, m, dv, dm):
        sub = [((ev | pv), (em | pm)) for ev, em in rest if not ((ev ^ pv) & em & pm)]
        if not _covered(pv, pm, sub):
            return False
    return True


def term_empty(t: Term) -> bool:
    return bool(t[2]) and _covered(t[0], t[1], list(t[2]))


def _term_minus(x: Term, y: Term) -> list[Term]:
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
    for dv, dm in clipped:
        t = make_term(dv, dm, ds)
        if t is not None and not term_empty(t):
            out.append(t)
    return out


class HS13:
    """A set of 1.3 headers: the union of its terms (which may overlap)."""

    __slots__ = ("terms",)

    def __init__(self, terms: Iterable[Term] = ()) -> None:
        self.terms: tuple[Term, ...] = tuple(terms)

    @classmethod
    def all(cls) -> HS13:
        return cls(((0, 0, ()),))

    @classmethod
    def wildcard(cls, v: int, m: int) -> HS13:
        return cls(((v & m, m, ()),))

    @classmethod
    def injected(cls) -> HS13:
        """Every header a host can send (see ``headerbits13``): zero to two tags, no MPLS."""
        out = []
        for _n, (v, m) in TAG_SHAPES:
            t = make_term(v, m, NOT_INJECTED)
            if t is not None:
                out.append(t)
        return cls(out)

    def __or__(self, other: HS13) -> HS13:
        return HS13(self.terms + other.terms)

    def intersect_wc(self, w: Wildcard) -> HS13:
        wv, wm = w
        out = []
        for v, m, ds in self.terms:
            if (v ^ wv) & m & wm:
                continue
            t = make_term(v | wv, m | wm, ds)
            if t is not None:
                out.append(t)
        return HS13(out)

    def minus_wc(self, w: Wildcard) -> HS13:
        wv, wm = w
        out = []
        for t in self.terms:
            v, m, ds = t
            if (v ^ wv) & m & wm:
                out.append(t)
                continue
            if not (wm & ~m):
                continue
            out.append((v, m, ds + ((wv | v, wm | m),)))
        return HS13(out)

    def __and__(self, other: HS13) -> HS13:
        out = []
        for v1, m1, d1 in self.terms:
            for v2, m2, d2 in other.terms:
                if (v1 ^ v2) & m1 & m2:
                    continue
                t = make_term(v1 | v2, m1 | m2, d1 + d2)
                if t is not None:
                    out.append(t)
        return HS13(out)

    def __sub__(self, other: HS13) -> HS13:
        cur = list(self.terms)
        for y in other.terms:
            nxt: list[Term] = []
            for x in cur:
                nxt.extend(_term_minus(x, y))
            cur = nxt
            if not cur:
                break
        return HS13(cur)

    def is_empty(self) -> bool:
        return all(term_empty(t) for t in self.terms)

    def __bool__(self) -> bool:
        return not self.is_empty()

    def prune(self) -> HS13:
        return HS13(t for t in dict.fromkeys(self.terms) if not term_empty(t))

    def contains(self, h: int) -> bool:
        return any(term_contains(t, h) for t in self.terms)

    def witness(self) -> int | None:
        for v, m, ds in self.terms:
            w = _witness(v, m, list(ds))
            if w is not None:
                return w
        return None

    def __len__(self) -> int:
        return len(self.terms)

    def __str__(self) -> str:
        return describe13(self)

    def __repr__(self) -> str:
        return f"HS13({self})"


def union13(spaces: Iterable[HS13]) -> HS13:
    terms: list[Term] = []
    for hs in spaces:
        terms.extend(hs.terms)
    return HS13(terms)


# --------------------------------------------------------------------------- text
_TEXT_ORDER = tuple(reversed(FIELDS13))  # eth_dst, eth_src, eth_type, vlan ... as people read a frame


def _field_text(name: str, val: int, fm: int) -> str:
    spec = BY_NAME.get(name.replace("vlan1_", "vlan_"))
    full = FULL13[name]
    if name in ("vlan_vid", "vlan1_vid") and fm & VID_PRESENT and not val & VID_PRESENT:
        return "none" if fm == full else f"{val:#x}/{fm:#x}"
    if spec is not None and spec.kind in ("mac", "ipv4", "ipv6"):
        text = render_value(spec, val)
        if fm == full:
            return text
        plen = fm.bit_count()
        if spec.kind != "mac" and fm == (full << (BITS13[name] - plen)) & full:
            return f"{text}/{plen}"
        return f"{text}/{render_value(spec, fm)}"
    if name in ("eth_type",) or (spec is not None and spec.kind == "hex"):
        return f"{val:#06x}" if fm == full else f"{val:#06x}/{fm:#06x}"
    return str(val) if fm == full else f"{val:#x}/{fm:#x}"


def wildcard_text13(v: int, m: int) -> str:
    """ovs-ofctl-like ``field=value[/mask]`` for the fixed fields (OXM names; ``vlan1_*`` is the
    inner tag); ``*`` for everything."""
    parts = []
    for name in _TEXT_ORDER:
        sh, full = SHIFT13[name], FULL13[name]
        fm = (m >> sh) & full
        if fm:
            parts.append(f"{name}={_field_text(name, (v >> sh) & full, fm)}")
    return ",".join(parts) or "*"


def term_text13(t: Term, max_diffs: int = 3) -> str:
    v, m, ds = t
    text = wildcard_text13(v, m)
    if ds:
        shown = [wildcard_text13(dv, dm) for dv, dm in ds[:max_diffs]]
        more = f" and {len(ds) - max_diffs} more" if len(ds) > max_diffs else ""
        text += " except " + "; ".join(f"[{s}]" for s in shown) + more
    return text


_VLAN_BITS = 0
for _n in ("vlan_vid", "vlan_pcp", "vlan1_vid", "vlan1_pcp"):
    _VLAN_BITS |= FULL13[_n] << SHIFT13[_n]


def _display_terms(hs: HS13) -> list[Term]:
    """The terms as people should read them: what only restates the injected space (the
    tag-count shapes, "no MPLS frame") is left out, and terms that differ only by tag
    count and together cover all three counts are shown once."""
    mpls = NOT_INJECTED
    groups: dict[Term, set[int]] = {}   # insertion-ordered: terms keep their order
    for v, m, ds in hs.terms:
        shape = None
        for n, (sv, sm) in TAG_SHAPES:
            if m & _VLAN_BITS == sm and v & _VLAN_BITS == sv:
                shape = n
        kept = tuple(d for d in ds if not any(d == ((v | wv), (m | wm)) for wv, wm in mpls))
        if shape is None:
            key: Term = (v, m, kept)
            groups.setdefault(key, set()).add(-1)
        else:
            sm = TAG_SHAPES[shape][1][1]
            if all(dm & _VLAN_BITS == sm and dv & _VLAN_BITS == v & _VLAN_BITS for dv, dm in kept):
                key = (v & ~sm, m & ~sm, tuple((dv & ~sm, dm & ~sm) for dv, dm in kept))
            else:  # a difference looks at the tags: keep the term as it is
                key, shape = (v, m, kept), -1
            groups.setdefault(key, set()).add(shape)
    out: list[Term] = []
    for key, shapes in groups.items():
        if shapes >= {0, 1, 2}:
            out.append(key)
        elif shapes == {-1}:
            out.append(key)
        else:  # not every tag count: show each with its shape
            for n in sorted(x for x in shapes if x >= 0):
                sv, sm = TAG_SHAPES[n][1]
                out.append((key[0] | sv, key[1] | sm, tuple((dv | sv, dm | sm) for dv, dm in key[2])))
            if -1 in shapes:
                out.append(key)
    return out


def describe13(hs: HS13, max_terms: int = 3, max_diffs: int = 3) -> str:
    if not hs.terms:
        return "(no headers)"
    terms = _display_terms(hs)
    text = " | ".join(term_text13(t, max_diffs) for t in terms[:max_terms])
    if len(terms) > max_terms:
        text += f" | ... ({len(terms) - max_terms} more terms)"
    return text


def header_dict13(h: int) -> dict[str, object]:
    """A packed 1.3 header as readable fields (the ones that are not 0)."""
    out: dict[str, object] = {}
    for name in _TEXT_ORDER:
        val = (h >> SHIFT13[name]) & FULL13[name]
        if val or name in ("eth_dst", "eth_src", "eth_type"):
            spec = BY_NAME.get(name.replace("vlan1_", "vlan_"))
            out[name] = render_value(spec, val) if spec is not None and spec.kind in ("mac", "ipv4", "ipv6") else val
    return out
