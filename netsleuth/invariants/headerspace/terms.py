"""Wildcards and terms, the pieces of a header set: a wildcard is ``(value, mask)`` over the packed
header, a term a base wildcard minus a tuple of wildcards inside it (lazy differences, as the HSA
paper recommends), its emptiness decided exactly (a counting pre-check, then splitting on one
subtracted wildcard at a time).  Both header layouts, 1.0's and 1.3's, use them (``width``).
"""


from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from netsleuth.model.headerbits import WIDTH

Wildcard = tuple[int, int]


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


def make_term(v: int, m: int, diffs: Iterable[Wildcard] = (), distinct: bool = False) -> Term | None:
    """Normalize: clip diffs to the base, drop disjoint ones; None when a diff covers the base.

    ``distinct``: the caller knows no two diffs clip to one wildcard, so the duplicate removal
    (hashing pairs of header-wide ints) is skipped.  So it is for distinct wildcards of one
    mask whose values lie inside it, when the base value lies inside its mask: two that meet
    the base agree with it on the bits both fix, and are 0 beyond their mask, so they differ
    on bits the base leaves free, where the clipped values are theirs."""
    out: list[Wildcard] = []
    pdm: int | None = None
    both = nm = 0
    for dv, dm in diffs:
        if dm is not pdm:   # differences of one mask often share the very int: its clip worked out once
            pdm, both, nm = dm, dm & m, dm | m
            if nm == m:
                if not (dv ^ v) & both:
                    return None
                pdm = None   # (a mask that covers the base: each difference of it checked on its own)
                continue
        if (dv ^ v) & both:
            continue
        out.append((dv | v, nm))
    n = 0 if distinct else len(out)
    if n > 8:
        out = list(dict.fromkeys(out))
    elif n > 1:   # a few: comparing them costs less than hashing header-wide ints
        uniq: list[Wildcard] = []
        for d in out:
            if d not in uniq:
                uniq.append(d)
        out = uniq
    return (v, m, tuple(out))


def _covered(v: int, m: int, ds: list[Wildcard], width: int = WIDTH) -> bool:
    """Whether ``(v, m)`` lies inside the union of ``ds`` (each already inside ``(v, m)``), in a
    header of ``width`` bits (the layout's; the answer does not depend on it)."""
    if not ds:
        return False
    fixed = []
    pdm: int | None = None
    c = 0
    for _dv, dm in ds:
        if dm is not pdm:   # (differences of one mask often share the very int)
            if dm == m:
                return True
            pdm, c = dm, dm.bit_count()
        fixed.append(c)
    # A wildcard fixing c bits holds 2 ** (width - c) headers: each difference holds at most
    # 2 ** -(min(fixed) - bits of m) of the base, so fewer than that many cannot cover it.
    if len(fixed) < 1 << max(min(fixed) - m.bit_count(), 0):
        return False
    # Else counted exactly, in units of the smallest difference's size: small numbers
    # instead of ints as wide as the header.
    top = max(fixed)
    if sum(1 << (top - c) for c in fixed) < (1 << (top - m.bit_count())):
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
    # (y without differences, the usual subtrahend, makes no list comprehension's frame)
    clipped = [(dv | bv, dm | bm) for dv, dm in ods if not ((dv ^ bv) & dm & bm)] if ods else []
    if clipped and ds:
        # (loops, not all()/any() over generators: this runs per pair of terms subtracted)
        for c in clipped:
            for d in ds:
                if wc_covers(d, c):
                    break
            else:
                break
        else:
            clipped = []  # what y leaves out, x leaves out already: subtract y's base alone
    if not clipped:
        if bm == m:
            return []
        t = make_term(v, m, ds + ((bv, bm),))
        return [] if t is None else [t]
    for _cv, cm in clipped:
        if cm == bm:
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


def term_covers(a: Term, b: Term) -> bool:
    """Whether term ``a`` holds every header of term ``b``, as far as a quick look tells: a's base
    covers b's and each difference of a, cut to b's base, lies inside one of b's differences.
    True is always right; False may be wrong (the exact answer takes a subtraction)."""
    av, am, ads = a
    bv, bm, bds = b
    if am & ~bm or (av ^ bv) & am:
        return False
    for dv, dm in ads:
        if (dv ^ bv) & dm & bm:
            continue   # the difference misses b's base
        iv, im = dv | bv, dm | bm
        for ev, em in bds:
            if not (em & ~im) and not ((iv ^ ev) & em):
                break
        else:
            return False
    return True


def term_contains(t: Term, h: int) -> bool:
    v, m, ds = t
    if h & m != v:
        return False
    for dv, dm in ds:
        if h & dm == dv:
            return False
    return True
