"""Where header-space analysis injects headers: host-facing ports with a live link.

Shared by the OpenFlow 1.0 engine (``headerspace.engine``) and the 1.3 engine
(``headerspace.of13.engine``), so both analyse the same ingress points and neither
imports the other at module level.
"""

from __future__ import annotations

from netsleuth.invariants.view import NetworkView

Port = tuple[str, int]


def ingress_points(view: NetworkView, which: str = "hosts") -> dict[Port, str | None]:
    """(switch, port) -> attached host, for host-facing ports with a live link on live
    switches; ``which="all"`` adds switch-facing ports with a live link (host None)."""
    out: dict[Port, str | None] = {}
    switches = view.switches
    for (n1, p1, n2, p2), up in view.link_up.items():
        if not up:
            continue
        for a, pa, b in ((n1, p1, n2), (n2, p2, n1)):
            if a in switches and view.is_switch_up(a):
                if b not in switches:
                    out[(a, pa)] = b
                elif which == "all":
                    out.setdefault((a, pa), None)
    return dict(sorted(out.items()))
