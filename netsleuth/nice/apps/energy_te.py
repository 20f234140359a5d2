"""Energy-efficient traffic engineering (NICE section 9.3, after REsPoNse), from the paper's description.

The original (374 lines of NOX) was never published.  REsPoNse precomputes
two routing tables: an *always-on* table that carries all traffic under low
demand and an *on-demand* table for additional traffic under high demand.

**Network** (:func:`topology`): a triangle ``s1``-``s2``-``s3``; the sender
``h1`` on ``s1``, two receivers ``h2``/``h3`` on ``s2``.  The always-on path
from s1 to s2 is the direct link; the on-demand path goes through s3.

**Load.**  The app polls ``s1``'s port statistics (a timer, re-armed after
each reply, ``POLLS`` times) and calls the load *high* when the always-on
link carried at least ``THRESHOLD`` packets since the previous reply.

**Routing.**  On a packet of a new flow at its ingress switch the handler
picks the table -- always-on under low load; under high load flows split
evenly, class 0 always-on and class 1 on-demand, the class being the parity
of (src ip ^ dst ip ^ src port ^ dst port) (a deterministic stand-in for the
original's coin flip, so the choice is checkable) -- looks up the path and
installs an exact rule at every hop, last hop first, the ingress rule
releasing the buffered packet.

**Variants** (``VARIANTS``), each with exactly one of NICE's bugs:

* ``bug-x``    the ingress rule is installed without releasing the packet (first packet lost)
* ``bug-xi``   packet_ins from switches other than the ingress are ignored: a packet that
  outruns its rule at the second switch stays in that switch's buffer
* ``bug-xii``  the statistics handler keeps an extra "current" table (on-demand under high
  load) that every new flow uses, so all flows take on-demand routes under high load
* ``bug-xiii`` a packet_in from a later switch is served by finding that switch on a path of
  the tables *currently* in use; after the load drops only always-on paths are, and a
  packet caught at s3 is ignored
* ``fixed``    none: the table is chosen per flow and a packet met anywhere on the way is
  forwarded along the path recorded for its flow.
"""

from __future__ import annotations

from netsleuth.model.actions import Output
from netsleuth.model.addr import ip_to_int
from netsleuth.model.match import Match
from netsleuth.model.packet import ETH_IPV4, TCP, UDP, IPv4, Packet
from netsleuth.model.topology import Topology
from netsleuth.nice.app import NO_BUFFER, App

#: host -> (ip, mac, dpid, port)
HOSTS = {"h1": (ip_to_int("10.0.0.1"), 1, 1, 3), "h2": (ip_to_int("10.0.0.2"), 2, 2, 3),
         "h3": (ip_to_int("10.0.0.3"), 3, 2, 4)}
#: switch links (dpid, port, dpid, port): s1-s2 always-on, s1-s3 and s3-s2 on-demand
LINKS = ((1, 1, 2, 1), (1, 2, 3, 1), (3, 2, 2, 2))
#: precomputed tables (ingress dpid, egress dpid) -> switch path
ALWAYS_ON = {(1, 2): (1, 2)}
ON_DEMAND = {(1, 2): (1, 3, 2)}
MONITORED = (1, 1)     # (dpid, port) of the always-on link whose utilization is measured
THRESHOLD = 1          # packets per polling interval that make the load "high"
POLLS = 2


def topology() -> Topology:
    """The triangle of NICE's traffic-engineering experiment."""
    t = Topology("energy-te", "energy-te")
    for d in (1, 2, 3):
        t.add_switch(f"s{d}", d)
    for d1, p1, d2, p2 in LINKS:
        t.add_link(f"s{d1}", f"s{d2}", p1, p2)
    for name, (ip, mac, dpid, port) in HOSTS.items():
        t.add_host(name, mac=mac, ip=ip)
        t.add_link(name, f"s{dpid}", 0, port)
    return t


def flow_key(p: Packet) -> tuple | None:
    if not (isinstance(p.l3, IPv4) and isinstance(p.l4, (TCP, UDP))):
        return None
    return (p.l3.src, p.l3.dst, p.l3.proto, p.l4.src_port, p.l4.dst_port)


def flow_class(key: tuple) -> int:
    src, dst, _, sport, dport = key
    return (src ^ dst ^ sport ^ dport) & 1


_BY_IP = {ip: (dpid, port) for ip, _, dpid, port in HOSTS.values()}


def _next_port(dpid: int, nxt: int) -> int:
    for d1, p1, d2, p2 in LINKS:
        if (d1, d2) == (dpid, nxt):
            return p1
        if (d2, d1) == (dpid, nxt):
            return p2
    raise KeyError((dpid, nxt))


class EnergyTE(App):
    """The fixed app; the bug variants below override one method each."""

    name = "energy-te"
    variant = "fixed"
    uses_stats = True

    def __init__(self) -> None:
        self.load_high = False          # the measurement (read by UseCorrectRoutingTable)
        self.last_tx = 0
        self.polls_left = POLLS
        self.flows: dict[tuple, tuple[int, ...]] = {}   # flow -> its path

    def copy(self) -> EnergyTE:
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.flows = dict(self.flows)
        return new

    def key(self) -> tuple:
        return tuple(sorted((k, v if not isinstance(v, dict) else tuple(sorted(v.items())))
                            for k, v in self.__dict__.items() if not k.startswith("_")))

    def is_same_flow(self, a: Packet, b: Packet) -> bool:
        return flow_key(a) == flow_key(b)

    # ------------------------------------------------------------------ statistics
    def datapath_join(self, dpid: int, ports: tuple[int, ...]) -> None:
        if dpid == MONITORED[0] and self.polls_left:
            self.post_timer("poll")

    def timer(self, name: str) -> None:
        if name == "poll" and self.polls_left:
            self.polls_left -= 1
            self.request_port_stats(MONITORED[0])

    def port_stats_in(self, dpid: int, stats: tuple) -> None:
        for port_no, _rx, tx, _rxb, _txb in stats:
            if (dpid, port_no) == MONITORED:
                self.load_high = tx - self.last_tx >= THRESHOLD
                self.last_tx = tx
                self.energy_state_changed()
        if self.polls_left:
            self.post_timer("poll")

    def energy_state_changed(self) -> None:
        """Hook for the variants that keep derived state (none in the fixed app)."""

    # ------------------------------------------------------------------ routing
    def packet_in(self, dpid, in_port, reason, total_len, buffer_id, packet) -> None:
        key = flow_key(packet) if packet.eth_type == ETH_IPV4 else None
        if key is None or key[0] not in _BY_IP or key[1] not in _BY_IP:
            self.drop(dpid, in_port, buffer_id)
            return
        if (dpid, in_port) == _BY_IP[key[0]] and key not in self.flows:
            table = self.choose_table(key)
            path = table[(_BY_IP[key[0]][0], _BY_IP[key[1]][0])]
            self.flows[key] = path
            self.install_path(key, path, buffer_id)
            return
        self.on_the_way(dpid, in_port, buffer_id, key)

    def choose_table(self, key: tuple) -> dict:
        if self.load_high and flow_class(key) == 1:
            return ON_DEMAND
        return ALWAYS_ON

    def install_path(self, key: tuple, path: tuple[int, ...], buffer_id: int) -> None:
        match = Match.build(dl_type=ETH_IPV4, nw_src=key[0], nw_dst=key[1], nw_proto=key[2],
                            tp_src=key[3], tp_dst=key[4])
        for k in range(len(path) - 1, -1, -1):      # last hop first
            dpid = path[k]
            port = self.out_port(key, path, dpid)
            self.install_rule(dpid, match, (Output(port),), buffer_id=buffer_id if k == 0 else NO_BUFFER)

    def on_the_way(self, dpid: int, in_port: int, buffer_id: int, key: tuple) -> None:
        """A packet_in from a switch the flow's rule has not reached yet: forward it along its path."""
        path = self.flows.get(key)
        if path is None or dpid not in path:
            self.drop(dpid, in_port, buffer_id)
            return
        self.send_packet_out(dpid, buffer_id, (Output(self.out_port(key, path, dpid)),), in_port)

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def out_port(key: tuple, path: tuple[int, ...], dpid: int) -> int:
        k = path.index(dpid)
        if k == len(path) - 1:
            return _BY_IP[key[1]][1]
        return _next_port(dpid, path[k + 1])

    def drop(self, dpid: int, in_port: int, buffer_id: int) -> None:
        if buffer_id != NO_BUFFER:
            self.send_packet_out(dpid, buffer_id, (), in_port)


class EnergyTEBugX(EnergyTE):
    """BUG-X: the ingress rule does not release the packet that triggered it."""

    name = "energy-te-bug-x"
    variant = "bug-x"

    def install_path(self, key, path, buffer_id):
        super().install_path(key, path, NO_BUFFER)


class EnergyTEBugXI(EnergyTE):
    """BUG-XI: intermediate switches are assumed never to send packet_ins."""

    name = "energy-te-bug-xi"
    variant = "bug-xi"

    def on_the_way(self, dpid, in_port, buffer_id, key):
        return


class EnergyTEBugXII(EnergyTE):
    """BUG-XII: an extra table, switched wholesale by the statistics handler, routes every new flow."""

    name = "energy-te-bug-xii"
    variant = "bug-xii"

    def __init__(self) -> None:
        super().__init__()
        self.current = "always-on"

    def energy_state_changed(self):
        self.current = "on-demand" if self.load_high else "always-on"

    def choose_table(self, key):
        return ON_DEMAND if self.current == "on-demand" else ALWAYS_ON


class EnergyTEBugXIII(EnergyTE):
    """BUG-XIII: packets met on the way are served only by the paths of the tables in use now."""

    name = "energy-te-bug-xiii"
    variant = "bug-xiii"

    def on_the_way(self, dpid, in_port, buffer_id, key):
        tables = (ALWAYS_ON, ON_DEMAND) if self.load_high else (ALWAYS_ON,)
        ends = (_BY_IP[key[0]][0], _BY_IP[key[1]][0])
        for table in tables:
            path = table.get(ends)
            if path is not None and dpid in path:
                self.send_packet_out(dpid, buffer_id, (Output(self.out_port(key, path, dpid)),), in_port)
                return
        # not on any path in use: "cannot happen", so ignored


VARIANTS: dict[str, type[EnergyTE]] = {c.variant: c for c in (
    EnergyTE, EnergyTEBugX, EnergyTEBugXI, EnergyTEBugXII, EnergyTEBugXIII)}
