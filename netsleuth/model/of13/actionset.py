"""The action set a packet carries through the pipeline, and its execution order.

Spec 5.10: the set holds at most one action of each type (a set_field per
field), write-actions replaces an action of the same type, clear-actions
empties it, and when the pipeline ends the actions run in a fixed order
whatever order they were written in: copy TTL inwards, pop, push-MPLS,
push-PBB, push-VLAN, copy TTL outwards, decrement TTL, set, qos, group,
output -- and output only when there is no group.  Group buckets are action
sets too (spec 5.6.1), so the same ordering runs them.

Where the spec lists a category, not an order within it, Open vSwitch's
order is used (pop_vlan before pop_mpls; dec_ttl before dec_mpls_ttl);
set_field actions touch distinct fields and run in OXM field order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from netsleuth.model.of13.actions import (Action, CopyTtlIn, CopyTtlOut, DecMplsTtl, DecNwTtl, Group, Output,
                                          PopMpls, PopPbb, PopVlan, PushMpls, PushPbb, PushVlan, SetField,
                                          SetMplsTtl, SetNwTtl, SetQueue)
from netsleuth.model.of13.fieldspec import BY_NAME

_ORDER: dict[type, int] = {
    CopyTtlIn: 0, PopVlan: 1, PopMpls: 2, PopPbb: 3, PushMpls: 4, PushPbb: 5, PushVlan: 6, CopyTtlOut: 7,
    DecNwTtl: 8, DecMplsTtl: 9, SetField: 10, SetMplsTtl: 11, SetNwTtl: 12, SetQueue: 13, Group: 14, Output: 15,
}

Key = tuple[int, int]


def _key(action: Action) -> Key:
    if type(action) is SetField:
        return (_ORDER[SetField], BY_NAME[action.field].code)
    return (_ORDER[type(action)], 0)


@dataclass(frozen=True, slots=True)
class ActionSet:
    """An immutable action set; ``write`` and ``clear`` return new sets."""

    actions: tuple[tuple[Key, Action], ...] = ()

    @classmethod
    def of(cls, actions: Iterable[Action]) -> ActionSet:
        return cls().write(actions)

    def write(self, actions: Iterable[Action]) -> ActionSet:
        """Merge ``actions`` in: each replaces the action of its type already in the set."""
        merged = dict(self.actions)
        for a in actions:
            merged[_key(a)] = a
        return ActionSet(tuple(sorted(merged.items(), key=lambda kv: kv[0])))

    def clear(self) -> ActionSet:
        return ActionSet()

    def ordered(self) -> list[Action]:
        """The actions in execution order; an output is dropped when a group is present."""
        out = [a for _, a in self.actions]
        if any(type(a) is Group for a in out):
            out = [a for a in out if type(a) is not Output]
        return out

    def __len__(self) -> int:
        return len(self.actions)

    def __bool__(self) -> bool:
        return bool(self.actions)
