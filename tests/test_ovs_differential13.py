"""Differential test: netsleuth's OpenFlow 1.3 pipeline against Open vSwitch.

Why: the 1.3 model (``netsleuth/model/of13``) is what controllers speaking
1.3 will be tested against, so it is checked the way the 1.0 model is: a
real switch judges many seeded random cases.  Each case is a random
multi-table pipeline (goto-table, write-metadata, apply/clear/write-actions,
groups of every type incl. chaining, VLAN and MPLS push/pop, set_field on
L2/L3/L4/ARP/IPv6/ND/MPLS fields, TTL actions, outputs to ports, IN_PORT,
FLOOD, ALL and CONTROLLER, a port that is down) installed in both the model
and a sandboxed userspace OVS (``ovs-ofctl -O OpenFlow13``), and probe
packets (IPv4 TCP/UDP/ICMP/SCTP, IPv6 TCP/UDP/ICMPv6/ND, ARP, MPLS, other
ethertypes; untagged, 802.1Q, 802.1ad+802.1Q) traced by both, plus
PACKET_OUTs (``ofproto/trace-packet-out``) whose actions include groups and
OUTPUT:TABLE into the same pipeline.  Every copy
that leaves must agree: port, Ethernet addresses, VLAN tag stack (TPID, VID,
PCP), MPLS label stack, and the IP/ARP/L4/ND fields; packet-ins also their
reason and max_len.  The probe reaches OVS as the model's wire bytes and OVS's
parse of it must equal the model's, so the frame codec and field extraction
are checked too.

Where OVS deviates from the spec, the model follows the spec and the
comparison normalizes the one deviation (the approach of the 1.0 test):

1. Action set at a table miss.  Spec 5.4: a miss with no table-miss entry
   drops the packet, and its action set with it.  OVS executes the action
   set accumulated so far.  The expectation adds what the discarded action
   set (``Result.discarded``) would have sent.
2. Packet-in reasons.  OVS's datapath action carries its internal reason,
   which it translates per connection: 6 ("explicit miss", the table-miss
   entry's output) is OFPR_NO_MATCH for an OpenFlow 1.3 controller, and
   3/4 (action set, group: reasons OpenFlow 1.4 added) are OFPR_ACTION.
   They are read that way.
3. push_vlan onto a tagged packet.  Spec 7.2.5: the new tag copies VID and
   PCP of the outer tag.  OVS sets them to 0.  Pipelines set both right
   after a push unless the match guarantees the packet is untagged (where
   both give 0), as controllers that push tags do.
4. push_mpls onto a non-MPLS packet.  Spec: label 0 and TC 0.  OVS: TC =
   low 3 bits of DSCP, label 2 for IPv6.  Pipelines set label and TC right
   after a push (and push only onto IPv4, where the TTL is the IP TTL on
   both sides).

Avoided by construction, because they are unobservable or undefined:

5. LOCAL.  OVS's FLOOD/ALL also reach the bridge's internal port; the
   model's switches have none.  Copies to LOCAL are dropped from OVS's side.
6. Output order of copies to different ports: compared as a multiset.
7. Same-priority overlapping entries (undefined in the spec): never generated.
8. Headers under an MPLS label: OVS does not parse past an MPLS label, so
   L3 fields are compared only while no label hides them, and not at all
   for probes that arrive with a label.  pop_mpls is followed by nothing
   but port outputs (OVS would recirculate, which ``ofproto/trace`` does
   not follow).
9. OVS lacks copy_ttl_in/out, PBB, ipv6_exthdr and in_phy_port matching;
   set_queue needs real queues; TTLs never reach 0 (set to >= 10, probes
   start at >= 20).  These are covered by the unit tests instead.
10. Two VLAN tags.  OVS tracks at most two tags (vlan-limit); pushing a
    third drops the innermost.  The spec sets no limit.  A pipeline either
    pushes (in one table, at most once per rule) and gets probes with at
    most one tag, or pushes nothing and also gets double-tagged probes.
11. set_field on the VLAN of an untagged packet.  OVS keeps VLAN presence
    as a bit of the TCI, which the OXM vlan_vid value carries, so setting
    vlan_vid (or vlan_pcp) on an untagged packet makes it tagged; the model,
    like the spec, rewrites only headers the packet has.  This can only
    happen in an action set (pop_vlan runs before set_field there, or a
    later table popped the tag), so write-actions set VLAN fields only
    right after their own push_vlan and never pop.
12. OUTPUT:TABLE in a packet-out.  An output sends a copy: the pipeline's
    rewrites of the submitted packet do not reach the packet-out's later
    actions.  OVS runs it like a resubmit, whose rewrites persist.  Packet-out
    lists end at their OUTPUT:TABLE.
"""

from __future__ import annotations

import ipaddress
import random
import time
from collections import Counter
from typing import Any

import pytest
from os_ken.ofproto import ofproto_v1_3 as ofp

from netsleuth.model.of13.actions import (
    Action,
    DecMplsTtl,
    DecNwTtl,
    Group,
    Output,
    PopMpls,
    PopVlan,
    PushMpls,
    PushVlan,
    SetField,
    SetMplsTtl,
    SetNwTtl,
    render_action,
)
from netsleuth.model.of13.errors import OFError
from netsleuth.model.of13.frame import Frame
from netsleuth.model.of13.groups import Bucket
from netsleuth.model.of13.headers import SCTP, ICMPv6, IPv6, MplsLabel, VlanTag
from netsleuth.model.of13.instructions import FlowContext, Instructions, check_actions
from netsleuth.model.of13.meters import Band
from netsleuth.model.of13.oxm import OxmMatch
from netsleuth.model.of13.pipeline import Emit, Pipeline13, PortState
from netsleuth.model.packet import ICMP, TCP, UDP, Arp, IPv4
from netsleuth.oracles.of13 import Copy13, HeaderState, OvsSandbox13
from netsleuth.oracles.ovs_text import OvsTraceError

SEED = 20_251_125
N_PORTS = 4
N_TABLES = 4
N_PIPELINES = 240
PROBES_PER_PIPELINE = 9
PACKET_OUTS_PER_PIPELINE = 2
MIN_CASES = 2_000

MACS = [0x000000000001, 0x000000000002, 0x0000000000AA, 0x02AB00000003, 0xFFFFFFFFFFFF]
IP4 = [int(ipaddress.IPv4Address(a)) for a in ("10.0.0.1", "10.0.0.2", "10.0.1.7", "192.168.1.1")]
IP6 = [int(ipaddress.IPv6Address(a)) for a in ("fe80::1", "fe80::2", "2001:db8::1", "2001:db8:1::5")]
TP_PORTS = [22, 53, 80, 5000]
VIDS = [1, 10, 100]
LABELS = [16, 100, 1000]


# --------------------------------------------------------------------- header views
def frame_headers(frame: Frame) -> HeaderState:
    """The model side of the comparison vocabulary (``oracles.of13.HeaderState``)."""
    tags = tuple((t.tpid, t.vid, t.pcp) for t in frame.tags)
    mpls = tuple((m.label, m.tc, m.bos, m.ttl) for m in frame.mpls)
    l3: dict[str, int] = {}
    ip, l4 = frame.l3, frame.l4
    if type(ip) is IPv4:
        l3.update(nw_src=ip.src, nw_dst=ip.dst, nw_dscp=ip.tos >> 2, nw_ecn=ip.tos & 3, nw_ttl=ip.ttl,
                  nw_proto=ip.proto)
    elif type(ip) is IPv6:
        l3.update(ipv6_src=ip.src, ipv6_dst=ip.dst, ipv6_label=ip.flabel, nw_dscp=ip.tc >> 2, nw_ecn=ip.tc & 3,
                  nw_ttl=ip.hop_limit, nw_proto=ip.proto)
    elif type(ip) is Arp:
        l3.update(arp_op=ip.op, nw_src=ip.spa, nw_dst=ip.tpa, arp_sha=ip.sha, arp_tha=ip.tha)
    if type(l4) in (TCP, UDP, SCTP):
        l3.update(tp_src=l4.src_port, tp_dst=l4.dst_port)  # type: ignore[union-attr]
    elif type(l4) in (ICMP, ICMPv6):
        l3.update(tp_src=l4.type, tp_dst=l4.code)  # type: ignore[union-attr]
        if type(l4) is ICMPv6 and l4.target is not None:
            l3["nd_target"], l3["nd_sll"], l3["nd_tll"] = l4.nd_fields()
    return HeaderState(frame.eth_src, frame.eth_dst, frame.eth_type, tags, mpls, tuple(sorted(l3.items())))


def comparable(h: HeaderState, hide_l3: bool) -> HeaderState:
    """Hide L3 while a label covers it (difference 8)."""
    if hide_l3 or h.mpls:
        return HeaderState(h.eth_src, h.eth_dst, h.eth_type, h.tags, h.mpls, None)
    return h


def model_copies(p: Pipeline13, frame: Frame, in_port: int,
                 packet_out: list[Action] | None = None) -> tuple[list[Emit], str]:
    if packet_out is None:
        result = p.process(frame, in_port, 0.0)
    else:
        result = p.packet_out(frame, in_port, packet_out, 0.0)
    emits = list(result.outputs)
    ended = result.ended
    if result.ended == "table-miss" and result.discarded:  # difference 1
        assert result.frame is not None
        extra = p.execute_actions(result.frame, in_port, result.discarded, 0.0, metadata=result.metadata)
        emits += extra.outputs
        ended = "table-miss+action-set"
    return emits, ended


def normalize_model(emits: list[Emit], hide_l3: bool) -> list[tuple[Any, ...]]:
    out = []
    for e in emits:
        ctl = e.port == ofp.OFPP_CONTROLLER
        out.append((e.port, comparable(frame_headers(e.frame), hide_l3), e.reason if ctl else -1,
                    e.max_len if ctl else -1))
    return sorted(out, key=repr)


def normalize_ovs(copies: tuple[Copy13, ...], hide_l3: bool) -> list[tuple[Any, ...]]:
    out = []
    for c in copies:
        if c.port == ofp.OFPP_LOCAL:  # difference 5
            continue
        reason = {6: ofp.OFPR_NO_MATCH, 3: ofp.OFPR_ACTION, 4: ofp.OFPR_ACTION}.get(c.reason, c.reason)  # difference 2
        out.append((c.port, comparable(c.headers, hide_l3), reason, c.max_len))
    return sorted(out, key=repr)


# --------------------------------------------------------------------- probes
def random_probe(rng: random.Random, max_tags: int) -> tuple[str, Frame]:
    kind = rng.choice(["tcp", "udp", "icmp", "sctp", "tcp6", "udp6", "icmp6", "ns", "na", "arp", "mpls", "other"])
    src, dst = rng.choice(MACS[:4]), rng.choice(MACS)
    r = rng.random()
    tags: tuple[VlanTag, ...] = ()
    if kind != "mpls" and r < 0.3 and max_tags >= 1:
        tags = (VlanTag(rng.choice(VIDS), rng.randrange(8)),)
    elif kind != "mpls" and r < 0.4 and max_tags == 2:
        tags = (VlanTag(rng.choice(VIDS), rng.randrange(8), 0, 0x88A8), VlanTag(rng.choice(VIDS), rng.randrange(8)))
    payload = b"p" * rng.randrange(12)
    ttl = rng.choice([20, 64])
    if kind in ("tcp", "udp", "icmp", "sctp"):
        proto = {"tcp": 6, "udp": 17, "icmp": 1, "sctp": 132}[kind]
        l4: Any = {"tcp": lambda: TCP(rng.choice(TP_PORTS), rng.choice(TP_PORTS), flags=2),
                   "udp": lambda: UDP(rng.choice(TP_PORTS), rng.choice(TP_PORTS)),
                   "icmp": lambda: ICMP(rng.choice([0, 8, 3]), rng.choice([0, 1]), rng.randrange(100)),
                   "sctp": lambda: SCTP(rng.choice(TP_PORTS), rng.choice(TP_PORTS), 7)}[kind]()
        ip = IPv4(rng.choice(IP4), rng.choice(IP4), proto, tos=rng.randrange(256), ttl=ttl)
        return kind, Frame(src, dst, 0x0800, tags, (), ip, l4, payload)
    if kind in ("tcp6", "udp6", "icmp6", "ns", "na"):
        tc, flabel = rng.randrange(256), rng.choice([0, 0x12345, 7])
        if kind == "tcp6":
            proto, l4 = 6, TCP(rng.choice(TP_PORTS), rng.choice(TP_PORTS), flags=2)
        elif kind == "udp6":
            proto, l4 = 17, UDP(rng.choice(TP_PORTS), rng.choice(TP_PORTS))
        elif kind == "icmp6":
            proto, l4 = 58, ICMPv6(rng.choice([128, 129]), 0, rng.randrange(1 << 16))
            payload = b""
        else:
            target = rng.choice(IP6)
            opt = (1 if kind == "ns" else 2, src.to_bytes(6, "big"))
            proto, l4 = 58, ICMPv6(135 if kind == "ns" else 136, 0, 0, target, (opt,))
            payload = b""
        ip6 = IPv6(rng.choice(IP6), rng.choice(IP6), proto, ttl, tc, flabel)
        return kind, Frame(src, dst, 0x86DD, tags, (), ip6, l4, payload)
    if kind == "arp":
        op = rng.choice([1, 2])
        return kind, Frame(src, dst, 0x0806, tags, (), Arp(op, src, rng.choice(IP4), 0 if op == 1 else dst,
                                                              rng.choice(IP4)))
    if kind == "mpls":
        inner = Frame(0, 0, 0x0800, (), (), IPv4(rng.choice(IP4), rng.choice(IP4), 17, ttl=40),
                      UDP(rng.choice(TP_PORTS), 53), b"m")
        label = MplsLabel(rng.choice(LABELS), rng.randrange(8), 1, rng.choice([30, 64]))
        return kind, Frame(src, dst, 0x8847, (), (label,), payload=inner.l3_bytes())
    return kind, Frame(src, dst, 0x88B5, tags, payload=bytes(rng.randrange(256) for _ in range(30)))


# --------------------------------------------------------------------- pipelines
def random_match(rng: random.Random, table: int) -> dict[str, Any]:
    """A random match: layer 2 fields, then an eth_type and the fields of that protocol.

    The helpers fill ``f`` in place, in a fixed order, so a seed gives the same matches.
    """
    f = _random_l2_fields(rng, table)
    et = rng.choice([None, None, 0x0800, 0x0800, 0x0800, 0x86DD, 0x86DD, 0x0806, 0x8847])
    if et is None:
        return f
    f["eth_type"] = et
    if et == 0x0800:
        _random_ipv4_fields(rng, f)
    elif et == 0x86DD:
        _random_ipv6_fields(rng, f)
    elif et == 0x0806:
        _random_arp_fields(rng, f)
    else:
        _random_mpls_fields(rng, f)
    return f


def _random_l2_fields(rng: random.Random, table: int) -> dict[str, Any]:
    f: dict[str, Any] = {}
    if rng.random() < 0.25:
        f["in_port"] = rng.randint(1, N_PORTS)
    if table and rng.random() < 0.35:
        value = rng.choice([0, 1, 2, 5])
        f["metadata"] = (value, rng.choice([0xFF, 0xF, 0x7])) if value < 8 else value
    if rng.random() < 0.12:
        f["eth_dst"] = rng.choice(MACS)
    if rng.random() < 0.06:
        f["eth_src"] = (rng.choice(MACS) & 0xFFFFFF000000, 0xFFFFFF000000)
    if rng.random() < 0.3:
        vid = rng.choice([0, (0x1000, 0x1000), 0x1000 | rng.choice(VIDS)])
        f["vlan_vid"] = vid
        if vid and rng.random() < 0.3:
            f["vlan_pcp"] = rng.randrange(8)
    return f


def _random_ipv4_fields(rng: random.Random, f: dict[str, Any]) -> None:
    for name in ("ipv4_src", "ipv4_dst"):
        if rng.random() < 0.3:
            f[name] = f"{ipaddress.IPv4Address(rng.choice(IP4))}/{rng.choice([8, 24, 32])}"
    if rng.random() < 0.1:
        f["ip_dscp"] = rng.randrange(64)
    if rng.random() < 0.1:
        f["ip_ecn"] = rng.randrange(4)
    if rng.random() < 0.5:
        proto = rng.choice([6, 17, 1, 132])
        f["ip_proto"] = proto
        if proto == 1:
            if rng.random() < 0.4:
                f["icmpv4_type"] = rng.choice([0, 8, 3])
        else:
            prefix = {6: "tcp", 17: "udp", 132: "sctp"}[proto]
            for side in ("src", "dst"):
                if rng.random() < 0.35:
                    f[f"{prefix}_{side}"] = rng.choice(TP_PORTS)


def _random_ipv6_fields(rng: random.Random, f: dict[str, Any]) -> None:
    for name in ("ipv6_src", "ipv6_dst"):
        if rng.random() < 0.3:
            f[name] = f"{ipaddress.IPv6Address(rng.choice(IP6))}/{rng.choice([16, 64, 128])}"
    if rng.random() < 0.1:
        f["ipv6_flabel"] = (rng.choice([0, 0x12345, 7]) & 0xF, 0xF)
    if rng.random() < 0.5:
        proto = rng.choice([6, 17, 58, 58])
        f["ip_proto"] = proto
        if proto == 58 and rng.random() < 0.6:
            t = rng.choice([128, 135, 136])
            f["icmpv6_type"] = t
            if t in (135, 136) and rng.random() < 0.4:
                f["ipv6_nd_target"] = str(ipaddress.IPv6Address(rng.choice(IP6)))
            if t == 135 and rng.random() < 0.3:
                f["ipv6_nd_sll"] = rng.choice(MACS[:4])
        elif proto in (6, 17) and rng.random() < 0.4:
            f[("tcp" if proto == 6 else "udp") + "_dst"] = rng.choice(TP_PORTS)


def _random_arp_fields(rng: random.Random, f: dict[str, Any]) -> None:
    if rng.random() < 0.4:
        f["arp_op"] = rng.choice([1, 2])
    if rng.random() < 0.3:
        f["arp_tpa"] = f"{ipaddress.IPv4Address(rng.choice(IP4))}/{rng.choice([24, 32])}"


def _random_mpls_fields(rng: random.Random, f: dict[str, Any]) -> None:
    if rng.random() < 0.5:
        f["mpls_label"] = rng.choice(LABELS)
    if rng.random() < 0.2:
        f["mpls_tc"] = rng.randrange(8)
    if rng.random() < 0.2:
        f["mpls_bos"] = 1


class Gen:
    """Random instructions that are consistent with their match (the model's own check confirms)."""

    def __init__(self, rng: random.Random, groups: list[int], push_table: int | None, meters: list[int]) -> None:
        self.rng = rng
        self.groups = groups
        self.meters = meters
        self.push_table = push_table   # difference 10: the one table that may push a VLAN tag
        self.table = 0

    def output(self) -> Action:
        rng = self.rng
        return rng.choice([
            lambda: Output(rng.randint(1, N_PORTS)), lambda: Output(rng.randint(1, N_PORTS)),
            lambda: Output(N_PORTS + 1), lambda: Output(ofp.OFPP_IN_PORT), lambda: Output(ofp.OFPP_FLOOD),
            lambda: Output(ofp.OFPP_ALL), lambda: Output(ofp.OFPP_CONTROLLER, rng.choice([128, 0xFFFF])),
        ] + ([lambda: Group(rng.choice(self.groups))] if self.groups else []))()

    def header_actions(self, ctx: FlowContext, untagged: bool, pushed: list[bool], in_write: bool) -> list[Action]:
        """One macro of header actions valid in ``ctx`` (updated)."""
        rng = self.rng
        et = ctx.exact.get("eth_type")
        proto = ctx.exact.get("ip_proto")
        choices: list[Any] = [
            lambda: [SetField("eth_src", rng.choice(MACS[:4]))], lambda: [SetField("eth_dst", rng.choice(MACS))],
        ]
        if not pushed[0] and self.table == self.push_table:
            choices.append("push_vlan")
        if ctx.tagged and not in_write:  # difference 11
            choices += ["pop_vlan", lambda: [SetField("vlan_vid", 0x1000 | rng.choice(VIDS))],
                        lambda: [SetField("vlan_pcp", rng.randrange(8))]]
        if et in (0x0800, 0x86DD):
            choices += [lambda: [DecNwTtl()], lambda: [SetNwTtl(rng.randint(10, 99))],
                        lambda: [SetField("ip_dscp", rng.randrange(64))],
                        lambda: [SetField("ip_ecn", rng.randrange(4))]]
        if et == 0x0800:
            choices += [lambda: [SetField("ipv4_src", rng.choice(IP4))],
                        lambda: [SetField("ipv4_dst", rng.choice(IP4))]]
            if not pushed[1]:
                choices.append("push_mpls")
            if proto in (6, 17, 132):
                name = {6: "tcp", 17: "udp", 132: "sctp"}[proto]
                choices.append(lambda: [SetField(f"{name}_{rng.choice(['src', 'dst'])}", rng.choice(TP_PORTS))])
            if proto == 1:
                choices.append(lambda: [SetField(rng.choice(["icmpv4_type", "icmpv4_code"]), rng.randrange(4))])
        if et == 0x86DD:
            choices += [lambda: [SetField("ipv6_src", rng.choice(IP6))],
                        lambda: [SetField("ipv6_dst", rng.choice(IP6))],
                        lambda: [SetField("ipv6_flabel", rng.choice([1, 0xABCDE]))]]
            if proto in (6, 17):
                choices.append(lambda: [SetField(("tcp" if proto == 6 else "udp") + "_src", rng.choice(TP_PORTS))])
            if ctx.exact.get("icmpv6_type") in (135, 136):
                choices.append(lambda: [SetField("ipv6_nd_target", rng.choice(IP6))])
            if ctx.exact.get("icmpv6_type") == 135:
                choices.append(lambda: [SetField("ipv6_nd_sll", rng.choice(MACS[:4]))])
        if et == 0x0806:
            choices += [lambda: [SetField("arp_op", rng.choice([1, 2]))],
                        lambda: [SetField("arp_spa", rng.choice(IP4))],
                        lambda: [SetField("arp_tha", rng.choice(MACS[:4]))]]
        if et == 0x8847:
            choices += [lambda: [DecMplsTtl()], lambda: [SetMplsTtl(rng.randint(10, 99))],
                        lambda: [SetField("mpls_label", rng.choice(LABELS))],
                        lambda: [SetField("mpls_tc", rng.randrange(8))]]
        pick = rng.choice(choices)
        acts: list[Action]
        if pick == "push_vlan":
            pushed[0] = True
            acts = [PushVlan(rng.choice([0x8100, 0x8100, 0x88A8]))]
            if not untagged or in_write or rng.random() < 0.5:  # differences 3 and 11
                acts += [SetField("vlan_vid", 0x1000 | rng.choice(VIDS)), SetField("vlan_pcp", rng.randrange(8))]
        elif pick == "push_mpls":  # difference 4
            pushed[1] = True
            acts = [PushMpls(0x8847), SetField("mpls_label", rng.choice(LABELS)), SetField("mpls_tc", rng.randrange(8))]
        elif pick == "pop_vlan":
            acts = [PopVlan()]
        else:
            acts = pick()
        # What the actions leave guaranteed (a tag pushed or popped, MPLS making L3 unknown) is the
        # model's reading, which also confirms each action is consistent with the match so far.
        check_actions(acts, ctx, group_exists=lambda _gid: True)
        return acts

    def action_list(self, ctx: FlowContext, untagged: bool, n: int, pushed: list[bool],
                    in_write: bool = False) -> list[Action]:
        acts: list[Action] = []
        for _ in range(n):
            if self.rng.random() < 0.4:
                acts.append(self.output())
            else:
                acts += self.header_actions(ctx, untagged, pushed, in_write)
        return acts

    def instructions(self, match: OxmMatch, table: int) -> Instructions:
        rng = self.rng
        self.table = table
        ctx = FlowContext.of_match(match)
        vid = match.get("vlan_vid")
        untagged = vid == (0, 0x1FFF)
        pushed = [False, False]
        apply = self.action_list(ctx, untagged, rng.choice([0, 1, 2, 2, 3, 4]), pushed)
        goto = rng.randint(table + 1, N_TABLES - 1) if table < N_TABLES - 1 and rng.random() < 0.55 else None
        if ctx.exact.get("eth_type") == 0x8847 and table == 0 and goto is None and rng.random() < 0.5:
            # Difference 8: after pop_mpls OVS recirculates for anything but a
            # plain output or an L2 rewrite (a packet-in, an instruction, a
            # non-empty action set), so pop_mpls ends table 0's apply-actions
            # (the action set is still empty there) followed by port outputs only.
            outs = [Output(rng.choice([1, 2, 3, 4, ofp.OFPP_IN_PORT, ofp.OFPP_FLOOD]))
                    for _ in range(rng.randint(1, 2))]
            return Instructions(apply=tuple([*apply, PopMpls(0x0800), *outs]))
        clear = rng.random() < 0.15
        write = None
        if rng.random() < 0.45:
            write = tuple(self.action_list(ctx, untagged, rng.choice([1, 1, 2, 3]), pushed, in_write=True))
        metadata = None
        if goto is not None and rng.random() < 0.5:
            value = rng.choice([0, 1, 2, 5, 0x10])
            metadata = (value, rng.choice([0xFF, 0xF, 0x7, 0xFFFFFFFFFFFFFFFF]) | value)
        meter = rng.choice(self.meters) if self.meters and rng.random() < 0.3 else None
        return Instructions(meter=meter, apply=tuple(apply) if apply else None, clear=clear, write=write,
                            metadata=metadata, goto=goto)


def random_group(rng: random.Random, gid: int, earlier: list[int],
                 ff_groups: list[int]) -> tuple[int, list[Bucket]]:
    gtype = rng.choice([ofp.OFPGT_ALL, ofp.OFPGT_ALL, ofp.OFPGT_INDIRECT, ofp.OFPGT_FF, ofp.OFPGT_SELECT]
                       + [ofp.OFPGT_FF] * 2 * bool(ff_groups))  # chains of FAST_FAILOVER groups, too
    n = {ofp.OFPGT_ALL: rng.randint(1, 3), ofp.OFPGT_INDIRECT: 1, ofp.OFPGT_FF: rng.randint(1, 3),
         ofp.OFPGT_SELECT: 1}[gtype]
    if gtype == ofp.OFPGT_SELECT and rng.random() < 0.5:
        # Several buckets with the same actions: whichever the hash picks, the outcome is the same.
        acts = (SetField("eth_src", rng.choice(MACS[:4])), Output(rng.randint(1, N_PORTS)))
        return gtype, [Bucket(acts, rng.randint(1, 5)) for _ in range(rng.randint(2, 3))]
    buckets = []
    for _ in range(n):
        acts: list[Action] = []
        for _ in range(rng.randint(0, 2)):
            acts.append(rng.choice([
                lambda: SetField("eth_src", rng.choice(MACS[:4])), lambda: SetField("eth_dst", rng.choice(MACS)),
                lambda: SetField("ipv4_dst", rng.choice(IP4)), lambda: SetField("tcp_dst", rng.choice(TP_PORTS)),
                lambda: DecNwTtl(),
            ])())
        if earlier and rng.random() < 0.25:
            acts.append(Group(rng.choice(earlier)))
        else:
            acts.append(rng.choice([Output(rng.randint(1, N_PORTS)), Output(rng.randint(1, N_PORTS)),
                                    Output(ofp.OFPP_IN_PORT), Output(ofp.OFPP_CONTROLLER, 200)]))
        weight = rng.randint(1, 10) if gtype == ofp.OFPGT_SELECT else 0
        watch, watch_group = ofp.OFPP_ANY, ofp.OFPG_ANY
        if gtype == ofp.OFPGT_FF:
            if ff_groups and rng.random() < 0.6:
                watch_group = rng.choice(ff_groups)  # live while one of its buckets is
            else:
                watch = rng.randint(1, N_PORTS)
        buckets.append(Bucket(tuple(acts), weight, watch, watch_group))
    return gtype, buckets


def random_pipeline(rng: random.Random, down: set[int],
                    push_table: int | None) -> tuple[Pipeline13, list[str], list[str], list[str], Counter[str]]:
    stats: Counter[str] = Counter()
    p = Pipeline13(N_TABLES, {i: PortState(live=i not in down) for i in range(1, N_PORTS + 1)}, seed=SEED)
    group_lines: list[str] = []
    groups: list[int] = []
    ff_groups: list[int] = []
    for gid in range(1, rng.randint(0, 4) + 1):
        gtype, buckets = random_group(rng, gid, groups, ff_groups)
        p.add_group(gid, gtype, buckets)
        group_lines.append(p.groups.groups[gid].render())
        groups.append(gid)
        if gtype == ofp.OFPGT_FF:
            ff_groups.append(gid)
        stats[f"group:{gtype}"] += 1
        stats["group:watch_group"] += sum(b.watch_group != ofp.OFPG_ANY for b in buckets)
        stats["group:select-many"] += gtype == ofp.OFPGT_SELECT and len(buckets) > 1
    meters: list[int] = []
    meter_lines: list[str] = []
    if rng.random() < 0.3:
        # A meter no probe can exceed (OVS meters on its wall clock, the model on the injected
        # one): what is compared is that a meter instruction changes nothing else.
        p.add_meter(1, ofp.OFPMF_KBPS | ofp.OFPMF_BURST, [Band(ofp.OFPMBT_DROP, 10_000_000, 10_000_000)])
        meter_lines.append("meter=1,kbps,burst,band=type=drop,rate=10000000,burst_size=10000000")
        meters.append(1)
    gen = Gen(rng, groups, push_table, meters)
    flow_lines: list[str] = []
    for table in range(N_TABLES):
        installed: list[tuple[OxmMatch, int]] = []
        for _ in range(rng.randint(1, 5)):
            match = OxmMatch.build(**random_match(rng, table))
            priority = rng.choice([1, 10, 10, 100, 1000])
            while any(q == priority and m.overlaps(match) for m, q in installed):  # difference 7
                priority = rng.randint(1, 0xFFFF)
            inst = gen.instructions(match, table)
            try:
                p.add_flow(table, match, priority, inst, cookie=rng.randrange(1 << 16))
            except OFError as exc:
                stats["rejected-by-model:" + exc.name] += 1
                continue
            installed.append((match, priority))
            text = str(match)
            flow_lines.append(f"table={table},priority={priority}" + (f",{text}" if text else "")
                              + f",actions={inst.render()}")
        if rng.random() < 0.5:
            inst = rng.choice([Instructions.actions(Output(ofp.OFPP_CONTROLLER, 0xFFFF)), Instructions(),
                               Instructions(goto=min(table + 1, N_TABLES - 1)) if table < N_TABLES - 1
                               else Instructions.actions(Output(1))])
            p.add_flow(table, OxmMatch(), 0, inst)
            flow_lines.append(f"table={table},priority=0,actions={inst.render()}")
            stats["table-miss-entry"] += 1
    return p, flow_lines, group_lines, meter_lines, stats


def random_packet_out(rng: random.Random, groups: list[int], in_port: int) -> list[Action]:
    """A PACKET_OUT action list valid for any packet; OUTPUT:TABLE runs the pipeline from table 0."""
    acts: list[Action] = []
    pushed = False
    for _ in range(rng.randint(1, 4)):
        pick = rng.randrange(7)
        if pick == 0:
            acts.append(SetField(rng.choice(["eth_src", "eth_dst"]), rng.choice(MACS[:4])))
        elif pick == 1 and not pushed:
            pushed = True
            acts += [PushVlan(), SetField("vlan_vid", 0x1000 | rng.choice(VIDS)),
                     SetField("vlan_pcp", rng.randrange(8))]
        elif pick == 2 and groups:
            acts.append(Group(rng.choice(groups)))
        elif pick in (3, 4):
            acts.append(Output(ofp.OFPP_TABLE))
            return acts  # difference 12: nothing after OUTPUT:TABLE
        else:
            ports = [1, 2, 3, 4, ofp.OFPP_FLOOD, ofp.OFPP_ALL, ofp.OFPP_CONTROLLER]
            if in_port != ofp.OFPP_CONTROLLER:
                ports.append(ofp.OFPP_IN_PORT)
            acts.append(Output(rng.choice(ports), 100))
    return acts


# --------------------------------------------------------------------- the test
@pytest.mark.real
def test_of13_pipeline_forwards_like_ovs(tmp_path) -> None:
    rng = random.Random(SEED)
    counts: Counter[str] = Counter()
    failures: list[str] = []
    started = time.monotonic()
    with OvsSandbox13(tmp_path, ports=N_PORTS) as ovs:
        down_now: set[int] = set()
        for _ in range(N_PIPELINES):
            down = {rng.randint(1, N_PORTS)} if rng.random() < 0.3 else set()
            for port in sorted(down ^ down_now):
                ovs.set_port_up(port, port not in down)
            down_now = down
            push_table = rng.randrange(N_TABLES) if rng.random() < 0.6 else None
            pipeline, flows, groups, meters, stats = random_pipeline(rng, down, push_table)
            counts.update(stats)
            counts["meters"] += bool(meters)
            ovs.replace_pipeline(flows, groups, meters)
            for probe in range(PROBES_PER_PIPELINE + PACKET_OUTS_PER_PIPELINE):
                kind, frame = random_probe(rng, 1 if push_table is not None else 2)
                in_port = rng.randint(1, N_PORTS)
                packet_out: list[Action] | None = None
                if probe >= PROBES_PER_PIPELINE:
                    # A PACKET_OUT instead of an arriving packet (the tag budget of
                    # difference 10 allows one push, so its probe is untagged).
                    kind, frame = random_probe(rng, 0)
                    in_port = rng.choice([ofp.OFPP_CONTROLLER, rng.randint(1, N_PORTS)])
                    packet_out = random_packet_out(rng, [g for g in range(1, 5) if pipeline.groups.exists(g)],
                                                   in_port)
                    kind = "packet-out"
                try:
                    tpids = tuple(t.tpid for t in frame.tags)
                    if packet_out is None:
                        got = ovs.trace13(in_port, frame.to_bytes(), tpids)
                    else:
                        text = ",".join(render_action(a) for a in packet_out)
                        got = ovs.trace_packet_out13(in_port, frame.to_bytes(), text, tpids)
                except OvsTraceError as exc:
                    failures.append(f"probe {kind} {frame.summary()} in_port={in_port}: {exc.problem}\n"
                                    f"  groups:\n    " + "\n    ".join(groups) + "\n  flows:\n    "
                                    + "\n    ".join(flows) + f"\n  trace:\n{exc.details}")
                    continue
                hide = bool(frame.mpls)
                emits, ended = model_copies(pipeline, frame, in_port, packet_out)
                expected = normalize_model(emits, hide)
                actual = normalize_ovs(got.copies, hide)
                parsed_same = comparable(got.initial, hide) == comparable(frame_headers(frame), hide)
                counts["cases"] += 1
                counts["kind:" + kind] += 1
                counts[f"tags:{len(frame.tags)}"] += 1
                counts["ended:" + ended] += 1
                counts["copies:" + ("0" if not emits else "1" if len(emits) == 1 else "many")] += 1
                for e in emits:
                    out = frame_headers(e.frame)
                    counts["out:controller" if e.port == ofp.OFPP_CONTROLLER else "out:port"] += 1
                    counts["out:modified" if out != frame_headers(frame) else "out:unmodified"] += 1
                    counts[f"out:tags:{len(out.tags)}"] += 1
                    if out.mpls:
                        counts["out:mpls"] += 1
                path = pipeline_path(pipeline, frame, in_port) if packet_out is None else []
                if len({t for t, _ in path}) > 1:
                    counts["multi-table"] += 1
                if any(e is not None and e.instructions.meter for _, e in path):
                    counts["metered"] += 1
                if expected != actual or not parsed_same:
                    failures.append(
                        f"probe {kind} {frame.summary()} in_port={in_port} down={sorted(down)}\n"
                        f"  packet-out actions: {packet_out}\n"
                        f"  groups:\n    " + "\n    ".join(groups) + "\n  flows:\n    " + "\n    ".join(flows) + "\n"
                        f"  netsleuth ({ended}): {expected}\n  ovs:       {actual}\n"
                        f"  parsed same: {parsed_same} (ovs {got.initial} model {frame_headers(frame)})\n"
                        f"  trace:\n{got.trace_text}")
    elapsed = time.monotonic() - started
    print(f"\n{counts['cases']} cases in {elapsed:.1f}s; " + ", ".join(f"{k}={v}" for k, v in sorted(counts.items())))
    if failures:
        (tmp_path / "failures.txt").write_text("\n\n".join(failures))
    assert not failures, (f"{len(failures)} of {counts['cases']} cases disagree (all in {tmp_path}/failures.txt); "
                          "first:\n" + "\n".join(failures[:2]))
    assert counts["cases"] >= MIN_CASES
    for category in ("kind:packet-out", "kind:tcp", "kind:udp6", "kind:ns", "kind:na", "kind:arp", "kind:mpls",
                     "kind:sctp", "tags:2",
                     "ended:table-miss", "ended:done", "ended:table-miss+action-set", "multi-table", "out:controller",
                     "out:port", "out:modified", "out:mpls", "out:tags:2", "copies:many", "group:1", "group:2",
                     "group:3", "group:0", "group:watch_group", "group:select-many", "metered",
                     "table-miss-entry"):
        assert counts[category] >= 20, f"too few cases of {category}: {counts[category]} (generator drifted)"


def pipeline_path(p: Pipeline13, frame: Frame, in_port: int) -> list[tuple[int, Any]]:
    """The tables a probe visits (for coverage counting; counters are not asserted)."""
    return p.process(frame, in_port, 0.0).path
