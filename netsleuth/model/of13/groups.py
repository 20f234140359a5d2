"""The OpenFlow 1.3 group table: group_mod semantics and bucket selection.

A group is a list of buckets, each an action set (spec 5.6.1), plus a type
that says which buckets run:

* ALL: every bucket, each on its own copy of the packet (flooding, multicast);
* SELECT: one bucket, chosen by a hash of the packet's headers with the
  bucket weights as shares.  The hash is a keyed BLAKE2b over fixed header
  fields with the pipeline's seed, never Python's ``hash``, so the choice
  is the same in every run and process;
* INDIRECT: its single bucket;
* FAST_FAILOVER: the first bucket whose watched port and group are live.

group_mod errors follow the spec (and OVS where the spec leaves a choice):
OFPGMFC_GROUP_EXISTS, INVALID_GROUP (an id above OFPG_MAX, an INDIRECT
group without exactly one bucket, and -- where the spec names no code and
Open vSwitch answers INVALID_GROUP -- a weight outside SELECT or a
FAST_FAILOVER bucket that watches nothing), UNKNOWN_GROUP on modify,
BAD_TYPE, LOOP (a chain of group actions that comes back), CHAINED_GROUP
(deleting a group another group forwards to), and the action errors
(OFPBAC_BAD_OUT_GROUP for a bucket naming a group that does not exist,
OFPBAC_BAD_OUT_PORT ...).  Open vSwitch checks none of LOOP,
CHAINED_GROUP and the bucket action errors at group_mod time (it stops a
loop when it runs one); the model follows the spec, whose codes name them.
Open vSwitch supports chaining, so CHAINING_UNSUPPORTED is never raised.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from os_ken.ofproto import ofproto_v1_3 as ofp
from os_ken.ofproto import ofproto_v1_3_parser as parser

from netsleuth.model.of13.actions import (
    Action,
    Group,
    action_from_ofp,
    action_to_ofp,
    check_action_value,
    render_action,
)
from netsleuth.model.of13.errors import OFError, bad_action

GROUP_TYPES = {ofp.OFPGT_ALL: "all", ofp.OFPGT_SELECT: "select", ofp.OFPGT_INDIRECT: "indirect",
               ofp.OFPGT_FF: "fast_failover"}
_HASH_FIELDS = ("eth_src", "eth_dst", "eth_type", "vlan_vid", "ip_proto", "ipv4_src", "ipv4_dst", "ipv6_src",
                "ipv6_dst", "tcp_src", "tcp_dst", "udp_src", "udp_dst", "sctp_src", "sctp_dst")


def _gmf(code: int, problem: str, fix: str) -> OFError:
    return OFError(ofp.OFPET_GROUP_MOD_FAILED, code, problem, fix)


@dataclass(frozen=True, slots=True)
class Bucket:
    actions: tuple[Action, ...]
    weight: int = 0
    watch_port: int = ofp.OFPP_ANY
    watch_group: int = ofp.OFPG_ANY

    def render(self) -> str:
        parts = []
        if self.weight:
            parts.append(f"weight:{self.weight}")
        if self.watch_port != ofp.OFPP_ANY:
            parts.append(f"watch_port:{self.watch_port}")
        if self.watch_group != ofp.OFPG_ANY:
            parts.append(f"watch_group:{self.watch_group}")
        acts = [render_action(a) for a in self.actions]
        return "bucket=" + ",".join(parts + (["actions=" + ",".join(acts)] if acts else []))

    def to_ofp(self) -> Any:
        return parser.OFPBucket(self.weight, self.watch_port, self.watch_group,
                                [action_to_ofp(a) for a in self.actions])

    @classmethod
    def from_ofp(cls, b: Any) -> Bucket:
        return cls(tuple(action_from_ofp(a) for a in b.actions), b.weight, b.watch_port, b.watch_group)


@dataclass
class GroupEntry:
    group_id: int
    type: int
    buckets: tuple[Bucket, ...]
    installed_at: float = 0.0
    packet_count: int = 0
    byte_count: int = 0
    bucket_counts: list[list[int]] | None = None   # [packets, bytes] per bucket

    def __post_init__(self) -> None:
        if self.bucket_counts is None:
            self.bucket_counts = [[0, 0] for _ in self.buckets]

    def render(self) -> str:
        """ovs-ofctl ``add-groups`` line."""
        return f"group_id={self.group_id},type={GROUP_TYPES[self.type]}," + ",".join(b.render() for b in self.buckets)

    def children(self) -> set[int]:
        return {a.group_id for b in self.buckets for a in b.actions if type(a) is Group}


class GroupTable:
    """Groups by id, with group_mod validation and the bucket choice of each type."""

    def __init__(self, seed: int = 0) -> None:
        self.groups: dict[int, GroupEntry] = {}
        self._key = seed.to_bytes(8, "big", signed=True)

    def exists(self, group_id: int) -> bool:
        return group_id in self.groups

    # -- group_mod -----------------------------------------------------------------

    def _validate(self, group_id: int, gtype: int, buckets: tuple[Bucket, ...], *, replacing: bool) -> None:
        if not 0 <= group_id <= ofp.OFPG_MAX:
            raise _gmf(ofp.OFPGMFC_INVALID_GROUP, f"group id {group_id:#x} is reserved or out of range",
                       "use a group id 0..0xffffff00")
        if gtype not in GROUP_TYPES:
            raise _gmf(ofp.OFPGMFC_BAD_TYPE, f"group type {gtype}", "use ALL, SELECT, INDIRECT or FF")
        if gtype == ofp.OFPGT_INDIRECT and len(buckets) != 1:
            raise _gmf(ofp.OFPGMFC_INVALID_GROUP, f"an INDIRECT group with {len(buckets)} buckets",
                       "give an INDIRECT group exactly one bucket")
        for b in buckets:
            # The spec names no code for these two; Open vSwitch answers INVALID_GROUP.
            if gtype != ofp.OFPGT_SELECT and b.weight:
                raise _gmf(ofp.OFPGMFC_INVALID_GROUP, f"weight {b.weight} in a non-SELECT group",
                           "weights are for SELECT groups only: use 0")
            if gtype == ofp.OFPGT_FF and b.watch_port == ofp.OFPP_ANY and b.watch_group == ofp.OFPG_ANY:
                raise _gmf(ofp.OFPGMFC_INVALID_GROUP, "a FAST_FAILOVER bucket watches neither a port nor a group",
                           "set watch_port or watch_group on every FAST_FAILOVER bucket")
            # A bucket has no match to be consistent with: only each action's own
            # validity and the groups it names are checked (as Open vSwitch does);
            # at run time an action whose header is absent does nothing.
            for a in b.actions:
                check_action_value(a)
                if type(a) is Group and not self._group_or_self(group_id)(a.group_id):
                    raise bad_action(ofp.OFPBAC_BAD_OUT_GROUP, f"bucket names group {a.group_id}, which does not exist",
                                     "add the chained group first")
        children = {a.group_id for b in buckets for a in b.actions if type(a) is Group}
        if group_id in children or any(self._reaches(c, group_id) for c in children):
            raise _gmf(ofp.OFPGMFC_LOOP, f"group {group_id} would forward to itself through its buckets",
                       "break the chain of group actions")

    def _group_or_self(self, group_id: int) -> Callable[[int], bool]:
        return lambda g: g in self.groups or g == group_id

    def _reaches(self, start: int, target: int) -> bool:
        seen, todo = set(), [start]
        while todo:
            g = todo.pop()
            if g == target:
                return True
            if g in seen or g not in self.groups:
                continue
            seen.add(g)
            todo.extend(sorted(self.groups[g].children()))
        return False

    def add(self, group_id: int, gtype: int, buckets: tuple[Bucket, ...], *, now: float = 0.0) -> GroupEntry:
        if group_id in self.groups:
            raise _gmf(ofp.OFPGMFC_GROUP_EXISTS, f"group {group_id} exists", "use OFPGC_MODIFY or another id")
        self._validate(group_id, gtype, buckets, replacing=False)
        entry = GroupEntry(group_id, gtype, tuple(buckets), now)
        self.groups[group_id] = entry
        return entry

    def modify(self, group_id: int, gtype: int, buckets: tuple[Bucket, ...], *, now: float = 0.0) -> GroupEntry:
        if group_id not in self.groups:
            raise _gmf(ofp.OFPGMFC_UNKNOWN_GROUP, f"group {group_id} does not exist", "add it first (OFPGC_ADD)")
        self._validate(group_id, gtype, buckets, replacing=True)
        old = self.groups[group_id]
        entry = GroupEntry(group_id, gtype, tuple(buckets), old.installed_at)
        self.groups[group_id] = entry
        return entry

    def delete(self, group_id: int) -> list[int]:
        """Delete one group or all (OFPG_ALL); the ids removed, for the caller to drop their flows.

        Deleting an unknown id is not an error (spec 6.5).
        """
        if group_id == ofp.OFPG_ALL:
            ids = sorted(self.groups)
            self.groups.clear()
            return ids
        if group_id not in self.groups:
            return []
        users = sorted(g for g, e in self.groups.items() if group_id in e.children() and g != group_id)
        if users:
            raise _gmf(ofp.OFPGMFC_CHAINED_GROUP, f"group {group_id} is used by group(s) {users}",
                       "delete or modify the groups that forward to it first")
        del self.groups[group_id]
        return [group_id]

    # -- execution -------------------------------------------------------------------

    def is_live(self, group_id: int, port_live: Callable[[int], bool], depth: int = 0) -> bool:
        """A group is live when some bucket is (FAST_FAILOVER) or it exists (others)."""
        g = self.groups.get(group_id)
        if g is None or depth > 32:
            return False
        if g.type != ofp.OFPGT_FF:
            return True
        return any(self.bucket_live(b, port_live, depth) for b in g.buckets)

    def bucket_live(self, b: Bucket, port_live: Callable[[int], bool], depth: int = 0) -> bool:
        if b.watch_port != ofp.OFPP_ANY and not port_live(b.watch_port):
            return False
        if b.watch_group != ofp.OFPG_ANY and not self.is_live(b.watch_group, port_live, depth + 1):
            return False
        return True

    def candidates(self, g: GroupEntry, port_live: Callable[[int], bool]) -> list[int]:
        """Indices of the buckets that may run, whatever the packet: ALL every bucket,
        INDIRECT its one, FAST_FAILOVER the first live one; SELECT every live bucket of
        positive weight (which of them runs is the packet's hash, see :meth:`choose`)."""
        if g.type == ofp.OFPGT_ALL:
            return list(range(len(g.buckets)))
        if g.type == ofp.OFPGT_INDIRECT:
            return [0] if g.buckets else []
        if g.type == ofp.OFPGT_FF:
            for i, b in enumerate(g.buckets):
                if self.bucket_live(b, port_live):
                    return [i]
            return []
        return [i for i, b in enumerate(g.buckets) if b.weight > 0 and self.bucket_live(b, port_live)]

    def choose(self, g: GroupEntry, fields: Mapping[str, int], port_live: Callable[[int], bool]) -> list[int]:
        """Indices of the buckets that run for a packet with these OXM fields."""
        cands = self.candidates(g, port_live)
        if g.type != ofp.OFPGT_SELECT:
            return cands
        live = [(i, g.buckets[i].weight) for i in cands]
        total = sum(w for _, w in live)
        if not total:
            return []
        point = self.select_hash(fields) % total
        for i, w in live:
            if point < w:
                return [i]
            point -= w
        raise AssertionError("unreachable: point < total")

    def select_hash(self, fields: Mapping[str, int]) -> int:
        data = b"".join(fields.get(name, 0).to_bytes(16, "big") for name in _HASH_FIELDS)
        return int.from_bytes(hashlib.blake2b(data, digest_size=8, key=self._key).digest(), "big")


__all__ = ["Bucket", "GROUP_TYPES", "GroupEntry", "GroupTable"]
