"""What invariants look at: a read-only view of the network at one moment.

Invariants run on a live World, on a state rebuilt from a trace and inside
the model checker; all three can produce this view, so invariants depend on
it and on the model, never on the World itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from netsleuth.model.components import components
from netsleuth.model.flowtable import FlowTable
from netsleuth.model.of13.pipeline import Pipeline13
from netsleuth.model.switch import Switch
from netsleuth.model.topology import Topology

if TYPE_CHECKING:
    import networkx as nx


@dataclass(frozen=True)
class NetworkView:
    topology: Topology
    switches: Mapping[str, Switch]
    link_up: Mapping[tuple[str, int, str, int], bool]
    controllers_alive: Mapping[str, bool] = field(default_factory=dict)
    connected_dpids: frozenset[int] = frozenset()
    # dpid -> names of the controllers it has a live, handshaken connection to
    controllers_of: Mapping[int, tuple[str, ...]] = field(default_factory=dict)
    # host -> (switch, port) where it is attached now (hosts move); default: the topology's
    host_at: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    # controllers that an injected crash took down: their absence is expected, not a bug
    crashed_by_input: frozenset[str] = frozenset()
    # host pairs that must not reach each other (both directions), from a policy file
    isolation: tuple[tuple[str, str], ...] = ()
    # packets hosts sent to connected hosts and that never arrived: (pid, src, dst, summary, age seconds)
    undelivered: tuple[tuple[int, str, str, str, float], ...] = ()
    switch_up: Mapping[str, bool] = field(default_factory=dict)
    # the policy of the Faucet config the run used (a faucet_policy.FaucetPolicy), for isolation and acl
    faucet: object | None = None
    # sending ends of links that are cut in that direction only (STS's one-way link failures)
    cut_from: frozenset[tuple[str, int]] = frozenset()
    # directed host pairs (src, dst) the controller's own configuration keeps apart on purpose
    # (different VLANs, an ACL that drops some of the pair's traffic): see policy/intent.py
    separated: frozenset[tuple[str, str]] = frozenset()
    # dpids whose controller closed their connection moments ago and which are dialing it again
    redialing: frozenset[int] = frozenset()

    def pipeline(self, switch: str) -> FlowTable | Pipeline13:
        """Switch ``switch``'s forwarding state: a 1.0 FlowTable, or a Pipeline13 on a switch that speaks 1.3.

        The one place data-plane analyses read tables from (``Switch.pipeline``);
        on a 1.3 switch its ``table`` attribute is an empty 1.0 table.
        """
        return self.switches[switch].pipeline

    def host_location(self, host: str) -> tuple[str, int]:
        return self.host_at.get(host) or self.topology.host_location(host)

    def is_switch_up(self, name: str) -> bool:
        return self.switch_up.get(name, True)

    def __post_init__(self) -> None:
        peers: dict[tuple[str, int], tuple[str, int] | None] = {}
        for (n1, p1, n2, p2), up in self.link_up.items():
            peers[(n1, p1)] = (n2, p2) if up and (n1, p1) not in self.cut_from else None
            peers[(n2, p2)] = (n1, p1) if up and (n2, p2) not in self.cut_from else None
        object.__setattr__(self, "_peers", peers)

    def peer(self, node: str, port: int) -> tuple[str, int] | None:
        """The (node, port) a packet sent out of ``node:port`` reaches over a live link, or None."""
        return self._peers.get((node, port))  # type: ignore[attr-defined]  # set in __init__ via object.__setattr__

    def peers(self) -> dict[tuple[str, int], tuple[str, int] | None]:
        """:meth:`peer` of every linked (node, port), as one read-only map (for hot loops)."""
        return self._peers  # type: ignore[attr-defined]  # set in __post_init__

    def live_graph(self) -> nx.Graph:
        """Nodes and links that are up: the physical network packets can cross."""
        import networkx as nx  # here, not at the top: a World builds views in processes that draw no graph

        g = nx.Graph()
        for s in self.topology.switches:
            if self.is_switch_up(s.name):
                g.add_node(s.name)
        for h in self.topology.hosts:
            g.add_node(h.name)
        for (n1, _p1, n2, _p2), up in self.link_up.items():
            if up and n1 in g and n2 in g:
                g.add_edge(n1, n2)
        return g

    def live_components(self) -> dict[str, int]:
        """Node -> number of its connected component in :meth:`live_graph` (which hosts the live links connect).

        The components of that graph, numbered as ``networkx.connected_components`` yields them
        (in the order of each one's first node), found here without building the graph: every
        check asks for them, and building it cost more than a small network's check."""
        nodes = [s.name for s in self.topology.switches if self.is_switch_up(s.name)]
        nodes += [h.name for h in self.topology.hosts]
        present = set(nodes)
        return components(nodes, [(n1, n2) for (n1, _p1, n2, _p2), up in self.link_up.items()
                                  if up and n1 in present and n2 in present])
