"""OpenFlow 1.3 flow-table, group and meter operations as race detection sees them.

The 1.0 analysis reasons about POX-style flow mods (:mod:`netsleuth.races.poxmatch`).
On 1.3 a switch has many flow tables, a group table and a meter table, and
a flow mod names one table (a delete may name all of them, ``OFPTT_ALL``),
filters modify/delete by cookie under a mask and deletes by ``out_port`` and
``out_group``; matches are OXM matches with masks, prerequisites and the
pipeline's metadata.  The values here carry exactly that, built from the
os-ken messages and from the model's entries (:mod:`netsleuth.model.of13`),
whose match semantics (``OxmMatch.covers``/``overlaps``/``matches``) the
commutativity rules (:mod:`netsleuth.races.of13.commute`) reuse.

Every operation names its *target*, the shared object it touches:
``("table", n)`` (``n`` = ``OFPTT_ALL`` for all tables), ``("group", g)``
(``OFPG_ALL``) or ``("meter", m)`` (``OFPM_ALL``).  Two operations can
only race on a common target.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from os_ken.ofproto import ofproto_v1_3 as ofp

from netsleuth.model.of13.actions import Group
from netsleuth.model.of13.flowtable import FlowEntry13
from netsleuth.model.of13.instructions import Instructions
from netsleuth.model.of13.oxm import OxmMatch

TABLE, GROUP, METER = "table", "group", "meter"
ALL_OF = {TABLE: ofp.OFPTT_ALL, GROUP: ofp.OFPG_ALL, METER: ofp.OFPM_ALL}
Target = tuple[str, int]

_FLOW_COMMANDS = {ofp.OFPFC_ADD: "ADD", ofp.OFPFC_MODIFY: "MODIFY", ofp.OFPFC_MODIFY_STRICT: "MODIFY_STRICT",
                  ofp.OFPFC_DELETE: "DELETE", ofp.OFPFC_DELETE_STRICT: "DELETE_STRICT"}
_GM_COMMANDS = {ofp.OFPGC_ADD: "ADD", ofp.OFPGC_MODIFY: "MODIFY", ofp.OFPGC_DELETE: "DELETE"}
ADD, MODIFY, DELETE = ofp.OFPGC_ADD, ofp.OFPGC_MODIFY, ofp.OFPGC_DELETE   # the same numbers for meters


def targets_meet(a: Target | None, b: Target | None) -> bool:
    """Do two operations touch a common object?  (None: the single table of an OpenFlow 1.0 switch.)"""
    if a is None or b is None:
        return a is b
    if a[0] != b[0]:
        return False
    everything = ALL_OF[a[0]]
    return a[1] == b[1] or a[1] == everything or b[1] == everything


@dataclass(frozen=True, slots=True, eq=False)
class FlowMod13:
    """A 1.3 flow mod, or (command ADD) the flow entry a packet's lookup hit.

    ``users_of``: a synthetic delete standing for the flows a GROUP_MOD or
    METER_MOD delete removes with its group or meter (``("group", g)``);
    those are selected by what their instructions use, not by match.
    """

    command: int
    table_id: int
    match: OxmMatch
    priority: int
    instructions: Instructions
    cookie: int = 0
    cookie_mask: int = 0
    out_port: int = ofp.OFPP_ANY
    out_group: int = ofp.OFPG_ANY
    flags: int = 0
    idle_timeout: int = 0
    hard_timeout: int = 0
    users_of: Target | None = None

    @classmethod
    def from_msg(cls, msg: Any) -> FlowMod13:
        """From os-ken's 1.3 ``OFPFlowMod`` (a malformed match or instruction list raises OFError)."""
        return cls(msg.command, msg.table_id, OxmMatch.from_ofp(msg.match), msg.priority,
                   Instructions.from_ofp(msg.instructions), msg.cookie, msg.cookie_mask, msg.out_port,
                   msg.out_group, msg.flags, msg.idle_timeout, msg.hard_timeout)

    @classmethod
    def of_entry(cls, e: FlowEntry13) -> FlowMod13:
        """The ADD that would install entry ``e`` as it is now."""
        return cls(ofp.OFPFC_ADD, e.table_id, e.match, e.priority, e.instructions, e.cookie, flags=e.flags,
                   idle_timeout=e.idle_timeout, hard_timeout=e.hard_timeout)

    def strict_delete(self) -> FlowMod13:
        """The DELETE_STRICT that removes exactly this entry (what an expiry does to the table)."""
        return FlowMod13(ofp.OFPFC_DELETE_STRICT, self.table_id, self.match, self.priority, self.instructions)

    # -- SDNRacer's vocabulary (the 1.0 flow mods have the same) --------------------------
    def is_add(self) -> bool:
        return self.command == ofp.OFPFC_ADD

    def is_mod(self) -> bool:
        return self.command in (ofp.OFPFC_MODIFY, ofp.OFPFC_MODIFY_STRICT)

    def is_del(self) -> bool:
        return self.command in (ofp.OFPFC_DELETE, ofp.OFPFC_DELETE_STRICT)

    def is_strict(self) -> bool:
        return self.command in (ofp.OFPFC_MODIFY_STRICT, ofp.OFPFC_DELETE_STRICT)

    def check_overlap(self) -> bool:
        return bool(self.flags & ofp.OFPFF_CHECK_OVERLAP)

    @property
    def target(self) -> Target:
        return (TABLE, self.table_id)

    @property
    def actions(self) -> Instructions:
        """What an entry it installs or modifies does (the 1.0 code compares ``actions``)."""
        return self.instructions

    @property
    def command_name(self) -> str:
        return _FLOW_COMMANDS.get(self.command, str(self.command))

    def entry_state(self) -> tuple[Any, ...]:
        """What an ADD leaves in its table besides counters: two ADDs of one entry commute iff equal."""
        return (self.instructions, self.cookie, self.idle_timeout, self.hard_timeout,
                self.flags & ~ofp.OFPFF_CHECK_OVERLAP)

    def selects(self, e: FlowMod13) -> bool:
        """Does this MODIFY/DELETE select the entry ``e`` (an ADD's entry or one a lookup hit)?

        Exactly ``FlowTables.select``: table (or all), strict = same match and
        priority, non-strict = this match covers the entry's, the cookie under
        the mask, and for deletes the out_port/out_group filters on the
        entry's instructions.
        """
        if not targets_meet(self.target, e.target):
            return False
        if self.users_of is not None:
            kind, oid = self.users_of
            if kind == METER:
                return e.instructions.meter is not None and oid in (e.instructions.meter, ofp.OFPM_ALL)
            return bool(_groups_of(e.instructions)) if oid == ofp.OFPG_ALL else e.instructions.uses_group(oid)
        if self.is_strict():
            if e.priority != self.priority or e.match != self.match:
                return False
        elif not self.match.covers(e.match):
            return False
        if self.cookie_mask and (e.cookie ^ self.cookie) & self.cookie_mask:
            return False
        if self.is_del():
            if self.out_port != ofp.OFPP_ANY and not e.instructions.outputs_to(self.out_port):
                return False
            if self.out_group != ofp.OFPG_ANY and not e.instructions.uses_group(self.out_group):
                return False
        return True

    def may_share_entry(self, other: FlowMod13) -> bool:
        """Could some entry be selected by both MODIFY/DELETEs (whatever the tables hold)?

        Needs a common table, compatible cookie filters and a match both
        select: a strict side names its (match, priority) entry, which the
        other must select; two non-strict sides share an entry iff their
        matches overlap (the intersection of two OXM matches is a match).
        """
        if not targets_meet(self.target, other.target):
            return False
        if self.users_of is not None or other.users_of is not None:
            return True     # selected by what they use: any entry may
        if (self.cookie ^ other.cookie) & self.cookie_mask & other.cookie_mask:
            return False
        if self.is_strict():
            return other.is_strict() and self.match == other.match and self.priority == other.priority \
                or not other.is_strict() and other.match.covers(self.match)
        if other.is_strict():
            return self.match.covers(other.match)
        return self.match.overlaps(other.match)

    def describe(self) -> str:
        """``ADD table=1,priority=10,eth_dst=...,actions=...`` (the 1.0 flow mods say the same)."""
        m = str(self.match)
        text = (f"{self.command_name} table={_table_text(self.table_id)},priority={self.priority}"
                + (f",{m}" if m else ""))
        if self.cookie or self.cookie_mask:
            text += f",cookie={self.cookie:#x}" + (f"/{self.cookie_mask:#x}" if self.cookie_mask else "")
        if self.is_del() and self.out_port != ofp.OFPP_ANY:     # an ADD or MODIFY ignores both
            text += f",out_port={self.out_port}"
        if self.is_del() and self.out_group != ofp.OFPG_ANY:
            text += f",out_group={self.out_group}"
        if self.users_of is not None:
            text += f",using {self.users_of[0]} {self.users_of[1]}"
        if self.is_del():
            return text
        return f"{text},actions={self.instructions.render()}"


def _groups_of(inst: Instructions) -> list[int]:
    return [a.group_id for a in inst.all_actions() if isinstance(a, Group)]


def _table_text(table_id: int) -> str:
    return "all" if table_id == ofp.OFPTT_ALL else str(table_id)


@dataclass(frozen=True, slots=True, eq=False)
class GroupMeterMod:
    """A GROUP_MOD or METER_MOD (``kind`` GROUP or METER), or (``command`` None) the group or meter a
    packet went through, as it was then: ``content`` is the group's (type, buckets) or the meter's
    (flags, bands), None when it did not exist."""

    kind: str
    command: int | None
    oid: int
    content: tuple[Any, ...] | None

    @classmethod
    def group_mod(cls, msg: Any) -> GroupMeterMod:
        from netsleuth.model.of13.groups import Bucket

        return cls(GROUP, msg.command, msg.group_id, (msg.type, tuple(Bucket.from_ofp(b) for b in msg.buckets)))

    @classmethod
    def meter_mod(cls, msg: Any) -> GroupMeterMod:
        from netsleuth.model.of13.messages import band_from_ofp

        return cls(METER, msg.command, msg.meter_id, (msg.flags, tuple(band_from_ofp(b) for b in msg.bands)))

    @property
    def target(self) -> Target:
        return (self.kind, self.oid)

    def is_add(self) -> bool:
        return self.command == ADD

    def is_mod(self) -> bool:
        return self.command == MODIFY

    def is_del(self) -> bool:
        return self.command == DELETE

    @property
    def command_name(self) -> str:
        return "READ" if self.command is None else _GM_COMMANDS.get(self.command, str(self.command))

    def describe(self) -> str:
        which = "all" if self.oid == ALL_OF[self.kind] else str(self.oid)
        if self.command is None:
            state = "missing" if self.content is None else _content_text(self.kind, self.content)
            return f"{self.kind.upper()} {self.kind}={which} {state}"
        text = f"{self.kind.upper()}_MOD {self.command_name} {self.kind}={which}"
        if self.command != DELETE and self.content is not None:
            text += f" {_content_text(self.kind, self.content)}"
        return text


def _content_text(kind: str, content: tuple[Any, ...]) -> str:
    if kind == GROUP:
        from netsleuth.model.of13.groups import GROUP_TYPES

        gtype, buckets = content
        return f"type={GROUP_TYPES.get(gtype, gtype)}," + ",".join(b.render() for b in buckets)
    flags, bands = content
    return f"flags={flags:#x}," + ",".join(
        f"band={'drop' if b.type == ofp.OFPMBT_DROP else 'dscp_remark'}:rate={b.rate},burst={b.burst_size}"
        for b in bands)


__all__ = ["ALL_OF", "FlowMod13", "GROUP", "GroupMeterMod", "METER", "TABLE", "Target", "targets_meet"]
