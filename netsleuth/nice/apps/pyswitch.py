"""pyswitch: the MAC-learning switch of NICE's Figure 3, and a fixed variant.

:class:`PySwitch` is Figure 3 line by line (learn the source port of unicast
sources; if the destination is known on another port, install an exact
(dl_src, dl_dst, dl_type, in_port) rule with a 5 s soft timeout that also
releases the buffered packet -- NOX's ``install_datapath_flow`` with a
buffer id -- else flood).  NICE found three bugs in it:

* BUG-I: a host that moves stays unreachable while traffic keeps the old
  rule alive (the soft timeout never fires);
* BUG-II: only the B->A rule is installed when B answers A, so A's next
  packet goes to the controller (StrictDirectPaths);
* BUG-III: flooding on a cyclic topology loops (no spanning tree).

:class:`PySwitchFixed` fixes all three the way the paper describes: it
installs the reverse (A->B) rule *before* the B->A rule that releases B's
packet, so the switch has it before A can see B's answer; when a MAC shows up
on a new port it deletes the rules that still send it to the old one; and it
floods only along a spanning tree of the switch graph (from ``links()``, as
NOX's discovery module would give it) plus host-facing ports.
"""

from __future__ import annotations

from typing import cast

from netsleuth.model.actions import Output
from netsleuth.model.match import Match
from netsleuth.nice.app import App

CACHE_TIMEOUT = 5


class PySwitch(App):
    """NICE Figure 3."""

    name = "pyswitch"

    def __init__(self) -> None:
        self.st: dict[int, dict[int, int]] = {}  # dpid -> {mac: port}

    # Fast, exact state handling: the model checker copies and hashes the app
    # in every state it creates.
    def copy(self) -> PySwitch:
        new = object.__new__(type(self))
        new.st = {d: dict(t) for d, t in self.st.items()}
        return new

    def key(self) -> tuple:
        return tuple((d, tuple(sorted(t.items()))) for d, t in sorted(self.st.items()))

    def datapath_join(self, dpid: int, ports: tuple[int, ...]) -> None:
        if dpid not in self.st:
            self.st[dpid] = {}

    def datapath_leave(self, dpid: int) -> None:
        self.st.pop(dpid, None)

    def packet_in(self, dpid, in_port, reason, total_len, buffer_id, packet) -> None:
        mactable = self.st[dpid]
        src, dst = packet.eth_src, packet.eth_dst
        if not (src >> 40) & 1:                      # not a broadcast/multicast source
            self.learn(dpid, mactable, src, in_port)
        if not (dst >> 40) & 1 and dst in mactable:
            outport = mactable[dst]
            if outport != in_port:
                self.forward(dpid, mactable, packet, in_port, outport, buffer_id)
                return
        self.flood_packet(dpid, buffer_id, in_port)

    # --- the parts the fixed variant changes
    def learn(self, dpid: int, mactable: dict, src: int, in_port: int) -> None:
        mactable[src] = in_port

    def forward(self, dpid, mactable, packet, in_port, outport, buffer_id) -> None:
        match = Match.build(dl_src=packet.eth_src, dl_dst=packet.eth_dst, dl_type=packet.eth_type,
                            in_port=in_port)
        self.install_rule(dpid, match, (Output(outport),), idle_timeout=CACHE_TIMEOUT, buffer_id=buffer_id)

    def flood_packet(self, dpid: int, buffer_id: int, in_port: int) -> None:
        self.flood(dpid, buffer_id, in_port)


class PySwitchFixed(PySwitch):
    """pyswitch with BUG-I, BUG-II and BUG-III fixed (see the module docstring)."""

    name = "pyswitch-fixed"

    def __init__(self) -> None:
        super().__init__()
        self.tree: dict[int, tuple[int, ...]] = {}  # dpid -> inter-switch ports on the spanning tree

    def copy(self) -> PySwitchFixed:
        new = cast(PySwitchFixed, super().copy())  # App.copy copies the instance's own class
        new.tree = self.tree  # computed once at join time from the static topology; never mutated
        return new

    def key(self) -> tuple:
        return (super().key(), tuple(sorted(self.tree.items())))

    def datapath_join(self, dpid: int, ports: tuple[int, ...]) -> None:
        super().datapath_join(dpid, ports)
        links = self.links()
        switch_ports: dict[int, set[int]] = {}
        for d1, p1, d2, p2 in links:
            switch_ports.setdefault(d1, set()).add(p1)
            switch_ports.setdefault(d2, set()).add(p2)
        tree = _spanning_tree_ports(links)
        self.tree = dict(self.tree)
        # Flood ports of this switch: every port that does not face another
        # switch (hosts, including ports a moving host may appear on) plus tree links.
        self.tree[dpid] = tuple(sorted(p for p in ports if p not in switch_ports.get(dpid, set())
                                       or (dpid, p) in tree))

    def learn(self, dpid: int, mactable: dict, src: int, in_port: int) -> None:
        old = mactable.get(src)
        mactable[src] = in_port
        if old is not None and old != in_port:
            # BUG-I fix: the host moved; rules still sending it to the old port must go.
            self.delete_rules(dpid, Match.build(dl_dst=src))

    def forward(self, dpid, mactable, packet, in_port, outport, buffer_id) -> None:
        # BUG-II fix: the rule for the other direction goes first, so it is in
        # the switch before the packet this handler releases can be answered.
        reverse = Match.build(dl_src=packet.eth_dst, dl_dst=packet.eth_src, dl_type=packet.eth_type,
                              in_port=outport)
        self.install_rule(dpid, reverse, (Output(in_port),), idle_timeout=CACHE_TIMEOUT)
        super().forward(dpid, mactable, packet, in_port, outport, buffer_id)

    def flood_packet(self, dpid: int, buffer_id: int, in_port: int) -> None:
        # BUG-III fix: flood along the spanning tree only.
        ports = self.tree.get(dpid)
        if ports is None:
            self.flood(dpid, buffer_id, in_port)
            return
        self.send_packet_out(dpid, buffer_id, tuple(Output(p) for p in ports if p != in_port), in_port)


def _spanning_tree_ports(links: tuple) -> set[tuple[int, int]]:
    """(dpid, port) pairs on a BFS spanning tree of the switch graph, rooted at the lowest dpid."""
    import networkx as nx  # the project's graph library; only the fixed variant needs it

    g = nx.Graph()
    ports: dict[tuple[int, int], tuple[int, int]] = {}
    for d1, p1, d2, p2 in sorted(links):
        if not g.has_edge(d1, d2):
            g.add_edge(d1, d2)
            ports[(d1, d2)] = (p1, p2)
    out: set[tuple[int, int]] = set()
    for comp in sorted(nx.connected_components(g), key=min):
        for a, b in nx.bfs_edges(g, min(comp), sort_neighbors=sorted):
            pa, pb = ports[(a, b)] if (a, b) in ports else ports[(b, a)][::-1]
            out.add((a, pa))
            out.add((b, pb))
    return out
