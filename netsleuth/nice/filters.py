"""NICE's search strategies as filters over the enabled transitions (section 5 of the paper; the
search that applies them is explore.py): PKT-SEQ bounds each host's outstanding packets,
NO-DELAY makes every switch<->controller exchange atomic, UNUSUAL delays control-plane work
while the data plane can move, FLOW-IR fixes one order between the sends of different flows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from netsleuth.nice.names import STRATEGIES
from netsleuth.nice.state import SystemState
from netsleuth.nice.system import System
from netsleuth.nice.transitions import CTL, OF, OUT, PKT, RECV, SEND, Transition


def _filter_pkt_seq(system: System, st: SystemState, en: list) -> list:
    return [t for t in en if not (t[0] == SEND and st.hosts[t[1]].credits == 0)]


def _filter_no_delay(system: System, st: SystemState, en: list) -> list:
    ofs = [t for t in en if t[0] == OF]
    if ofs:
        return ofs[:1]
    ctl = [t for t in en if t[0] == CTL]
    return ctl or en


_DATAPLANE = (PKT, RECV, OUT)


def _filter_unusual(system: System, st: SystemState, en: list) -> list:
    """Control-plane work happens as late as possible, in unusual order.

    As NICE's implementation (HeuristicConstCtrlDelay) does, the controller's
    handling of switch messages and the switches' processing of controller
    commands are delayed while data-plane transitions (a switch or a host
    taking a packet, a host sending a reply) can run -- packets race ahead
    of rule installs.  NICE delayed them by a constant number of transitions
    (history, not state); here the delay is maximal, which keeps the filter a
    function of the state.  When a handler addressed several switches, their
    commands are applied in the reverse of the order it issued them (the
    paper's example: switch 3 installs its rule first, then 2, then 1).
    """
    if any(t[0] in _DATAPLANE for t in en):
        return [t for t in en if t[0] not in (CTL, OF)]
    ofs = [t for t in en if t[0] == OF]
    if len(ofs) < 2:
        return en
    order = st.extra[1]
    enabled_of = {t[1] for t in ofs}
    chosen = None
    for j in reversed(order):            # the switch the handler addressed last goes first
        if j in enabled_of:
            chosen = j
            break
    if chosen is None:
        return en
    return [t for t in en if t[0] != OF or t[1] == chosen]


def _filter_flow_ir(system: System, st: SystemState, en: list) -> list:
    sends = [t for t in en if t[0] in (SEND, OUT)]
    if len(sends) < 2:
        return en
    app = st.app
    first = _frame_of(system, st, sends[0])
    keep = {sends[0]}
    for t in sends[1:]:
        if app.is_same_flow(first, _frame_of(system, st, t)):
            keep.add(t)
    return [t for t in en if t[0] not in (SEND, OUT) or t in keep]


def _frame_of(system: System, st: SystemState, t: Transition) -> Any:
    hs = st.hosts[t[1]]
    if t[0] == OUT:
        return hs.outbox[0]
    from netsleuth.model.packet import icmp_echo
    h = hs.host
    dst = hs.to_send[0]
    return icmp_echo(h.mac, system.mac_of[dst], h.ip, system.ip_of[dst], t[1] + 1, hs.next_seq)


def parse_strategy(spec: str) -> list[str]:
    """``"pkt-seq+no-delay"`` -> ["pkt-seq", "no-delay"]: strategies compose as filters, in order."""
    parts = [p.strip() for p in spec.replace(",", "+").split("+") if p.strip()]
    bad = [p for p in parts if p not in STRATEGIES]
    if bad or not parts:
        raise ValueError(f"unknown strategy {bad[0] if bad else spec!r}")
    return parts


FILTERS: dict[str, Callable | None] = {
    "full": None, "random": None, "pkt-seq": _filter_pkt_seq, "no-delay": _filter_no_delay,
    "unusual": _filter_unusual, "flow-ir": _filter_flow_ir,
}
