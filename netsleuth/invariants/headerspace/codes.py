"""Fast codes: what an OpenFlow 1.0 action list does to headers arriving on a port, in one int.

A port number when the list outputs them there unchanged, else one of the ``F_*`` codes
(punted, dropped by a drop rule, going nowhere, anything more complex).  What a list does
depends only on the list, the in_port and the switch's port state (each port's number,
link and config: down and NO_FWD ports forward nothing), so the answers are shared by every
switch, by action-list id and a small id per port state (the switches of a fat tree all
ask the same few questions).  :mod:`~netsleuth.invariants.headerspace.compiled` builds on it.
"""

from __future__ import annotations

from netsleuth.invariants.forwarding import is_drop_rule
from netsleuth.invariants.headerspace.rewrite import Rewrite, rewrite_for
from netsleuth.model.actions import Enqueue, Output
from netsleuth.model.flowtable import actions_of
from netsleuth.model.ofdp import ofp
from netsleuth.model.switch import Switch, forward

CONTROLLER = ofp.OFPP_CONTROLLER
OFPP_MAX = ofp.OFPP_MAX

# Emission kinds.
PORT, CTRL, SPECIAL = 0, 1, 2
# Fast codes (values of PortIndex.fast): >= 0 a plain output port, else:
F_PUNT = -1      # only CONTROLLER emissions
F_NOTHING = -2   # outputs that all go nowhere (a blackhole)
F_COMPLEX = -3   # several emissions, rewrites before an output, or a special port
F_DROP = -5      # no output action at all: a drop rule, the controller's choice (not a blackhole)

Emission = tuple[int, int, tuple[Rewrite, ...]]  # (kind, port, rewrites applied before it)


# Fast codes by (action-list id, in_port, port state id): what an action list does depends
# only on them (see port_state), so compiled switches share the answers.
_PORT_STATES: dict[tuple, int] = {}
_CODES: dict[tuple[int, int, int], int] = {}
_SHARED_MAX = 1 << 16
# Bumped whenever the two maps above are cleared: a port state id kept by a caller (a compiled
# switch, an incremental check's switch) is good while the generation it was read in lasts,
# so a hot path skips hashing the whole port state tuple for every question.
_PS_GEN = [0]


def port_state_id(state: tuple) -> int:
    """The small id of a port state (:func:`port_state`) in generation ``_PS_GEN[0]``."""
    ps = _PORT_STATES.get(state)
    if ps is None:
        if len(_PORT_STATES) >= _SHARED_MAX:
            _PORT_STATES.clear()
            _CODES.clear()
            _PS_GEN[0] += 1
        ps = _PORT_STATES[state] = len(_PORT_STATES)
    return ps


def shared_code(aid: int, p: int, ps: int, ports: dict) -> int:
    """The fast code of the action list with id ``aid`` for a packet arriving on ``p`` at a
    switch whose ports are ``ports`` and whose port state id (this generation's) is ``ps``."""
    key = (aid, p, ps)
    c = _CODES.get(key)
    if c is None:
        if len(_CODES) >= _SHARED_MAX:
            _CODES.clear()
        acts = actions_of(aid)
        c = _CODES[key] = _code(_emissions(acts, p, ports), acts)
    return c


def _code(ems: tuple[Emission, ...], acts: tuple) -> int:
    if not ems:
        return F_DROP if is_drop_rule(acts) else F_NOTHING
    if len(ems) == 1:
        kind, port, rws = ems[0]
        if kind == PORT and not rws:
            return port
        if kind == CTRL:
            return F_PUNT
        return F_COMPLEX
    if all(k == CTRL for k, _p, _r in ems):
        return F_PUNT
    return F_COMPLEX


def _emissions(actions: tuple, in_port: int, ports: dict) -> tuple[Emission, ...]:
    """What an action list does to a packet arriving on ``in_port``: (kind, port, rewrites)."""
    out: list[Emission] = []
    chain: list[Rewrite] = []
    for a in actions:
        if isinstance(a, (Output, Enqueue)):
            # no packet: only the ports are wanted
            for port, _pkt, _len in forward((a,), None, in_port, ports):  # type: ignore[arg-type]
                if port == CONTROLLER:
                    kind = CTRL
                elif port > OFPP_MAX:
                    kind = SPECIAL
                else:
                    kind = PORT
                out.append((kind, port, tuple(chain)))
        else:
            chain.append(rewrite_for(a))
    return tuple(out)


def port_state(switch: Switch) -> tuple:
    """What a compiled switch depends on besides its table: each port's number, link and config."""
    return tuple((p.port_no, p.link_up, p.config) for p in switch.ports.values())
