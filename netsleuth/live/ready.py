"""When a warm-up may end early: conditions a controller's start-up is over by.

A fixed warm-up (``--warmup 40``) must be sized for the slowest machine, so
it mostly waits for nothing. A ready condition watches the trace events as
they are recorded and says when the thing the warm-up waits for has
happened: the spanning tree converged, the controller went quiet. The
session then ends the warm-up at once; the warm-up's seconds stay its upper
bound, so a condition that never holds costs no more than before.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable
from typing import Any, Protocol

PORT_NO_FWD = 0x20  # OFPPC_NO_FWD, the same bit in OpenFlow 1.0 and 1.3


class ReadyCondition(Protocol):
    """Sees every recorded event (``observe``); ``ready`` says whether the warm-up may end."""

    def observe(self, event: Any) -> None: ...
    def ready(self) -> bool: ...


def _to_switch(event: Any, types: Collection[str]) -> dict | None:
    msg = getattr(event, "msg", None)
    if getattr(event, "kind", None) == "of_to_switch" and isinstance(msg, dict) and msg.get("type") in types:
        return msg
    return None


class ControllerQuiet:
    """Ready once the controllers sent none of ``types`` for ``settle`` seconds (and sent at least one).

    Why "at least one": right after the handshakes nothing has been sent yet,
    which is silence of the wrong kind. ``after`` names a message that opens
    the phase waited for, silence before it not counting: Faucet brings its
    stack up after its first LLDP probes (PACKET_OUT), then installs the
    stack's flows, so ``ControllerQuiet(3.0, ("FLOW_MOD",), after="PACKET_OUT")``
    holds once those flows are in.
    """

    def __init__(self, settle: float = 2.0, types: Iterable[str] = ("FLOW_MOD", "PACKET_OUT"),
                 after: str | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.settle = settle
        self.types = frozenset(types)
        self.clock = clock
        self.last: float | None = None
        self.seen = 0
        self.opened = after is None
        self.after = after

    def observe(self, event: Any) -> None:
        if not self.opened:
            if self.after is None or _to_switch(event, (self.after,)) is None:
                return
            self.opened = True
            self.last = self.clock()
        if _to_switch(event, self.types) is not None:
            self.seen += 1
            self.last = self.clock()

    def ready(self) -> bool:
        return self.last is not None and self.clock() - self.last >= self.settle


class SpanningTreeConverged:
    """Ready once every port a spanning tree (os-ken's stplib) configured is forwarding or blocked.

    stplib moves each port listen -> learn -> forward (or to blocked) with a
    PORT_MOD each time; listening and learning ports lack NO_FWD and are not
    yet forwarding (config 0). Converged: at least ``min_ports`` ports seen,
    each one's last PORT_MOD either config 0 or with NO_FWD set.
    """

    def __init__(self, min_ports: int = 1) -> None:
        self.min_ports = min_ports
        self.config: dict[tuple[int, int], int] = {}

    def observe(self, event: Any) -> None:
        msg = _to_switch(event, ("PORT_MOD",))
        if msg is None:
            return
        body = next(iter(msg["body"].values()))
        self.config[(event.dpid, int(body["port_no"]))] = int(body["config"])

    def ready(self) -> bool:
        return len(self.config) >= self.min_ports and all(
            c == 0 or c & PORT_NO_FWD for c in self.config.values())




def faucet_stack_up(settle: float = 3.0) -> ControllerQuiet:
    """Faucet's stack is up: its LLDP probes went out and the stack's flows followed, then quiet."""
    return ControllerQuiet(settle, ("FLOW_MOD",), after="PACKET_OUT")


__all__ = ["ControllerQuiet", "ReadyCondition", "SpanningTreeConverged", "faucet_stack_up"]
