"""Header spaces over the OpenFlow 1.3 layout (``model/of13/headerbits``).

The algebra is :class:`~netsleuth.invariants.headerspace.space.HeaderSet`'s (a
union of terms, each a ternary wildcard minus lazy differences); this
module gives it the wider 1.3 layout (its width, fields and text: OXM
names, the injected space's tag shapes left out of what people read).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from netsleuth.invariants.headerspace.space import FieldLayout, HeaderSet, describe_headerspace
from netsleuth.invariants.headerspace.terms import Term, make_term, term_empty
from netsleuth.model.of13.fieldspec import BY_NAME, VID_PRESENT
from netsleuth.model.of13.headerbits import BITS13, FIELDS13, FULL13, NOT_INJECTED, SHIFT13, TAG_SHAPES, WIDTH13
from netsleuth.model.of13.oxm import render_value


class HS13(HeaderSet):
    """A set of 1.3 headers (``model.of13.headerbits``): the union of its terms (which may overlap)."""

    # the display terms, worked out on first use: a finding's space is both described and summed
    # up (a set never changes its terms); _clean: every term is known to hold headers (set by
    # prune and kept by union, see prune)
    __slots__ = ("_shown", "_clean")
    _shown: tuple[Term, ...]
    _clean: bool
    WIDTH = WIDTH13
    SHIFTS = SHIFT13
    FULLS = FULL13
    DST = "eth_dst"

    @classmethod
    def injected(cls) -> HS13:
        """Every header a host can send (see ``model.of13.headerbits``): zero to two tags, no MPLS."""
        out = []
        for _n, (v, m) in TAG_SHAPES:
            t = make_term(v, m, NOT_INJECTED)
            if t is not None:
                out.append(t)
        return cls(out)

    @classmethod
    def union(cls, spaces: Iterable[HeaderSet]) -> HS13:
        """One set holding every term of ``spaces`` (no simplification); known clean when each is."""
        terms: list[Term] = []
        clean = True
        for hs in spaces:
            terms.extend(hs.terms)
            clean = clean and getattr(hs, "_clean", False)
        out = cls(terms)
        if clean:
            out._clean = True
        return out

    def prune(self) -> HS13:
        """The same set without empty terms.  A finding's space is the union of sets pruned
        already (a pair's unreached headers, an ingress's drops), pruned again: then only
        repeated terms go, and no term's emptiness is worked out twice."""
        if getattr(self, "_clean", False):
            out = HS13(dict.fromkeys(self.terms))
        else:
            out = HeaderSet.prune(self)
        out._clean = True
        return out

    @staticmethod
    def wildcard_text(v: int, m: int) -> str:
        return wildcard_text13(v, m)

    def display_terms(self) -> list[Term]:
        try:
            shown = self._shown
        except AttributeError:
            shown = self._shown = tuple(_display_terms(self))
        return list(shown)

    def header_fields(self, header: int) -> dict[str, object]:
        return header_dict13(header)


def union13(spaces: Iterable[HeaderSet]) -> HS13:
    return HS13.union(spaces)


def term_empty13(t: Term) -> bool:
    """Whether a term of the 1.3 layout holds no header."""
    return term_empty(t, WIDTH13)


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


# the fixed fields by their place (they tile the header): found from a mask's top bit down, then
# put in _TEXT_ORDER (FIELDS13's order reversed: by their number in it, highest first)
_tiled = FieldLayout.of(SHIFT13, FULL13)
assert _tiled is not None
assert tuple(n for _k, n, _s, _f in sorted(_tiled.fields_in((1 << WIDTH13) - 1), reverse=True)) == _TEXT_ORDER
_LAYOUT13: FieldLayout = _tiled


@lru_cache(maxsize=1 << 13)  # findings name the same few host pairs and rules check after check
def wildcard_text13(v: int, m: int) -> str:
    """ovs-ofctl-like ``field=value[/mask]`` for the fixed fields (OXM names; ``vlan1_*`` is the
    inner tag); ``*`` for everything."""
    parts = []
    for _k, name, sh, full in sorted(_LAYOUT13.fields_in(m), reverse=True):
        parts.append(f"{name}={_field_text(name, (v >> sh) & full, (m >> sh) & full)}")
    return ",".join(parts) or "*"


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
        vm, vv = m & _VLAN_BITS, v & _VLAN_BITS
        for n, (sv, sm) in TAG_SHAPES:
            if vm == sm and vv == sv:
                shape = n
        if ds:
            hidden = [((v | wv), (m | wm)) for wv, wm in mpls]
            kept = tuple(d for d in ds if d not in hidden)
        else:
            kept = ()
        if shape is None:
            key: Term = (v, m, kept)
            groups.setdefault(key, set()).add(-1)
        else:
            sm = TAG_SHAPES[shape][1][1]
            if all(dm & _VLAN_BITS == sm and dv & _VLAN_BITS == vv for dv, dm in kept):
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
    """``hs.describe``, found once per distinct set (:func:`describe_headerspace`)."""
    return describe_headerspace(hs, max_terms, max_diffs)


def header_dict13(h: int) -> dict[str, object]:
    """A packed 1.3 header as readable fields (the ones that are not 0, and the Ethernet ones;
    a new dict each time, made from the fields found once per header)."""
    return dict(_header_items13(h))


@lru_cache(maxsize=1 << 13)  # the witnesses of a network's findings, check after check
def _header_items13(h: int) -> tuple[tuple[str, object], ...]:
    out: dict[str, object] = {}
    for name in _ALWAYS:   # the first fields of _TEXT_ORDER: shown even when 0
        out[name] = _readable(name, (h >> SHIFT13[name]) & FULL13[name])
    for _k, name, sh, full in sorted(_LAYOUT13.fields_in(h & _NOT_ALWAYS), reverse=True):
        out[name] = _readable(name, (h >> sh) & full)
    return tuple(out.items())


_ALWAYS = ("eth_dst", "eth_src", "eth_type")
assert _TEXT_ORDER[:3] == _ALWAYS
_NOT_ALWAYS = ((1 << WIDTH13) - 1) & ~sum(FULL13[n] << SHIFT13[n] for n in _ALWAYS)


def _readable(name: str, val: int) -> object:
    spec = BY_NAME.get(name.replace("vlan1_", "vlan_"))
    return render_value(spec, val) if spec is not None and spec.kind in ("mac", "ipv4", "ipv6") else val
