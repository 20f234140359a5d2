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

Wildcards and terms are in ``terms.py``, the rewrites in ``rewrite.py``;
this module holds the packing of a match and the header sets themselves.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import lru_cache
from typing import TypeVar

from netsleuth.invariants.headerspace.terms import (
    Term,
    Wildcard,
    _term_minus,
    _witness,
    make_term,
    term_contains,
    term_empty,
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


def unpack(header: int, in_port: int = 0) -> tuple[int, ...]:
    """The inverse of :func:`pack`: a 12-tuple with ``in_port``."""
    out = [in_port] + [0] * 11
    for i, off, width in _LAYOUT:
        out[i] = (header >> off) & ((1 << width) - 1)
    return tuple(out)


_PACKED_MASKS: dict[tuple[int, ...], tuple[int, Callable[[Sequence[int]], int]]] = {}


def match_wildcard(match: Match) -> tuple[int | None, int, int]:
    """``(in_port or None, value, mask)`` of an OpenFlow match.  A match's values are ANDed with
    its masks, so its value packs from its matched fields alone (``packer``: two shifts for a
    MAC pair instead of eleven, which an incremental check pays per flow_mod)."""
    vals, masks = match.values, match.masks
    got = _PACKED_MASKS.get(masks)
    if got is None:  # (a network's matches use a handful of patterns: packing each once will do)
        if len(_PACKED_MASKS) >= 4096:
            _PACKED_MASKS.clear()
        got = _PACKED_MASKS[masks] = (pack(masks), packer(masks))
    return (vals[0] if masks[0] else None, got[1](vals), got[0])


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


class FieldLayout:
    """A header layout's fields by their place, to find the fields a mask has bits in from its top bit down.

    An exact match or a finding's space has bits in few of a layout's fields, so walking from
    the mask's top bit (a bisection per field it has bits in) costs less than a shift of the
    header-wide int per field of the layout. For layouts whose fields do not overlap (see
    :meth:`of`); bits between or below fields belong to none.
    """

    __slots__ = ("_shifts", "_fields", "_below", "_ends")

    def __init__(self, fields: list[tuple[int, str, int, int, int]]) -> None:
        self._fields = fields   # (order in the layout, name, shift, full mask, end bit), lowest first
        self._shifts = [f[2] for f in fields]
        self._below = [(1 << f[2]) - 1 for f in fields]
        self._ends = [(1 << f[4]) - 1 for f in fields]

    @classmethod
    def of(cls, shifts: Mapping[str, int], fulls: Mapping[str, int]) -> FieldLayout | None:
        """The layout of fields ``name -> shift`` with ``name -> full mask``; None when two overlap."""
        fields = sorted(((k, name, sh, fulls[name], sh + fulls[name].bit_length())
                         for k, (name, sh) in enumerate(shifts.items())), key=lambda f: f[2])
        if any(a[4] > b[2] for a, b in zip(fields, fields[1:], strict=False)):
            return None
        return cls(fields)

    def fields_in(self, m: int) -> Iterator[tuple[int, str, int, int]]:
        """(order in the layout, name, shift, full mask) of every field ``m`` has a bit of its full
        mask in, highest first (a bit a field's full mask leaves out belongs to no field)."""
        shifts, fields, below, ends = self._shifts, self._fields, self._below, self._ends
        while m:
            top = m.bit_length() - 1
            i = bisect_right(shifts, top) - 1
            if i < 0:
                return   # bits below every field
            k, name, sh, full, end = fields[i]
            if top < end:
                if (m >> sh) & full:
                    yield k, name, sh, full
                m &= below[i]
            else:   # bits between two fields
                m &= ends[i]


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
        for t in self.terms:  # (a loop, not all() over a generator: most sets have a term or two)
            if not term_empty(t, width):
                return False
        return True

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


@lru_cache(maxsize=1 << 12)  # findings name the same few host pairs and rules check after check
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
    """Readable text for a header set of either layout (at most ``max_terms`` terms, then a
    count), found once per distinct set (its layout and terms): an unreachable pair's space is
    described for its finding's text, its details and its group's, and a network's findings
    name the same sets check after check."""
    key = (type(hs), hs.terms, max_terms, max_diffs)
    text = _DESCRIBED.get(key)
    if text is None:
        if len(_DESCRIBED) >= _DESCRIBED_MAX:
            _DESCRIBED.clear()
        text = _DESCRIBED[key] = hs.describe(max_terms, max_diffs)
    return text


_DESCRIBED: dict[tuple, str] = {}
_DESCRIBED_MAX = 1 << 13


