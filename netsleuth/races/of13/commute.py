"""Commutativity of OpenFlow 1.3 flow-table, group and meter operations.

SDNRacer's specification (:mod:`netsleuth.races.commute`) carried over to
1.3 semantics, with the model's OXM match code (``OxmMatch.covers`` for
non-strict selection, ``overlaps``, ``matches`` on the fields a table
looked up) and its selection rule (``FlowMod13.selects`` = ``FlowTables.select``).
Two operations on different targets (tables, groups, meters) always
commute.  Where 1.3 differs from 1.0 the rules follow 1.3:

* a MODIFY never adds an entry, so a MODIFY and a DELETE commute unless the
  delete filters by ``out_port``/``out_group`` (which the modify may change)
  on an entry both can select; a MODIFY against a table miss commutes;
* modify/delete select by cookie under a mask, deletes by out_port/out_group;
* priorities have no exact-match exception: an ADD of equal priority that
  matches the packet may take the lookup over (the model picks one), so it
  conflicts like a higher one;
* an ADD is compared with what it leaves in the table: instructions, cookie,
  timeouts and flags (``FlowMod13.entry_state``).

write/write
  del/del commute; add/add conflict on the same (table, match, priority)
  with different entries, or with CHECK_OVERLAP on an overlap of equal
  priority; add/mod conflict when the modify selects the added entry with
  other instructions (or CHECK_OVERLAP and overlap); add/del when the delete
  selects the added entry (or CHECK_OVERLAP and overlap); mod/mod when both
  may select one entry with different instructions; mod/del as above.

read/write (``write_first``: the write's event has the smaller eid, as in SDNRacer)
  ADD: write first -> the read hit exactly that entry; read first -> the
  ADD's match matches the packet at that table, at a priority >= the hit
  entry's (or on a miss), with other instructions.
  DELETE: write first -> its match matches the packet (strict: and its
  priority >= the hit entry's); read first -> it selects the entry read.
  MODIFY: on a miss commute; write first -> it selects the entry read and
  the read saw its instructions; read first -> it selects the entry read and
  changes its instructions.

Groups and meters (an object id; ``content`` = type and buckets / flags and bands)
  write/write: del/del and mod/del commute (a modify of a deleted group
  fails either way); add/add, add/mod, mod/mod conflict when the contents
  differ; add/del conflict.  read/write: a read saw a group (or meter) as it
  was (a read of all of them, or of a missing one, conflicts with every
  write); an ADD read first commutes (it fails: the object exists), written
  first conflicts (reversed, the read finds nothing); a MODIFY conflicts
  when read first with other content, or written first when the read saw
  its content; a DELETE always conflicts.
  A group or meter DELETE also removes the flows that use it: that part is
  a flow-table write of its own (``FlowMod13.users_of``).

Flow statistics (a MULTIPART flow or aggregate request read as a flow mod
naming the entries it selects): a write conflicts with it when it may
change what the request selects.
"""

from __future__ import annotations

from collections.abc import Mapping

from os_ken.ofproto import ofproto_v1_3 as ofp

from netsleuth.races.of13.flowmod import FlowMod13, GroupMeterMod, targets_meet

Fields = Mapping[str, int]


# -- flow tables ---------------------------------------------------------------------------


def _filters_by_instructions(d: FlowMod13) -> bool:
    """Does a delete's selection depend on the entries' instructions (which a modify changes)?"""
    return d.out_port != ofp.OFPP_ANY or d.out_group != ofp.OFPG_ANY or d.users_of is not None


def commute_ww13(i: FlowMod13, k: FlowMod13) -> bool:
    """Do two 1.3 flow-table writes commute?"""
    if not targets_meet(i.target, k.target):
        return True
    if i.is_del() and k.is_del():
        return True
    if i.is_add() and k.is_add():
        if i.match == k.match and i.priority == k.priority:
            return i.entry_state() == k.entry_state()
        return not ((i.check_overlap() or k.check_overlap()) and i.priority == k.priority
                    and i.match.overlaps(k.match))
    if i.is_add() or k.is_add():
        add, other = (i, k) if i.is_add() else (k, i)
        if add.check_overlap() and other.match.overlaps(add.match) and other.users_of is None:
            return False
        if not other.selects(add):
            return True
        return other.is_mod() and other.instructions == add.instructions
    if i.is_mod() and k.is_mod():
        return i.instructions == k.instructions or not i.may_share_entry(k)
    d, m = (i, k) if i.is_del() else (k, i)
    return not (_filters_by_instructions(d) and d.may_share_entry(m))


def commute_rw13(fields: Fields, eread: FlowMod13 | None, w: FlowMod13, write_first: bool) -> bool:
    """Do a lookup (``fields`` at that table, hit ``eread`` or missed) and a 1.3 flow-table write commute?"""
    if w.is_add():
        if write_first:
            return eread is None or not (eread.priority == w.priority and eread.match == w.match
                                         and eread.entry_state() == w.entry_state())
        if not w.match.matches(fields):
            return True
        return eread is not None and (eread.priority > w.priority or eread.entry_state() == w.entry_state())
    if w.is_del():
        if write_first:
            if w.users_of is not None:
                return True     # removed with their group/meter: its own write/write race says so
            if not w.match.matches(fields):
                return True
            return w.is_strict() and eread is not None and w.priority < eread.priority
        return eread is None or not w.selects(eread)
    if w.is_mod():
        if eread is None or not w.selects(eread):
            return True
        if write_first:
            return eread.instructions != w.instructions
        return eread.instructions == w.instructions
    return False


def commute_stats13(request: FlowMod13, w: FlowMod13) -> bool:
    """Does a flow/aggregate statistics read (``request``, non-strict selection) commute with a write?"""
    if w.is_add():
        return not request.selects(w)
    return not request.may_share_entry(w)


# -- groups and meters ---------------------------------------------------------------------------


def commute_ww_gm(i: GroupMeterMod, k: GroupMeterMod) -> bool:
    if i.is_del() and k.is_del():
        return True
    if i.is_del() or k.is_del():
        other = k if i.is_del() else i
        return other.is_mod()
    return i.content == k.content


def commute_rw_gm(read: GroupMeterMod, w: GroupMeterMod, write_first: bool) -> bool:
    if read.content is None:
        return False    # a read of all groups (meters), or of one that was missing: any write changes it
    if w.is_add():
        return not write_first
    if w.is_mod():
        if write_first:
            return read.content != w.content
        return read.content == w.content
    return False


__all__ = ["commute_rw13", "commute_rw_gm", "commute_stats13", "commute_ww13", "commute_ww_gm"]
