"""The Faucet ``isolation`` and ``acl`` checks on hand-built 1.3 networks (no Faucet, no controller).

The same policies the Faucet tests run with real Faucet (tests/data/faucet/), held
against networks built flow by flow: one that floods every frame everywhere
(it leaks between VLANs and ignores the ACL), one that drops every frame (it
leaks nothing and denies what the ACL allows), and one that forwards each
host's traffic only inside its VLAN.
"""

from __future__ import annotations

from pathlib import Path

from os_ken.ofproto import ofproto_v1_3 as ofp

from netsleuth.invariants.policy.faucet import FaucetPolicy, policy_from_text
from netsleuth.invariants.policy.faucet_checks import check_acls, check_vlan_isolation
from netsleuth.invariants.view import NetworkView
from netsleuth.model.of13.actions import Output
from netsleuth.model.of13.instructions import Instructions
from netsleuth.model.of13.oxm import OxmMatch
from netsleuth.model.of13.pipeline import Pipeline13, PortState
from netsleuth.model.topo_builders import parse_topo
from netsleuth.model.topology import Topology

DATA = Path(__file__).parent / "data" / "faucet"


def _view(spec: str, config: str, flows) -> tuple[NetworkView, FaucetPolicy]:
    """``flows(switch name, Pipeline13)`` fills each switch's tables."""
    topo: Topology = parse_topo(spec)
    policy = policy_from_text((DATA / config).read_text(), topo, config)
    pipes = {}
    for s in topo.switches:
        pipe = Pipeline13(1, {p: PortState() for p in topo.ports(s.name)}, seed=1)
        flows(s.name, pipe)
        pipes[s.name] = pipe
    view = NetworkView(topology=topo, switches=pipes,  # type: ignore[arg-type]
                       link_up={(lk.node1, lk.port1, lk.node2, lk.port2): True for lk in topo.links},
                       controllers_alive={"c0": True}, connected_dpids=frozenset(s.dpid for s in topo.switches),
                       faucet=policy)
    return view, policy


def _flood(_name: str, pipe: Pipeline13) -> None:
    pipe.add_flow(0, OxmMatch.build(), 0, Instructions.actions(Output(ofp.OFPP_ALL)))


def _drop(_name: str, _pipe: Pipeline13) -> None:
    """No entry: a 1.3 table miss drops."""


def test_flooding_between_vlans_breaks_isolation_both_ways() -> None:
    view, _ = _view("tree,depth=2,fanout=2", "two_vlans.yaml", _flood)
    found = check_vlan_isolation(view)
    assert found, "a network flooding every frame to every port leaks between office and guest"
    pairs = {(f.hosts[0], f.hosts[1]) for f in found}
    # office = h1, h3; guest = h2, h4: every cross-VLAN pair, in both directions
    assert {("h1", "h2"), ("h2", "h1"), ("h3", "h4"), ("h1", "h4")} <= pairs, pairs
    assert not any({a, b} in ({"h1", "h3"}, {"h2", "h4"}) for a, b in pairs), pairs
    assert all("office" in f.message or "guest" in f.message for f in found), [f.message for f in found]


def test_a_network_that_delivers_nothing_is_isolated() -> None:
    # tables that drop every frame deliver nothing, so nothing crosses a VLAN either
    view, _ = _view("tree,depth=2,fanout=2", "two_vlans.yaml", _drop)
    assert check_vlan_isolation(view) == []


def test_an_acl_deny_that_the_tables_ignore_is_found() -> None:
    view, policy = _view("linear,3", "acl_deny_h2.yaml", _flood)
    found = check_acls(view)
    assert found, "h1's ACL denies its IPv4 to h2, and the flooding tables deliver it"
    deny = [f for f in found if "h2" in f.hosts and "no-h2" in f.message]
    assert deny, [f.message for f in found]
    assert policy.acls["no-h2"][0].allow is False


def test_an_acl_allow_that_the_tables_drop_is_found() -> None:
    view, _ = _view("linear,3", "acl_deny_h2.yaml", _drop)
    found = check_acls(view)
    assert found, "h1's ACL allows its traffic to h3, and the tables drop everything"
    assert any("h3" in f.hosts for f in found), [f.message for f in found]
    # rule 0 denies, so only rule 1 (allow the rest: ARP to h2 too) is held to delivering
    assert all(f.message.startswith('rule 1 of acl "no-h2"') for f in found), [f.message for f in found]
