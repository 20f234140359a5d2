"""The OpenFlow 1.0 action interpreter: an action list and a packet -> the outputs, in order.

A pure function of its inputs, apart from the switch: the switch model runs
it for every packet, the model checker and header-space analysis' examples
replay it, and the 1.0 port flags (NO_FLOOD, NO_FWD) are applied here once.
"""

from __future__ import annotations

from typing import Any

from netsleuth.model.actions import Enqueue, Output, apply_action
from netsleuth.model.ofdp import ofp
from netsleuth.model.packet import Packet
from netsleuth.model.switch_io import Port


def forward(actions: tuple[Any, ...], packet: Packet, in_port: int,
            ports: dict[int, Port]) -> list[tuple[int, Packet, int]]:
    """Apply an OpenFlow 1.0 action list: the (port, packet, max_len) outputs, in order.

    Set-field actions change the packet for the outputs that follow them.
    FLOOD and ALL expand to concrete ports (never the in port; FLOOD also
    skips ports with OFPPC_NO_FLOOD); outputs to unusable ports and to ports
    with OFPPC_NO_FWD ("drop packets forwarded to port") are dropped.
    Special ports CONTROLLER and TABLE are returned as such.
    """
    out: list[tuple[int, Packet, int]] = []
    for action in actions:
        if isinstance(action, (Output, Enqueue)):
            port = action.port
            max_len = getattr(action, "max_len", 0)
            if port == ofp.OFPP_IN_PORT:
                p = ports.get(in_port)
                if p is not None and p.usable and not (p.config & ofp.OFPPC_NO_FWD):
                    out.append((in_port, packet, max_len))
            elif port in (ofp.OFPP_FLOOD, ofp.OFPP_ALL):
                for p in ports.values():
                    if p.port_no == in_port or not p.usable or p.config & ofp.OFPPC_NO_FWD:
                        continue
                    if port == ofp.OFPP_FLOOD and p.config & ofp.OFPPC_NO_FLOOD:
                        continue
                    out.append((p.port_no, packet, max_len))
            elif port in (ofp.OFPP_CONTROLLER, ofp.OFPP_TABLE):
                out.append((port, packet, max_len))
            elif port <= ofp.OFPP_MAX and port != in_port:  # back out the in port only via IN_PORT
                p = ports.get(port)
                if p is not None and p.usable and not (p.config & ofp.OFPPC_NO_FWD):
                    out.append((port, packet, max_len))
        else:
            packet = apply_action(packet, action)
    return out


__all__ = ["forward"]
