"""The web-server load balancer of NICE section 9.2, written from the paper's description.

The original (1,209 lines of NOX, after Wang et al., "OpenFlow-based server
load balancing gone wild", Hot-ICE 2011) was never published; this is the
algorithm those papers describe, small enough to read in one sitting.

**Network** (:func:`topology`): one switch ``s1``; the client ``h1``
(10.0.0.65) on port 1 and the replicas ``h2``/``h3`` on ports 2/3, all behind
the virtual IP 10.0.0.100 with the virtual MAC 02:00:00:00:00:64.

**Policy.**  The client space 10.0.0.0/24 is cut into four /26 blocks; a
policy is a pair of weights (w_A, w_B) over them (the first w_A blocks go to
replica A).  Each block gets one wildcard rule
``tcp, nw_src=block, nw_dst=VIP -> set dl_dst/nw_dst to the replica, output``.
There are no rules at start; a timer installs the first policy (3:1) and a
second timer *reweights* to 1:3, which moves block 10.0.0.64/26 -- the
client's -- from A to B.

**Transition** (Wang et al.): a block whose replica changes gets a rule that
sends its packets to the controller instead; for each connection the
controller then installs an exact microflow rule: a SYN starts a new
connection, which follows the new policy, anything else belongs to an old
connection, which stays on the old replica.  Decisions are remembered per
connection.  The transition's end (replacing the controller rule with the new
wildcard rule after a timeout longer than any connection) is outside every
scenario, and FlowAffinity could only hold with that assumption.

**ARP** for the virtual IP is answered by the controller.

**Variants** (``VARIANTS``), each with exactly one of NICE's bugs:

* ``bug-iv``   the ARP request stays in the switch buffer after the reply is sent
  (and other ARP is flooded as a copy, leaving the original buffered)
* ``bug-v``    TCP packet_ins with reason NO_MATCH are ignored, so every connection
  that starts before the first policy is installed is left in the buffer
* ``bug-vi``   during a transition the microflow rule is installed but the packet
  that triggered it is never released ("next" packet dropped)
* ``bug-vii``  the transition deletes the old rule *then* installs the controller
  rule; packets in between arrive as NO_MATCH, which the handler ignores
* ``bug-viii`` controller rules use max_len 0 (NOX's "whole packet" before
  OpenFlow 1.0), so the packet_in carries no header and the handler gives up
* ``bug-ix``   a duplicate SYN of a connection that started before the transition
  is taken for a new connection and sent to the new replica (FlowAffinity)
* ``fixed``    none: NO_MATCH is handled like ACTION, packets that cannot be
  served yet are dropped explicitly (releasing the buffer), the new rule goes
  in *before* the old one is deleted, max_len covers the packet, and -- since a
  SYN cannot tell a new connection from a retransmitted one -- every connection
  of a moving block stays on the old replica until the transition ends.
"""

from __future__ import annotations

from typing import cast

from netsleuth.model.actions import Output, SetDlDst, SetNwDst
from netsleuth.model.addr import ip_to_int, mac_to_int
from netsleuth.model.match import Match
from netsleuth.model.ofdp import ofp
from netsleuth.model.packet import ETH_ARP, ETH_IPV4, PROTO_TCP, TCP, TCP_ACK, TCP_SYN, Arp, IPv4, Packet, arp_reply
from netsleuth.model.topology import Topology
from netsleuth.nice.app import NO_BUFFER, App

VIP = ip_to_int("10.0.0.100")
VMAC = mac_to_int("02:00:00:00:00:64")
CLIENT_NET = ip_to_int("10.0.0.0")
BLOCK_BITS = 26                      # four /26 blocks of 10.0.0.0/24
N_BLOCKS = 4
#: (name, ip, mac, switch port) of the replicas, in policy order (A, B)
REPLICAS = (("h2", ip_to_int("10.0.0.2"), 2, 2), ("h3", ip_to_int("10.0.0.3"), 3, 3))
CLIENT = ("h1", ip_to_int("10.0.0.65"), 1, 1)
#: the policies the timers install, in order: weights (w_A, w_B) over the blocks
POLICIES = ((3, 1), (1, 3))
PRIO_BLOCK = 100
PRIO_TRANSITION = 99                 # the fixed variant's controller rule, under the old one
PRIO_MICRO = 200
FULL_PACKET = 0xFFE5


def topology() -> Topology:
    """The load balancer's network: s1 with the client on port 1 and the replicas on 2 and 3."""
    t = Topology("loadbalancer", "loadbalancer")
    t.add_switch("s1", 1)
    name, ip, mac, port = CLIENT
    t.add_host(name, mac=mac, ip=ip)
    t.add_link(name, "s1", 0, port)
    for name, ip, mac, port in REPLICAS:
        t.add_host(name, mac=mac, ip=ip)
        t.add_link(name, "s1", 0, port)
    return t


def block_of(ip: int) -> int | None:
    """Index of the client block holding ``ip`` (None outside the client space)."""
    if (ip >> (32 - 24)) != (CLIENT_NET >> 8):
        return None
    return (ip & 0xFF) >> (32 - BLOCK_BITS)


def assignment(weights: tuple[int, int]) -> tuple[int, ...]:
    """Replica index per block for weights (w_A, w_B): the first w_A blocks go to A."""
    return tuple(0 if b < weights[0] else 1 for b in range(N_BLOCKS))


def conn_key(p: Packet) -> tuple[int, int, int]:
    """A client connection: (client ip, client port, service port)."""
    ip, tcp = cast(IPv4, p.l3), cast(TCP, p.l4)  # only called on TCP/IPv4 packets (handle_tcp)
    return (ip.src, tcp.src_port, tcp.dst_port)


class LoadBalancer(App):
    """The fixed load balancer; the bug variants below override one method each."""

    name = "loadbalancer"
    variant = "fixed"

    def __init__(self) -> None:
        self.dpid: int | None = None
        self.policy: tuple[int, ...] | None = None      # replica per block, once installed
        self.step = 0                                    # policies installed so far
        self.moving: dict[int, tuple[int, int]] = {}     # block -> (old replica, new replica)
        self.conns: dict[tuple, int] = {}                # connection -> replica (transition decisions)

    def copy(self) -> LoadBalancer:
        new = object.__new__(type(self))
        new.dpid, new.policy, new.step = self.dpid, self.policy, self.step
        new.moving = dict(self.moving)
        new.conns = dict(self.conns)
        return new

    def key(self) -> tuple:
        return (self.dpid, self.policy, self.step, tuple(sorted(self.moving.items())),
                tuple(sorted(self.conns.items())))

    def is_same_flow(self, a: Packet, b: Packet) -> bool:
        """FLOW-IR: one TCP connection is one flow (NICE's load-balancer isSameFlow)."""
        if isinstance(a.l4, TCP) and isinstance(b.l4, TCP):
            return conn_key(a) == conn_key(b)
        return super().is_same_flow(a, b)

    # ------------------------------------------------------------------ events
    def datapath_join(self, dpid: int, ports: tuple[int, ...]) -> None:
        self.dpid = dpid
        self.post_timer("reconfigure")

    def timer(self, name: str) -> None:
        if name != "reconfigure" or self.dpid is None or self.step >= len(POLICIES):
            return
        new = assignment(POLICIES[self.step])
        self.step += 1
        if self.policy is None:
            for b, r in enumerate(new):
                self.install_rule(self.dpid, self.block_match(b), self.to_replica(r), priority=PRIO_BLOCK)
        else:
            for b, (old, r) in enumerate(zip(self.policy, new, strict=False)):
                if old != r:
                    self.moving[b] = (old, r)
                    self.start_transition(b)
        self.policy = new
        if self.step < len(POLICIES):
            self.post_timer("reconfigure")

    def packet_in(self, dpid, in_port, reason, total_len, buffer_id, packet) -> None:
        if packet.eth_type == ETH_ARP and isinstance(packet.l3, Arp):
            self.handle_arp(dpid, in_port, buffer_id, packet)
            return
        if (packet.eth_type == ETH_IPV4 and isinstance(packet.l3, IPv4) and packet.l3.dst == VIP
                and isinstance(packet.l4, TCP)):
            self.handle_tcp(dpid, in_port, reason, buffer_id, packet)
            return
        if packet.eth_type < 0 or (packet.l3 is None and packet.eth_type in (ETH_IPV4, ETH_ARP)):
            self.unparsable(dpid, in_port, buffer_id)
            return
        self.drop(dpid, in_port, buffer_id)  # not the load balancer's traffic

    # ------------------------------------------------------------------ pieces the variants change
    def handle_arp(self, dpid: int, in_port: int, buffer_id: int, packet: Packet) -> None:
        arp = cast(Arp, packet.l3)  # dispatched here for ARP packets only
        if arp.op == 1 and arp.tpa == VIP:
            reply = arp_reply(VMAC, VIP, arp.sha, arp.spa)
            self.send_packet_out(dpid, NO_BUFFER, (Output(in_port),), ofp.OFPP_NONE, reply.to_bytes())
            self.drop(dpid, in_port, buffer_id)
        else:
            self.flood(dpid, buffer_id, in_port)

    def handle_tcp(self, dpid: int, in_port: int, reason: int, buffer_id: int, packet: Packet) -> None:
        block = block_of(cast(IPv4, packet.l3).src)  # dispatched here for TCP/IPv4 packets only
        if self.policy is None or block is None:
            # No policy yet (or not a client): nothing to forward to -- but the packet
            # must not stay in the switch's buffer.
            self.drop(dpid, in_port, buffer_id)
            return
        self.serve(dpid, in_port, buffer_id, packet, block)

    def serve(self, dpid: int, in_port: int, buffer_id: int, packet: Packet, block: int) -> None:
        """A client packet that reached the controller while a policy is in force."""
        if block not in self.moving:
            # A stray packet (a race with the rule install): forward it by the policy.
            policy = cast(tuple[int, ...], self.policy)  # serve() runs only once a policy is in force
            self.send_packet_out(dpid, buffer_id, self.to_replica(policy[block]), in_port)
            return
        key = conn_key(packet)
        r = self.conns.get(key)
        if r is None:
            r = self.decide(packet, block)
            self.conns[key] = r
        self.install_microflow(dpid, packet, r, buffer_id)

    def decide(self, packet: Packet, block: int) -> int:
        """Replica of a connection first seen during a transition."""
        old, new = self.moving[block]
        return old  # a SYN may be a retransmission: keep every connection where it was

    def install_microflow(self, dpid: int, packet: Packet, replica: int, buffer_id: int) -> None:
        self.install_rule(dpid, self.conn_match(packet), self.to_replica(replica), priority=PRIO_MICRO,
                          buffer_id=buffer_id)

    def start_transition(self, block: int) -> None:
        """Send the block's packets to the controller: new rule first, then delete the old one."""
        dpid = cast(int, self.dpid)  # transitions start on "reconfigure", which needs the switch joined
        self.install_rule(dpid, self.block_match(block), (Output(ofp.OFPP_CONTROLLER, self.max_len()),),
                          priority=PRIO_TRANSITION)
        self.delete_rules(dpid, self.block_match(block), strict=True, priority=PRIO_BLOCK)

    def max_len(self) -> int:
        return FULL_PACKET

    def unparsable(self, dpid: int, in_port: int, buffer_id: int) -> None:
        """A packet_in whose header is missing: nothing to decide on, so drop it explicitly."""
        self.drop(dpid, in_port, buffer_id)

    # ------------------------------------------------------------------ helpers
    def drop(self, dpid: int, in_port: int, buffer_id: int) -> None:
        """Release a buffered packet without forwarding it (a PACKET_OUT with no actions)."""
        if buffer_id != NO_BUFFER:
            self.send_packet_out(dpid, buffer_id, (), in_port)

    @staticmethod
    def block_match(block: int) -> Match:
        return Match.build(dl_type=ETH_IPV4, nw_proto=PROTO_TCP, nw_dst=VIP,
                           nw_src=(CLIENT_NET | (block << (32 - BLOCK_BITS)), BLOCK_BITS))

    @staticmethod
    def conn_match(p: Packet) -> Match:
        ip, tcp = cast(IPv4, p.l3), cast(TCP, p.l4)  # a client's TCP/IPv4 packet
        return Match.build(dl_type=ETH_IPV4, nw_proto=PROTO_TCP, nw_src=ip.src, nw_dst=VIP,
                           tp_src=tcp.src_port, tp_dst=tcp.dst_port)

    @staticmethod
    def to_replica(r: int) -> tuple:
        _, ip, mac, port = REPLICAS[r]
        return (SetDlDst(mac), SetNwDst(ip), Output(port))


def _is_syn(p: Packet) -> bool:
    tcp = cast(TCP, p.l4)  # a client's TCP packet
    return bool(tcp.flags & TCP_SYN) and not tcp.flags & TCP_ACK


class LoadBalancerBugIV(LoadBalancer):
    """BUG-IV: ARP handled by the controller, but the request is never released from the buffer."""

    name = "loadbalancer-bug-iv"
    variant = "bug-iv"

    def handle_arp(self, dpid, in_port, buffer_id, packet):
        arp = cast(Arp, packet.l3)  # dispatched here for ARP packets only
        if arp.op == 1 and arp.tpa == VIP:
            reply = arp_reply(VMAC, VIP, arp.sha, arp.spa)
            self.send_packet_out(dpid, NO_BUFFER, (Output(in_port),), ofp.OFPP_NONE, reply.to_bytes())
        else:  # server-generated ARP: flooded as a copy, the buffered original forgotten
            self.send_packet_out(dpid, NO_BUFFER, (Output(ofp.OFPP_FLOOD),), in_port, packet.to_bytes())


class LoadBalancerBugV(LoadBalancer):
    """BUG-V: TCP packet_ins caused by a table miss are ignored -- all of them before the first policy."""

    name = "loadbalancer-bug-v"
    variant = "bug-v"

    def handle_tcp(self, dpid, in_port, reason, buffer_id, packet):
        if reason == ofp.OFPR_NO_MATCH:
            return
        super().handle_tcp(dpid, in_port, reason, buffer_id, packet)


class LoadBalancerBugVI(LoadBalancer):
    """BUG-VI: the microflow rule is installed, the packet that triggered it is never forwarded."""

    name = "loadbalancer-bug-vi"
    variant = "bug-vi"

    def install_microflow(self, dpid, packet, replica, buffer_id):
        self.install_rule(dpid, self.conn_match(packet), self.to_replica(replica), priority=PRIO_MICRO)


class LoadBalancerBugVII(LoadBalancer):
    """BUG-VII: delete-then-install, and NO_MATCH packet_ins after the first policy are ignored."""

    name = "loadbalancer-bug-vii"
    variant = "bug-vii"

    def start_transition(self, block):
        self.delete_rules(self.dpid, self.block_match(block), strict=True, priority=PRIO_BLOCK)
        self.install_rule(self.dpid, self.block_match(block), (Output(ofp.OFPP_CONTROLLER, FULL_PACKET),),
                          priority=PRIO_BLOCK)

    def handle_tcp(self, dpid, in_port, reason, buffer_id, packet):
        # BUG-V is fixed (packets before the first policy are dropped explicitly), but once
        # rules exist the programmer "knows" every client packet comes from a rule.
        if self.policy is not None and reason == ofp.OFPR_NO_MATCH:
            return
        super().handle_tcp(dpid, in_port, reason, buffer_id, packet)


class LoadBalancerBugVIII(LoadBalancer):
    """BUG-VIII: controller rules ask for max_len 0, which OpenFlow 1.0 takes literally."""

    name = "loadbalancer-bug-viii"
    variant = "bug-viii"

    def max_len(self) -> int:
        return 0

    def unparsable(self, dpid, in_port, buffer_id):
        return  # no header to look at: the handler gives up


class LoadBalancerBugIX(LoadBalancer):
    """BUG-IX: during a transition a SYN is taken to start a new connection (new replica)."""

    name = "loadbalancer-bug-ix"
    variant = "bug-ix"

    def decide(self, packet, block):
        old, new = self.moving[block]
        return new if _is_syn(packet) else old


VARIANTS: dict[str, type[LoadBalancer]] = {c.variant: c for c in (
    LoadBalancer, LoadBalancerBugIV, LoadBalancerBugV, LoadBalancerBugVI, LoadBalancerBugVII,
    LoadBalancerBugVIII, LoadBalancerBugIX)}
