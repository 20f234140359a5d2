"""One model-checking scenario per NICE bug IV..XIII (load balancer and traffic engineering).

A scenario is the network of its app, the concrete frames each host sends
(a script, see ``scripted.py``: NICE's concolic engine would discover them;
here they are given), the properties to check, the app variant containing
the bug and the fixed variant that must pass the same search.  The search
bounds are the model's own: scripts are finite and the apps' timers fire a
bounded number of times, so every scenario's state space is finite and the
fixed variants are checked *completely*.

:func:`build_system` makes the :class:`System` (with the scripted sends
attached); :func:`run` searches it.  ``netsleuth check APP`` runs the
scenario of the variant it names (:func:`scenario_for`), and its
counterexamples carry the scripts in their header so a replay rebuilds them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from netsleuth.model.packet import ETH_IPV4, PROTO_TCP, PROTO_UDP, TCP, TCP_ACK, UDP, IPv4, Packet, arp_request, tcp_syn
from netsleuth.model.topology import Topology
from netsleuth.nice.apps import energy_te as te
from netsleuth.nice.apps import loadbalancer as lb
from netsleuth.nice.errors import ScenarioError
from netsleuth.nice.explore import Explorer, SearchOptions, SearchResult
from netsleuth.nice.filters import parse_strategy
from netsleuth.nice.loading import APP_SPECS, LB_MODULE, TE_MODULE, make_system, model_spec
from netsleuth.nice.scripted import scripts_from_json, scripts_to_json
from netsleuth.nice.system import Config, System
from netsleuth.trace.controller_spec import ControllerSpec, Kind

__all__ = ["BugScenario", "SCENARIOS", "APP_SPECS", "get", "scenario_for", "config_for", "build_system", "run",
           "scripts_to_json", "scripts_from_json"]


@dataclass(frozen=True)
class BugScenario:
    bug: str                                   # "IV" .. "XIII"
    app: str                                   # "loadbalancer" or "energy-te"
    variant: str                               # the app variant with the bug
    what: str                                  # one line: what happens
    topology: Callable[[], Topology]
    scripts: tuple[tuple[str, tuple[Packet, ...]], ...]
    properties: tuple[str, ...]
    expected: str                              # the property the bug violates

    def spec(self, variant: str | None = None) -> str:
        """``app:`` spec of a variant (default: the buggy one) -- importable, so replays rebuild it."""
        v = variant or self.variant
        mod, variants = (LB_MODULE, lb.VARIANTS) if self.app == "loadbalancer" else (TE_MODULE, te.VARIANTS)
        if v not in variants:
            raise ScenarioError(f"{self.app} has no variant {v!r}", f"use one of {', '.join(sorted(variants))}")
        return str(ControllerSpec(Kind.APP, name=f"{mod}:{variants[v].__name__}", in_model=True))


# ---------------------------------------------------------------- load balancer frames
_C_NAME, _C_IP, _C_MAC, _ = lb.CLIENT
LB_ARP = arp_request(_C_MAC, _C_IP, lb.VIP)
LB_SYN = tcp_syn(_C_MAC, lb.VMAC, _C_IP, lb.VIP, 40000, 80)
LB_ACK = Packet(_C_MAC, lb.VMAC, ETH_IPV4, l3=IPv4(_C_IP, lb.VIP, PROTO_TCP),
                l4=TCP(40000, 80, seq=1, ack=1, flags=TCP_ACK))


# ---------------------------------------------------------------- traffic engineering frames
def _udp(dst: str, sport: int, dport: int) -> Packet:
    sip, smac, _, _ = te.HOSTS["h1"]
    dip, dmac, _, _ = te.HOSTS[dst]
    return Packet(smac, dmac, ETH_IPV4, l3=IPv4(sip, dip, PROTO_UDP), l4=UDP(sport, dport))


TE_FLOW_A = _udp("h2", 5000, 9000)   # first flow: at low load it takes (and loads) the always-on link
TE_FLOW_B0 = _udp("h3", 5000, 9000)  # second flow, class 0: always-on even under high load
TE_FLOW_B1 = _udp("h3", 5000, 9001)  # second flow, class 1: on-demand (via s3) under high load


_NFP = "NoForgottenPackets"
SCENARIOS: dict[str, BugScenario] = {s.bug: s for s in (
    BugScenario("IV", "loadbalancer", "bug-iv", "the client ARPs for the virtual IP; the request stays buffered",
                lb.topology, (("h1", (LB_ARP,)),), (_NFP,), _NFP),
    BugScenario("V", "loadbalancer", "bug-v", "a SYN before the first policy is ignored (NO_MATCH)",
                lb.topology, (("h1", (LB_SYN,)),), (_NFP,), _NFP),
    BugScenario("VI", "loadbalancer", "bug-vi", "the packet that triggers a microflow install after a "
                "reweighting is never forwarded", lb.topology, (("h1", (LB_SYN,)),), (_NFP,), _NFP),
    BugScenario("VII", "loadbalancer", "bug-vii", "a SYN between the delete and the install of a "
                "reweighting arrives as NO_MATCH and is ignored", lb.topology, (("h1", (LB_SYN,)),), (_NFP,), _NFP),
    BugScenario("VIII", "loadbalancer", "bug-viii", "a controller rule with max_len 0 hands the controller "
                "an empty packet_in", lb.topology, (("h1", (LB_SYN,)),), (_NFP,), _NFP),
    BugScenario("IX", "loadbalancer", "bug-ix", "a duplicate SYN during the reweighting sends the "
                "connection to the other replica", lb.topology, (("h1", (LB_SYN, LB_SYN, LB_ACK)),),
                ("FlowAffinity",), "FlowAffinity"),
    BugScenario("X", "energy-te", "bug-x", "the first packet of a new flow is never released",
                te.topology, (("h1", (TE_FLOW_A,)),), (_NFP, "NoBlackHoles"), _NFP),
    BugScenario("XI", "energy-te", "bug-xi", "the first packet outruns its rule to s2 and is ignored there",
                te.topology, (("h1", (TE_FLOW_A,)),), (_NFP,), _NFP),
    BugScenario("XII", "energy-te", "bug-xii", "under high load a class-0 flow is routed on demand",
                te.topology, (("h1", (TE_FLOW_A, TE_FLOW_B0)),), ("UseCorrectRoutingTable",),
                "UseCorrectRoutingTable"),
    BugScenario("XIII", "energy-te", "bug-xiii", "a packet caught at s3 after the load dropped is ignored",
                te.topology, (("h1", (TE_FLOW_A, TE_FLOW_B1)),), (_NFP,), _NFP),
)}


def get(bug: str) -> BugScenario:
    key = bug.upper().removeprefix("BUG-")
    if key not in SCENARIOS:
        raise ScenarioError(f"no scenario for bug {bug!r}", f"use one of {', '.join(SCENARIOS)}")
    return SCENARIOS[key]


def config_for(sc: BugScenario, variant: str | None = None, *, spec: str | None = None, strategy: str = "full",
               burst: int = 1, properties: tuple[str, ...] | None = None) -> Config:
    """The model configuration of scenario ``sc`` running ``variant`` (or the app ``spec``).

    The scenario's scripts are left out: :func:`build_system` adds them (``config.scripts``).
    """
    parts = parse_strategy(strategy)
    return Config(topology=sc.topology(), app_spec=spec or sc.spec(variant),
                  properties=tuple(properties) if properties is not None else sc.properties,
                  pkt_seq_burst=burst if "pkt-seq" in parts else None, track_issue_order="unusual" in parts)


#: the scenario a fixed variant is checked in when none is named
DEFAULT_FIXED_SCENARIO = {"loadbalancer": "IX", "energy-te": "XIII"}


def _names(app: str) -> str:
    return ", ".join("bug-" + b.lower() for b, x in SCENARIOS.items() if x.app == app)


def scenario_for(app_spec: str, scenario: str | None = None) -> BugScenario | None:
    """The bug scenario for ``netsleuth check APP [--scenario bug-N]``, or None when it is not ours.

    A buggy variant defaults to its own bug's scenario, a fixed one to its app's richest scenario.
    """
    name = model_spec(app_spec).name
    target = APP_SPECS.get(name, name)
    owner = None
    for variants, app in ((lb.VARIANTS, "loadbalancer"), (te.VARIANTS, "energy-te")):
        for v, c in variants.items():
            if target == f"{c.__module__}:{c.__name__}":
                owner = (app, v)
    wanted = scenario is not None and scenario.lower().startswith("bug-")
    if owner is None:
        if wanted:
            raise ScenarioError(f"scenario {scenario!r} needs the loadbalancer or energy-te app, not {app_spec!r}",
                                "run e.g. `netsleuth check loadbalancer --variant bug-iv`")
        return None
    app, v = owner
    if wanted:
        sc = get(scenario)  # type: ignore[arg-type]  # wanted implies a scenario was named
        if sc.app != app:
            raise ScenarioError(f"scenario {scenario!r} is a {sc.app} scenario, not one for {app}",
                                f"use one of {_names(app)}")
        return sc
    if scenario is not None:
        raise ScenarioError(f"scenario {scenario!r} does not apply to {app}",
                            f"use --scenario bug-N (one of {_names(app)})")
    return get(DEFAULT_FIXED_SCENARIO[app] if v == "fixed" else v)


def build_system(sc: BugScenario, variant: str | None = None, *, strategy: str = "full",
                 burst: int = 1) -> System:
    """The model of scenario ``sc`` running ``variant`` (default: the buggy one; "fixed" for the fix)."""
    config = config_for(sc, variant, strategy=strategy, burst=burst)
    config.scripts = sc.scripts
    return make_system(config)


def run(sc: BugScenario, variant: str | None = None, *, strategy: str = "full", dpor: bool = False,
        stop_at_first: bool = True, max_transitions: int | None = None, order: str = "forward",
        burst: int = 1) -> tuple[System, SearchResult]:
    """Search scenario ``sc``; stops at the first violation of the expected property by default."""
    system = build_system(sc, variant, strategy=strategy, burst=burst)
    opts = SearchOptions(strategy=strategy, dpor=dpor, order=order, max_transitions=max_transitions,
                         stop_on=(sc.expected,) if stop_at_first else ())
    return system, Explorer(system, opts).run()
