"""OpenFlow 1.0 test values shared by the flow table and match tests.

``pkt`` is the 12-tuple of header fields a 1.0 match reads (``Packet.match_fields``),
untagged and zero except what is given; ``out`` the action tuple of one output.
"""

from __future__ import annotations

from netsleuth.model.actions import Output
from netsleuth.model.match import FIELDS


def pkt(**kw: int) -> tuple[int, ...]:
    """A 12-tuple in FIELDS order: zeros except the given fields, dl_vlan 0xffff (untagged)."""
    base = dict.fromkeys(FIELDS, 0)
    base["dl_vlan"] = 0xFFFF
    base.update(kw)
    return tuple(base[f] for f in FIELDS)


def out(port: int) -> tuple[Output]:
    """A rule's actions: output to ``port``."""
    return (Output(port),)
