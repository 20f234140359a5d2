"""What a switch's answer to a table-changing message says: whether it applied it, and what changed.

The World tells its table observers (a check per FLOW_MOD, the incremental
header-space engines) of every FLOW_MOD or GROUP_MOD a switch applied; one the
switch refused with an ERROR changed nothing and is not reported.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from netsleuth.model import switch as sw
from netsleuth.model.match import Match
from netsleuth.openflow.codec import msg_type_name
from netsleuth.world.events import FlowModApplied

# The messages that change a switch's forwarding state (meters are left out: the analyses ignore them).
TABLE_CHANGING = frozenset({"FLOW_MOD", "GROUP_MOD"})
_FLOW_COMMANDS = ("ADD", "MODIFY", "MODIFY_STRICT", "DELETE", "DELETE_STRICT")
_GROUP_COMMANDS = ("ADD", "MODIFY", "DELETE")
_BAD_REQUEST, _BUFFER_UNKNOWN = 1, 8   # the same numbers in OpenFlow 1.0 and 1.3


def rejected(msg: Any, outputs: Iterable[Any]) -> bool:
    """Whether the switch answered ``msg`` with an ERROR that means it did not apply it.

    An unknown buffer id is the exception: the entry was installed, only the buffered
    packet could not be released."""
    for out in outputs:
        reply = getattr(out, "msg", None)
        if reply is None or getattr(reply, "xid", None) != msg.xid or msg_type_name(reply) != "ERROR":
            continue
        if (reply.type, reply.code) != (_BAD_REQUEST, _BUFFER_UNKNOWN):
            return True
    return False


def flow_mod_applied(switch: sw.Switch, kind: str, msg: Any, seq: int | None) -> FlowModApplied:
    names = _FLOW_COMMANDS if kind == "FLOW_MOD" else _GROUP_COMMANDS
    cmd = msg.command
    command = names[cmd] if isinstance(cmd, int) and 0 <= cmd < len(names) else str(cmd)
    version = switch.version
    match = Match.from_ofp(msg.match) if kind == "FLOW_MOD" and version == 1 else None
    return FlowModApplied(switch=switch.name, seq=seq, kind=kind, command=command,
                          priority=msg.priority if kind == "FLOW_MOD" else None, match=match,
                          version=version, msg=msg)


__all__ = ["TABLE_CHANGING", "flow_mod_applied", "rejected"]
