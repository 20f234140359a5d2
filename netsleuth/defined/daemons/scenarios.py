"""The daemon scenarios by name: what network, which messages a group holds, what to observe.

``med``  the DEFINED paper's BGP MED case: r3 learns p1, p2, p3 over iBGP; the best path depends on
         the order of the three UPDATEs unless deterministic MED is on.
``rip``  RIP on r1 - r2 - r3 on the virtual clock; r2 crashes and r1 withdraws r3's stub prefix
         after RIP's own 180-second timeout.
"""

from __future__ import annotations

from dataclasses import dataclass

from netsleuth.defined.daemons.spec import DaemonNet, med_net, rip_net
from netsleuth.errors import NetsleuthError

NAMES = ("med", "rip", "ospf")   # ospf: recorded link events on a map (replay.py), not a stepped scenario


class DaemonScenarioError(NetsleuthError):
    pass


@dataclass(frozen=True)
class DaemonScenario:
    name: str
    net: DaemonNet
    observer: str            # the router whose table decides the outcome
    prefix: str              # the prefix whose best path is the outcome
    expect: int | None       # how many messages group 0 holds (None: close it on quiet)


def scenario(name: str, deterministic_med: bool = False) -> DaemonScenario:
    if name == "med":
        net = med_net(deterministic_med)
        return DaemonScenario("med", net, net.params["observer"], net.params["prefix"], 3)
    if name == "rip":
        net = rip_net()
        return DaemonScenario("rip", net, net.params["observer"], net.params["prefix"], None)
    raise DaemonScenarioError(f"unknown daemon scenario {name!r}", "use med or rip (ospf runs with `defined run`)")
