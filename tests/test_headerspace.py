"""Header-space analysis: set algebra, transfer functions, and agreement with real packets.

The property tests build random flow tables (wildcards, prefixes, exact
entries, priority ties, FLOOD/ALL/IN_PORT/CONTROLLER outputs, set-field
actions, drop rules) on small topologies with random link, port and switch
failures, and check header by header that what the header-space engine says
about a header is what :func:`netsleuth.invariants.forwarding.trace_packet`
(the switch's own ``forward`` and ``FlowTable.peek``) does with a concrete
packet carrying that header.  Headers are drawn from the values that appear
in the rules plus neighbours of them.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from os_ken.ofproto import ofproto_v1_0 as ofp
from sampled import BOOLEANS, integers, sample

from netsleuth.invariants import registry
from netsleuth.invariants.forwarding import controller_ok, trace_packet
from netsleuth.invariants.headerspace import batch as EB
from netsleuth.invariants.headerspace import checks as H
from netsleuth.invariants.headerspace import engine as E
from netsleuth.invariants.headerspace import general as EG
from netsleuth.invariants.headerspace import reachability as HR
from netsleuth.invariants.headerspace.compiled import CompiledSwitch, compiled
from netsleuth.invariants.headerspace.report import components
from netsleuth.invariants.headerspace.rewrite import rewrite_for
from netsleuth.invariants.headerspace.space import FIELD_MASK, HeaderSpace, field_wildcard, interner, pack, unpack
from netsleuth.invariants.headerspace.terms import expand, wc_pieces
from netsleuth.invariants.view import NetworkView
from netsleuth.model.actions import (
    Enqueue,
    Output,
    SetDlDst,
    SetDlSrc,
    SetNwDst,
    SetNwSrc,
    SetNwTos,
    SetTpDst,
    SetTpSrc,
    SetVlanPcp,
    SetVlanVid,
    StripVlan,
)
from netsleuth.model.match import FIELDS, Match
from netsleuth.model.packet import ICMP, RAW, TCP, UDP, Arp, IPv4, Packet, Vlan
from netsleuth.model.switch import Switch
from netsleuth.model.topo_builders import parse_topo

FLOOD, ALL, IN_PORT, CONTROLLER, TABLE, NORMAL = (ofp.OFPP_FLOOD, ofp.OFPP_ALL, ofp.OFPP_IN_PORT,
                                                  ofp.OFPP_CONTROLLER, ofp.OFPP_TABLE, ofp.OFPP_NORMAL)


# =========================================================================== helpers
class Net:
    """A topology, its switch models and live links, from which views are made."""

    def __init__(self, spec: str) -> None:
        self.topo = parse_topo(spec)
        self.switches = {s.name: Switch(s.dpid, self.topo.ports(s.name), name=s.name) for s in self.topo.switches}
        self.link_up = {(lk.node1, lk.port1, lk.node2, lk.port2): True for lk in self.topo.links}
        self.switch_up: dict[str, bool] = {}
        self.host_at: dict[str, tuple[str, int]] = {}

    def port(self, a: str, b: str) -> int:
        (p,) = [p for p in self.topo.ports(a) if self.topo.neighbor(a, p)[0] == b]
        return p

    def mac(self, host: str) -> int:
        return self.topo.host(host).mac

    def add(self, sw: str, actions, priority: int = 100, **match) -> None:
        self.switches[sw].table.add(Match.build(**match), priority, tuple(actions))

    def set_link(self, a: str, b: str, up: bool) -> None:
        for key in self.link_up:
            if {key[0], key[2]} == {a, b}:
                self.link_up[key] = up
                for node, port in ((key[0], key[1]), (key[2], key[3])):
                    if node in self.switches:
                        self.switches[node].ports[port].link_up = up

    def view(self, *, alive=None, connected=None) -> NetworkView:
        dpids = {s.dpid for s in self.topo.switches}
        extra = {"host_at": dict(self.host_at)} if "host_at" in NetworkView.__dataclass_fields__ else {}
        return NetworkView(topology=self.topo, switches=self.switches, link_up=dict(self.link_up),
                           controllers_alive={"c0": True} if alive is None else alive,
                           connected_dpids=frozenset(dpids if connected is None else connected),
                           switch_up=dict(self.switch_up), **extra)


def packet_from_fields(f: tuple[int, ...]) -> Packet | None:
    """A well-formed packet whose ``match_fields`` are ``f`` (in_port aside), or None."""
    _ip, src, dst, vid, pcp, et, tos, proto, nsrc, ndst, tsrc, tdst = f
    if et == 0:
        if (src, dst, vid, pcp, tos, proto, nsrc, ndst, tsrc, tdst) != (0, 0, 0xFFFF, 0, 0, 0, 0, 0, 0, 0):
            return None
        return Packet(0, 0, RAW, payload=b"\x01\x02")
    if vid == 0xFFFF:
        if pcp:
            return None
        vlan = None
    elif vid > 0xFFF or pcp > 7:
        return None
    else:
        vlan = Vlan(vid, pcp)
    if et < 0x600 or et == 0x8100:
        return None
    if tos & 3:
        return None
    if et == 0x0800:
        if proto == 1:
            if tsrc > 255 or tdst > 255:
                return None
            l4 = ICMP(tsrc, tdst)
        elif proto == 6:
            l4 = TCP(tsrc, tdst)
        elif proto == 17:
            l4 = UDP(tsrc, tdst)
        else:
            if tsrc or tdst:
                return None
            l4 = None
        return Packet(src, dst, et, vlan, IPv4(nsrc, ndst, proto, tos), l4, b"payload")
    if et == 0x0806:
        if tos or tsrc or tdst:
            return None
        return Packet(src, dst, et, vlan, Arp(proto, src, nsrc, 0, ndst))
    if tos or proto or nsrc or ndst or tsrc or tdst:
        return None
    return Packet(src, dst, et, vlan, payload=b"\x00" * 30)


def ordered_outcome(view: NetworkView, sw: str, port: int, pkt: Packet) -> dict:
    o = trace_packet(view, sw, port, pkt)
    return {"loop": bool(o.loops), "drop": bool(o.drops), "delivered": set(o.delivered), "punted": set(o.punted),
            "filtered": {s for s, _why in o.filtered}}


def hsa_outcome(r: EG.Reach, h: int, hosts, switches, cache: dict) -> dict:
    key = id(r)
    if key not in cache or cache[key][0] is not r:  # keep r alive: ids of dead objects are reused
        cache[key] = (r, r.looping(), r.dropped(), {x: r.delivered_to(x) for x in hosts},
                      {s: r.punted_at(s) for s in switches}, {s: EG.union_of(lst) for s, lst in r.filtered.items()})
    _r, loop, drop, dlv, pun, fil = cache[key]
    return {"loop": loop.contains(h), "drop": drop.contains(h),
            "delivered": {x for x, hs in dlv.items() if hs.contains(h)},
            "punted": {s for s, hs in pun.items() if hs.contains(h)},
            "filtered": {s for s, hs in fil.items() if hs.contains(h)}}


# =========================================================================== set algebra
# A small universe: all bits fixed except 7 spread over several fields, so
# every set can be enumerated and compared with Python sets.
_FREE_BITS = [FIELD_MASK["dl_dst"] & -FIELD_MASK["dl_dst"],           # lowest bit of dl_dst
              (FIELD_MASK["dl_dst"] & -FIELD_MASK["dl_dst"]) << 1,
              FIELD_MASK["dl_type"] & -FIELD_MASK["dl_type"],
              FIELD_MASK["nw_dst"] & -FIELD_MASK["nw_dst"],
              (FIELD_MASK["nw_dst"] & -FIELD_MASK["nw_dst"]) << 31,    # top bit of nw_dst
              FIELD_MASK["tp_dst"] & -FIELD_MASK["tp_dst"],
              FIELD_MASK["dl_vlan"] & -FIELD_MASK["dl_vlan"]]
_FREE = sum(_FREE_BITS)
_BASE_V = pack((0, 0xA, 0xB, 0xFFFF & ~1, 0, 0x0800, 0, 6, 0x0A000001, 0x0A000002, 80, 443)) & ~_FREE
_UNIVERSE = [_BASE_V | sum(b for i, b in enumerate(_FREE_BITS) if n >> i & 1) for n in range(1 << len(_FREE_BITS))]


@st.composite
def small_wildcards(draw):
    m = 0
    v = 0
    for b in _FREE_BITS:
        c = draw(sample("01xx"))
        if c != "x":
            m |= b
            v |= b if c == "1" else 0
    full = ((1 << 248) - 1) & ~_FREE
    return (v | _BASE_V, m | full)


def _points(hs: HeaderSpace) -> set[int]:
    return {h for h in _UNIVERSE if hs.contains(h)}


@st.composite
def small_spaces(draw, depth=2):
    """A header space built with |, &, - from wildcards, with the set it denotes."""
    if depth == 0 or draw(BOOLEANS):
        w = draw(small_wildcards())
        hs = HeaderSpace.wildcard(*w)
        return hs, {h for h in _UNIVERSE if h & w[1] == w[0]}
    a, sa = draw(small_spaces(depth - 1))
    b, sb = draw(small_spaces(depth - 1))
    op = draw(sample("|&-"))
    if op == "|":
        return a | b, sa | sb
    if op == "&":
        return a & b, sa & sb
    return a - b, sa - sb


@settings(max_examples=300, deadline=None)
@given(small_spaces(depth=3))
def test_set_algebra_matches_python_sets(pair):
    hs, expected = pair
    assert _points(hs) == expected
    assert hs.is_empty() == (not expected)
    w = hs.witness()
    if expected:
        assert w in expected
    else:
        assert w is None
    assert _points(hs.compact()) == expected


@settings(max_examples=200, deadline=None)
@given(small_wildcards(), small_wildcards(), st.lists(small_wildcards(), max_size=4))
def test_pieces_and_expand_are_disjoint_and_exact(a, b, diffs):
    inside = (b[0] | a[0], b[1] | a[1])
    if (b[0] ^ a[0]) & a[1] & b[1]:
        return
    pieces = list(wc_pieces(a[0], a[1], *inside))
    pts = [{h for h in _UNIVERSE if h & pm == pv} for pv, pm in pieces]
    assert sum(len(p) for p in pts) == len(set().union(*pts)) if pts else True
    A = {h for h in _UNIVERSE if h & a[1] == a[0]}
    B = {h for h in _UNIVERSE if h & inside[1] == inside[0]}
    assert set().union(*pts) == A - B if pts else A - B == set()
    ex = expand(a[0], a[1], diffs)
    got = [{h for h in _UNIVERSE if h & pm == pv} for pv, pm in ex]
    assert sum(len(p) for p in got) == len(set().union(*got)) if got else True
    want = A - set().union(*[{h for h in _UNIVERSE if h & dm == dv} for dv, dm in diffs]) if diffs else A
    assert (set().union(*got) if got else set()) == want


_SMALL_REWRITES = [SetNwDst(0x0A000003), SetTpDst(8080), SetNwTos(0x10), SetVlanVid(7), SetVlanPcp(3),
                   StripVlan(), SetDlDst(0xB), SetDlSrc(0xC), SetNwSrc(0x0A0000FF), SetTpSrc(1)]


def _apply_fields(h: int, action) -> int:
    """The concrete semantics: build the packet, apply the action, read the 12-tuple back."""
    pkt = packet_from_fields(unpack(h))
    assert pkt is not None
    from netsleuth.model.actions import apply_action
    return pack(apply_action(pkt, action).match_fields(0))


@settings(max_examples=150, deadline=None)
@given(small_spaces(depth=2), st.sampled_from(_SMALL_REWRITES))
def test_rewrite_image_and_preimage_are_exact(pair, action):
    hs, pts = pair
    rw = rewrite_for(action)
    # only headers a real packet can carry (dl_vlan 0xfffe etc. cannot)
    pts = {h for h in pts if packet_from_fields(unpack(h)) is not None}
    real = [h for h in _UNIVERSE if packet_from_fields(unpack(h)) is not None]
    hs = hs & _union_points(real)
    img = rw.image(hs)
    want = {_apply_fields(h, action) for h in pts}
    for h in want:
        assert img.contains(h)
    assert (img - _union_points(want)).is_empty()
    # preimage, checked on every realizable point of the small universe
    pre = rw.preimage(img)
    for h in real:
        assert pre.contains(h) == img.contains(_apply_fields(h, action))


def _union_points(points) -> HeaderSpace:
    full = (1 << 248) - 1
    return HeaderSpace((h, full, ()) for h in points)


def test_text_is_readable():
    hs = HeaderSpace.fields(dl_type=0x0800, nw_dst=(0x0A000000, 0xFF000000)).minus_wc(
        field_wildcard(dl_type=0x0800, nw_dst=0x0A000001))
    assert str(hs) == "dl_type=0x0800,nw_dst=10.0.0.0/8 except [dl_type=0x0800,nw_dst=10.0.0.1]"
    assert str(HeaderSpace.all()) == "*"
    assert str(HeaderSpace()) == "(no headers)"


# =========================================================================== random networks
TOPOS = ["linear,2", "linear,3", "ring,3", "ring,4", "mesh,3", "mesh,4", "single,3", "tree,depth=2,fanout=2"]
OTHER_MAC = 0x0A0000000099
OTHER_IP = 0x0B000001


@st.composite
def matches(draw, ports, macs, ips):
    if draw(integers(0, 9)) == 0:  # an exact entry (every field): outranks all wildcards
        pkt = draw(packets(macs, ips, ()))
        return Match.exact(pkt.match_fields(draw(sample(ports))))
    fields: dict = {}
    for name in draw(st.lists(sample(FIELDS), max_size=4, unique=True)):
        if name == "in_port":
            fields[name] = draw(sample(ports + [99]))
        elif name in ("dl_src", "dl_dst"):
            fields[name] = draw(sample(macs + [0xFFFFFFFFFFFF]))
        elif name == "dl_vlan":
            fields[name] = draw(sample([0xFFFF, 5, 7]))
        elif name == "dl_vlan_pcp":
            fields[name] = draw(sample([0, 3]))
        elif name == "dl_type":
            fields[name] = draw(sample([0x0800, 0x0800, 0x0806, 0x88CC]))
        elif name == "nw_tos":
            fields[name] = draw(sample([0, 0x10]))
        elif name == "nw_proto":
            fields[name] = draw(sample([1, 6, 17, 2]))
        elif name in ("nw_src", "nw_dst"):
            fields[name] = (draw(sample(ips)), draw(sample([32, 31, 24, 8, 1])))
        else:
            fields[name] = draw(sample([80, 8, 0, 1234]))
    m = Match.build(**fields)
    if draw(integers(0, 3)) == 0:
        # POX's form: the network and transport fields not wildcarded whatever dl_type is, zero or
        # left over ("ignored fields"); they count only where their prerequisites hold.
        ignored = (ofp.OFPFW_NW_TOS | ofp.OFPFW_NW_PROTO | ofp.OFPFW_NW_SRC_MASK | ofp.OFPFW_NW_DST_MASK
                   | ofp.OFPFW_TP_SRC | ofp.OFPFW_TP_DST)
        values = list(m.values)
        for i in range(FIELDS.index("nw_tos"), len(FIELDS)):
            if not m.masks[i]:
                values[i] = draw(sample([0, 0, 6, 80]))
        m = Match(m.wildcards & ~ignored, *values)
    return m


@st.composite
def action_lists(draw, ports, macs, ips):
    out = []
    for _ in range(draw(integers(0, 3))):
        kind = draw(integers(0, 9))
        if kind <= 4:
            port = draw(sample(ports + [FLOOD, FLOOD, ALL, IN_PORT, CONTROLLER, TABLE, NORMAL, 99]))
            out.append(Output(port) if draw(integers(0, 5)) else Enqueue(
                draw(sample(ports + [IN_PORT])), 1))
        else:
            out.append(draw(sample([
                SetDlDst(draw(sample(macs))), SetDlSrc(draw(sample(macs))),
                SetNwDst(draw(sample(ips))), SetNwSrc(draw(sample(ips))),
                SetVlanVid(draw(sample([5, 7]))), SetVlanPcp(3), StripVlan(), SetTpDst(80),
                SetTpSrc(1234), SetNwTos(0x10)])))
    if out and draw(integers(0, 2)) == 0:
        out.append(Output(draw(sample(ports + [FLOOD]))))
    return tuple(out)


@st.composite
def packets(draw, macs, ips, rule_matches):
    """A well-formed packet whose fields come from the rules' values and their neighbours."""
    base = None
    if rule_matches and draw(BOOLEANS):
        base = draw(sample(rule_matches))

    def pick(name, choices):
        if base is not None:
            m = base.masks[FIELDS.index(name)]
            if m and draw(integers(0, 3)):
                v = base.values[FIELDS.index(name)]
                if name in ("nw_src", "nw_dst") and m != 0xFFFFFFFF:
                    v |= draw(sample([0, 1, (~m) & 0xFFFFFFFF]))
                return v
        return draw(sample(choices))

    nb_macs = macs + [m ^ 1 for m in macs[:2]]
    nb_ips = ips + [i ^ 1 for i in ips[:2]] + [i ^ 0x80000000 for i in ips[:1]]
    if draw(integers(0, 30)) == 0:
        return Packet(0, 0, RAW, payload=b"\x01\x02")
    src = pick("dl_src", nb_macs + [0xFFFFFFFFFFFF])
    dst = pick("dl_dst", nb_macs + [0xFFFFFFFFFFFF])
    vid = pick("dl_vlan", [0xFFFF, 0xFFFF, 5, 7, 9])
    vlan = None if vid == 0xFFFF else Vlan(vid & 0xFFF, pick("dl_vlan_pcp", [0, 3]) & 7)
    et = pick("dl_type", [0x0800, 0x0800, 0x0806, 0x88CC, 0x1234])
    if et == 0x0800:
        proto = pick("nw_proto", [1, 6, 17, 50])
        tos = pick("nw_tos", [0, 0x10, 0x11])
        ipsrc, ipdst = pick("nw_src", nb_ips), pick("nw_dst", nb_ips)
        if proto == 1:
            l4 = ICMP(pick("tp_src", [8, 0]) & 0xFF, pick("tp_dst", [0, 8]) & 0xFF)
        elif proto in (6, 17):
            a, b = pick("tp_src", [80, 1234, 8]), pick("tp_dst", [80, 1234, 8, 0])
            l4 = TCP(a, b) if proto == 6 else UDP(a, b)
        else:
            l4 = None
        return Packet(src, dst, et, vlan, IPv4(ipsrc, ipdst, proto, tos), l4, b"x")
    if et == 0x0806:
        return Packet(src, dst, et, vlan, Arp(pick("nw_proto", [1, 2]) & 0xFF, src,
                                              pick("nw_src", nb_ips), 0, pick("nw_dst", nb_ips)))
    return Packet(src, dst, et, vlan, payload=b"\x00" * 20)


@st.composite
def networks(draw):
    spec = draw(sample(TOPOS))
    net = Net(spec)
    macs = [h.mac for h in net.topo.hosts] + [OTHER_MAC]
    ips = [h.ip for h in net.topo.hosts] + [OTHER_IP]
    rule_matches = []
    for sw in net.switches.values():
        ports = sorted(sw.ports)
        for _ in range(draw(integers(0, 7))):
            m = draw(matches(ports, macs, ips))
            prio = draw(sample([0, 10, 10, 20, 0xFFFF]))
            sw.table.add(m, prio, draw(action_lists(ports, macs, ips)))
            rule_matches.append(m)
    for key in list(net.link_up):
        if draw(integers(0, 7)) == 0:
            net.set_link(key[0], key[2], False)
    for sw in net.switches.values():
        for port in sw.ports.values():
            c = draw(integers(0, 15))
            if c == 0:
                port.config |= ofp.OFPPC_NO_FLOOD
            elif c == 1:
                port.config |= ofp.OFPPC_NO_FWD
            elif c == 2:
                port.config |= ofp.OFPPC_PORT_DOWN
    for name in net.switches:
        if draw(integers(0, 12)) == 0:
            net.switch_up[name] = False
    pkts = draw(st.lists(packets(macs, ips, rule_matches), min_size=12, max_size=30))
    return net, pkts


@pytest.mark.slow
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(networks())
def test_header_space_agrees_with_concrete_packets(case):
    """For every switch port as ingress and every drawn packet: loops, drops, deliveries and
    punts per header space are exactly what the concrete packet does."""
    net, pkts = case
    view = net.view()
    hosts = [h.name for h in net.topo.hosts]
    names = list(net.switches)
    cache: dict = {}
    for sw in names:
        for port in sorted(net.switches[sw].ports):
            r = EG.reachable(view, sw, port)
            assert not r.truncated
            for pkt in pkts:
                h = pack(pkt.match_fields(port))
                want = ordered_outcome(view, sw, port, pkt)
                got = hsa_outcome(r, h, hosts, names, cache)
                assert got == want, (sw, port, pkt, str(pkt.match_fields(port)))


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(networks())
def test_batch_engine_and_general_engine_agree(case):
    net, pkts = case
    view = net.view()
    a = E.analyze(view, ingress="all", cache=False)
    g = E.analyze(view, ingress="all", batch=False, cache=False)
    assert a.ingresses == g.ingresses
    hosts = [h.name for h in net.topo.hosts]
    names = list(net.switches)
    ca: dict = {}
    cg: dict = {}
    for ing in a.ingresses:
        ra, rg = a.reach(ing), g.reach(ing)
        for pkt in pkts:
            h = pack(pkt.match_fields(ing[1]))
            assert hsa_outcome(ra, h, hosts, names, ca) == hsa_outcome(rg, h, hosts, names, cg)
    for check in (H.hsa_loops, H.hsa_blackholes):
        assert {(f.hosts, f.switches) for f in check(view, a)} == {(f.hosts, f.switches) for f in check(view, g)}
    # (a reachability finding explains itself with one witness header, which may differ)
    assert {f.hosts for f in HR.hsa_reachability(view, a)} == {f.hosts for f in HR.hsa_reachability(view, g)}


@pytest.mark.slow
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(networks())
def test_findings_agree_with_concrete_packets(case):
    """Check level: every concrete loop/drop/unreached pair is covered by a finding, and every
    finding's witness header really loops / is dropped / does not reach, as a packet."""
    net, pkts = case
    view = net.view()
    a = E.analyze(view)
    loops, holes, unreach = H.hsa_loops(view, a), H.hsa_blackholes(view, a), HR.hsa_reachability(view, a)
    comp = components(view)
    macs = {h.mac: h.name for h in net.topo.hosts}
    for ing, host in a.ingress_host.items():
        ing_text = f"{ing[0]}:{ing[1]}"
        for pkt in pkts:
            o = trace_packet(view, ing[0], ing[1], pkt)
            h = pack(pkt.match_fields(ing[1]))
            if o.loops:
                assert a.reach(ing).looping().contains(h)
                assert any(ing_text in _entered(f) for f in loops)
            dst = macs.get(pkt.eth_dst)
            counted = dst is None or (dst != host and comp.get(dst) == comp.get(ing[0]))
            if o.drops and counted:
                assert any(ing_text in _entered(f) for f in holes)
    for f in loops + holes:
        w = f.details["witness"]
        ing = tuple(f.details["ingress"].split(":"))
        pkt = _witness_packet(w)
        if pkt is None:
            continue
        o = trace_packet(view, ing[0], int(ing[1]), pkt)
        assert (o.loops if f.invariant == "loops" else o.drops), f.message
    for f in unreach:
        for pair in f.details["pairs"]:  # one finding per cause, each pair it cuts off with its own witness
            src, dst = pair["hosts"]
            s = net.topo.host(src)
            d = net.topo.host(dst)
            pkt = _witness_packet(pair["witness"])
            if pkt is None:
                continue
            assert (pkt.eth_src, pkt.eth_dst) == (s.mac, d.mac)
            sw, port = pair["ingress"].split(":")
            o = trace_packet(view, sw, int(port), pkt)
            handled = (o.punted or o.filtered) and all(controller_ok(view, x) for x in o.punted)
            assert dst not in o.delivered and not handled, f.message
    # and every connected pair whose concrete ICMP echo fails is reported
    from netsleuth.invariants.forwarding import check_packet_reachability
    concrete = {fd.hosts for fd in check_packet_reachability(view)}
    assert concrete <= {tuple(p["hosts"]) for fd in unreach for p in fd.details["pairs"]}


def _entered(f) -> set[str]:
    """The ingresses a grouped finding's headers enter at."""
    return {s["at"] for s in f.details["header_spaces"]}


def _witness_packet(w: dict | None) -> Packet | None:
    if w is None:
        return None
    from netsleuth.model.addr import ip_to_int, mac_to_int
    f = (0, mac_to_int(w["dl_src"]), mac_to_int(w["dl_dst"]), w["dl_vlan"], w["dl_vlan_pcp"], w["dl_type"],
         w["nw_tos"], w["nw_proto"], ip_to_int(w["nw_src"]), ip_to_int(w["nw_dst"]), w["tp_src"], w["tp_dst"])
    return packet_from_fields(f)


# =========================================================================== semantics, one by one
def _one():
    net = Net("single,3")
    return net, net.switches["s1"]


def _fate(net, sw, port, pkt):
    r = EG.reachable(net.view(), sw, port)
    h = pack(pkt.match_fields(port))
    return hsa_outcome(r, h, [x.name for x in net.topo.hosts], list(net.switches), {})


def _icmp(net, a, b, **kw):
    from netsleuth.model.packet import icmp_echo
    ha, hb = net.topo.host(a), net.topo.host(b)
    return icmp_echo(ha.mac, hb.mac, ha.ip, hb.ip, 1, 1)


def test_shadowing_priority_exact_and_ties():
    net, s = _one()
    pkt = _icmp(net, "h1", "h2")
    s.table.add(Match.build(dl_dst=net.mac("h2")), 10, (Output(2),))
    s.table.add(Match.build(dl_type=0x0800), 20, (Output(3),))
    assert _fate(net, "s1", 1, pkt)["delivered"] == {"h3"}           # higher priority wins
    s.table.add(Match.exact(pkt.match_fields(1)), 0, (Output(2),))
    assert _fate(net, "s1", 1, pkt)["delivered"] == {"h2"}           # exact outranks everything
    assert _fate(net, "s1", 2, _icmp(net, "h2", "h3"))["delivered"] == {"h3"}
    # equal priority, overlapping: entries() order decides, as FlowTable.peek does
    net2, s2 = _one()
    s2.table.add(Match.build(dl_type=0x0800), 5, (Output(2),))
    s2.table.add(Match.build(dl_type=0x0800, nw_proto=1), 5, (Output(3),))
    want = s2.table.peek(pkt.match_fields(1)).actions[0].port
    assert _fate(net2, "s1", 1, pkt)["delivered"] == {f"h{want}"}


def test_flood_all_in_port_and_controller():
    net, s = _one()
    pkt = _icmp(net, "h1", "h2")
    s.table.add(Match.catch_all(), 1, (Output(FLOOD),))
    assert _fate(net, "s1", 1, pkt)["delivered"] == {"h2", "h3"}
    s.ports[3].config |= ofp.OFPPC_NO_FLOOD
    assert _fate(net, "s1", 1, pkt)["delivered"] == {"h2"}
    s.table.add(Match.catch_all(), 1, (Output(ALL),))
    assert _fate(net, "s1", 1, pkt)["delivered"] == {"h2", "h3"}
    s.table.add(Match.catch_all(), 1, (Output(1),))                 # plain output to the in port
    f = _fate(net, "s1", 1, pkt)
    assert f["drop"] and not f["delivered"]
    s.table.add(Match.catch_all(), 1, (Output(IN_PORT),))
    assert _fate(net, "s1", 1, pkt)["delivered"] == {"h1"}
    s.table.add(Match.catch_all(), 1, (Output(CONTROLLER),))
    assert _fate(net, "s1", 1, pkt)["punted"] == {"s1"}
    s.table.add(Match.catch_all(), 1, ())                            # a drop rule: on purpose, no blackhole
    f = _fate(net, "s1", 1, pkt)
    assert f["filtered"] == {"s1"} and not f["drop"]
    net3, _ = _one()
    assert _fate(net3, "s1", 1, pkt)["punted"] == {"s1"}          # table miss


def test_set_field_rewrites_follow_the_copies():
    net = Net("linear,2")
    h1, h2 = net.topo.host("h1"), net.topo.host("h2")
    pkt = _icmp(net, "h1", "h2")
    # s1 rewrites nw_dst to an address s2 drops, and sends one unmodified copy to the controller first
    net.add("s1", (Output(CONTROLLER), SetNwDst(0x0B000001), Output(2)), dl_dst=h2.mac)
    net.add("s2", (), nw_dst=0x0B000001, dl_type=0x0800)
    net.add("s2", (Output(1),), priority=1, dl_dst=h2.mac)
    f = _fate(net, "s1", 1, pkt)
    assert f["punted"] == {"s1"} and f["filtered"] == {"s2"} and not f["delivered"]
    arp = Packet(h1.mac, h2.mac, 0x0806, None, Arp(1, h1.mac, h1.ip, 0, h2.ip))  # mod_nw_dst: no-op on ARP
    assert _fate(net, "s1", 1, arp)["delivered"] == {"h2"}
    delivered = EG.reachable(net.view(), "s1", 1).delivered_to("h2")
    assert delivered.contains(pack(arp.match_fields(1))) and not delivered.contains(pack(pkt.match_fields(1)))


def test_simple_switch_blackhole_after_migration_names_hosts_and_switch():
    net = Net("linear,3")
    macs = {h: net.mac(h) for h in ("h1", "h2", "h3")}
    # simple_switch-like flows: (in_port, dl_src, dl_dst) -> output
    for a, b in (("h1", "h3"), ("h3", "h1")):
        path = ["s1", "s2", "s3"] if a == "h1" else ["s3", "s2", "s1"]
        inp = 1
        for i, sw in enumerate(path):
            out = 1 if i == len(path) - 1 else net.port(sw, path[i + 1])
            net.add(sw, (Output(out),), in_port=inp, dl_src=macs[a], dl_dst=macs[b])
            if i < len(path) - 1:
                inp = net.port(path[i + 1], sw)
    view = net.view()
    assert H.check_all(view) == {"loops": [], "blackholes": [], "reachability": []}
    # h3 migrates from s3:1 to a new port s1:4; the learned flows still point at s3:1
    del net.link_up[("h3", 0, "s3", 1)]
    net.switches["s3"].remove_port(1)
    net.switches["s1"].add_port(4)
    net.link_up[("s1", 4, "h3", 0)] = True
    net.host_at["h3"] = ("s1", 4)
    out = H.check_all(net.view())
    assert out["loops"] == []
    (hole,) = out["blackholes"]
    assert hole.hosts == ("h1", "h3") and hole.switches == ("s3",)
    assert hole.details["ingress"] == "s1:1"
    assert hole.details["header_space"] == "dl_src=00:00:00:00:00:01,dl_dst=00:00:00:00:00:03"
    if "host_at" in NetworkView.__dataclass_fields__:
        assert [f.hosts for f in out["reachability"]] == [("h1", "h3")]
        assert "dropped at s3" in out["reachability"][0].message
    # the same flows with h3 merely unplugged: it is cut off, nothing could deliver to it
    net.link_up.pop(("s1", 4, "h3", 0))
    net.host_at.pop("h3")
    assert H.check_all(net.view()) == {"loops": [], "blackholes": [], "reachability": []}


def test_two_senders_behind_one_port_are_judged_each_for_itself():
    """Two hosts seen at one switch port (h2 moved onto h1's port): the pairs of both are
    judged in bulk, each from its own source, as the general engine judges them."""
    net = Net("linear,3")
    m = {h: net.mac(h) for h in ("h1", "h2", "h3")}
    net.host_at["h2"] = ("s1", 1)
    # h1 -> h3 goes to a port without a link; h2 -> h1 back out of its own in_port (not sent)
    net.add("s1", (Output(9),), priority=1, in_port=1, dl_src=m["h1"], dl_dst=m["h3"])
    net.add("s1", (Output(1),), priority=1, in_port=1, dl_src=m["h2"], dl_dst=m["h1"])
    net.add("s1", (Output(net.port("s1", "s2")),), priority=1, in_port=1, dl_src=m["h2"], dl_dst=m["h3"])
    net.add("s2", (Output(net.port("s2", "s3")),), priority=1, in_port=net.port("s2", "s1"),
            dl_src=m["h2"], dl_dst=m["h3"])
    net.add("s3", (Output(1),), priority=1, in_port=net.port("s3", "s2"), dl_src=m["h2"], dl_dst=m["h3"])
    view = net.view()
    a = E.analyze(view)
    assert a.batch.ids_at and not a.reaches  # the bulk path
    g = E.analyze(view, batch=False, cache=False)
    pairs = {f.hosts for f in HR.unreachable_pairs(view, a)}
    assert pairs == {f.hosts for f in HR.unreachable_pairs(view, g)} == {("h1", "h3"), ("h2", "h1")}
    # the incremental engine judges an ingress with two senders one sender at a time
    from netsleuth.invariants.headerspace.incremental import IncrementalHSA
    inc = IncrementalHSA().check(view)
    assert ({k: [f.message for f in v] for k, v in inc.items()}
            == {k: [f.message for f in v] for k, v in H.check_all(view).items()})


def test_ring_loop_reports_header_space_ingress_and_path():
    net = Net("ring,3")
    for sw, nxt in (("s1", "s2"), ("s2", "s3"), ("s3", "s1")):
        net.add(sw, (Output(net.port(sw, nxt)),), dl_dst=net.mac("h3"))
    (f,) = H.hsa_loops(net.view())  # one cycle, entered from every host's port
    assert _entered(f) == {"s1:1", "s2:1", "s3:1"}
    assert {s["header_space"] for s in f.details["header_spaces"]} == {"dl_dst=00:00:00:00:00:03"}
    assert f.details["path"][0] == f.details["ingress"] and f.details["path"][-1] in f.details["path"][:-1]
    assert set(f.switches) == {"s1", "s2", "s3"} and set(f.hosts) == {"h1", "h2", "h3"}
    assert f.message == "traffic to h3 loops s1 -> s2 -> s3 -> s1 (entered at 3 ports)"
    unreach = {tuple(p["hosts"]) for x in HR.hsa_reachability(net.view()) for p in x.details["pairs"]}
    assert unreach == {("h1", "h3"), ("h2", "h3")}


def test_reachability_controller_down_and_pairs_only_when_connected():
    net = Net("linear,2")
    view = net.view(alive={"c0": False})
    found = {f.hosts for f in HR.hsa_reachability(view)}
    assert found == {("h1", "h2"), ("h2", "h1")}
    assert HR.hsa_reachability(net.view()) == []  # empty tables, live controller: all delegated
    net.set_link("s1", "s2", False)
    assert HR.hsa_reachability(net.view(alive={"c0": False})) == []  # partitioned: not a violation


def test_partial_header_space_is_reported():
    """Only IPv4 to h2 is broken: the finding names that part, not all of the pair's traffic."""
    net = Net("linear,2")
    h2 = net.mac("h2")
    net.add("s1", (Output(2),), dl_dst=h2)
    net.add("s2", (Output(1),), dl_dst=h2)
    net.add("s1", (Output(9),), priority=200, dl_type=0x0800, nw_dst="10.0.0.0/8")  # s1 has no port 9
    (f,) = [f for f in HR.hsa_reachability(net.view()) if f.hosts == ("h1", "h2")]
    assert "dl_type=0x0800" in f.details["header_space"] and "dropped at s1" in f.message
    assert f.message.startswith("h1 cannot reach h2: IPv4 h1 → h2: dropped at s1")
    (b,) = [b for b in H.hsa_blackholes(net.view()) if b.details["ingress"] == "s1:1"]
    assert "nw_dst=10.0.0.0/8" in b.details["header_space"]


def test_drop_rule_is_no_blackhole_but_an_output_to_an_unattached_port_is():
    """A rule with no output is the controller choosing to drop (an ACL deny): neither a
    blackhole nor unreachable traffic.  An output to a port with nothing attached is forwarding
    that meant to deliver and delivers nowhere: a blackhole, whose message names the port."""
    net = Net("linear,2")
    h2 = net.mac("h2")
    net.add("s1", (Output(2),), dl_dst=h2)
    net.add("s2", (Output(1),), dl_dst=h2)
    net.add("s1", (), priority=200, dl_type=0x0800, nw_proto=6, tp_dst=23)  # deny telnet
    for batch in (True, False):
        a = E.analyze(net.view(), batch=batch)
        assert H.hsa_blackholes(net.view(), a) == [] and HR.hsa_reachability(net.view(), a) == []
        assert a.reach(("s1", 1)).filtered["s1"], "the deny is recorded as a deliberate drop"
    net.switches["s1"].add_port(5)  # a port with no link: nothing attached
    net.add("s1", (Output(5),), priority=300, dl_type=0x0800, nw_proto=17)
    for batch in (True, False):
        a = E.analyze(net.view(), batch=batch)
        (b,) = [b for b in H.hsa_blackholes(net.view(), a) if b.details["ingress"] == "s1:1"]
        assert "port 5 has no live link" in b.message and "nw_proto=17" in b.details["header_space"]
        assert "tp_dst=23" not in b.details["header_space"]
        (f,) = [f for f in HR.hsa_reachability(net.view(), a) if f.hosts == ("h1", "h2")]
        assert "UDP h1 → h2" in f.message and "tp_dst=23" not in f.details["header_space"]


def test_registry_adapters_share_one_analysis():
    net = Net("ring,3")
    for sw, nxt in (("s1", "s2"), ("s2", "s3"), ("s3", "s1")):
        net.add(sw, (Output(net.port(sw, nxt)),), dl_dst=net.mac("h3"))
    view = net.view()
    a = E.analyze(view)
    assert ([f.message for f in H.check_headerspace_loops(view, a)]
            == [f.message for f in H.check_headerspace_loops(view, None)])
    assert [f.message for f in H.check_headerspace_loops(view, [])] == [f.message for f in H.hsa_loops(view, a)]
    for name in ("loops", "blackholes", "reachability"):
        assert registry.REGISTRY[name].name == name


def test_compiled_switch_cache_notices_changes():
    net, s = _one()
    cs = compiled(s)
    assert compiled(s) is cs
    s.table.add(Match.catch_all(), 1, (Output(2),))
    cs2 = compiled(s)
    assert cs2 is not cs
    s.table.modify(Match.catch_all(), (Output(3),), strict=False)
    assert compiled(s) is not cs2
    cs3 = compiled(s)
    s.ports[2].link_up = False
    assert compiled(s) is not cs3


def test_compiled_switch_of_a_table_without_a_change_counter():
    """A table without ``version`` is validated by comparing its entries; once it has a
    counter again, a form compiled by scanning is replaced by one built from the table's
    pattern index, and the results stay those of a fresh compile throughout."""
    net, s = _one()
    net.add("s1", [Output(2)], priority=1, in_port=1, dl_src=0xA, dl_dst=0xB)
    t = s.table
    counter = [t.version]

    def change(op) -> None:  # the table's own methods keep the counter: lend it to them
        t.version = counter[0]
        op()
        counter[0] = t.version
        t.version = None

    t.version = None
    cs = compiled(s)
    assert compiled(s) is cs  # unchanged entries
    change(lambda: t.add(Match.build(in_port=1, dl_src=0xA, dl_dst=0xC), 1, (Output(3),)))
    cs2 = compiled(s)
    assert cs2 is not cs
    change(lambda: t.modify(Match.build(in_port=1, dl_src=0xA, dl_dst=0xC), (Output(2),), strict=True, priority=1))
    cs3 = compiled(s)
    assert cs3 is not cs2
    assert compiled(s) is cs3
    t.version = counter[0]
    cs4 = compiled(s)
    assert cs4 is not cs3 and cs4.port(1).ids is not None  # the batch engine's index again
    assert compiled(s) is cs4
    fresh = CompiledSwitch(s)
    assert cs4.port(1).code_map() == fresh.port(1).code_map()
    view = net.view()
    assert ({k: [f.message for f in v] for k, v in H.check_all(view).items()}
            == {k: [f.message for f in v] for k, v in H.check_all(view, cache=False).items()})


def test_fattree_all_pairs_is_clean_and_batched():
    import importlib.util
    import pathlib
    spec = importlib.util.spec_from_file_location(
        "bench_invariants", pathlib.Path(__file__).resolve().parents[1] / "bench" / "invariants.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    topo, switches, n = bench.build_fattree(4)
    view = bench.make_view(topo, switches)
    a = E.analyze(view)
    assert not a.reaches and not a.batch.general  # everything went through the batch engine
    assert H.hsa_loops(view, a) == [] and H.hsa_blackholes(view, a) == [] and HR.hsa_reachability(view, a) == []
    # a link from e1 up to an aggregation switch fails; flows still use it (nobody reroutes)
    e1 = switches["e1"]
    victim_port = max(e.actions[0].port for e in e1.table.entries())  # an uplink (ports k/2+1..k)
    link = [k for k in view.link_up if (k[0], k[1]) == ("e1", victim_port) or (k[2], k[3]) == ("e1", victim_port)][0]
    up = dict(view.link_up)
    up[link] = False
    view2 = bench.make_view(topo, switches, link_up=up)
    holes = H.hsa_blackholes(view2)
    other = link[2] if link[0] == "e1" else link[0]
    assert holes and all(f.switches in (("e1",), (other,)) and "no live link" in f.message for f in holes)
    assert {f.details["ingress"] for f in holes if f.switches == ("e1",)} <= {"e1:1", "e1:2"}
    assert any(f.switches == ("e1",) for f in holes) and any(f.switches == (other,) for f in holes)
    g = E.analyze(view2, batch=False, cache=False)
    assert {(f.hosts, f.switches) for f in holes} == {(f.hosts, f.switches) for f in H.hsa_blackholes(view2, g)}
    assert {f.hosts for f in HR.hsa_reachability(view2)} == {f.hosts for f in HR.hsa_reachability(view2, g)}


def _batch_outcome(a) -> dict:
    b = a.batch
    return {"delivered": {h: sorted(xs) for h, xs in b.delivered.items()},
            "punted": {s: sorted(xs) for s, xs in b.punted.items()},
            "filtered": {s: sorted(xs) for s, xs in b.filtered.items()},
            "drops": {k: sorted(xs) for k, xs in b.drops.items()}, "general": sorted(b.general)}


def test_batch_split_modes_agree_on_a_fat_tree(monkeypatch):
    """The batch engine splits a cell's classes three ways (a scatter/gather through a dense
    array, a binary search in a big table's sorted key ids, or one probe per class); forced
    one at a time on a fat tree with a failed link (so classes end delivered, punted and
    dropped), they send every class to the same place."""
    import importlib.util
    import pathlib

    from netsleuth.model.flowtable import SlotMap
    spec = importlib.util.spec_from_file_location(
        "bench_invariants", pathlib.Path(__file__).resolve().parents[1] / "bench" / "invariants.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    outcomes = []
    for vector_min, compact_min in ((1, 1 << 30), (1 << 30, 2), (1 << 30, 1 << 30)):
        monkeypatch.setattr(EB, "_VECTOR_MIN", vector_min)
        monkeypatch.setattr(SlotMap, "COMPACT_MIN", compact_min)
        topo, switches, _n = bench.build_fattree(4)
        e1 = switches["e1"]
        # an entry for traffic coming down each uplink goes: those classes now miss at e1
        for up_port in (3, 4):
            e1.table.delete(next(e for e in e1.table.entries() if e.match.in_port == up_port).match, strict=False)
        up = dict(bench.make_view(topo, switches).link_up)
        up[next(k for k in up if "e1" in (k[0], k[2]) and "a" in k[0] + k[2])] = False
        view = bench.make_view(topo, switches, link_up=up)
        a = E.analyze(view, cache=False)
        out = _batch_outcome(a)
        assert out["delivered"] and out["punted"] and out["drops"]
        outcomes.append(out)
    assert outcomes[0] == outcomes[1] == outcomes[2]


@st.composite
def changes(draw, net):
    """A few of what happens between two checks: flow_mods, link/port/switch changes."""
    macs = [h.mac for h in net.topo.hosts] + [OTHER_MAC]
    ips = [h.ip for h in net.topo.hosts] + [OTHER_IP]
    out = []
    for _ in range(draw(integers(1, 4))):
        sw = draw(sample(sorted(net.switches)))
        ports = sorted(net.switches[sw].ports)
        kind = draw(integers(0, 5))
        if kind <= 1:
            out.append(("add", sw, draw(matches(ports, macs, ips)), draw(sample([0, 10, 20])),
                        draw(action_lists(ports, macs, ips))))
        elif kind == 2:
            out.append(("modify", sw, draw(action_lists(ports, macs, ips))))
        elif kind == 3:
            out.append(("delete", sw))
        elif kind == 4:
            out.append(("link", draw(sample(sorted(net.link_up)))))
        else:
            out.append(("switch", sw))
    return out


def _apply(net, change) -> None:
    if change[0] == "add":
        _k, sw, m, prio, acts = change
        net.switches[sw].table.add(m, prio, acts)
    elif change[0] == "modify":
        t = net.switches[change[1]].table
        if len(t):
            t.modify(t.entries()[0].match, change[2], strict=False)
    elif change[0] == "delete":
        t = net.switches[change[1]].table
        if len(t):
            e = t.entries()[-1]
            t.delete(e.match, strict=True, priority=e.priority)
    elif change[0] == "link":
        key = change[1]
        net.set_link(key[0], key[2], not net.link_up[key])
    else:
        net.switch_up[change[1]] = not net.switch_up.get(change[1], True)


def _simple_switch_flows(net, data) -> None:
    """Exact (in_port, dl_src, dl_dst) flows toward random hosts: the batch engine's shape."""
    hosts = list(net.topo.hosts)
    for sw in net.switches.values():
        ports = sorted(sw.ports)
        for _ in range(data.draw(integers(0, 8))):
            a, b = data.draw(sample(hosts)), data.draw(sample(hosts))
            out = data.draw(sample(ports + [FLOOD, CONTROLLER, 99]))
            sw.table.add(Match.build(in_port=data.draw(sample(ports)), dl_src=a.mac, dl_dst=b.mac), 1,
                         (Output(out),) if data.draw(integers(0, 9)) else ())


@pytest.mark.slow
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.sampled_from(TOPOS), st.data())
def test_cached_checks_after_changes_equal_fresh_checks(spec, data):
    """Compiled switches and the batch engine's memory are reused between checks; after
    random changes the results must equal those of a fresh analysis."""
    net = Net(spec)
    if data.draw(BOOLEANS):
        _simple_switch_flows(net, data)
    else:
        macs = [h.mac for h in net.topo.hosts] + [OTHER_MAC]
        ips = [h.ip for h in net.topo.hosts] + [OTHER_IP]
        for sw in net.switches.values():
            for _ in range(data.draw(integers(0, 4))):
                sw.table.add(data.draw(matches(sorted(sw.ports), macs, ips)), 10,
                             data.draw(action_lists(sorted(sw.ports), macs, ips)))
    for _round in range(3):
        alive = {"c0": data.draw(BOOLEANS)}
        view = net.view(alive=alive)
        # fresh first: the cached check below then starts from the last cached run's memory
        # (the batch engine reuses a whole run whose inputs are unchanged; here they changed)
        fresh = {k: [(f.message, f.hosts, f.switches) for f in v]
                 for k, v in H.check_all(view, cache=False).items()}
        cached = {k: [(f.message, f.hosts, f.switches) for f in v] for k, v in H.check_all(view).items()}
        again = {k: [(f.message, f.hosts, f.switches) for f in v]
                 for k, v in H.check_all(net.view(alive=alive)).items()}  # unchanged: reused
        assert cached == fresh == again
        for ch in data.draw(changes(net)):
            _apply(net, ch)


# =========================================================================== incremental pattern index
# FlowTable.pattern_index() is maintained on every insertion and removal so that compiling a
# switch costs time per port and pattern, not per rule.  After random flow_mod and expiry
# sequences it must equal an index built from scratch from the table's entries, and switches
# compiled from it must equal switches compiled the old way (from the sorted entries).

_IDX_ACTIONS = [(Output(1),), (Output(2),), (Output(FLOOD),), (), (Output(CONTROLLER),),
                (SetDlDst(0xA), Output(2)), (Output(IN_PORT),)]


@st.composite
def _idx_matches(draw):
    """Few distinct matches, so identical matches at several priorities and several
    patterns per in_port (also from wildcarded in_port entries) are common."""
    if draw(integers(0, 3)) == 0:
        return Match.exact((draw(sample([1, 2])), 0xA, 0xB, 0xFFFF, 0, 0x88CC, 0, 0, 0, 0, 0, 0))
    fields: dict = {}
    if draw(integers(0, 3)):
        fields["in_port"] = draw(sample([1, 2, 3]))
    if draw(integers(0, 3)):
        fields["dl_src"] = draw(sample([0xA, 0xB]))
    if draw(integers(0, 3)):
        fields["dl_dst"] = draw(sample([0xB, 0xC, 0xD]))
    if draw(integers(0, 4)) == 0:
        fields["nw_dst"] = (draw(sample([0x0A000001, 0x0A000002])), draw(sample([32, 8])))
        fields["dl_type"] = 0x0800
    return Match.build(**fields)


_IDX_MATCHES = _idx_matches()   # one strategy object for every draw (see sample())


@st.composite
def _idx_ops(draw):
    ops = []
    for _ in range(draw(integers(1, 40))):
        kind = draw(integers(0, 9))
        m = draw(_IDX_MATCHES)
        prio = draw(sample([1, 5, 9]))
        acts = draw(sample(_IDX_ACTIONS))
        if draw(BOOLEANS):
            acts = tuple(list(acts))  # an equal action list, a different object
        if kind <= 4:
            ops.append(("add", m, prio, acts, draw(sample([0, 0, 2, 5])),
                        draw(sample([0, 0, 3]))))
        elif kind <= 6:
            ops.append(("modify", m, prio, acts, draw(BOOLEANS)))
        elif kind <= 8:
            ops.append(("delete", m, prio, draw(BOOLEANS), draw(sample([ofp.OFPP_NONE, 1, 2]))))
        else:
            ops.append(("expire", draw(integers(0, 6))))
    return ops


def _apply_ops(sw: Switch, ops, checkpoints) -> None:
    t = sw.table
    now = 0.0
    for n, op in enumerate(ops):
        now += 1.0
        if op[0] == "add":
            _k, m, prio, acts, idle, hard = op
            t.add(m, prio, acts, idle_timeout=idle, hard_timeout=hard, now=now)
        elif op[0] == "modify":
            _k, m, prio, acts, strict = op
            t.modify(m, acts, strict=strict, priority=prio, now=now)
        elif op[0] == "delete":
            _k, m, prio, strict, out_port = op
            t.delete(m, strict=strict, priority=prio, out_port=out_port)
        else:
            t.expire(now + op[1])
        if n in checkpoints:
            _assert_index_fresh(sw)


def _scratch_index(table) -> dict:
    """in_port -> pattern -> {interned id: winning entry}, from the sorted entries."""
    from netsleuth.invariants.headerspace.space import interner, packer
    out: dict = {}
    for e in table.entries():
        m = e.match
        ip = None if m.wildcards & ofp.OFPFW_IN_PORT else m.in_port
        pat = out.setdefault(ip, {}).setdefault(m.wildcards | ofp.OFPFW_IN_PORT, {})
        j = interner(pack(m.masks))[0][packer(m.masks)(m.values)]
        pat.setdefault(j, e)  # entries() order: the first with a key wins
    return out


def _assert_index_fresh(sw: Switch) -> None:
    from collections import Counter

    from netsleuth.invariants.headerspace.compiled import CompiledSwitch
    t = sw.table
    index = t.pattern_index()
    expected = _scratch_index(t)
    got = {ip: {w: {j: pat.winner(j) for j in pat.slot} for w, pat in by.items()}
           for ip, by in index.items()}
    assert got.keys() == expected.keys()
    assert sum(len(pat) for by in index.values() for pat in by.values()) == len(t)
    for ip, by in expected.items():
        assert got[ip].keys() == by.keys()
        for w, winners in by.items():
            assert got[ip][w] == winners
            pat = index[ip][w]
            for j in pat.slot:  # every entry with that match, best first
                assert [pat.entry(s) for s in pat.slots_of(j)] == [e for e in t.entries() if e.match == pat.match_of(j)]
            assert Counter(pat.act[s] for s in pat.slot.values()) == pat.act_count
    # compiled from the index == compiled from scratch (the old path)
    fast, slow = CompiledSwitch(sw, use_index=True), CompiledSwitch(sw, use_index=False)
    assert fast._entries is None  # nothing per rule was done
    for p in list(sw.ports) + [7]:
        a, b = fast.port(p), slow.port(p)
        assert a.fast_mask == b.fast_mask and (a.ids is None) == (b.ids is None)
        if a.ids is not None:
            assert a.code_map() == b.code_map()
            assert a.codes() == b.codes()
            assert set(a.key_ids()) == set(b.key_ids())
            for j in a.ids:
                key = interner(a.fast_mask)[1][j]
                assert fast.hit_entry(p, key) == slow.hit_entry(p, key)
        assert [(g.mask, g.best) for g in a.groups] == [(g.mask, g.best) for g in b.groups]


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_idx_ops(), st.sets(st.integers(0, 39), max_size=4))
def test_incremental_pattern_index_equals_scratch_build(ops, checkpoints):
    sw = Switch(1, [1, 2, 3], name="s1")
    _apply_ops(sw, ops, checkpoints)
    _assert_index_fresh(sw)
    copy = sw.table.copy()  # the model checker's snapshots rebuild it by insertion
    sw.table = copy
    _assert_index_fresh(sw)


def test_compiled_switch_refuses_stale_lazy_index():
    """Built lazily from the live table, a compiled switch must not answer for a table that
    changed after it was compiled (compiled() would have handed out a new one)."""
    from netsleuth.invariants.headerspace.compiled import CompiledSwitch, TableChanged
    sw = Switch(1, [1, 2], name="s1")
    sw.table.add(Match.build(in_port=1, dl_dst=0xB), 1, (Output(2),))
    cs = CompiledSwitch(sw)
    sw.table.add(Match.build(in_port=1, dl_dst=0xC), 1, (Output(2),))
    with pytest.raises(TableChanged):
        cs.port(1)
    assert compiled(sw).port(1).ids is not None
