"""What firing a transition needs of the model: the System as the ``fire_*`` functions see it.

``system.py`` picks the function that fires a transition by its kind
(``fire_hosts.py``, ``fire_switches.py``, ``fire_controller.py``) and hands it
the System; the functions read its fixed wiring and settings and keep their
memo tables in it. They name that part here, as a Protocol, rather than the
System class itself, so the System can import them without an import
circle.
"""

from __future__ import annotations

from typing import Any, Protocol

from netsleuth.nice.effects import Effects
from netsleuth.nice.state import SystemState


class FiringSettings(Protocol):
    """The scenario settings a firing reads (``system.Config``)."""

    @property
    def reply(self) -> bool: ...          # hosts answer echo requests

    @property
    def track_issue_order(self) -> bool: ...  # keep the last handler's issue order (UNUSUAL)


class FiringSystem(Protocol):
    """The System's fixed wiring, its clock, its switches' and hosts' memo tables and its property callbacks."""

    @property
    def config(self) -> FiringSettings: ...

    # the topology, fixed for a search
    sw_names: list[str]
    sw_index: dict[str, int]
    dpid_of: list[int]
    index_of_dpid: dict[int, int]
    ip_of: dict[str, int]
    peer: dict[tuple[str, int], tuple[str, int]]      # switch<->switch wiring (host wiring is state)
    links: tuple[tuple[int, int, int, int], ...]      # (dpid, port, dpid, port), for the app's API
    _host_wire: dict[str, tuple[str, int]]
    _self_linked: frozenset[int]
    # what the properties and the app need recorded
    lineage: bool
    need_hops: bool
    uses_stats: bool
    of13: bool                                        # the switches speak OpenFlow 1.3, not 1.0
    sendpkt_reads_ctl: bool
    now: float
    _cb: dict[str, list[tuple[int, Any]]]
    # memoized steps, by key and by identity (system.py says why)
    memo: bool
    _of_memo: dict[tuple, tuple]
    _pkt_memo: dict[tuple, tuple]
    _ctl_memo: dict[tuple, tuple]
    _host_memo: dict[tuple, tuple]
    _of_seen: dict[tuple, tuple]
    _pkt_seen: dict[tuple, tuple]
    _ctl_seen: dict[tuple, tuple]
    _recv_seen: dict[tuple, tuple]

    def _props(self, st: SystemState, cbs: list, fx: Effects, *args: Any) -> None:
        """Run the property callbacks ``cbs`` on the child state ``st``: ``f(property state, context, *args)``."""


__all__ = ["FiringSettings", "FiringSystem"]
