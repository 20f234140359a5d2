"""Differential tests: the switch model answers POX's messages as Open vSwitch does.

POX gar depends on four behaviours of Open vSwitch; each is checked here
against a sandboxed OVS (netsleuth/oracles/), the same wire bytes going to
both: OVS over its management socket, the model through the codec.

1. Match prerequisites.  POX sends OpenFlow 1.0 matches with dl_type
   wildcarded but the network and transport fields zero and not
   wildcarded; OVS ignores a field whose prerequisite is absent.  Random
   rules un-wildcard such fields (zero or garbage) in every combination,
   exact rules carry garbage in their ignored fields, and random packets are
   traced through both tables (the decisions of tests/test_ovs_differential.py).
2. An empty PACKET_OUT (no buffer, no data) is accepted and sends nothing.
3. An unknown buffer id draws BAD_REQUEST/BUFFER_UNKNOWN, and on a switch
   without buffers (OVS since 2.7) a FLOW_MOD naming one is not installed.
   (The ids the model's ``--buffer-packets`` hands out, and the older OVS
   that installed such a FLOW_MOD before reporting the buffer, have no
   counterpart here.)
4. A table size: an ADD on a full table is refused with
   FLOW_MOD_FAILED/ALL_TABLES_FULL, replacing or modifying an entry is not.
"""

from __future__ import annotations

import random
import struct
from typing import Any

import pytest
from os_ken.ofproto import ofproto_v1_0 as ofp
from os_ken.ofproto import ofproto_v1_0_parser as P
from test_ovs_differential import (
    N_PORTS,
    decide,
    from_ovs,
    random_actions,
    random_packet,
    random_wildcard_match,
    surely_disjoint,
)

from netsleuth.model.actions import action_to_ofp
from netsleuth.model.addr import mac_to_bytes
from netsleuth.model.match import FIELDS, Match
from netsleuth.model.ofdp import DATAPATH as DP
from netsleuth.model.switch import NO_BUFFER, Emit, Switch, ToController
from netsleuth.openflow import codec
from netsleuth.oracles.ovs import OvsSandbox

pytestmark = pytest.mark.real

SEED = 20_261_129
TABLES = 80
PACKETS_PER_TABLE = 20
IGNORABLE = (("nw_tos", ofp.OFPFW_NW_TOS), ("nw_proto", ofp.OFPFW_NW_PROTO), ("nw_src", ofp.OFPFW_NW_SRC_MASK),
             ("nw_dst", ofp.OFPFW_NW_DST_MASK), ("tp_src", ofp.OFPFW_TP_SRC), ("tp_dst", ofp.OFPFW_TP_DST))
GARBAGE = {"nw_tos": [0x20, 0xB8], "nw_proto": [6, 17, 1], "nw_src": [0x0A000001, 0xC0A80101],
           "nw_dst": [0x0A000002, 0x0A000107], "tp_src": [80, 53], "tp_dst": [22, 443]}


def wire_match(wildcards: int, values: list[int]) -> Any:
    """An os-ken OFPMatch with exactly these wildcards and values (nothing normalized)."""
    kw = dict(zip(FIELDS, values, strict=True))
    kw["dl_src"], kw["dl_dst"] = mac_to_bytes(kw["dl_src"]), mac_to_bytes(kw["dl_dst"])
    return P.OFPMatch(wildcards=wildcards, **kw)


def pox_style(rng: random.Random, m: Match) -> Any:
    """``m`` with some of its wildcarded network/transport fields sent as POX sends them: not wildcarded,
    zero or left over."""
    wc, values = m.wildcards, list(m.values)
    for name, bits in IGNORABLE:
        if wc & bits and rng.random() < 0.6:
            wc &= ~bits
            values[FIELDS.index(name)] = 0 if rng.random() < 0.6 else rng.choice(GARBAGE[name])
    return wire_match(wc, values)


def exact_with_garbage(rng: random.Random, fields: tuple[int, ...]) -> Any:
    """A no-wildcard match of a packet's 12-tuple, with garbage where the packet has no such field."""
    values = list(fields)
    for name, _bits in IGNORABLE:
        i = FIELDS.index(name)
        probe = Match(0, *[v if j != i else v ^ 1 for j, v in enumerate(values)])
        if probe == Match(0, *values) and rng.random() < 0.5:  # ignored here: OVS must not look at it
            values[i] = rng.choice(GARBAGE[name])
    return wire_match(0, values)


def flow_mod(match: Any, priority: int, actions: list, **kw: Any) -> Any:
    return P.OFPFlowMod(DP, match=match, cookie=0, command=kw.pop("command", ofp.OFPFC_ADD), idle_timeout=0,
                        hard_timeout=0, priority=priority, buffer_id=kw.pop("buffer_id", NO_BUFFER),
                        out_port=ofp.OFPP_NONE, flags=0, actions=[action_to_ofp(a) for a in actions])


def random_rules(rng: random.Random, seeds: list[tuple[int, Any]]) -> tuple[list[Any], set[Match]]:
    """FLOW_MODs without identical-priority overlaps (undefined) and with each exact match once; and the
    matches whose wire form fixed a field that has no prerequisite there."""
    msgs: list[Any] = []
    placed: list[tuple[Match, int]] = []
    ignoring: set[Match] = set()
    for _ in range(rng.randint(2, 10)):
        if rng.random() < 0.3:
            port, pkt = rng.choice(seeds)
            om = exact_with_garbage(rng, pkt.match_fields(port))
        else:
            om = pox_style(rng, random_wildcard_match(rng))
        m = Match.from_ofp(om)
        if m.is_exact():
            if any(m == q for q, _ in placed):
                continue
            priority = rng.randint(0, 0xFFFF)
        else:
            priority = rng.choice([0, 10, 100, 1000, 65534])
            while any(not q.is_exact() and p == priority and not surely_disjoint(q, m) for q, p in placed):
                priority = rng.randint(0, 0xFFFE)
        placed.append((m, priority))
        msgs.append(flow_mod(om, priority, random_actions(rng, m)))
        if om.wildcards != m.wildcards or Match.from_ofp(wire_match(0, list(m.values))) != Match(0, *m.values) \
                or any(getattr(om, f) != getattr(m, f) for f in ("nw_tos", "nw_proto", "tp_src", "tp_dst")):
            ignoring.add(m)
    return msgs, ignoring


Errors = list[list[tuple[int, int]]]


def both(ovs: OvsSandbox, sw: Switch, msgs: list[Any]) -> tuple[Errors, Errors, list[list[Emit]]]:
    """Send ``msgs`` to OVS and to the model: per message, each side's ERRORs (type, code), and the model's
    dataplane output."""
    wire = [codec.encode(m) for m in msgs]
    ovs_errors = [[struct.unpack_from("!HH", body) for mtype, body in replies if mtype == ofp.OFPT_ERROR]
                  for replies in ovs.openflow_exchange(wire)]
    model_errors, emits = [], []
    for data in wire:
        out = sw.handle_message(0, codec.decode(data), 0.0)
        model_errors.append([(o.msg.type, o.msg.code) for o in out
                             if isinstance(o, ToController) and isinstance(o.msg, P.OFPErrorMsg)])
        emits.append([o for o in out if isinstance(o, Emit)])
    return ovs_errors, model_errors, emits


@pytest.mark.slow
def test_pox_style_matches_forward_like_ovs(tmp_path) -> None:
    rng = random.Random(SEED)
    ports = list(range(1, N_PORTS + 1))
    failures: list[str] = []
    cases = ignored_hits = 0
    with OvsSandbox(tmp_path, ports=N_PORTS) as ovs:
        for _ in range(TABLES):
            pool = [random_packet(rng)[1] for _ in range(PACKETS_PER_TABLE)]
            seeds = [(rng.randint(1, N_PORTS), pkt) for pkt in pool]
            msgs, ignoring = random_rules(rng, seeds)
            ovs.replace_flows([])
            sw = Switch(1, ports, openflow="1.0")
            ovs_errors, model_errors, _ = both(ovs, sw, msgs)
            assert ovs_errors == model_errors
            for i, pkt in enumerate(pool):
                in_port = seeds[i][0] if rng.random() < 0.5 else rng.randint(1, N_PORTS)
                expected = decide(sw.table, pkt, in_port, ports)
                got = from_ovs(ovs.trace(in_port, pkt))
                cases += 1
                entry = sw.table.peek(pkt.match_fields(in_port))
                ignored_hits += entry is not None and entry.match in ignoring
                if got != expected:
                    failures.append(f"{pkt.summary()} in_port={in_port}\n  rules: {[str(m.match) for m in msgs]}\n"
                                    f"  netsleuth: {expected}\n  ovs: {got}")
    assert not failures, f"{len(failures)} of {cases} disagree; first:\n" + "\n".join(failures[:3])
    assert cases == TABLES * PACKETS_PER_TABLE and ignored_hits >= 50


def test_empty_packet_out_is_accepted_and_sends_nothing(tmp_path) -> None:
    data = random_packet(random.Random(3))[1].to_bytes()
    empty = P.OFPPacketOut(DP, buffer_id=NO_BUFFER, in_port=1, actions=[P.OFPActionOutput(ofp.OFPP_FLOOD)],
                           data=None)
    full = P.OFPPacketOut(DP, buffer_id=NO_BUFFER, in_port=1, actions=[P.OFPActionOutput(ofp.OFPP_FLOOD)],
                          data=data)
    sw = Switch(1, range(1, 4), openflow="1.0")
    with OvsSandbox(tmp_path, ports=3) as ovs:
        before = ovs.tx_packets()
        ovs_errors, model_errors, emits = both(ovs, sw, [empty])
        after_empty = ovs.tx_packets()
        both(ovs, sw, [full])
        after_full = ovs.tx_packets()
    assert ovs_errors == model_errors == [[]]
    assert after_empty == before and emits == [[]]
    assert after_full == before + 2  # the control: a PACKET_OUT with data floods to the two other ports


def test_unknown_buffer_ids_draw_the_error_ovs_sends(tmp_path) -> None:
    out2 = P.OFPActionOutput(2)
    msgs = [P.OFPPacketOut(DP, buffer_id=7, in_port=1, actions=[out2], data=None),
            flow_mod(wire_match(ofp.OFPFW_ALL & ~ofp.OFPFW_IN_PORT, [1] + [0] * 11), 5, [], buffer_id=7)]
    sw = Switch(1, range(1, 4), openflow="1.0", n_buffers=0)  # as OVS: no buffers
    with OvsSandbox(tmp_path, ports=3) as ovs:
        ovs_errors, model_errors, _ = both(ovs, sw, msgs)
        flows = ovs.dump_flows()
    assert ovs_errors == model_errors == [[(ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BUFFER_UNKNOWN)]] * 2
    assert "in_port=1" not in flows and len(sw.table) == 0  # the FLOW_MOD is refused whole
    # A switch with buffers (OVS before 2.7) installs the flow and then reports the buffer.
    old = Switch(1, range(1, 4), openflow="1.0", buffer_packets=4)
    assert [len(old.handle_message(0, codec.decode(codec.encode(m)), 0.0)) for m in msgs] == [1, 1]
    assert len(old.table) == 1


def test_add_on_a_full_table_is_refused_as_ovs_refuses_it(tmp_path) -> None:
    def rule(port: int, prio: int = 10, command: int = ofp.OFPFC_ADD) -> Any:
        return flow_mod(wire_match(ofp.OFPFW_ALL & ~ofp.OFPFW_IN_PORT, [port] + [0] * 11), prio, [],
                        command=command)

    full = (ofp.OFPET_FLOW_MOD_FAILED, ofp.OFPFMFC_ALL_TABLES_FULL)
    msgs = [rule(1), rule(2), rule(3), rule(4), rule(1), rule(2, command=ofp.OFPFC_MODIFY_STRICT), rule(1, prio=11)]
    sw = Switch(1, range(1, 4), openflow="1.0", table_size=3)
    with OvsSandbox(tmp_path, ports=3) as ovs:
        ovs.limit_table(3)
        ovs_errors, model_errors, _ = both(ovs, sw, msgs)
    assert ovs_errors == model_errors == [[], [], [], [full], [], [], [full]]
