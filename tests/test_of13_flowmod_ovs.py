"""Differential test of flow_mod semantics: the model's flow tables against Open vSwitch's.

Why: which entries an ADD replaces, a MODIFY (non-strict, strict, with a
cookie mask, across OFPTT_ALL) rewrites, a DELETE (with out_port, out_group,
cookie filters) removes, what CHECK_OVERLAP refuses, and that deleting a
group takes its flows with it -- this is what controllers rely on when they
reprogram a switch, and what the packet differential does not exercise.
Seeded random sequences of FLOW_MODs and GROUP_MODs over a small pool of
overlapping matches go, as OpenFlow 1.3 bytes, to a sandboxed OVS and, as
the same os-ken objects, to the model (``model.of13.messages``).  Each
message must draw the same ERROR (or none) from both, and afterwards OVS's
flow-stats reply must list exactly the model's entries (table, priority,
cookie, match, instructions).
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest
from os_ken.ofproto import ofproto_protocol
from os_ken.ofproto import ofproto_v1_3 as ofp
from os_ken.ofproto import ofproto_v1_3_parser as P

from netsleuth.model.of13.errors import OFError, error_name
from netsleuth.model.of13.instructions import Instructions
from netsleuth.model.of13.messages import apply_flow_mod, apply_group_mod
from netsleuth.model.of13.oxm import OxmMatch
from netsleuth.model.of13.pipeline import Pipeline13
from netsleuth.oracles.of13 import OvsSandbox13

SEED = 13_2025
SEQUENCES = 80
OPS = 14
DP = ofproto_protocol.ProtocolDesc(ofp.OFP_VERSION)

MATCHES = [OxmMatch(), OxmMatch.build(in_port=1), OxmMatch.build(in_port=2), OxmMatch.build(eth_type=0x800),
           OxmMatch.build(eth_type=0x800, ipv4_dst="10.0.0.0/8"),
           OxmMatch.build(eth_type=0x800, ipv4_dst="10.1.0.0/16"),
           OxmMatch.build(eth_type=0x800, ip_proto=6, tcp_dst=80), OxmMatch.build(in_port=1, eth_type=0x800),
           OxmMatch.build(eth_type=0x86DD), OxmMatch.build(vlan_vid=(0x1000, 0x1000)),
           OxmMatch.build(metadata=(0x5, 0xFF)), OxmMatch.build(metadata=(0x5, 0xF))]


def wire(msg: Any) -> bytes:
    msg.serialize()
    return bytes(msg.buf)


def random_instructions(rng: random.Random, table: int) -> Instructions:
    from netsleuth.model.of13.actions import Group, Output, SetField
    choice = rng.randrange(8)
    if choice == 0:
        return Instructions()
    if choice == 1:
        return Instructions(write=(Output(3),))
    if choice == 2:
        return Instructions.actions(Group(1))
    if choice == 3:
        return Instructions(apply=(SetField("eth_dst", 5),), goto=rng.randint(min(table + 1, 3), 3))
    if choice == 4:
        return Instructions.actions(Output(ofp.OFPP_CONTROLLER, 128))
    return Instructions.actions(Output(rng.choice([1, 2])))


def random_op(rng: random.Random) -> Any:
    kind = rng.choice(["add", "add", "add", "add", "modify", "modify_strict", "delete", "delete_strict", "group"])
    table = rng.choice([0, 0, 1, 2]) if kind == "add" else rng.choice([0, 1, 2, ofp.OFPTT_ALL])
    if kind.startswith("modify") and table == ofp.OFPTT_ALL and rng.random() < 0.8:
        table = rng.choice([0, 1, 2])  # OFPTT_ALL is for deletes: mostly keep modifies valid
    match = rng.choice(MATCHES)
    priority = rng.choice([0, 5, 10])
    cookie = rng.choice([0, 1, 2, 0x11, 0x21])
    if kind == "group":
        if rng.random() < 0.6:
            return P.OFPGroupMod(DP, ofp.OFPGC_ADD, ofp.OFPGT_ALL, 1, [P.OFPBucket(0, ofp.OFPP_ANY, ofp.OFPG_ANY,
                                                                              [P.OFPActionOutput(4)])])
        return P.OFPGroupMod(DP, ofp.OFPGC_DELETE, ofp.OFPGT_ALL, 1, [])
    inst = random_instructions(rng, 0 if table == ofp.OFPTT_ALL else table).to_ofp()
    common = dict(table_id=table, match=match.to_ofp(), priority=priority, cookie=cookie)
    if kind == "add":
        flags = rng.choice([0, 0, ofp.OFPFF_CHECK_OVERLAP, ofp.OFPFF_RESET_COUNTS])
        return P.OFPFlowMod(DP, command=ofp.OFPFC_ADD, flags=flags, instructions=inst, **common)
    mask = rng.choice([0, 0, 0xFF, 0x0F])
    if kind.startswith("modify"):
        command = ofp.OFPFC_MODIFY if kind == "modify" else ofp.OFPFC_MODIFY_STRICT
        return P.OFPFlowMod(DP, command=command, cookie_mask=mask, instructions=inst, **common)
    command = ofp.OFPFC_DELETE if kind == "delete" else ofp.OFPFC_DELETE_STRICT
    if command == ofp.OFPFC_DELETE and rng.random() < 0.6:
        # Wide matches in the tables entries are in, so deletes often remove something.
        common["match"] = rng.choice(MATCHES[:4]).to_ofp()
        common["table_id"] = rng.choice([0, ofp.OFPTT_ALL])
    return P.OFPFlowMod(DP, command=command, cookie_mask=mask, out_port=rng.choice([ofp.OFPP_ANY] * 6 + [1, 3]),
                        out_group=rng.choice([ofp.OFPG_ANY] * 6 + [1]), **common)


def model_table(p: Pipeline13) -> set[tuple[Any, ...]]:
    return {(e.table_id, e.priority, e.cookie, e.match, e.instructions) for e in p.tables}


def ovs_table(replies: list[Any]) -> set[tuple[Any, ...]]:
    return {(s.table_id, s.priority, s.cookie, OxmMatch.from_ofp(s.match), Instructions.from_ofp(s.instructions))
            for r in replies for s in r.body}


@pytest.fixture(scope="module")
def ovs(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with OvsSandbox13(tmp_path_factory.mktemp("ovs13fm"), ports=4) as sandbox:
        yield sandbox


@pytest.mark.real
def test_flow_mod_sequences_leave_the_same_tables(ovs: OvsSandbox13) -> None:
    rng = random.Random(SEED)
    counts: Counter[str] = Counter()
    reset = [P.OFPFlowMod(DP, command=ofp.OFPFC_DELETE, table_id=ofp.OFPTT_ALL, out_port=ofp.OFPP_ANY,
                          out_group=ofp.OFPG_ANY, match=P.OFPMatch()),
             P.OFPGroupMod(DP, ofp.OFPGC_DELETE, ofp.OFPGT_ALL, ofp.OFPG_ALL, [])]
    stats_request = wire(P.OFPFlowStatsRequest(DP, 0, ofp.OFPTT_ALL, ofp.OFPP_ANY, ofp.OFPG_ANY, 0, 0, P.OFPMatch()))
    for seq in range(SEQUENCES):
        ops = [random_op(rng) for _ in range(OPS)]
        answers = ovs.openflow_errors([wire(m) for m in reset + ops])[len(reset):]
        p = Pipeline13(254, [1, 2, 3, 4])
        for i, (msg, theirs) in enumerate(zip(ops, answers, strict=True)):
            try:
                if type(msg).__name__ == "OFPGroupMod":
                    removed = apply_group_mod(p, msg)
                else:
                    removed = apply_flow_mod(p, msg)
                ours = None
            except OFError as exc:
                ours, removed = (exc.err_type, exc.err_code), []
            name = "accepted" if ours is None else error_name(*ours)
            counts[f"{type(msg).__name__}:{getattr(msg, 'command', '')}:{name}"] += 1
            counts["removed"] += len(removed)
            assert ours == theirs, (f"sequence {seq} op {i} {msg}: model {name}, OVS "
                                    f"{'accepted' if theirs is None else error_name(*theirs)}")
        theirs_table = ovs_table(ovs.openflow_request(stats_request))
        assert model_table(p) == theirs_table, (
            f"sequence {seq}: only in the model {model_table(p) - theirs_table}, "
            f"only in OVS {theirs_table - model_table(p)}\nops:\n" + "\n".join(map(str, ops)))
        counts["entries"] += len(theirs_table)
    print("\n" + ", ".join(f"{k}={v}" for k, v in sorted(counts.items())))
    for key in ("OFPFlowMod:0:OFPFMFC_OVERLAP", "OFPFlowMod:0:accepted", "OFPFlowMod:1:accepted",
                "OFPFlowMod:2:accepted", "OFPFlowMod:3:accepted", "OFPFlowMod:4:accepted",
                "OFPFlowMod:0:OFPBAC_BAD_OUT_GROUP", "OFPGroupMod:0:OFPGMFC_GROUP_EXISTS"):
        assert counts[key] >= 5, f"too few {key}: {counts[key]}"
    assert counts["removed"] >= 30 and counts["entries"] >= 200
