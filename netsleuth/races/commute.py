"""SDNRacer's commutativity specification for flow-table operations.

Two operations on one flow table *commute* when applying them in either
order leaves the same table and the same read results.  The rules are
SDNRacer's (``hb_commute_check.py``), with POX's OpenFlow 1.0 match semantics
(:mod:`netsleuth.races.poxmatch`):

write/write (by command pair)
  del/del always commute; del/mod: a strict MODIFY is deleted by the DELETE
  (same match and priority when strict, subset otherwise), a non-strict one
  overlaps it; add/del: the DELETE removes the added entry (or the ADD has
  CHECK_OVERLAP and they overlap); mod/mod: they overlap (both non-strict),
  are identical (both strict) or one contains the other, with different
  actions; add/mod: the MODIFY covers the ADD with different actions (or
  CHECK_OVERLAP and overlap); add/add: same match and priority, different
  actions.

read/write (the rule depends on which event has the smaller eid)
  write first: an ADD conflicts only if the read hit exactly that entry; a
  MODIFY if the read hit an entry it covers with the *same* actions; a
  DELETE if it covers the packet.  Read first: an ADD conflicts if it covers
  the packet and (for a hit) has priority >= the hit entry and different
  actions; a MODIFY if it covers the packet and the read hit an entry with
  different actions; a DELETE if it deletes the entry read.

Results are cached: flow mods and packet matches repeat a lot.
"""

from __future__ import annotations

from netsleuth.races.events import READ, STATS_READ, FlowOp
from netsleuth.races.of13.commute import commute_rw13, commute_rw_gm, commute_stats13, commute_ww13, commute_ww_gm
from netsleuth.races.of13.flowmod import FlowMod13, GroupMeterMod, targets_meet
from netsleuth.races.poxmatch import OFPP_NONE, PoxFlowMod, PoxMatch


def _flowmod_subset(e1: PoxFlowMod, e2: PoxFlowMod, strict: bool) -> bool:
    """Is flow mod e1 a subset of e2 (strict: same match and priority)?"""
    if strict:
        return e1.match == e2.match and e1.priority == e2.priority
    return e2.match.matches_with_wildcards(e1.match)


def _uses_outport(out_port: int, e: PoxFlowMod) -> bool:
    return any(a[0] in (0, 11) and a[2] == out_port for a in e.actions)


def _deletes(edel: PoxFlowMod, e: PoxFlowMod | None, strict: bool) -> bool:
    """Does DELETE ``edel`` delete ``e``?  (SDNRacer checks ``e``'s out_port, as written.)"""
    if e is None:
        return False
    if e.out_port != OFPP_NONE:
        return _flowmod_subset(e, edel, strict) and _uses_outport(e.out_port, edel)
    return _flowmod_subset(e, edel, strict)


def _overlap(m1: PoxMatch, m2: PoxMatch) -> bool:
    return m1.overlaps(m2)


def _nocommute_del_mod(edel: PoxFlowMod, emod: PoxFlowMod) -> bool:
    if emod.is_strict():
        return _deletes(edel, emod, True)
    return _overlap(edel.match, emod.match)


def _nocommute_add_del(eadd: PoxFlowMod, edel: PoxFlowMod) -> bool:
    return _deletes(edel, eadd, edel.is_strict()) or (eadd.check_overlap() and _overlap(eadd.match, edel.match))


def _nocommute_mod_mod(e1: PoxFlowMod, e2: PoxFlowMod) -> bool:
    s1, s2 = e1.is_strict(), e2.is_strict()
    if not s1 and not s2:
        return _overlap(e1.match, e2.match) and e1.actions != e2.actions
    if s1 and s2:
        return e1.match == e2.match and e1.priority == e2.priority and e1.actions != e2.actions
    return ((_flowmod_subset(e1, e2, s2) or _flowmod_subset(e2, e1, s1))
            and e1.actions != e2.actions)


def _nocommute_add_mod(eadd: PoxFlowMod, emod: PoxFlowMod) -> bool:
    if not eadd.check_overlap():
        return _flowmod_subset(eadd, emod, emod.is_strict()) and eadd.actions != emod.actions
    return _overlap(eadd.match, emod.match)


def _nocommute_add_add(e1: PoxFlowMod, e2: PoxFlowMod) -> bool:
    return e1.match == e2.match and e1.priority == e2.priority and e1.actions != e2.actions


def commute_ww(i: PoxFlowMod, k: PoxFlowMod) -> bool:
    """Do two writes commute?  Unknown commands never commute (SDNRacer asserts)."""
    if i.is_del() and k.is_mod():
        return not _nocommute_del_mod(i, k)
    if i.is_mod() and k.is_del():
        return not _nocommute_del_mod(k, i)
    if i.is_add() and k.is_del():
        return not _nocommute_add_del(i, k)
    if i.is_del() and k.is_add():
        return not _nocommute_add_del(k, i)
    if i.is_mod() and k.is_mod():
        return not _nocommute_mod_mod(i, k)
    if i.is_add() and k.is_mod():
        return not _nocommute_add_mod(i, k)
    if i.is_mod() and k.is_add():
        return not _nocommute_add_mod(k, i)
    if i.is_add() and k.is_add():
        return not _nocommute_add_add(i, k)
    if i.is_del() and k.is_del():
        return True
    return False


def commute_rw(pkt: PoxMatch, eread: PoxFlowMod | None, w: PoxFlowMod, write_first: bool) -> bool:
    """Do a read (packet ``pkt`` that hit ``eread``, or missed: None) and a write commute?

    ``write_first``: the write's event has the smaller eid.
    """
    if w.is_add():
        if write_first:
            if eread is None:
                return True
            return not (eread.priority == w.priority and eread.match == w.match and eread.actions == w.actions)
        if eread is None:
            return not w.match.matches_with_wildcards(pkt)
        return not (w.match.matches_with_wildcards(pkt) and eread.priority <= w.priority
                    and eread.actions != w.actions)
    if w.is_del():
        if write_first:
            return not w.match.matches_with_wildcards(pkt)
        return not _deletes(w, eread, w.is_strict())
    if w.is_mod():
        if eread is None:
            return True
        if write_first:
            return not (_flowmod_subset(eread, w, w.is_strict()) and eread.actions == w.actions)
        return not (w.match.matches_with_wildcards(pkt) and eread.actions != w.actions)
    return False


def commute_ops13(a: FlowOp, w: FlowOp, write_first: bool) -> bool:
    """Do two OpenFlow 1.3 operations commute: ``w`` a write, ``a`` a read (``write_first``: ``w``'s
    event has the smaller eid) or a write?  Rules: :mod:`netsleuth.races.of13.commute`."""
    fa, fw = a.flow_mod, w.flow_mod
    if not targets_meet(a.target, w.target):
        return True
    if a.kind == READ:
        if isinstance(fw, GroupMeterMod):
            return isinstance(fa, GroupMeterMod) and commute_rw_gm(fa, fw, write_first)
        if not isinstance(fw, FlowMod13):
            return False
        if a.name == STATS_READ:
            return isinstance(fa, FlowMod13) and commute_stats13(fa, fw)
        if a.fields is None or not (fa is None or isinstance(fa, FlowMod13)):
            return False
        return commute_rw13(a.fields, fa, fw, write_first)
    if isinstance(fa, FlowMod13) and isinstance(fw, FlowMod13):
        return commute_ww13(fa, fw)
    if isinstance(fa, GroupMeterMod) and isinstance(fw, GroupMeterMod):
        return commute_ww_gm(fa, fw)
    return False   # a write without its flow mod: assume the worst


class CommutativityChecker:
    """Cached :func:`commute_ww` / :func:`commute_rw` keyed by object identity."""

    def __init__(self) -> None:
        self._ww: dict[tuple[int, int], bool] = {}
        self._rw: dict[tuple[int, int, int, bool], bool] = {}
        self._keep: list = []   # keep keyed objects alive so ids stay unique

    def ww(self, i: PoxFlowMod, k: PoxFlowMod) -> bool:
        key = (id(i), id(k))
        r = self._ww.get(key)
        if r is None:
            r = self._ww[key] = commute_ww(i, k)
            self._keep.append((i, k))
        return r

    def rw(self, pkt: PoxMatch, eread: PoxFlowMod | None, w: PoxFlowMod, write_first: bool) -> bool:
        key = (id(pkt), id(eread), id(w), write_first)
        r = self._rw.get(key)
        if r is None:
            r = self._rw[key] = commute_rw(pkt, eread, w, write_first)
            self._keep.append((pkt, eread, w))
        return r
