"""The node API: what control-plane software written for DEFINED sees.

A node reacts to four kinds of events and acts only through the ``ctx``
handle the substrate passes in. It never reads a clock, never draws from a
global random generator and never touches sockets: that is what lets the
same node code run in arrival order (plain), under rollback (RB), in
lockstep (LS) or as an OS process over TCP, and what makes its state a
plain picklable object the substrate can checkpoint and restore.

Immediate causality is implicit: every message a handler sends is a causal
child of the event being handled (the paper's instrumented "extra
parameter", done once by the substrate instead of in every send call).
"""

from __future__ import annotations

from typing import Any, Protocol


class Context(Protocol):
    """The substrate handle passed to every handler."""

    node: str

    @property
    def now(self) -> float:
        """Virtual time in seconds (the group times the beacon interval under DEFINED)."""

    @property
    def neighbors(self) -> list[str]:
        """Neighbours whose link this node believes is up, sorted."""

    def send(self, dst: str, payload: Any) -> None:
        """Send a JSON-shaped payload to a neighbour."""

    def set_timer(self, name: str, seconds: float, data: Any = None) -> None:
        """(Re)arm the named timer; it replaces any pending timer of that name."""

    def cancel_timer(self, name: str) -> None:
        """Cancel the named timer if pending."""

    def random(self) -> float:
        """A float in [0, 1): seeded per node under DEFINED, per run in plain mode."""

    def link_cost(self, peer: str) -> int:
        """Configured cost of the link to ``peer`` (its mean delay in microseconds)."""


class Node:
    """Base class for control-plane software. Subclasses keep all state in attributes.

    Attributes must be picklable: a checkpoint is the pickled node.
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def on_start(self, ctx: Context) -> None:
        """Called once at virtual time 0."""

    def on_message(self, ctx: Context, src: str, payload: Any) -> None:
        """A message from neighbour ``src``."""

    def on_timer(self, ctx: Context, name: str, data: Any) -> None:
        """A timer set with ``ctx.set_timer`` fired."""

    def on_external(self, ctx: Context, event: dict) -> None:
        """An external event: a link failure/recovery, an external route announcement, a crash."""

    def state(self) -> dict:
        """JSON-shaped view of the node's state for printing and predicates."""
        return {k: v for k, v in sorted(vars(self).items()) if not k.startswith("_")}

    def routes(self) -> dict:
        """The node's routing table, JSON-shaped (compared across runs)."""
        return {}
