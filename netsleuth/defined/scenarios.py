"""The case studies (section 4) and the overhead workload, as data.

A :class:`Scenario` is a network, a node factory, the external events with
the (simulated) times they happen at, a horizon and a bug predicate over the
final node states. Everything is rebuilt from (name, topo, variant, seed),
which is what a recorded run's header stores so LS can rebuild it.

``bgp-med``   Fig. 4: R1 learns p1 from AS 100 (MED 10, IGP 10); R2 learns p2
              from AS 100 (MED 5, IGP 30) and p3 from AS 200 (MED 20, IGP 20).
              The MED-correct best everywhere is p3; a router whose XORP-style
              pairwise choice saw p1 last picks p1 (the bug).
``rip-timer`` Fig. 5: R1 reaches N via primary R2 (metric 1) and, once R3
              attaches to N at t=7.1 s, via backup R3 (metric 2). R2 crashes
              at t=3.1 s; its last announcement (t=2.0 s) makes R1's route
              expire at about t=8.0 s, exactly when R3's periodic announcement
              arrives. Quagga-style refresh -> black hole through dead R2.
``ospf``      link-state flooding on ``--topo`` (default brite,30); a seeded
              series of link failures and recoveries (the paper's OSPF
              workload); bug = a routing table differing from shortest paths.
              Variant ``cold`` (default): every router floods its LSA at start;
              ``warm``: routers start with the converged database.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from netsleuth.defined.node import Node
from netsleuth.defined.protocols import bgp, linkstate, rip
from netsleuth.defined.sim import External
from netsleuth.defined.topologies import Net, make_net, parse_net
from netsleuth.errors import NetsleuthError


class DefinedScenarioError(NetsleuthError):
    """A DEFINED scenario cannot be built: unknown scenario, variant or topology for it."""


NAMES = ("bgp-med", "rip-timer", "ospf")
OSPF_VARIANTS = ("cold", "warm")
PREFIX = "203.0.113.0/24"


@dataclass
class Scenario:
    name: str
    net: Net
    factory: Callable[[str], Node]
    externals: list[External]
    horizon: int
    bug: Callable[[dict[str, dict]], bool]
    bug_words: str
    alt_ordering: str          # an LS ordering that shows the other outcome
    params: dict = field(default_factory=dict)


def _bgp(variant: str) -> Scenario:
    net = make_net("fig4", ["R1", "R2", "R3"], [("R1", "R2", 15000), ("R1", "R3", 20000), ("R2", "R3", 10000)])

    def path(pid: str, asn: int, med: int, igp: int) -> dict:
        return {"id": pid, "prefix": PREFIX, "as_path": [asn, 900], "med": med, "igp": igp}

    ext = [External(0.600, "R1", {"type": "announce", "path": path("p1", 100, 10, 10)}),
           External(0.620, "R2", {"type": "announce", "path": path("p2", 100, 5, 30)}),
           External(0.621, "R2", {"type": "announce", "path": path("p3", 200, 20, 20)})]

    def bug(states: dict[str, dict]) -> bool:
        return any(s["best"] != s["correct_best"] for s in states.values())

    return Scenario("bgp-med", net, lambda n: bgp.BGPSpeaker(n, variant), ext, horizon=8, bug=bug,
                    bug_words="a router's best path differs from the MED-correct choice (p3)",
                    alt_ordering="origin", params={"variant": variant})


def _rip(variant: str) -> Scenario:
    net = make_net("fig5", ["R1", "R2", "R3"], [("R1", "R2", 10000), ("R1", "R3", 10000)])
    attached = {"R2": {"N": 1}}
    ext = [External(3.1, "R2", {"type": "crash"}),
           External(7.1, "R3", {"type": "attach", "prefix": "N", "metric": 2})]

    def bug(states: dict[str, dict]) -> bool:
        r = states["R1"]["table"].get("N")
        return bool(states["R2"]["crashed"] and r is not None and r[1] == "R2")

    return Scenario("rip-timer", net, lambda n: rip.RIPRouter(n, variant, attached.get(n)), ext, horizon=40,
                    bug=bug, bug_words="R1 still routes N via crashed R2 (black hole)",
                    alt_ordering="reverse", params={"variant": variant})


def _ospf(topo: str, seed: int, variant: str, failures: int = 4) -> Scenario:
    net = parse_net(topo)
    rng = random.Random(seed)
    links = list(net.links)
    ext: list[External] = []
    t = 1.1
    for _ in range(failures):
        a, b, _us = links[rng.randrange(len(links))]
        ext.append(External(t, a, {"type": "link_down", "peer": b}))
        ext.append(External(t, b, {"type": "link_down", "peer": a}))
        ext.append(External(t + 1.0, a, {"type": "link_up", "peer": b}))
        ext.append(External(t + 1.0, b, {"type": "link_up", "peer": a}))
        t += 2.0
    horizon = int(t / 0.25) + 4

    def bug(states: dict[str, dict]) -> bool:
        return not linkstate.tables_match_spf(net, states)

    warm: dict[str, dict] = {}
    if variant == "warm":  # every router starts with the converged database: only the events flood
        for n, nbr_delays in net.delays().items():
            warm[n] = {"router": n, "seq": 1, "links": dict(sorted(nbr_delays.items()))}
    return Scenario("ospf", net, lambda n: linkstate.LinkStateRouter(n, warm), ext, horizon=horizon, bug=bug,
                    bug_words="a routing table differs from shortest paths on the final topology",
                    alt_ordering="reverse", params={"failures": failures, "variant": variant})


def build(name: str, topo: str | None = None, variant: str | None = None, seed: int = 0) -> Scenario:
    """Rebuild a scenario; bad names raise :class:`DefinedScenarioError` with the fix."""
    if name == "bgp-med":
        _fixed_topo(name, topo, "fig4")
        return _bgp(_variant(variant, bgp.VARIANTS))
    if name == "rip-timer":
        _fixed_topo(name, topo, "fig5")
        return _rip(_variant(variant, rip.VARIANTS))
    if name == "ospf":
        sc = _ospf(topo or "brite,30", seed, _variant(variant, OSPF_VARIANTS))
        sc.params["scenario_seed"] = seed
        return sc
    raise DefinedScenarioError(f"unknown scenario {name!r}", f"use one of: {', '.join(NAMES)}")


def _fixed_topo(name: str, topo: str | None, fig: str) -> None:
    if topo not in (None, fig):
        raise DefinedScenarioError(f"{name} runs on its own case-study topology ({fig}), not {topo!r}",
                            "drop --topo, or use --scenario ospf for topozoo/brite topologies")


def _variant(v: str | None, allowed: tuple[str, ...]) -> str:
    v = v or allowed[0]
    if v not in allowed:
        raise DefinedScenarioError(f"unknown variant {v!r}", f"use one of: {', '.join(allowed)}")
    return v
