"""The model checker's transitions: every nondeterministic choice a model state offers.

The model checker's counterpart of ``world/events.py`` (the live World's
pending events).  A transition is a small tuple ``(kind, *args)`` whose kind
is a :class:`TransitionKind`: the tuple names the *same* choice in every state (host
1's next send, switch 0's head controller message), which is what state
matching, sleep sets, DPOR's persistent sets and counterexample replay rely
on.  Tuples rather than objects because the search hashes and compares
them millions of times; :class:`TransitionKind` is a ``StrEnum``, so a kind equals
and hashes as its plain name and a transition read back from JSON is the
same transition.

Kinds and their arguments (host and switch arguments are indices in the
model's fixed order; channels are FIFO, so only heads are enabled):

======== ============================== =====================================================
kind     arguments                      what fires
======== ============================== =====================================================
send     host                           the host starts its next ping
out      host                           the host sends its next queued reply
recv     host                           the host takes the head frame of its wire
move     host                           the host moves to its next location (gratuitous ARP)
sendpkt  host, Packet                   the host sends a scripted or discovered frame
pkt      switch                         the switch takes the head packet of *every* input port
                                        at once (NICE's process_pkt)
of       switch                         the switch applies the head controller message
                                        (NICE's process_of)
ctl      switch                         the controller runs the handler for the head message
                                        from that switch
timer    name                           the app's timer ``name`` fires
stats    switch, stats                  the controller handles a discovered port-stats reply
expire   switch, wildcards, values,     a rule times out (time does not flow in the model, so
         priority                       expiry is a nondeterministic event)
drop     node, port                     fault: the head packet arriving at node:port is lost
dup      node, port                     fault: it is duplicated
linkdown switch, port                   fault: a switch-to-switch link fails
======== ============================== =====================================================
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from netsleuth.model.packet import Packet


class TransitionKind(StrEnum):
    """What a transition does (see the module docstring for its arguments)."""

    SEND = "send"
    OUT = "out"
    RECV = "recv"
    MOVE = "move"
    SENDPKT = "sendpkt"
    PKT = "pkt"
    OF = "of"
    CTL = "ctl"
    TIMER = "timer"
    STATS = "stats"
    EXPIRE = "expire"
    DROP = "drop"
    DUP = "dup"
    LINKDOWN = "linkdown"


# Each kind as a module constant: attribute access on an Enum class is a descriptor call, and the
# search builds and compares transitions once per state.
_K = TransitionKind
SEND, OUT, RECV, MOVE, SENDPKT = _K.SEND, _K.OUT, _K.RECV, _K.MOVE, _K.SENDPKT
PKT, OF, CTL, TIMER, STATS = _K.PKT, _K.OF, _K.CTL, _K.TIMER, _K.STATS
EXPIRE, DROP, DUP, LINKDOWN = _K.EXPIRE, _K.DROP, _K.DUP, _K.LINKDOWN

#: ``(kind, *args)``; see the module docstring.
Transition = tuple

#: Kinds whose first argument is a host index.
HOST_KINDS = frozenset({SEND, OUT, RECV, MOVE, SENDPKT})
#: Optional faults (only enabled when the configuration asks for them).
FAULT_KINDS = frozenset({EXPIRE, DROP, DUP, LINKDOWN})


def transition_to_json(t: Transition) -> list[Any]:
    """``[kind, *args]`` with packets as ``{"packet": ...}`` and tuples as lists."""
    return [{"packet": x.to_json()} if isinstance(x, Packet) else _listify(x) for x in t]


def transition_from_json(v: list[Any]) -> Transition:
    """The transition :func:`transition_to_json` wrote."""
    args = tuple(Packet.from_json(x["packet"]) if isinstance(x, dict) and "packet" in x else _tuplify(x)
                 for x in v[1:])
    try:
        kind: Any = TransitionKind(v[0])
    except ValueError:  # not a kind this model has: kept as is, so a replay reports it as not enabled
        kind = v[0]
    return (kind,) + args


def _listify(x: Any) -> Any:
    return [_listify(y) for y in x] if isinstance(x, tuple) else x


def _tuplify(x: Any) -> Any:
    return tuple(_tuplify(y) for y in x) if isinstance(x, list) else x


__all__ = ["CTL", "DROP", "DUP", "EXPIRE", "FAULT_KINDS", "HOST_KINDS", "LINKDOWN", "MOVE", "OF", "OUT", "PKT",
           "RECV", "SEND", "SENDPKT", "STATS", "TIMER", "Transition", "TransitionKind", "transition_from_json",
           "transition_to_json"]
