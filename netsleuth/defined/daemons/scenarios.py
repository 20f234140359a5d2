"""The daemon scenarios by name: what network, which messages a group holds, what to observe."""

from __future__ import annotations

from dataclasses import dataclass

from netsleuth.defined.daemons.spec import DaemonNet, med_net
from netsleuth.errors import NetsleuthError

NAMES = ("med",)


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
    raise DaemonScenarioError(f"unknown daemon scenario {name!r}", f"use one of: {', '.join(NAMES)}")
