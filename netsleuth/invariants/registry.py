"""Invariants registered by stable name.

Users select invariants by name on the command line (``--check``), traces
record violations by that name, and the minimizer matches a reproduced
violation by it; so names are part of the interface and never change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from netsleuth.errors import NetsleuthError
from netsleuth.invariants import forwarding
from netsleuth.invariants.forwarding import Finding
from netsleuth.invariants.headerspace import checks as hsa_checks
from netsleuth.invariants.headerspace import engine as hsa_engine
from netsleuth.invariants.policy import faucet_checks
from netsleuth.invariants.view import NetworkView


class UnknownInvariantError(NetsleuthError):
    pass


@dataclass(frozen=True, slots=True)
class Invariant:
    name: str
    description: str
    check: Callable[[NetworkView, object], list[Finding]] | None
    observed: bool = False  # reported by the World as packets move, not computed from a view


def _liveness(view: NetworkView, _outcomes: object) -> list[Finding]:
    findings = []
    for name, alive in sorted(view.controllers_alive.items()):
        if not alive and name not in view.crashed_by_input:
            findings.append(Finding("liveness", f"controller {name} is not running",
                                    details={"controller": name}))
    if view.controllers_alive and not any(view.controllers_alive.values()):
        # every controller is down (crashed on purpose, or its process exited, reported above):
        # there is nobody to connect to, so the switches are not to blame
        return findings
    # A switch its controller just hung up on dials again, as real switches do (Faucet closes a switch's
    # connection on purpose after some reconfigurations): it is not missing until that has taken too long.
    missing = [s.name for s in view.topology.switches
               if view.is_switch_up(s.name) and s.dpid not in view.connected_dpids and s.dpid not in view.redialing]
    if missing:
        shown = ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else "")
        findings.append(Finding("liveness", f"{len(missing)} switch(es) not connected to a controller: {shown}",
                                switches=tuple(missing)))
    return findings


REGISTRY: dict[str, Invariant] = {}


def register(inv: Invariant) -> Invariant:
    if inv.name in REGISTRY:
        raise ValueError(f"invariant {inv.name} registered twice")
    REGISTRY[inv.name] = inv
    return inv


register(Invariant("liveness", "controller processes alive and every live switch connected", _liveness))
# loops, blackholes and reachability are decided over every header a host can
# send (header-space analysis), not only the packets a test happened to send.
register(Invariant("loops", "no header a host can send loops through the flow tables",
                   hsa_checks.check_headerspace_loops))
register(Invariant("blackholes", "no header a host sends to a host it is connected to is dropped inside the network",
                   hsa_checks.check_headerspace_blackholes))
register(Invariant("reachability", "every physically connected host pair can reach each other "
                   "(through the tables or a live controller)", hsa_checks.check_headerspace_reachability))
register(Invariant("dataplane-loops", "no real packet revisits a (switch, in_port)", None, observed=True))
@dataclass(frozen=True, slots=True)
class IsolationInputs:
    """What :func:`check` hands the isolation invariant: the concrete pair traces for the policy
    file's pairs, and the header-space analysis the other checks share (Faucet's VLANs use it)."""

    pairs: list
    analysis: object = None


def _isolation(view: NetworkView, inputs: object) -> list[Finding]:
    if isinstance(inputs, IsolationInputs):
        return forwarding.check_isolation(view, inputs.pairs) + \
            faucet_checks.check_vlan_isolation(view, inputs.analysis)
    return forwarding.check_isolation(view, inputs) + faucet_checks.check_vlan_isolation(view)


register(Invariant("isolation", "host pairs in the isolation policy cannot reach each other; with Faucet, hosts "
                   "in VLANs no router joins neither", _isolation))
register(Invariant("acl", "with Faucet: what an ACL rule denies is not delivered, what it allows is",
                   faucet_checks.check_acls))
register(Invariant("delivery", "every packet a host sends to a connected host arrives", forwarding.check_delivery,
                   observed=True))

register(Invariant("exceptions", "no controller logs a Python traceback (an app's handler raised)", None,
                   observed=True))
register(Invariant("openflow-errors", "no switch answers a controller's message with an OpenFlow ERROR", None,
                   observed=True))

DEFAULT = ("liveness", "loops", "blackholes", "reachability", "dataplane-loops", "isolation", "acl", "exceptions",
           "openflow-errors")


def resolve(names: str | list[str] | tuple[str, ...] | None) -> list[Invariant]:
    """Invariants by name (comma-separated string or list); None means the defaults."""
    if names is None:
        names = DEFAULT
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    out = []
    for n in names:
        if n not in REGISTRY:
            raise UnknownInvariantError(f"unknown invariant '{n}'",
                                        f"use one of: {', '.join(REGISTRY)}")
        out.append(REGISTRY[n])
    return out


_HSA = {"loops", "blackholes", "reachability"}
_FAUCET = {"isolation", "acl"}


def check(view: NetworkView, invariants: list[Invariant], analysis: Any = None) -> list[Finding]:
    """Run the view-based invariants, sharing one analysis between those that need it:
    the header-space analysis for loops/blackholes/reachability, the concrete pair
    traces for isolation (the policy is about the packets one host sends another).
    ``analysis``: the header-space analysis of ``view`` when the caller has it already
    (an incremental engine's)."""
    names = {i.name for i in invariants}
    # Faucet's VLAN and ACL checks read the same 1.3 analysis: one per check, not one per invariant
    faucet = view.faucet is not None and bool(names & _FAUCET)
    if analysis is None:
        analysis = hsa_engine.analyze(view) if names & _HSA or faucet else None
    pairs = forwarding.pair_outcomes(view) if "isolation" in names and view.isolation else []
    findings: list[Finding] = []
    for inv in invariants:
        if inv.check is None:
            continue
        if inv.name == "isolation":
            findings.extend(inv.check(view, IsolationInputs(pairs, analysis)))
        else:
            findings.extend(inv.check(view, analysis if inv.name in _HSA or inv.name == "acl" else pairs))
    return [f for f in findings if not intended(view, f)]


_PAIR_INVARIANTS = ("reachability", "delivery")


def intended(view: NetworkView, f: Finding) -> bool:
    """A reachability or delivery finding for a pair the controller's own configuration separates on
    purpose (hosts on different VLANs, an ACL dropping the pair's traffic) reports the operator's
    intent, not a bug: it is set aside (policy/intent.py)."""
    return f.invariant in _PAIR_INVARIANTS and len(f.hosts) == 2 and (f.hosts[0], f.hosts[1]) in view.separated
