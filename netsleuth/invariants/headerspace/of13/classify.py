"""A table's entries as wildcards over the injected header, grouped for probing, and the split of a
header set by the entry each part hits (OpenFlow 1.3 priority order: an entry sees only what no
better-ranked entry takes).  Used by :class:`~netsleuth.invariants.headerspace.of13.switch13.Compiled13`.
"""

from __future__ import annotations

import itertools
from itertools import repeat
from operator import and_, itemgetter
from typing import Any

from netsleuth.invariants.headerspace.of13.lonepiece import file_lone, lone_run, lone_runs
from netsleuth.invariants.headerspace.of13.space import HS13
from netsleuth.invariants.headerspace.terms import Term, make_term, term_empty
from netsleuth.model.of13.flowtable import FlowEntry13
from netsleuth.model.of13.headerbits import WIDTH13


class _TableView:
    """The entries of one table as wildcards over injected headers, for one current-header
    mapping and pipeline state, grouped by mask for probing (as the 1.0 compiler does).

    Entries are keyed by their *rank*, an int that orders them as the table does (an index
    for a view built once; the incremental engine's ranks leave gaps, so that an entry can be
    put in or taken out (:meth:`put`, :meth:`drop`) without touching the others)."""

    __slots__ = ("entries", "ws", "groups", "subs", "memo", "_gone", "bits", "bid", "low", "_small", "_order", "_least",
                 "steps")

    def __init__(self) -> None:
        """An empty view: ``switch13.translated_view`` fills it (entries, wildcards, the per-mask
        indexes, then :meth:`tested`), the incremental engine with :meth:`put`."""
        self.entries: dict[int, FlowEntry13] = {}
        self.ws: dict[int, tuple[int, int]] = {}
        self.groups: dict[int, dict[int, list[int]]] = {}
        self.subs: dict[tuple[int, int], dict[int, list[int]]] = {}
        self.memo: dict[Term, dict[Any, Term | None]] | None = None   # see _split_term
        self._gone: set[int] = set()   # ranks dropped while the memo knew them
        self.tested(0)   # every bit some entry tests (or once tested)
        self._small: dict[int, dict[int, list[int]]] | None = None   # see fixed_best
        self._order: list[tuple[int, int, dict[int, list[int]]]] | None = None   # see fixed_best
        self._least: list[tuple[int, int, dict[int, int]]] | None = None   # see fixed_best_many
        # what the short road (of13/road.py) worked out an entry does, by the id of its instructions:
        # (the instructions, the current-header mapping, the step), valid while both are the very objects
        self.steps: dict[int, tuple[Any, Any, Any]] = {}

    def tested(self, bits: int) -> None:
        """Set the bits the entries test (once they are all in)."""
        self.bits = bits
        # the short road keys what a header set shows of the bits by bid
        self.bid, self.low = bit_info(bits)

    def put(self, r: int, e: FlowEntry13, w: tuple[int, int]) -> None:
        """Add the entry of rank ``r`` (its wildcard ``w``), keeping the probing indexes."""
        v, m = w
        self._least = None
        if r in self._gone:   # a rank given again: the memo's pieces for it are another entry's
            self._gone.clear()
            if self.memo:
                self.memo.clear()
        self.entries[r] = e
        self.ws[r] = w
        if m & ~self.bits:   # bits no entry tested before
            self.bits |= m
            self.bid, low = bit_info(self.bits)
            if low != self.low:
                self.low, self._small, self._order = low, None, None
        lst = self.groups.setdefault(m, {}).setdefault(v, [])
        lst.append(r)
        if self._small is not None:
            sby = self._small.get(m >> self.low)
            if sby is None:   # a new mask: fixed_best orders the masks again
                sby = self._small[m >> self.low] = {}
                self._order = None
            sby[v >> self.low] = lst
            if self._order is not None:
                self._order = _lowered(self._order, m >> self.low, r)
        else:
            self._order = None
        for (gm, common), sub in self.subs.items():
            if gm == m:
                sub.setdefault(v & common, []).append(r)

    def drop(self, r: int) -> None:
        """Take out the entry of rank ``r`` (nothing when the view does not hold it)."""
        w = self.ws.pop(r, None)
        if w is None:
            return
        del self.entries[r]
        self._least = None
        if self.memo:
            self._gone.add(r)
        v, m = w
        by = self.groups[m]
        _unlist(by, v, r)
        small = self._small
        if small is not None and v not in by:
            sby = small[m >> self.low]
            del sby[v >> self.low]
            if not sby:
                del small[m >> self.low]
                self._order = None
        if not by:
            del self.groups[m]
            for k in [k for k in self.subs if k[0] == m]:
                del self.subs[k]
            return
        for (gm, common), sub in self.subs.items():
            if gm == m:
                _unlist(sub, v & common, r)

    def _sub(self, gm: int, m: int) -> dict[int, list[int]]:
        """The entries of mask ``gm`` by the bits they share with ``m`` (built on first use)."""
        common = gm & m
        sub = self.subs.get((gm, common))
        if sub is None:
            sub = {}
            for key, idx in self.groups[gm].items():
                sub.setdefault(key & common, []).extend(idx)
            self.subs[(gm, common)] = sub
        return sub

    def candidates(self, v: int, m: int) -> list[int]:
        out: list[int] = []
        nm = ~m
        for gm, by in self.groups.items():
            lst = by.get(v & gm) if not (gm & nm) else self._sub(gm, m).get(v & gm & m)
            if lst:
                out.extend(lst)
        if len(out) > 1:
            out.sort()
        return out

    def classify(self, hs: HS13) -> list[tuple[int | None, HS13]]:
        """Split ``hs`` by the entry each part hits (None: no entry).  When a term already
        fixes every bit an entry tests (the usual case after the first hop), its own
        differences stay as they are and only the entry's shadowers are clipped to it."""
        pieces: dict[int | None, list[Term]] = {}
        ws = self.ws
        bits = self.bits
        lv = lm = -1
        whole = True   # no term was split
        cands: list[int] = []
        split: list[Term] = []   # terms to split, one after the other, with the candidates cands
        for t in hs.terms:
            v, m, ds = t
            # the candidates depend on the bits some entry tests only: terms that differ
            # elsewhere (the tag-count shapes of one header class, say) share them
            kv, km = v & bits, m & bits
            if kv != lv or km != lm:
                if split:
                    self._split_terms(split, cands, pieces)
                    split = []
                cands = self.candidates(v, m)
                lv, lm = kv, km
            if cands and ws[cands[0]][1] & ~m:   # its best candidate takes part of it only
                split.append(t)
                whole = False
                continue
            if split:
                self._split_terms(split, cands, pieces)
                split = []
            if not cands:
                pieces.setdefault(None, []).append(t)
                continue
            got = pieces.get(cands[0])   # the best candidate takes every header of the term (the usual case)
            if got is None:
                pieces[cands[0]] = [t]
            else:
                got.append(t)
        if split:
            self._split_terms(split, cands, pieces)
        if len(pieces) == 1:
            only, ts = next(iter(pieces.items()))
            # unsplit terms go to their pieces as they are, in order: one piece is then all of hs
            if whole or (len(ts) == len(hs.terms) and all(a is b for a, b in zip(ts, hs.terms, strict=True))):
                return [(only, hs)]  # one entry takes all of it, unchanged
        return [(i, HS13(ts)) for i, ts in pieces.items()]

    def whole(self, hs: HS13) -> int | None:
        """The rank of the entry :meth:`classify` would give every term of ``hs`` whole, None
        when it would give them all to no entry (a miss), -1 when it would split ``hs`` (or
        ``hs`` is empty).  The best candidate is found without listing the others."""
        bits = self.bits
        lv = lm = -1
        got: int | None = -1
        for v, m, _ds in hs.terms:
            kv, km = v & bits, m & bits
            if kv == lv and km == lm:
                continue   # the same candidates as the last term (see classify)
            r = self._best(v, m)
            if r is not None and self.ws[r][1] & ~m:
                return -1   # the best candidate takes part of the term only
            if lv >= 0 and r != got:
                return -1
            got = r
            lv, lm = kv, km
        return got

    def whole_keys(self, keys: tuple[tuple[int, int], ...]) -> int | None:
        """:meth:`whole` from the distinct (value & bits, mask & bits) of the terms, in any
        order (what it reads of a term; the answer does not depend on their order)."""
        got: int | None = -1
        first = True
        ws = self.ws
        for v, m in keys:
            r = self._best(v, m)
            if r is not None and ws[r][1] & ~m:
                return -1   # the best candidate takes part of the term only
            if not first and r != got:
                return -1
            got = r
            first = False
        return got

    def fixed_best(self, sv: int) -> int | None:
        """:meth:`_best` for headers that fix every bit the view tests, given their value on
        those bits shifted down by ``low``.  No candidate can take
        part of such headers only, so the best one takes them whole; and the probes run on
        ints as wide as the tested bits, not as the header (the per-mask indexes, shifted
        the same way, share their rank lists with ``groups``)."""
        order = self._order
        if order is None:
            order = self._order = self._ordered()
        best = None
        # by a bound on their best rank (a put lowers it, a drop leaves it): a mask none of whose
        # entries can beat best is not probed
        for first, sm, by in order:
            if best is not None and best < first:
                break
            lst = by.get(sv & sm)
            if lst:
                r = lst[0] if len(lst) == 1 else min(lst)
                if best is None or r < best:
                    best = r
        return best

    def fixed_best_many(self, svs: list[int]) -> list[int | None]:
        """:meth:`fixed_best` of each key of ``svs`` (the classes of a wave at one port, see
        of13/road.py), a mask's probes done for all of them in one pass: the best candidate is
        the one of least rank over the masks, and a mask is not probed once no key can get a
        better rank there.  The per-mask indexes here hold each value's least rank; a view kept
        across messages (``memo`` not None: the incremental engine's, changed entry by entry)
        asks :meth:`fixed_best` of each key instead, whose indexes its puts and drops keep up
        to date, rather than build these again after every change."""
        if self.memo is not None:
            return [self.fixed_best(sv) for sv in svs]
        least = self._least
        if least is None:
            least = self._least = self._least_ranks()
        best: list[Any] = []
        for first, sm, by in least:
            if best and None not in best and max(best) < first:
                break
            got = list(map(by.get, map(and_, svs, repeat(sm)))) if sm else [by.get(0)] * len(svs)
            if not best or best.count(None) == len(best):
                best = got
            elif got.count(None) != len(got):
                best = [a if b is None or (a is not None and a < b) else b for a, b in zip(best, got, strict=True)]
        return best or [None] * len(svs)

    def _least_ranks(self) -> list[tuple[int, int, dict[int, int]]]:
        """The indexes of :meth:`fixed_best_many` as (best rank, shifted mask, least rank by shifted
        value), best rank first (kept until an entry comes or goes)."""
        low = self.low
        out = []
        for gm, by in self.groups.items():
            if by:
                least = {gv >> low: min(lst) for gv, lst in by.items()}
                out.append((min(least.values()), gm >> low, least))
        out.sort(key=_FIRST)
        return out

    def _ordered(self) -> list[tuple[int, int, dict[int, list[int]]]]:
        """The shifted per-mask indexes of :meth:`fixed_best` as (best rank, shifted mask, index),
        best rank first (kept until an entry comes or goes)."""
        small = self._small
        if small is None:
            low = self.low
            small = self._small = {gm >> low: {gv >> low: lst for gv, lst in by.items()}
                                   for gm, by in self.groups.items()}
        return sorted(((min(map(min, by.values())), sm, by) for sm, by in small.items() if by),
                      key=lambda x: x[0])

    def _best(self, v: int, m: int) -> int | None:
        """The first of :meth:`candidates` (None: none)."""
        best = None
        nm = ~m
        for gm, by in self.groups.items():
            lst = by.get(v & gm) if not (gm & nm) else self._sub(gm, m).get(v & gm & m)
            if lst:
                r = lst[0] if len(lst) == 1 else min(lst)
                if best is None or r < best:
                    best = r
        return best

    def _split_terms(self, ts: list[Term], cands: list[int], pieces: dict[int | None, list[Term]]) -> None:
        """:meth:`_split_term` of each term of ``ts`` in turn (terms with the candidates ``cands``),
        their leading lone candidates done together (:func:`lone_runs`, the same pieces)."""
        if len(ts) > 1 and self.memo is None:
            frees: list[dict[int, Any]] = [{} for _ in ts]
            got = lone_runs(ts, cands, self.ws, pieces, frees)
            if got is not None:
                k, same = got
                ws = self.ws
                em = ws[cands[0]][1]
                # each term's loop notes the candidates it goes through in its own seen, and changes
                # same only for a candidate of same's mask: when one comes after the lone ones, each
                # term but the last gets a copy of same (else they all share it)
                keep = any(ws[i][1] == em for i in cands[k:])
                for n, (t, free) in enumerate(zip(ts, frees, strict=True)):
                    mine = {ev: list(lst) for ev, lst in same.items()} if keep and n < len(ts) - 1 else same
                    self._split_term(t, cands, pieces, (k, {em: mine} if mine else {}, free))
                return
        for t in ts:
            self._split_term(t, cands, pieces)

    def _split_term(self, t: Term, cands: list[int], pieces: dict[int | None, list[Term]],
                    lone: tuple[int, dict[int, dict[int, list[int]]], dict[int, Any]] | None = None) -> None:
        """:meth:`classify` for a term that its best candidate does not take whole: each candidate
        gets the term's headers no better-ranked candidate takes; what none takes is a miss.

        A view kept across messages (``memo`` not None) remembers each piece by the term, the
        candidate's rank and the ranks of the candidates that shadow it: a rank stands for one
        wildcard as long as the view lives, so the piece is the same whenever they are."""
        ws = self.ws
        v, m, ds = t
        covered = False
        tm = self._term_memo(t)
        notm = ~m
        # Candidates seen so far, by mask: two wildcards of one mask overlap only when
        # their values are equal, so only the other masks need a scan (a table of one
        # pattern, the usual shape, costs a probe per candidate instead of a scan).
        seen: dict[int, dict[int, list[int]]]
        free: dict[int, Any]   # see lonepiece.lone_piece
        if lone is not None:   # (the leading lone candidates done, by _split_terms)
            k, seen, free = lone
        else:
            seen, free = {}, {}
            k = 0 if tm is not None else lone_run(t, cands, ws, pieces, seen, free)
        # the lone candidates are distinct wildcards of one mask, their values inside it, and the
        # term's base lies inside its mask (else lone_run does none): what the first candidate
        # after them has before it (see make_term's distinct)
        after = k > 0
        for i in (cands if not k else cands[k:]):
            distinct, after = after, False
            ev, em = ws[i]
            # The better-ranked entries that can take headers of this term are exactly the
            # candidates before this one (candidates overlap the term, in rank order).
            earlier = _earlier_noted(seen, ev, em, i)
            inside = not (em & notm)  # the term lies inside the entry's wildcard
            if not earlier and not inside and file_lone(pieces, i, t, ev, em, free, tm):
                continue
            if inside:
                covered = True
                if not earlier:
                    # Every header of the term hits this entry: none is left for the rest.
                    pieces.setdefault(i, []).append(t)
                    break
            if tm is None:
                nt = _piece(t, ev, em, tuple([ws[j] for j in earlier]) if earlier else (), inside, distinct)
            else:
                key = (i, *earlier)
                if key in tm:
                    nt = tm[key]
                else:
                    nt = tm[key] = _piece(t, ev, em, tuple([ws[j] for j in earlier]) if earlier else (), inside)
            if nt is not None:
                pieces.setdefault(i, []).append(nt)
        if covered:
            return  # some candidate takes every header of the term
        if tm is None:
            miss = _miss(t, tuple(ws[i] for i in cands))
        else:
            mkey: tuple[int | None, ...] = (None, *cands)
            if mkey in tm:
                miss = tm[mkey]
            else:
                miss = tm[mkey] = _miss(t, tuple(ws[i] for i in cands))
        if miss is not None:
            pieces.setdefault(None, []).append(miss)


    def _term_memo(self, t: Term) -> dict[Any, Term | None] | None:
        """The pieces of ``t`` this view remembers (see :meth:`_split_term`; None: it keeps none)."""
        if self.memo is None:
            return None
        tm = self.memo.get(t)
        if tm is None:
            if len(self.memo) >= _MEMO_TERMS:
                self.memo.clear()
                self._gone.clear()
            tm = self.memo[t] = {}
        return tm


_MEMO_TERMS = 256   # terms a kept view remembers pieces for (then it forgets them all)


def _piece(t: Term, ev: int, em: int, sh: tuple[tuple[int, int], ...], inside: bool,
           distinct: bool = False) -> Term | None:
    """The headers of ``t`` that the entry (ev, em) takes when the entries ``sh`` rank before
    it (None: none; ``distinct``: ``sh`` are distinct wildcards of one mask with values inside
    it, and ``t``'s base value lies inside its mask, see :func:`make_term`)."""
    v, m, ds = t
    if inside:
        extra = make_term(v, m, sh, distinct)
        nt: Term | None = None if extra is None else (v, m, ds + extra[2])
    else:
        nt = make_term(v | ev, m | em, ds + sh)
    return None if nt is None or term_empty(nt, WIDTH13) else nt


def _miss(t: Term, ws: tuple[tuple[int, int], ...]) -> Term | None:
    """The headers of ``t`` that none of the wildcards ``ws`` takes (None: none)."""
    v, m, ds = t
    miss = make_term(v, m, ds + ws)
    return None if miss is None or term_empty(miss, WIDTH13) else miss


def _lowered(order: list[tuple[int, int, dict[int, list[int]]]], sm: int, r: int) -> list[tuple[int, int, Any]]:
    """``order`` (see ``_TableView._ordered``) with the bound of shifted mask ``sm`` lowered to ``r``."""
    for k, (first, gm, by) in enumerate(order):
        if gm == sm:
            if r < first:
                order[k] = (r, gm, by)
                order.sort(key=lambda x: x[0])
            break
    return order


def _earlier_noted(seen: dict[int, dict[int, list[int]]], ev: int, em: int, i: int) -> list[int]:
    """The candidates in ``seen`` (by mask, then value) whose wildcard overlaps candidate ``i``'s
    (ev, em), in rank order; then ``i`` filed there.  Two wildcards of one mask overlap only when
    their values are equal: that mask's are a probe, found once for the answer and the filing
    (when every candidate seen has its mask, the usual table, the whole question)."""
    same = seen.get(em)
    lst = None if same is None else same.get(ev)
    if same is not None and len(seen) == 1:
        if lst is None:
            same[ev] = [i]
            return []
        earlier = list(lst)
        lst.append(i)
        return earlier
    earlier = [] if lst is None else list(lst)
    if not em:   # a catch-all: every candidate seen of another mask overlaps it
        for gm, by in seen.items():
            if gm:
                for idx in by.values():
                    earlier.extend(idx)
    else:
        for gm, by in seen.items():
            if gm != em:
                for gv, idx in by.items():
                    if not ((gv ^ ev) & gm & em):
                        earlier.extend(idx)
    if len(earlier) > 1:
        earlier.sort()
    if same is None:
        seen[em] = {ev: [i]}
    elif lst is None:
        same[ev] = [i]
    else:
        lst.append(i)
    return earlier


_FIRST = itemgetter(0)


def bit_info(bits: int) -> tuple[int, int]:
    """A small number for a set of tested bits (equal sets, one number; numbers are never given
    again): a dict keyed by it costs no hash of a header-wide int; and :func:`low_bit` of them
    (a network's views test a few sets of bits: both worked out once per set)."""
    got = _BIT_IDS.get(bits)
    if got is None:
        if len(_BIT_IDS) >= 4096:
            _BIT_IDS.clear()   # (later views of these bits get new numbers)
        got = _BIT_IDS[bits] = (next(_BIT_COUNT), low_bit(bits))
    return got


_BIT_IDS: dict[int, tuple[int, int]] = {}
_BIT_COUNT = itertools.count()


def low_bit(bits: int) -> int:
    """The position of the lowest set bit of ``bits`` (0 for none)."""
    return max((bits & -bits).bit_length() - 1, 0)


def _unlist(by: dict[int, list[int]], key: int, r: int) -> None:
    lst = by[key]
    lst.remove(r)
    if not lst:
        del by[key]
