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
from dataclasses import dataclass
from typing import Any, Protocol

from netsleuth.errors import NetsleuthError

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



class TablesQuiet:
    """Ready once no controller changed a table or port for ``settle`` seconds (counting from the start).

    Unlike :class:`ControllerQuiet` this holds for a controller that sends
    nothing at all after the handshakes (a purely reactive app), and it
    ignores PACKET_OUTs: the periodic probes of link discovery, spanning tree
    and Faucet's stack never stop, and during a warm-up no host sends, so a
    PACKET_OUT there is always such a probe.
    """

    TYPES = ("FLOW_MOD", "GROUP_MOD", "METER_MOD", "PORT_MOD")

    def __init__(self, settle: float = 1.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.settle = settle
        self.clock = clock
        self.last = clock()

    def observe(self, event: Any) -> None:
        if _to_switch(event, self.TYPES) is not None:
            self.last = self.clock()

    def ready(self) -> bool:
        return self.clock() - self.last >= self.settle


def _is_lldp(fp: Any) -> bool:
    return isinstance(fp, (list, tuple)) and any(
        isinstance(part, (list, tuple)) and tuple(part) == ("LLDP",) for part in fp)


class LinksDiscovered:
    """Ready once LLDP probes crossed every switch-to-switch link both ways, if the controller probes.

    Link discovery (POX's ``openflow.discovery``, os-ken's ``--observe-links``)
    learns the topology from LLDP it sends out of each port and gets back as a
    PACKET_IN at the far end; until it has, a path-computing app (POX's
    ``l2_multi``) knows no path and drops the first pings. ``ports`` are the
    ``(dpid, port)`` ends of the switch-to-switch links. A controller that
    sends no LLDP does no discovery, and the condition holds at once.

    A probe's PACKET_IN counts only once the controller has probed from the
    receiving switch itself: a controller may still be setting that switch up
    when the first probes of its neighbours arrive there, and drops them
    unseen (POX drops every PACKET_IN before its handshake barrier returns),
    so that end is learned only a discovery cycle later. Probing from a
    switch is what shows that the controller has taken it up.
    """

    def __init__(self, ports: Iterable[tuple[int, int]]) -> None:
        self.expected = frozenset(ports)
        self.seen: set[tuple[int, int]] = set()
        self.probed: set[int] = set()

    def observe(self, event: Any) -> None:
        if not _is_lldp(getattr(event, "fp", None)):
            return
        if _to_switch(event, ("PACKET_OUT",)) is not None:
            self.probed.add(int(event.dpid))
        elif getattr(event, "kind", None) == "of_to_controller" and int(event.dpid) in self.probed:
            in_port = event.fp[1]
            if isinstance(in_port, int):
                self.seen.add((int(event.dpid), in_port))

    def ready(self) -> bool:
        return not self.probed or self.expected <= self.seen


class AllReady:
    """Ready once every one of ``parts`` is."""

    def __init__(self, parts: Iterable[ReadyCondition]) -> None:
        self.parts = tuple(parts)

    def observe(self, event: Any) -> None:
        for part in self.parts:
            part.observe(event)

    def ready(self) -> bool:
        return all(part.ready() for part in self.parts)


def faucet_stack_up(settle: float = 3.0) -> ControllerQuiet:
    """Faucet's stack is up: its LLDP probes went out and the stack's flows followed, then quiet."""
    return ControllerQuiet(settle, ("FLOW_MOD",), after="PACKET_OUT")


class WarmupError(NetsleuthError):
    """A warm-up that is neither a duration nor ``auto``."""


#: The bound of ``--warmup auto``: long enough for a spanning tree's two forward delays
#: (2 x 15 s in the standard's defaults) with room for a slow machine.
AUTO_BOUND = 60.0


@dataclass(frozen=True)
class Warmup:
    """How long the warm-up after the handshakes may last, and whether it ends once the network is ready.

    ``auto`` ends it once the controllers have stopped changing tables, any
    link discovery they do has seen every link, any spanning tree they run has
    converged and any Faucet stack is up; ``seconds`` is then the upper bound.
    """

    seconds: float = 0.0
    auto: bool = False

    @classmethod
    def parse(cls, text: str) -> Warmup:
        """``SECONDS``, ``auto`` or ``auto:SECONDS`` (the bound)."""
        word, _, bound = str(text).strip().partition(":")
        if word == "auto":
            return cls(_duration(bound, text) if bound else AUTO_BOUND, True)
        return cls(_duration(text, text, allow_zero=True), False)

    @classmethod
    def of(cls, value: Warmup | float | str) -> Warmup:
        if isinstance(value, Warmup):
            return value
        if isinstance(value, str):
            return cls.parse(value)
        return cls(float(value), False)

    def __str__(self) -> str:
        if self.auto:
            return "auto" if self.seconds == AUTO_BOUND else f"auto:{self.seconds:g}"
        return f"{self.seconds:g}"


def _duration(text: str, whole: str, allow_zero: bool = False) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not (0 < value < float("inf") or (allow_zero and value == 0)):
        raise WarmupError(f"warm-up '{whole}' is neither a number of seconds nor auto",
                          "give --warmup SECONDS, auto, or auto:SECONDS (auto with an upper bound)")
    return value


def switch_link_ends(topo: Any) -> list[tuple[int, int]]:
    """The ``(dpid, port)`` ends of ``topo``'s switch-to-switch links, the ports link discovery probes."""
    return [(int(topo.switch(end).dpid), port) for link in topo.links
            for end, port in ((link.node1, link.port1), (link.node2, link.port2)) if topo.is_switch(end)
            and topo.is_switch(link.other(end)[0])]


def auto_ready(topo: Any, kinds: Collection[str], settle: float = 1.0) -> ReadyCondition:
    """The condition ``--warmup auto`` waits for on ``topo`` with controllers of ``kinds``."""
    parts: list[ReadyCondition] = [TablesQuiet(settle), LinksDiscovered(switch_link_ends(topo))]
    if {"osken", "ryu"} & set(kinds):  # stplib's learning state (NO_FLOOD) looks like POX's blocked port
        parts.append(_StpIfAny())
    if "faucet" in kinds and len(topo.switches) > 1:
        parts.append(faucet_stack_up())
    return AllReady(parts)


class _StpIfAny(SpanningTreeConverged):
    """A spanning tree's convergence, for a controller that runs one (no PORT_MOD: none to wait for)."""

    def ready(self) -> bool:
        return not self.config or super().ready()


__all__ = ["AUTO_BOUND", "AllReady", "ControllerQuiet", "LinksDiscovered", "ReadyCondition",
           "SpanningTreeConverged", "TablesQuiet", "Warmup", "WarmupError", "auto_ready", "faucet_stack_up",
           "switch_link_ends"]
