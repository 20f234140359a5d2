"""Header-space analysis over OpenFlow 1.3 pipelines agrees with concrete frames.

Random multi-table pipelines (goto-table, write-metadata and metadata
matches, VLAN push/pop, MPLS push/pop, set_field, write/clear-actions,
groups ALL/SELECT/INDIRECT/FAST_FAILOVER, chained groups) on small
topologies with some links down; every drawn frame is pushed hop by hop
through ``Pipeline13.process`` (the model's own forwarding) and its fate
compared with the engine's header spaces for the frame's packed header.

SELECT groups pick a bucket by a hash; the engine treats every live bucket
as possible.  The brute force therefore runs each frame under *every*
sequence of SELECT choices (a GroupTable whose choice follows a script,
enumerated like an odometer): a loop, drop, delivery or punt is possible
when some script produces it, and a pair is reachable when every script
delivers it (or punts it to the controller).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from os_ken.ofproto import ofproto_v1_3 as ofp
from sampled import BOOLEANS, integers, sample

from netsleuth.errors import NetsleuthError
from netsleuth.invariants import registry
from netsleuth.invariants.headerspace.of13 import engine as E13
from netsleuth.invariants.headerspace.of13 import symbolic as S13
from netsleuth.invariants.headerspace.of13.checks import blackholes13, check_all13, loops13, reachability13
from netsleuth.invariants.headerspace.of13.space import HS13
from netsleuth.invariants.view import NetworkView
from netsleuth.invariants.violation_text import violation_lines
from netsleuth.model.of13.actions import Group, Output, PopMpls, PopVlan, PushMpls, PushVlan, SetField
from netsleuth.model.of13.errors import OFError
from netsleuth.model.of13.fields import oxm_fields
from netsleuth.model.of13.frame import Frame
from netsleuth.model.of13.groups import Bucket, GroupTable
from netsleuth.model.of13.headerbits import pack13
from netsleuth.model.of13.headers import SCTP, ICMPv6, IPv6, VlanTag
from netsleuth.model.of13.instructions import Instructions
from netsleuth.model.of13.oxm import OxmMatch
from netsleuth.model.of13.pipeline import Pipeline13, PortState
from netsleuth.model.packet import ICMP, TCP, UDP, Arp, IPv4
from netsleuth.model.topo_builders import parse_topo

OTHER_MAC = 0x0A0000000099
OTHER_IP = 0x0A000063
N_TABLES = 3
MAX_WORLDS = 64


# --------------------------------------------------------------------------- networks
class Net:
    """A topology whose switches are Pipeline13s, with link state kept in both places."""

    def __init__(self, spec: str) -> None:
        self.topo = parse_topo(spec)
        self.pipes = {s.name: Pipeline13(N_TABLES, {p: PortState() for p in self.topo.ports(s.name)}, seed=7)
                      for s in self.topo.switches}
        self.link_up = {(lk.node1, lk.port1, lk.node2, lk.port2): True for lk in self.topo.links}
        self.switch_up: dict[str, bool] = {}

    def cut(self, key) -> None:
        self.link_up[key] = False
        for node, port in ((key[0], key[1]), (key[2], key[3])):
            if node in self.pipes:
                self.pipes[node].ports[port] = PortState(live=False)

    def view(self) -> NetworkView:
        return NetworkView(topology=self.topo, switches=self.pipes, link_up=dict(self.link_up),  # type: ignore[arg-type]
                           controllers_alive={"c0": True},
                           connected_dpids=frozenset(s.dpid for s in self.topo.switches),
                           switch_up=dict(self.switch_up))


class ScriptedChoice:
    """SELECT choices taken from a script instead of the hash, to enumerate every choice."""

    def __init__(self) -> None:
        self.script: list[int] = []
        self.counts: list[int] = []
        self.pos = 0

    def install(self, pipe: Pipeline13) -> None:
        table = pipe.groups

        def choose(g, fields, port_live):
            if g.type != ofp.OFPGT_SELECT:
                return GroupTable.choose(table, g, fields, port_live)
            live = [i for i, b in enumerate(g.buckets) if b.weight > 0 and table.bucket_live(b, port_live)]
            if not live:
                return []
            if self.pos == len(self.script):
                self.script.append(0)
                self.counts.append(len(live))
            pick = self.script[self.pos]
            self.pos += 1
            return [live[pick]]

        table.choose = choose  # type: ignore[method-assign]

    def next_world(self) -> bool:
        """Advance to the next script (False when every one was run)."""
        while self.script:
            if self.script[-1] + 1 < self.counts[-1]:
                self.script[-1] += 1
                self.pos = 0
                return True
            self.script.pop()
            self.counts.pop()
        return False


@dataclass
class Fate:
    loops: bool = False
    drops: bool = False
    delivered: frozenset = frozenset()
    punted: frozenset = frozenset()
    arrived: frozenset = frozenset()   # (host, header as it arrives)
    filtered: bool = False             # a rule (or a missing table-miss entry) dropped it on purpose


def trace_world(view: NetworkView, pipes, sw: str, port: int, frame: Frame) -> Fate:
    fate = Fate()
    delivered, punted, arrived = set(), set(), set()
    work = [(sw, port, frame, ())]
    while work:
        s, p, f, path = work.pop()
        here = (s, p)
        if here in path:
            fate.loops = True
            continue
        path = path + (here,)
        if not view.is_switch_up(s):
            fate.drops = True
            continue
        res = pipes[s].process(f, p, 0.0)
        if not res.outputs:
            if res.aimed:
                fate.drops = True
            else:
                fate.filtered = True
        for em in res.outputs:
            if em.port == ofp.OFPP_CONTROLLER:
                punted.add(s)
            elif em.port > ofp.OFPP_MAX:
                fate.drops = True
            else:
                peer = view.peer(s, em.port)
                if peer is None:
                    fate.drops = True
                elif peer[0] in pipes:
                    work.append((peer[0], peer[1], em.frame, path))
                else:
                    delivered.add(peer[0])
                    arrived.add((peer[0], arrival(em.frame)))
    fate.delivered, fate.punted, fate.arrived = frozenset(delivered), frozenset(punted), frozenset(arrived)
    return fate


def arrival(frame: Frame) -> tuple:
    """A delivered frame as ``Sym.frame_of`` describes one (OXM fields, tags, labels)."""
    f = oxm_fields(frame, 0)
    d = {n: f.get(n, 0) for n in S13._FRAME_FIELDS}
    d["tags"] = tuple((0x1000 | t.vid, t.pcp) for t in frame.tags)
    d["labels"] = tuple((m.label, m.tc, m.bos) for m in frame.mpls)
    return tuple(sorted(d.items()))


def brute(net: Net, view: NetworkView, sw: str, port: int, frame: Frame, hosts: list[str]):
    """(may-fate over every SELECT script, hosts every script delivers to or punts)."""
    chooser = ScriptedChoice()
    for pipe in net.pipes.values():
        chooser.install(pipe)
    may = Fate()
    must = set(hosts)
    worlds = 0
    while True:
        chooser.pos = 0
        f = trace_world(view, net.pipes, sw, port, frame)
        worlds += 1
        may = Fate(may.loops or f.loops, may.drops or f.drops, may.delivered | f.delivered, may.punted | f.punted,
                   may.arrived | f.arrived, may.filtered or f.filtered)
        if not f.punted:  # every switch has a live controller here
            must &= f.delivered
        if worlds >= MAX_WORLDS or not chooser.next_world():
            break
    return may, must, worlds < MAX_WORLDS


def engine_fate(r: E13.Reach13, h: int, hosts: list[str]):
    may = Fate(any(e.hs.contains(h) for e in r.loops), any(e.hs.contains(h) for e in r.drops),
               frozenset(d for d, evs in r.delivered.items() if any(e.hs.contains(h) for e in evs)),
               frozenset(s for s, evs in r.punted.items() if any(e.hs.contains(h) for e in evs)),
               frozenset((d, tuple(sorted(e.sym.frame_of(h).items())))
                         for d, evs in r.delivered.items() for e in evs if e.hs.contains(h)),
               any(e.hs.contains(h) for evs in r.filtered.values() for e in evs))
    punts = [e for evs in r.punted.values() for e in evs]
    must = {d for d in hosts if E13.must_hold(r.delivered.get(d, []) + punts, r.alts).contains(h)}
    return may, must


# --------------------------------------------------------------------------- strategies
VIDS = (5, 7)


@st.composite
def oxm_matches(draw, ports, macs, ips, table_id):
    kw: dict = {}
    if draw(integers(0, 2)) == 0:
        kw["in_port"] = draw(sample(ports))
    if draw(BOOLEANS):
        kw["eth_dst"] = draw(sample(macs))
    if draw(integers(0, 3)) == 0:
        kw["eth_src"] = draw(sample(macs))
    vlan = draw(integers(0, 3))
    if vlan == 1:
        kw["vlan_vid"] = 0
    elif vlan == 2:
        kw["vlan_vid"] = 0x1000 | draw(sample(VIDS))
    elif vlan == 3:
        kw["vlan_vid"] = (0x1000, 0x1000)
        if draw(BOOLEANS):
            kw["vlan_pcp"] = draw(integers(0, 2))
    et = draw(sample([None, None, 0x0800, 0x0800, 0x0806, 0x86DD, 0x8847]))
    if et is not None:
        kw["eth_type"] = et
    if et == 0x0800:
        if draw(BOOLEANS):
            kw["ipv4_dst"] = draw(sample(ips))
        proto = draw(sample([None, 6, 17, 1]))
        if proto is not None:
            kw["ip_proto"] = proto
            if proto == 6 and draw(BOOLEANS):
                kw["tcp_dst"] = draw(sample([22, 80]))
            if proto == 17 and draw(BOOLEANS):
                kw["udp_dst"] = draw(sample([53, 80]))
        if draw(integers(0, 3)) == 0:
            kw["ip_dscp"] = draw(integers(0, 1))
    elif et == 0x86DD and draw(BOOLEANS):
        kw["ip_proto"] = draw(sample([6, 17, 58]))
        if draw(BOOLEANS):
            kw["ipv6_dst"] = draw(sample([2, 9]))
        if kw["ip_proto"] == 17 and draw(BOOLEANS):
            kw["udp_src"] = draw(sample([1, 53]))
    elif et == 0x8847 and draw(BOOLEANS):
        kw["mpls_label"] = draw(sample([0, 16]))
    elif et == 0x0806 and draw(BOOLEANS):
        kw["arp_tpa"] = draw(sample(ips))
    if draw(integers(0, 7)) == 0:
        kw["tunnel_id"] = draw(sample([0, 9]))
    if table_id and draw(BOOLEANS):
        kw["metadata"] = (draw(integers(0, 3)), draw(sample([1, 2, 3])))
    try:
        return OxmMatch.build(**kw)
    except OFError:
        return OxmMatch()


@st.composite
def actions(draw, ports, macs, ips, groups, max_len=3):
    out = []
    for _ in range(draw(integers(0, max_len))):
        c = draw(integers(0, 17))
        if c <= 4:
            out.append(Output(draw(sample(ports * 2 + [ofp.OFPP_FLOOD, ofp.OFPP_ALL, ofp.OFPP_IN_PORT,
                                                                  ofp.OFPP_CONTROLLER]))))
        elif c == 5:
            out.append(SetField("eth_dst", draw(sample(macs))))
        elif c == 6:
            out.append(SetField("vlan_vid", 0x1000 | draw(sample(VIDS))))
        elif c == 7:
            out.append(PushVlan(draw(sample([0x8100, 0x88A8]))))
        elif c in (8, 16, 17):
            out.append(PopVlan())
        elif c == 9:
            out.append(SetField("ipv4_dst", draw(sample(ips))))
        elif c == 10:
            out.append(SetField("tcp_dst", draw(sample([22, 80]))))
        elif c == 11:
            out.append(PushMpls())
        elif c == 12:
            out.append(PopMpls(draw(sample([0x0800, 0x86DD]))))
        elif c == 13 and groups:
            out.append(Group(draw(sample(groups))))
        elif c in (14,):
            out.append(SetField("vlan_pcp", draw(integers(0, 2))))
        elif c == 15:
            name, values = draw(sample(OTHER_SETS))
            out.append(SetField(name, draw(sample(values))))
        else:
            out.append(SetField("eth_src", draw(sample(macs))))
    return tuple(out)


# set_field of the other settable fields (each a no-op on frames without that header)
OTHER_SETS = (
    ("ipv4_src", (OTHER_IP,)), ("ip_ecn", (1, 3)), ("ip_dscp", (0, 1)), ("udp_src", (53,)), ("udp_dst", (53, 80)),
    ("sctp_dst", (80,)), ("icmpv4_type", (0,)), ("icmpv4_code", (1,)), ("arp_op", (2,)), ("arp_spa", (OTHER_IP,)),
    ("arp_tpa", (OTHER_IP,)), ("arp_sha", (OTHER_MAC,)), ("arp_tha", (OTHER_MAC,)), ("ipv6_src", (7,)),
    ("ipv6_dst", (2, 9)), ("ipv6_flabel", (5,)), ("icmpv6_type", (129,)), ("icmpv6_code", (1,)),
    ("tcp_src", (7,)), ("mpls_tc", (3,)), ("tunnel_id", (9,)),
)


FORWARD_REWRITES = (
    (OxmMatch.build(vlan_vid=(0x1000, 0x1000)),
     (PopVlan(), PushVlan(), PushVlan(0x88A8), SetField("vlan_vid", 0x1007), SetField("vlan_pcp", 2))),
    (OxmMatch.build(vlan_vid=0), (PushVlan(), PushMpls())),
    (OxmMatch.build(eth_type=0x0800), (SetField("ipv4_dst", OTHER_IP), SetField("ip_dscp", 1), PushMpls())),
    (OxmMatch.build(eth_type=0x8847), (PopMpls(0x0800), PopMpls(0x86DD), SetField("mpls_label", 16))),
    (OxmMatch.build(eth_type=0x0800, ip_proto=6), (SetField("tcp_dst", 80),)),
)


@st.composite
def add_groups(draw, pipe, ports, macs, ips):
    ids: list[int] = []
    for gid in range(1, draw(integers(0, 3)) + 1):
        gtype = draw(sample([ofp.OFPGT_ALL, ofp.OFPGT_SELECT, ofp.OFPGT_SELECT, ofp.OFPGT_INDIRECT,
                                      ofp.OFPGT_FF]))
        n = 1 if gtype == ofp.OFPGT_INDIRECT else draw(integers(1, 3))
        buckets = []
        for _ in range(n):
            acts = draw(actions(ports, macs, ips, ids, max_len=2))
            if gtype == ofp.OFPGT_SELECT:
                buckets.append(Bucket(acts, weight=draw(sample([0, 1, 1, 2]))))
            elif gtype == ofp.OFPGT_FF:
                buckets.append(Bucket(acts, watch_port=draw(sample(ports))))
            else:
                buckets.append(Bucket(acts))
        try:
            pipe.add_group(gid, gtype, buckets)
            ids.append(gid)
        except OFError:
            pass
    return ids


@st.composite
def networks(draw):
    net = Net(draw(sample(["ring,3", "linear,2", "ring,3"])))
    macs = [h.mac for h in net.topo.hosts] + [OTHER_MAC]
    ips = [h.ip for h in net.topo.hosts] + [OTHER_IP]
    for key in sorted(net.link_up):
        if key[0].startswith("s") and key[2].startswith("s") and draw(integers(0, 7)) == 0:
            net.cut(key)
    for pipe in net.pipes.values():
        for port, state in sorted(pipe.ports.items()):
            if draw(integers(0, 7)) == 0:  # FLOOD skips it
                pipe.ports[port] = PortState(live=state.live, no_flood=True)
    for name, pipe in net.pipes.items():
        ports = sorted(pipe.ports)
        groups = draw(add_groups(pipe, ports, macs, ips))
        # Mostly a catch-all per table (forwarding, or on to a later table), so that frames get
        # somewhere and the rules above them decide where.
        plan = [(t, True) for t in range(N_TABLES) if draw(integers(0, 3))]
        plan += [(draw(integers(0, N_TABLES - 1)), False) for _ in range(draw(integers(1, 8)))]
        # Forwarding rules that rewrite on the way (so rewritten copies arrive somewhere).
        fwd = ports[1:] + [ofp.OFPP_FLOOD]
        for match, rewrites in FORWARD_REWRITES:
            if draw(integers(0, 2)) == 0:
                acts = (draw(sample(rewrites)), Output(draw(sample(fwd))))
                try:
                    pipe.add_flow(0, match, 1, Instructions(apply=acts))
                except OFError:
                    pass
        for t, catch_all in plan:
            kw: dict = {}
            if catch_all and groups and draw(integers(0, 2)) == 0:
                kw["apply"] = (Group(draw(sample(groups))),)
            elif catch_all and draw(integers(0, 3)):
                # port 1 faces the host (ring/linear builders): forward into the network
                kw["apply"] = (Output(draw(sample(ports[1:] + [ofp.OFPP_FLOOD]))),)
            elif draw(integers(0, 3)):
                kw["apply"] = draw(actions(ports, macs, ips, groups))
            if draw(integers(0, 5)) == 0:
                kw["clear"] = True
            if draw(integers(0, 2)) == 0:
                kw["write"] = draw(actions(ports, macs, ips, groups, max_len=2))
            if draw(integers(0, 3)) == 0:
                kw["metadata"] = (draw(integers(0, 3)), draw(sample([1, 2, 3])))
            if t < N_TABLES - 1 and draw(BOOLEANS):
                kw["goto"] = draw(integers(t + 1, N_TABLES - 1))
            match = OxmMatch() if catch_all else draw(oxm_matches(ports, macs, ips, t))
            prio = 0 if catch_all else draw(sample([0, 5, 10, 10, 20]))
            try:
                pipe.add_flow(t, match, prio, Instructions(**kw))
            except OFError:
                pass
        if draw(integers(0, 9)) == 0:
            net.switch_up[name] = False
    frames = draw(st.lists(frames_of(macs, ips), min_size=8, max_size=16))
    return net, frames


@st.composite
def frames_of(draw, macs, ips):
    src, dst = draw(sample(macs)), draw(sample(macs))
    tags = tuple(VlanTag(draw(sample(VIDS)), draw(integers(0, 2)), 0,
                         draw(sample([0x8100, 0x88A8]))) for _ in range(draw(sample([0, 0, 1, 2]))))
    kind = draw(sample(["tcp", "udp", "icmp", "arp", "v6tcp", "v6udp", "v6icmp", "sctp", "other"]))
    if kind in ("tcp", "udp", "icmp"):
        ip = IPv4(draw(sample(ips)), draw(sample(ips)), {"tcp": 6, "udp": 17, "icmp": 1}[kind],
                  tos=draw(sample([0, 4])))
        l4 = {"tcp": lambda: TCP(1000, draw(sample([22, 80, 443]))),
              "udp": lambda: UDP(1000, draw(sample([53, 80]))), "icmp": lambda: ICMP(8, 0)}[kind]()
        return Frame(src, dst, 0x0800, tags, (), ip, l4)
    if kind == "arp":
        return Frame(src, dst, 0x0806, tags, (), Arp(1, src, draw(sample(ips)), 0, draw(sample(ips))))
    if kind == "v6tcp":
        return Frame(src, dst, 0x86DD, tags, (), IPv6(1, 2, 6), TCP(1000, 80))
    if kind == "v6udp":
        return Frame(src, dst, 0x86DD, tags, (), IPv6(1, draw(sample([2, 9])), 17, flabel=5), UDP(1, 53))
    if kind == "v6icmp":
        return Frame(src, dst, 0x86DD, tags, (), IPv6(1, 2, 58), ICMPv6(128, 0))
    if kind == "sctp":
        return Frame(src, dst, 0x0800, tags, (), IPv4(draw(sample(ips)), OTHER_IP, 132), SCTP(5, 80))
    return Frame(src, dst, 0x88B5, tags, payload=b"\x01\x02")


# --------------------------------------------------------------------------- the property
@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(networks())
def test_header_space_13_agrees_with_concrete_frames(case):
    """For every host-facing ingress and drawn frame: possible loops, drops, deliveries (with the
    header each copy arrives with) and punts, and the hosts reached under every SELECT choice,
    are exactly what the frames do."""
    net, frames = case
    view = net.view()
    hosts = [h.name for h in net.topo.hosts]
    try:
        a = E13.analyze13(view, cache=False)
    except S13.Unsupported13:
        return
    looped = False
    for ing, r in a.reaches.items():
        assert not r.truncated
        for frame in frames:
            h = pack13(frame)
            may, must, complete = brute(net, view, ing[0], ing[1], frame, hosts)
            got_may, got_must = engine_fate(r, h, hosts)
            assert got_may == may, (ing, frame.summary())
            if complete:
                assert got_must == must, (ing, frame.summary())
            looped |= may.loops
    # The findings read from the same analysis: a frame that can loop gives a loop finding
    # naming the table of each rule; every finding renders.
    found = check_all13(view)
    if looped:
        assert found["loops"] and all(" table " in printed(f) for f in found["loops"])
    for f in found["loops"] + found["blackholes"] + found["reachability"]:
        assert f.message and f.details["header_space"]
        assert all(len(line) < 160 for line in violation_lines(f, verbose=True))


# --------------------------------------------------------------------------- examples
def _ring() -> Net:
    return Net("ring,3")


def _add(pipe: Pipeline13, table: int, prio: int, inst: Instructions, **match) -> None:
    pipe.add_flow(table, OxmMatch.build(**match), prio, inst)


def test_select_group_loop_only_through_one_bucket():
    """s1's SELECT group sends h1's frames either to h1's peer port (fine) or around the ring
    (s1 -> s2 -> s3 -> s1 -> ...): a loop possible through one bucket only.  The engine reports
    it; the frames show it under one of the two choices and not the other."""
    net = _ring()
    s1, s2, s3 = (net.pipes[n] for n in ("s1", "s2", "s3"))
    s1.add_group(1, ofp.OFPGT_SELECT, [Bucket((Output(2),), weight=1),
                                       Bucket((Output(ofp.OFPP_CONTROLLER),), weight=1)])
    _add(s1, 0, 10, Instructions.actions(Group(1)))
    _add(s2, 0, 10, Instructions.actions(Output(3)), in_port=2)
    _add(s3, 0, 10, Instructions.actions(Output(3)), in_port=2)
    view = net.view()
    found = loops13(view)
    assert found, "the loop through bucket 0 is missed"
    assert all("SELECT" in f.message and "s1 table 0: rule" in printed(f) for f in found)
    frame = Frame(1, 2, 0x0800, (), (), IPv4(1, 2, 6), TCP(1, 2))
    fates = []
    chooser = ScriptedChoice()
    for p in net.pipes.values():
        chooser.install(p)
    while True:
        chooser.pos = 0
        fates.append(trace_world(view, net.pipes, "s1", 1, frame).loops)
        if not chooser.next_world():
            break
    assert True in fates and False in fates
    # reachability: whatever the choice, h1's traffic is not delivered to h2 -> finding
    assert any(p["hosts"] == ["h1", "h2"] for f in reachability13(view) for p in f.details["pairs"])


def test_two_tables_acl_vlan_metadata_and_table_ids_in_findings():
    """Table 0 drops telnet and tagged frames, marks metadata and goes to table 1; table 1
    forwards on metadata.  The ACL's drops are the controller's choice: no blackhole and no
    unreachable pair.  Table 1 of s1 also sends eth_dst 3 to port 7, which s1 does not have:
    that is a blackhole, and the finding names its table and rule."""
    net = Net("linear,2")
    s1, s2 = net.pipes["s1"], net.pipes["s2"]
    for p in (s1, s2):
        _add(p, 0, 100, Instructions(), eth_type=0x0800, ip_proto=6, tcp_dst=23)
        _add(p, 0, 50, Instructions(), vlan_vid=(0x1000, 0x1000))
        _add(p, 0, 0, Instructions(metadata=(1, 1), goto=1))
    # s1: port 1 = h1, port 2 = s2; s2: port 1 = h2, port 2 = s1
    _add(s1, 1, 10, Instructions.actions(Output(2)), metadata=(1, 1), eth_dst=2)
    _add(s1, 1, 10, Instructions.actions(Output(1)), metadata=(1, 1), eth_dst=1)
    _add(s2, 1, 10, Instructions.actions(Output(1)), metadata=(1, 1), eth_dst=2)
    _add(s2, 1, 10, Instructions.actions(Output(2)), metadata=(1, 1), eth_dst=1)
    for p in (s1, s2):
        _add(p, 1, 0, Instructions.actions(Output(ofp.OFPP_CONTROLLER)))
    view = net.view()
    res = check_all13(view)
    assert res == {"loops": [], "blackholes": [], "reachability": []}
    # the ACL's drops are recorded as deliberate, with their table
    r = E13.analyze13(view).reaches[("s1", 1)]
    why = {e.why for e in r.filtered["s1"]}
    assert any("s1 table 0: rule" in w and "tcp_dst=23" in w and "has no output" in w for w in why), why
    _add(s1, 1, 10, Instructions.actions(Output(7)), metadata=(1, 1), eth_dst=3)
    view = net.view()
    res = check_all13(view)
    holes = res["blackholes"]
    assert holes and all("s1 table 1: rule" in printed(f) and "port 7" in f.message for f in holes)
    assert all(f.details["witness"]["eth_dst"] == "00:00:00:00:00:03" and f.details["witness"].get("tcp_dst") != 23
               for f in holes)
    assert res["reachability"] == []   # eth_dst 3 is nobody's traffic
    # the registry reaches the same checks through the shared analysis
    got = registry.check(view, registry.resolve("loops,blackholes,reachability"))
    assert sorted(f.message for f in got) == sorted(f.message for f in holes)


def test_table_miss_entry_to_controller_and_a_missing_one_are_no_blackholes():
    """Since OpenFlow 1.3 a table without a table-miss entry drops what misses (spec 5.4, as
    Open vSwitch does): the controller chose that by installing no such entry."""
    net = Net("linear,2")
    s1, s2 = net.pipes["s1"], net.pipes["s2"]
    _add(s1, 0, 0, Instructions.actions(Output(ofp.OFPP_CONTROLLER)))
    _add(s2, 0, 0, Instructions.actions(Output(ofp.OFPP_CONTROLLER)))
    assert blackholes13(net.view()) == []
    net2 = Net("linear,2")
    _add(net2.pipes["s1"], 0, 10, Instructions.actions(Output(2)), eth_dst=2)
    _add(net2.pipes["s2"], 0, 10, Instructions.actions(Output(1)), eth_dst=2)
    view = net2.view()
    assert blackholes13(view) == []
    r = E13.analyze13(view).reaches[("s1", 1)]
    assert any("no rule matches and there is no table-miss entry" in e.why for e in r.filtered["s1"])


def test_drop_rule_is_no_blackhole_but_an_output_to_an_unattached_port_is():
    """As on 1.0: an entry whose instructions send nowhere (empty, or clear-actions) is the
    controller choosing to drop; an output to a port with nothing attached, or into a group whose
    only bucket leads nowhere, is a blackhole."""
    net = Net("linear,2")
    s1, s2 = net.pipes["s1"], net.pipes["s2"]
    _add(s1, 0, 10, Instructions.actions(Output(2)), eth_dst=2)
    _add(s2, 0, 10, Instructions.actions(Output(1)), eth_dst=2)
    _add(s1, 0, 200, Instructions(), eth_type=0x0800, ip_proto=6, tcp_dst=23)                # deny telnet
    _add(s1, 0, 200, Instructions(clear=True), eth_type=0x0800, ip_proto=6, tcp_dst=25)      # and smtp
    for p in (s1, s2):
        _add(p, 0, 0, Instructions.actions(Output(ofp.OFPP_CONTROLLER)))
    res = check_all13(net.view())
    assert res == {"loops": [], "blackholes": [], "reachability": []}
    s1.ports[5] = PortState()  # a port with no link: nothing attached
    _add(s1, 0, 300, Instructions.actions(Output(5)), eth_type=0x0800, ip_proto=17)
    s1.add_group(1, ofp.OFPGT_INDIRECT, [Bucket((Output(9),))])  # port 9: the switch has none
    _add(s1, 0, 300, Instructions.actions(Group(1)), eth_type=0x0806)
    res = check_all13(net.view())
    holes = [f for f in res["blackholes"] if f.details["where"] == "s1"]
    assert len(holes) == 2, holes  # one per dropping rule
    (udp,) = [f for f in holes if "port 5 has no live link" in f.message]
    (arp,) = [f for f in holes if "port 9, which the switch does not have" in f.message]
    assert "ip_proto=17" in udp.details["header_space"] and "eth_type=0x0806" in arp.details["header_space"]
    assert "tcp_dst" not in udp.details["header_space"]
    assert udp.message.startswith("UDP") and arp.message.startswith("ARP")
    unreach = [f for f in res["reachability"] if f.hosts == ("h1", "h2")]
    assert len(unreach) == 1 and "tcp_dst" not in unreach[0].details["header_space"]


def test_mpls_label_hides_the_ip_header_until_popped():
    """s1 pushes a label; s2 matches ipv4_dst (never hits under the label: dropped by the
    table miss) unless the label is popped first in table 0 and the IP rule is in table 1."""
    net = Net("linear,2")
    s1, s2 = net.pipes["s1"], net.pipes["s2"]
    _add(s1, 0, 10, Instructions.actions(PushMpls(), Output(2)), in_port=1, eth_type=0x0800)
    _add(s2, 0, 10, Instructions.actions(Output(1)), eth_type=0x0800, ipv4_dst=0x0A000002)
    r = E13.analyze13(net.view(), cache=False).reaches[("s1", 1)]
    ip = pack13(Frame(1, 2, 0x0800, (), (), IPv4(0x0A000001, 0x0A000002, 6), TCP(1, 2)))
    assert not any(e.hs.contains(ip) for e in r.delivered.get("h2", []))
    assert any(e.hs.contains(ip) for e in r.filtered["s2"])
    net.pipes["s2"] = s2 = Pipeline13(N_TABLES, {p: PortState() for p in net.topo.ports("s2")})
    _add(s2, 0, 10, Instructions(apply=(PopMpls(0x0800),), goto=1), eth_type=0x8847)
    _add(s2, 1, 10, Instructions.actions(Output(1)), eth_type=0x0800, ipv4_dst=0x0A000002)
    r = E13.analyze13(net.view(), cache=False).reaches[("s1", 1)]
    assert any(e.hs.contains(ip) for e in r.delivered.get("h2", []))
    v6 = pack13(Frame(1, 2, 0x86DD, (), (), IPv6(1, 2, 6), TCP(1, 2)))
    assert not any(e.hs.contains(v6) for e in r.delivered.get("h2", []))


def test_vlan_push_pop_with_inner_tag_exposed():
    """s1 pops the outer tag; s2 forwards only frames whose (new) outer vid is 7: the inner tag
    of a double-tagged frame, or a pushed copy -- never the original outer vid."""
    net = Net("linear,2")
    s1, s2 = net.pipes["s1"], net.pipes["s2"]
    _add(s1, 0, 10, Instructions.actions(PopVlan(), Output(2)), in_port=1, vlan_vid=(0x1000, 0x1000))
    _add(s2, 0, 10, Instructions.actions(Output(1)), vlan_vid=0x1000 | 7)
    r = E13.analyze13(net.view(), cache=False).reaches[("s1", 1)]
    inner7 = pack13(Frame(1, 2, 0x88B5, (VlanTag(5), VlanTag(7))))
    outer7 = pack13(Frame(1, 2, 0x88B5, (VlanTag(7), VlanTag(5))))
    one7 = pack13(Frame(1, 2, 0x88B5, (VlanTag(7),)))
    hit = r.delivered.get("h2", [])
    assert any(e.hs.contains(inner7) for e in hit)
    assert not any(e.hs.contains(outer7) or e.hs.contains(one7) for e in hit)


def test_unsupported_action_is_a_typed_error():
    from netsleuth.model.of13.actions import DecNwTtl
    net = Net("linear,2")
    _add(net.pipes["s1"], 0, 10, Instructions.actions(DecNwTtl(), Output(2)), eth_type=0x0800)
    with pytest.raises(NetsleuthError) as exc:
        E13.analyze13(net.view(), cache=False)
    assert exc.value.fix


def test_injected_space_and_text():
    hs = HS13.injected()
    assert hs.contains(pack13(Frame(1, 2, 0x0800, (VlanTag(5), VlanTag(7)), (), IPv4(1, 2, 17), UDP(1, 2))))
    assert not hs.is_empty()
    assert "eth_dst=00:00:00:00:00:02" in str(HS13.wildcard(*__import__("netsleuth.model.of13.headerbits",
                                                                          fromlist=["wc13"]).wc13(eth_dst=2)))


def printed(f) -> str:
    """A finding as the commands print it, the exact header space and rules included."""
    return "\n".join(violation_lines(f, verbose=True))


def test_a_pair_s_mac_space_is_the_injected_headers_cut_to_its_macs():
    """eth_space13 puts a pair's terms together from the injected terms' shapes: the very terms
    (values, masks, differences in order) of the general intersection, for any MACs."""
    import random

    from netsleuth.invariants.headerspace.of13 import checks as C13

    assert C13._ETH_SHAPES is not None   # the shortcut is what runs
    rng = random.Random(7)
    for _ in range(300):
        a, b = rng.getrandbits(48), rng.choice([rng.getrandbits(48), 0xFFFFFFFFFFFF, 0])
        w = ((a & C13._MAC) << C13._SRC_SH) | ((b & C13._MAC) << C13._DST_SH)
        assert C13.eth_space13(a, b).terms == C13._INJECTED.intersect_wc((w, C13._ETH_M)).terms


def test_a_source_s_pair_spaces_built_together_are_each_pair_s():
    """eth_terms13 (a full check's pair spaces, a source's all at once) gives each destination
    the very terms eth_space13 gives the pair, in the destinations' order."""
    import random

    from netsleuth.invariants.headerspace.of13 import checks as C13

    rng = random.Random(11)
    for _ in range(30):
        a = rng.getrandbits(48)
        dsts = [rng.choice([rng.getrandbits(48), 0xFFFFFFFFFFFF, 0, a]) for _ in range(rng.randrange(0, 9))]
        assert C13.eth_terms13(a, dsts) == [C13.eth_space13(a, b).terms for b in dsts]


def test_distinct_differences_of_one_mask_need_no_duplicate_removal():
    """make_term's ``distinct`` (what a table-miss piece after a table's lone candidates passes):
    distinct wildcards of one mask, values inside it, a base value inside its mask -- the very
    term the duplicate removal makes, for bases and masks that overlap the differences' bits."""
    import random

    from netsleuth.invariants.headerspace.terms import make_term

    rng = random.Random(11)
    for _ in range(400):
        m = rng.getrandbits(12)
        v = rng.getrandbits(12) & m
        dm = rng.getrandbits(12)
        ds = list(dict.fromkeys(rng.getrandbits(12) & dm for _ in range(rng.randrange(1, 24))))
        diffs = [(dv, dm) for dv in ds]
        assert make_term(v, m, diffs, distinct=True) == make_term(v, m, diffs)
