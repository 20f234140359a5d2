"""A candidate's piece of a term when no better-ranked candidate overlaps it, in a few operations
(:func:`lone_piece`, :func:`lone_run`): the usual split of the 1.3 classification
(:meth:`~netsleuth.invariants.headerspace.of13.classify._TableView._split_term`), a table of one
pattern splitting a host's headers at its first hop.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from netsleuth.invariants.headerspace.terms import Term, term_empty
from netsleuth.model.of13.headerbits import WIDTH13


def file_lone(pieces: dict[int | None, list[Term]], i: int, t: Term, ev: int, em: int, free: dict[int, Any],
          tm: dict[Any, Term | None] | None) -> bool:
    """File candidate ``i``'s piece of ``t`` by :func:`lone_piece` (or the term's memo ``tm``, under
    the key the general run gives it); False: it could not tell."""
    if tm is not None and (i,) in tm:
        nt: Term | None | bool = tm[(i,)]
    else:
        nt = lone_piece(t, ev, em, free)
        if nt is False:
            return False
        if tm is not None:
            tm[(i,)] = nt   # type: ignore[assignment]
    if nt is not None:
        got = pieces.get(i)
        if got is None:
            pieces[i] = [nt]   # type: ignore[list-item]
        else:
            got.append(nt)   # type: ignore[arg-type]
    return True


def lone_run(t: Term, cands: list[int], ws: dict[int, tuple[int, int]], pieces: dict[int | None, list[Term]],
              seen: dict[int, dict[int, list[int]]], free: dict[int, Any]) -> int:
    """``_TableView._split_term``'s loop over its leading candidates while each is one
    :func:`lone_piece` files: of the first one's mask, each value new (no better-ranked
    candidate overlaps it), none holding the term -- a table of one pattern, the first hop's
    usual split, costs a few operations per candidate here instead of three calls.  The same
    pieces, filed in the same order, and the candidates noted in ``seen`` as the loop notes
    them; the number of candidates done (the loop goes on from there)."""
    em = ws[cands[0]][1]
    if not em & ~t[1]:
        return 0   # the first candidate holds the term
    shape = free.get(em, _UNSEEN)
    if shape is _UNSEEN:
        shape = free[em] = _shape(t, em)
    if shape is None:
        return 0
    # (make_term's order keeps the first of equal differences: only needed when two of them
    # can become equal, i.e. differ only in bits some piece fixes, the term's and the mask's)
    kept, other, empty, nm, notem, both, repeat = shape
    t0 = t[0]
    same: dict[int, list[int]] = {}
    k = 0
    for i in cands:
        ev, mi = ws[i]
        if mi != em or ev & notem or (ev ^ t0) & both or (other and _meets(other, ev)):
            break
        lst = [i]
        if same.setdefault(ev, lst) is not lst:
            break   # a better-ranked candidate of the same wildcard shadows it
        k += 1
        if empty:
            continue
        nv = t0 | ev
        piece: Term = (nv, nm, based(nv, kept, repeat))
        got = pieces.get(i)
        if got is None:
            pieces[i] = [piece]
        else:
            got.append(piece)
    if same:
        seen[em] = same
    return k


def lone_runs(ts: list[Term], cands: list[int], ws: dict[int, tuple[int, int]], pieces: dict[int | None, list[Term]],
              frees: list[dict[int, Any]]) -> tuple[int, dict[int, list[int]]] | None:
    """:func:`lone_run` of each term of ``ts`` in one pass over their common candidates ``cands``:
    the terms of a class of headers (the injected headers' tag shapes) differ in bits no entry
    tests, so what lone_run checks of a candidate is mostly the same for each of them.  The
    candidates done are those done for every term (a term that lone_run would take further goes
    on from there the general way, which gives the same pieces); each candidate's pieces are
    filed term after term, as running the terms one after the other files them, as long as
    every term has pieces (not so: None, nothing done).  (The number of candidates done, the
    candidates of their mask by value, which the ``seen`` of each term starts with.)"""
    em = ws[cands[0]][1]
    notem = ~em
    got = _shapes(ts, frees, em)
    if got is None:
        return None
    per, shapes, other = got
    plan = plan_of(shapes)
    t0, both0 = per[0]
    # the candidates' values against the terms' bases: once when the bases agree on the bits checked
    one = all(b == both0 and not (v ^ t0) & b for v, b in per)
    same: dict[int, list[int]] = {}
    evs: list[int] = []   # the values of the candidates done, in order
    for i in cands:
        ev, mi = ws[i]
        if mi != em or ev & notem or (other and _meets(other, ev)):
            break
        if (ev ^ t0) & both0 if one else any((ev ^ v) & b for v, b in per):
            break
        lst = [i]
        if same.setdefault(ev, lst) is not lst:
            break   # a better-ranked candidate of the same wildcard shadows it
        evs.append(ev)
    # their pieces built together, then filed candidate by candidate (nothing else is filed meanwhile)
    built = based_terms_many(plan, evs)
    n = len(shapes)
    j = 0
    for i in cands[:len(evs)]:
        filed = pieces.get(i)
        if filed is None:
            pieces[i] = built[j:j + n]
        else:
            filed += built[j:j + n]
        j += n
    return len(evs), same


def _shapes(ts: list[Term], frees: list[dict[int, Any]], em: int,
            ) -> tuple[list[tuple[int, int]], list[Shape], Any] | None:
    """What :func:`lone_runs` checks and builds each term's pieces with, for candidates of mask
    ``em``: per term (base value, bits checked), per term its pieces' :data:`Shape` (base value,
    the pieces' mask, the differences kept, whether two of them may become equal, them as a
    pair when they are two and cannot), and the differences testing the candidates' own bits,
    which must be the same for every term; None when some term is not for lone_runs (held by
    the first candidate, left to the general run, covered, or with other such differences)."""
    per = []
    shapes: list[Shape] = []
    other: Any = None
    for t, free in zip(ts, frees, strict=True):
        if not em & ~t[1]:
            return None   # the first candidate holds the term
        shape = free.get(em, _UNSEEN)
        if shape is _UNSEEN:
            shape = free[em] = _shape(t, em)
        if shape is None or shape[2]:
            return None
        kept, oth, _empty, nm, _notem, both, repeat = shape
        if other is None:
            other = oth
        elif oth != other:
            return None
        per.append((t[0], both))
        shapes.append((t[0], nm, kept, repeat, as_pair(kept) if not repeat else None))
    return per, shapes, other


# How the pieces of one term are built (:func:`based_terms`): (the term's base value, the pieces'
# mask, the differences kept, whether two of them may become equal, them as :func:`as_pair` gives them)
Shape = tuple[int, int, Sequence[tuple[int, int]], bool, "tuple[int, int, int, int] | None"]


def as_pair(kept: Sequence[tuple[int, int]]) -> tuple[int, int, int, int] | None:
    """``kept`` as (value, mask, value, mask) when it holds two differences, else None: the usual
    shape of the injected terms' differences, whose clipped copies for each candidate or host
    pair :func:`based_terms` then builds as a pair (for :func:`lone_runs` and ``checks.eth_space13``)."""
    return (*kept[0], *kept[1]) if len(kept) == 2 else None


# :func:`based_terms`'s plan of some shapes: when each has its differences as a pair, (base value,
# mask, first difference's value with the base's bits, its mask, the second's) of each; the shapes
Plan = tuple["list[tuple[int, int, int, int, int, int]] | None", Sequence[Shape]]


def plan_of(shapes: Sequence[Shape]) -> Plan:
    """The :data:`Plan` of ``shapes`` (worked out once for the many pieces :func:`based_terms` builds)."""
    for sh in shapes:
        if sh[4] is None:
            return None, shapes
    return [(v, nm, two[0] | v, two[1], two[2] | v, two[3]) for v, nm, _k, _r, two in shapes  # type: ignore[index]
            ], shapes


def based_terms(plan: Plan, w: int) -> list[Term]:
    """The piece of each shape of ``plan`` (one per term of a class of headers: the injected headers'
    tag shapes) that fixes the bits of ``w`` besides its own (a candidate's value, a host pair's
    addresses): base value ``v | w``, its mask, the differences kept clipped to it as
    :func:`based` does (pairs of them built in one comprehension: no call per piece)."""
    pairs, shapes = plan
    if pairs is not None:   # (a difference's value with the base's bits, then w's: the base's with w's)
        return [(v | w, nm, ((d0 | w, c0), (d1 | w, c1))) for v, nm, d0, c0, d1, c1 in pairs]
    out: list[Term] = []
    for v, nm, kept, repeat, two in shapes:
        nv = v | w
        if two is None:
            out.append((nv, nm, based(nv, kept, repeat)))
        else:
            d0, c0, d1, c1 = two
            out.append((nv, nm, ((d0 | nv, c0), (d1 | nv, c1))))
    return out


def based_terms_many(plan: Plan, ws: Sequence[int]) -> list[Term]:
    """:func:`based_terms` of each of ``ws``, one after the other in one list (one comprehension
    for them all when the shapes' differences are pairs: the first hop's hundred and more pieces)."""
    pairs, _shapes = plan
    if pairs is None:
        return [t for w in ws for t in based_terms(plan, w)]
    return [(v | w, nm, ((d0 | w, c0), (d1 | w, c1))) for w in ws for v, nm, d0, c0, d1, c1 in pairs]


def based(nv: int, kept: Sequence[tuple[int, int]], repeat: bool) -> tuple[tuple[int, int], ...]:
    """The differences ``kept`` of a piece whose base value is ``nv``, as :func:`make_term`
    clips them: each with the base's bits set, and, when ``repeat`` says two of them may become
    equal (:func:`diffs_may_repeat`), equal ones once, the first kept."""
    out = [(dv | nv, cm) for dv, cm in kept]
    return tuple(dict.fromkeys(out)) if repeat else tuple(out)


def diffs_may_repeat(kept: list[tuple[int, int]], fixed: int) -> bool:
    """Whether two differences of ``kept`` (value, mask) can be equal once bits of ``fixed``
    are set in their values: equal masks, values that differ in those bits only."""
    free = ~fixed
    for n, (dv, cm) in enumerate(kept):
        for ev, em in kept[n + 1:]:
            if em == cm and not ((dv ^ ev) & free):
                return True
    return False


def _meets(other: list[tuple[int, set[int]]], ev: int) -> bool:
    """Whether a difference of ``other`` (see :func:`_shape`) may meet the piece of the candidate
    of value ``ev`` (:func:`lone_piece` then asks ``classify._piece``): one agrees with ``ev``
    on the entry's bits it tests."""
    for dx, vals in other:
        if ev & dx in vals:
            return True
    return False


def lone_piece(t: Term, ev: int, em: int, free: dict[int, Any]) -> Term | None | bool:
    """``classify._piece`` for an entry (ev, em) that no better-ranked candidate overlaps and whose
    wildcard does not hold the term, or False: ask ``classify._piece``.

    The piece is the term's base within the entry's wildcard minus the differences that meet
    it (:func:`make_term`'s clipping and order).  For an entry whose value lies within its
    mask and agrees with the term's base, a difference that leaves the bits the entry fixes
    beyond the base free meets the piece exactly when it meets the base, and clips to its own
    mask with the entry's; and when every difference that meets the piece is such, whether
    they cover it does not depend on those bits: the piece is empty exactly when the term's
    base minus those differences is.  So what the differences do is worked out once per
    mask of the candidates (``free``), and a candidate of that mask costs a few operations."""
    shape = free.get(em, _UNSEEN)
    if shape is _UNSEEN:
        shape = free[em] = _shape(t, em)
    if shape is None:
        return False
    kept, other, empty, nm, notem, both, repeat = shape
    if ev & notem or (ev ^ t[0]) & both:
        return False   # a value outside its mask, or not a candidate of the term
    if other and _meets(other, ev):   # differences that test the entry's own bits: they must miss the piece
        return False
    if empty:
        return None
    nv = t[0] | ev
    return (nv, nm, based(nv, kept, repeat))


_UNSEEN = object()   # a mask free has no shape for yet (its shape may be None)


def _shape(t: Term, em: int) -> tuple[list[tuple[int, int]], list[tuple[int, set[int]]], bool, int, int, int,
                                      bool] | None:
    """What the differences of ``t`` do to the pieces of candidates of mask ``em`` (see
    :func:`lone_piece`): those that meet every such piece, as (value, clipped mask), those
    that test the candidates' own bits, as (mask on those bits, their values on them) by that
    mask (a candidate's piece meets one when its value agrees there), and whether the
    first ones cover the pieces; then the pieces' mask, ``~em`` and ``em & m`` (what every
    candidate of the mask is checked with), and whether two kept differences may become
    equal in some piece (:func:`diffs_may_repeat`: a candidate's value lies in ``em``, so a
    piece's base sets bits of the term's base and of ``em`` only); None when a difference
    equals the base (make_term's None for every piece: left to the general run)."""
    v, m, ds = t
    if v & ~m:
        return None   # a base value outside its mask: left to the general run
    extra = em & ~m
    nm = m | em
    kept: list[tuple[int, int]] = []
    met: list[tuple[int, int]] = []
    other: dict[int, set[int]] = {}
    for dv, dm in ds:
        if (dv ^ v) & dm & m:
            continue   # misses the base: misses every piece
        dx = dm & extra
        if dx:
            got = other.get(dx)
            if got is None:
                other[dx] = {dv & dx}
            else:
                got.add(dv & dx)
            continue
        cm = dm | nm
        if cm == nm:
            return None
        kept.append((dv, cm))
        met.append((dv, dm))
    empty = bool(met) and term_empty((v, m, tuple(met)), WIDTH13)
    repeat = len(kept) > 1 and diffs_may_repeat(kept, v | em)
    return kept, list(other.items()), empty, nm, ~em, em & m, repeat
