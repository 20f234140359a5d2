"""The OpenFlow 1.3 model rejects what Open vSwitch rejects, with the same ERROR (type, code).

Why: a controller under test sees the switch's errors; if the model
accepted a flow_mod that a real switch refuses (or answered with another
code), a controller bug found with netsleuth might not exist on hardware,
or one that exists would be missed.  Each case is sent as real OpenFlow 1.3
bytes (os-ken's parser serializes it) to a sandboxed Open vSwitch over its
management socket, and the same os-ken objects go through the model
(``model.of13.messages``); the (type, code) pairs must be equal.

Where OVS answers differently from the 1.3.5 spec, or does not implement
something the spec defines, the model follows the spec; those cases are in
``OVS_DIFFERS`` with both answers asserted, and the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from os_ken.ofproto import ofproto_protocol
from os_ken.ofproto import ofproto_v1_3 as ofp
from os_ken.ofproto import ofproto_v1_3_parser as parser

from netsleuth.model.of13.errors import OFError, error_name
from netsleuth.model.of13.messages import apply_flow_mod, apply_group_mod, apply_meter_mod
from netsleuth.model.of13.pipeline import Pipeline13
from netsleuth.oracles.of13 import OvsSandbox13

pytestmark = pytest.mark.real  # every case goes to a sandboxed Open vSwitch

DP = ofproto_protocol.ProtocolDesc(ofp.OFP_VERSION)
P = parser


def match(*fields: tuple[str, Any]) -> Any:
    """An OFPMatch with exactly these entries in this order (duplicates and all)."""
    m = P.OFPMatch()
    m._fields2 = list(fields)
    return m


def apply(*actions: Any) -> list[Any]:
    return [P.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, list(actions))]


def flow(m: Any = None, inst: list[Any] | None = None, *, table: int = 0, priority: int = 10,
         command: int = ofp.OFPFC_ADD, flags: int = 0, **kw: Any) -> Any:
    return P.OFPFlowMod(DP, table_id=table, command=command, priority=priority, flags=flags,
                        match=m if m is not None else P.OFPMatch(), instructions=inst if inst is not None else [],
                        **kw)


def group(gid: int, gtype: int, *buckets: Any, command: int = ofp.OFPGC_ADD) -> Any:
    return P.OFPGroupMod(DP, command, gtype, gid, list(buckets))


def bucket(*actions: Any, weight: int = 0, watch_port: int = ofp.OFPP_ANY, watch_group: int = ofp.OFPG_ANY) -> Any:
    return P.OFPBucket(weight, watch_port, watch_group, list(actions))


def meter(mid: int, flags: int, *bands: Any, command: int = ofp.OFPMC_ADD) -> Any:
    return P.OFPMeterMod(DP, command, flags, mid, list(bands))


OUT1 = P.OFPActionOutput(1)
IP = ("eth_type", 0x0800)
TCP = ("ip_proto", 6)

# name -> (setup messages, message under test)
CASES: dict[str, tuple[list[Any], Any]] = {
    # ---- matches
    "valid match": ([], flow(match(IP, TCP, ("tcp_dst", 80)), apply(OUT1))),
    "duplicate field": ([], flow(match(IP, IP), apply(OUT1))),
    "tcp_dst without ip_proto": ([], flow(match(IP, ("tcp_dst", 80)), apply(OUT1))),
    "ipv4_src without eth_type": ([], flow(match(("ipv4_src", "10.0.0.1")), apply(OUT1))),
    "tcp_dst with ip_proto 17": ([], flow(match(IP, ("ip_proto", 17), ("tcp_dst", 80)), apply(OUT1))),
    "ipv6 nd_target with icmpv6_type 128": ([], flow(match(("eth_type", 0x86DD), ("ip_proto", 58), ("icmpv6_type", 128),
                                                           ("ipv6_nd_target", "fe80::1")), apply(OUT1))),
    "arp_op with eth_type ip": ([], flow(match(IP, ("arp_op", 1)), apply(OUT1))),
    "mpls_label without mpls": ([], flow(match(("mpls_label", 5)), apply(OUT1))),
    "vlan_pcp without vlan_vid": ([], flow(match(("vlan_pcp", 3)), apply(OUT1))),
    "vlan_pcp with untagged vid": ([], flow(match(("vlan_vid", 0), ("vlan_pcp", 3)), apply(OUT1))),
    "vlan_pcp with any-tagged vid": ([], flow(match(("vlan_vid", (0x1000, 0x1000)), ("vlan_pcp", 3)), apply(OUT1))),
    "value bits outside mask": ([], flow(match(IP, ("ipv4_src", ("10.0.0.1", "255.0.0.0"))), apply(OUT1))),
    "mask on tcp_dst": ([], flow(match(IP, TCP, ("tcp_dst", (80, 0xFF))), apply(OUT1))),
    "vlan_vid without present bit": ([], flow(match(("vlan_vid", 5)), apply(OUT1))),
    "ip_dscp 64": ([], flow(match(IP, ("ip_dscp", 64)), apply(OUT1))),
    "vlan_pcp 8": ([], flow(match(("vlan_vid", 0x1001), ("vlan_pcp", 8)), apply(OUT1))),
    # ---- instructions and actions
    "goto_table backwards": ([], flow(inst=[P.OFPInstructionGotoTable(1)], table=1)),
    "goto_table to itself": ([], flow(inst=[P.OFPInstructionGotoTable(2)], table=2)),
    "goto_table forward": ([], flow(inst=[P.OFPInstructionGotoTable(3)], table=2)),
    "goto_table past the last table": ([], flow(inst=[P.OFPInstructionGotoTable(254)], table=2)),
    "flow in table 253": ([], flow(inst=apply(OUT1), table=253)),
    "output to port 0": ([], flow(inst=apply(P.OFPActionOutput(0)))),
    "output to OFPP_ANY": ([], flow(inst=apply(P.OFPActionOutput(ofp.OFPP_ANY)))),
    "output to TABLE in a flow": ([], flow(inst=apply(P.OFPActionOutput(ofp.OFPP_TABLE)))),
    "output to IN_PORT, FLOOD, ALL, CONTROLLER, LOCAL": ([], flow(inst=apply(
        *(P.OFPActionOutput(p) for p in (ofp.OFPP_IN_PORT, ofp.OFPP_FLOOD, ofp.OFPP_ALL, ofp.OFPP_CONTROLLER,
                                         ofp.OFPP_LOCAL))))),
    "group action to a missing group": ([], flow(inst=apply(P.OFPActionGroup(7)))),
    "group action to an existing group": ([group(7, ofp.OFPGT_ALL, bucket(OUT1))],
                                          flow(inst=apply(P.OFPActionGroup(7)))),
    "write_actions group to a missing group": ([], flow(inst=[P.OFPInstructionActions(
        ofp.OFPIT_WRITE_ACTIONS, [P.OFPActionGroup(7)])])),
    "pop_vlan on an untagged match": ([], flow(inst=apply(P.OFPActionPopVlan()))),
    "pop_vlan on a tagged match": ([], flow(match(("vlan_vid", (0x1000, 0x1000))), apply(P.OFPActionPopVlan()))),
    "pop_vlan after push_vlan": ([], flow(inst=apply(P.OFPActionPushVlan(0x8100), P.OFPActionPopVlan()))),
    "set vlan_vid on an untagged match": ([], flow(inst=apply(P.OFPActionSetField(vlan_vid=0x1005)))),
    "set vlan_vid after push_vlan": ([], flow(inst=apply(P.OFPActionPushVlan(0x88A8),
                                                         P.OFPActionSetField(vlan_vid=0x1005)))),
    "set ipv4_src without eth_type": ([], flow(inst=apply(P.OFPActionSetField(ipv4_src="10.0.0.9")))),
    "set ipv4_src with eth_type ip": ([], flow(match(IP), apply(P.OFPActionSetField(ipv4_src="10.0.0.9")))),
    "set tcp_dst with ip_proto 17": ([], flow(match(IP, ("ip_proto", 17)), apply(P.OFPActionSetField(tcp_dst=5)))),
    "set ipv4_src after push_mpls": ([], flow(match(IP), apply(P.OFPActionPushMpls(0x8847),
                                                               P.OFPActionSetField(ipv4_src="10.0.0.9")))),
    "set mpls_label after push_mpls": ([], flow(match(IP), apply(P.OFPActionPushMpls(0x8847),
                                                                 P.OFPActionSetField(mpls_label=5)))),
    "dec_nw_ttl on a non-IP match": ([], flow(inst=apply(P.OFPActionDecNwTtl()))),
    "dec_mpls_ttl on a non-MPLS match": ([], flow(match(IP), apply(P.OFPActionDecMplsTtl()))),
    "pop_mpls on a non-MPLS match": ([], flow(match(IP), apply(P.OFPActionPopMpls(0x0800)))),
    "pop_mpls on an MPLS match": ([], flow(match(("eth_type", 0x8847)), apply(P.OFPActionPopMpls(0x0800)))),
    "push_vlan 0x0800": ([], flow(inst=apply(P.OFPActionPushVlan(0x0800)))),
    "push_mpls 0x0800": ([], flow(match(IP), apply(P.OFPActionPushMpls(0x0800)))),
    "set_field eth_type": ([], flow(inst=apply(P.OFPActionSetField(eth_type=0x0806)))),
    "set_field ip_proto": ([], flow(match(IP), apply(P.OFPActionSetField(ip_proto=17)))),
    "write_metadata and goto": ([], flow(inst=[P.OFPInstructionWriteMetadata(5, 0xFF), P.OFPInstructionGotoTable(1)])),
    "meter instruction to a missing meter": ([], flow(inst=[P.OFPInstructionMeter(3)] + apply(OUT1))),
    "meter instruction to an existing meter": ([meter(3, ofp.OFPMF_KBPS, P.OFPMeterBandDrop(1000, 0))],
                                               flow(inst=[P.OFPInstructionMeter(3)] + apply(OUT1))),
    # ---- flow_mod commands
    "CHECK_OVERLAP with an overlapping entry": ([flow(match(("in_port", 1)), apply(OUT1))],
                                                flow(match(IP), apply(OUT1), flags=ofp.OFPFF_CHECK_OVERLAP)),
    "CHECK_OVERLAP with a disjoint entry": ([flow(match(("in_port", 1)), apply(OUT1))],
                                            flow(match(("in_port", 2)), apply(OUT1), flags=ofp.OFPFF_CHECK_OVERLAP)),
    "CHECK_OVERLAP at another priority": ([flow(match(("in_port", 1)), apply(OUT1))],
                                          flow(match(IP), apply(OUT1), priority=11, flags=ofp.OFPFF_CHECK_OVERLAP)),
    "modify with nothing to modify": ([], flow(match(IP), apply(OUT1), command=ofp.OFPFC_MODIFY)),
    "delete from all tables": ([flow(match(IP), apply(OUT1))], flow(command=ofp.OFPFC_DELETE, table=ofp.OFPTT_ALL,
                                                                     out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY)),
    "add to OFPTT_ALL": ([], flow(match(IP), apply(OUT1), table=ofp.OFPTT_ALL)),
    "modify in OFPTT_ALL": ([], flow(match(IP), apply(OUT1), table=ofp.OFPTT_ALL, command=ofp.OFPFC_MODIFY)),
    "flow_mod command 7": ([], flow(match(IP), apply(OUT1), command=7)),
    "group_mod command 5": ([], group(1, ofp.OFPGT_ALL, bucket(OUT1), command=5)),
    "meter_mod command 5": ([], meter(1, ofp.OFPMF_KBPS, P.OFPMeterBandDrop(1000, 0), command=5)),
    "duplicate instruction": ([], flow(inst=apply(OUT1) + apply(OUT1))),
    "modify making an entry inconsistent": ([flow(match(IP), apply(OUT1))],
                                            flow(P.OFPMatch(), apply(P.OFPActionSetField(ipv4_src="1.2.3.4")),
                                                 command=ofp.OFPFC_MODIFY)),
    # ---- groups
    "group add": ([], group(1, ofp.OFPGT_ALL, bucket(OUT1), bucket(P.OFPActionOutput(2)))),
    "group exists": ([group(1, ofp.OFPGT_ALL, bucket(OUT1))], group(1, ofp.OFPGT_ALL, bucket(OUT1))),
    "group modify unknown": ([], group(1, ofp.OFPGT_ALL, bucket(OUT1), command=ofp.OFPGC_MODIFY)),
    "group delete unknown": ([], group(1, ofp.OFPGT_ALL, command=ofp.OFPGC_DELETE)),
    "group id OFPG_ALL": ([], group(ofp.OFPG_ALL, ofp.OFPGT_ALL, bucket(OUT1))),
    "group id above OFPG_MAX": ([], group(ofp.OFPG_MAX + 1, ofp.OFPGT_ALL, bucket(OUT1))),
    "group bad type": ([], group(1, 7, bucket(OUT1))),
    "indirect with two buckets": ([], group(1, ofp.OFPGT_INDIRECT, bucket(OUT1), bucket(OUT1))),
    "indirect with no bucket": ([], group(1, ofp.OFPGT_INDIRECT)),
    "fast_failover bucket without watch": ([], group(1, ofp.OFPGT_FF, bucket(OUT1))),
    "fast_failover with watch port": ([], group(1, ofp.OFPGT_FF, bucket(OUT1, watch_port=1))),
    "fast_failover watching a missing group": ([], group(1, ofp.OFPGT_FF, bucket(OUT1, watch_group=9))),
    "weight in an ALL group": ([], group(1, ofp.OFPGT_ALL, bucket(OUT1, weight=3))),
    "select with weights": ([], group(1, ofp.OFPGT_SELECT, bucket(OUT1, weight=3), bucket(OUT1, weight=1))),
    "bucket chaining to a missing group": ([], group(1, ofp.OFPGT_ALL, bucket(P.OFPActionGroup(2)))),
    "bucket chaining to an existing group": ([group(2, ofp.OFPGT_ALL, bucket(OUT1))],
                                             group(1, ofp.OFPGT_ALL, bucket(P.OFPActionGroup(2)))),
    "bucket chaining to itself": ([], group(1, ofp.OFPGT_ALL, bucket(P.OFPActionGroup(1)))),
    "modify closing a loop": ([group(2, ofp.OFPGT_ALL, bucket(OUT1)),
                               group(1, ofp.OFPGT_ALL, bucket(P.OFPActionGroup(2)))],
                              group(2, ofp.OFPGT_ALL, bucket(P.OFPActionGroup(1)), command=ofp.OFPGC_MODIFY)),
    "delete a chained group": ([group(2, ofp.OFPGT_ALL, bucket(OUT1)),
                                group(1, ofp.OFPGT_ALL, bucket(P.OFPActionGroup(2)))],
                               group(2, ofp.OFPGT_ALL, command=ofp.OFPGC_DELETE)),
    "bucket output to port 0": ([], group(1, ofp.OFPGT_ALL, bucket(P.OFPActionOutput(0)))),
    # ---- meters
    "meter add": ([], meter(1, ofp.OFPMF_KBPS, P.OFPMeterBandDrop(1000, 0))),
    "meter id 0": ([], meter(0, ofp.OFPMF_KBPS, P.OFPMeterBandDrop(1000, 0))),
    "meter id above OFPM_MAX": ([], meter(ofp.OFPM_MAX + 1, ofp.OFPMF_KBPS, P.OFPMeterBandDrop(1000, 0))),
    "meter exists": ([meter(1, ofp.OFPMF_KBPS, P.OFPMeterBandDrop(1000, 0))],
                     meter(1, ofp.OFPMF_KBPS, P.OFPMeterBandDrop(1000, 0))),
    "meter modify unknown": ([], meter(1, ofp.OFPMF_KBPS, P.OFPMeterBandDrop(1000, 0), command=ofp.OFPMC_MODIFY)),
    "meter delete unknown": ([], meter(1, ofp.OFPMF_KBPS, command=ofp.OFPMC_DELETE)),
    "meter KBPS and PKTPS": ([], meter(1, ofp.OFPMF_KBPS | ofp.OFPMF_PKTPS, P.OFPMeterBandDrop(1000, 0))),
    "meter rate 0": ([], meter(1, ofp.OFPMF_KBPS, P.OFPMeterBandDrop(0, 0))),
    "meter dscp remark band": ([], meter(1, ofp.OFPMF_KBPS, P.OFPMeterBandDscpRemark(1000, 0, 1))),
}

_BAC, _BIC = ofp.OFPET_BAD_ACTION, ofp.OFPET_BAD_INSTRUCTION
_BMC, _GMF = ofp.OFPET_BAD_MATCH, ofp.OFPET_GROUP_MOD_FAILED
OVS_DIFFERS: dict[str, tuple[tuple[int, int] | None, tuple[int, int] | None, str]] = {
    # name: (OVS's answer, the model's answer, why the model follows the spec here)
    "output to port 0": (None, (_BAC, ofp.OFPBAC_BAD_OUT_PORT),
                         "ports are numbered from 1; OVS accepts any number below OFPP_MAX"),
    "bucket output to port 0": (None, (_BAC, ofp.OFPBAC_BAD_OUT_PORT),
                                "the same action in a bucket; OVS does not validate bucket ports at group_mod"),
    "output to TABLE in a flow": (None, (_BAC, ofp.OFPBAC_BAD_OUT_PORT),
                                  "spec: OFPP_TABLE only in packet-out; OVS treats it as a resubmit extension"),
    "goto_table past the last table": (None, (_BIC, ofp.OFPBIC_BAD_TABLE_ID),
                                       "OVS's table 254 exists but is hidden; the model has the 254 tables OVS "
                                       "reports (0..253)"),
    "mask on tcp_dst": (None, (_BMC, ofp.OFPBMC_BAD_MASK),
                        "transport ports are not maskable in OpenFlow 1.3; OVS allows it as an extension"),
    "bucket chaining to a missing group": (None, (_BAC, ofp.OFPBAC_BAD_OUT_GROUP),
                                           "a group action must name an existing group; OVS allows forward "
                                           "references in buckets"),
    "bucket chaining to itself": (None, (_GMF, ofp.OFPGMFC_LOOP),
                                  "OFPGMFC_LOOP; OVS only stops the recursion when it runs the group"),
    "modify closing a loop": (None, (_GMF, ofp.OFPGMFC_LOOP), "as above, through two groups"),
    "delete a chained group": (None, (_GMF, ofp.OFPGMFC_CHAINED_GROUP),
                               "OFPGMFC_CHAINED_GROUP; OVS deletes it and the chain then drops"),
    "meter dscp remark band": ((ofp.OFPET_METER_MOD_FAILED, ofp.OFPMMFC_BAD_BAND), None,
                               "the spec defines DSCP remark bands; OVS's userspace datapath lacks them"),
    "duplicate instruction": ((ofp.OFPET_EXPERIMENTER, 2600), (_BIC, ofp.OFPBIC_UNSUP_INST),
                              "1.3 names no code for a repeated instruction; OVS sends its ONF experimenter "
                              "error (1.4's OFPBIC_DUP_INST), the model the closest 1.3 code"),
    "group_mod command 5": ((_GMF, ofp.OFPGMFC_BAD_BUCKET), (_GMF, ofp.OFPGMFC_BAD_COMMAND),
                            "an unknown command is OFPGMFC_BAD_COMMAND; OVS decodes it as a 1.5 bucket command"),
}


def model_answer(setup: list[Any], msg: Any) -> tuple[int, int] | None:
    p = Pipeline13(254, [1, 2, 3, 4])
    appliers: dict[str, Callable[..., Any]] = {"OFPFlowMod": apply_flow_mod, "OFPGroupMod": apply_group_mod,
                                               "OFPMeterMod": apply_meter_mod}
    for m in setup:
        appliers[type(m).__name__](p, m)
    try:
        appliers[type(msg).__name__](p, msg)
    except OFError as exc:
        return exc.err_type, exc.err_code
    return None


def wire(msg: Any) -> bytes:
    msg.serialize()
    return bytes(msg.buf)


RESET = [flow(command=ofp.OFPFC_DELETE, table=ofp.OFPTT_ALL, out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY),
         group(ofp.OFPG_ALL, ofp.OFPGT_ALL, command=ofp.OFPGC_DELETE),
         meter(ofp.OFPM_ALL, 0, command=ofp.OFPMC_DELETE)]


@pytest.fixture(scope="module")
def ovs(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with OvsSandbox13(tmp_path_factory.mktemp("ovs13err"), ports=4) as sandbox:
        yield sandbox


def _show(answer: tuple[int, int] | None) -> str:
    return "accepted" if answer is None else error_name(*answer)


@pytest.mark.parametrize("name", sorted(CASES))
def test_model_rejects_like_ovs(ovs: OvsSandbox13, name: str) -> None:
    setup, msg = CASES[name]
    answers = ovs.openflow_errors([wire(m) for m in RESET + setup + [msg]])
    assert answers[len(RESET):-1] == [None] * len(setup), f"OVS refused the setup of {name!r}: {answers}"
    theirs, ours = answers[-1], model_answer(setup, msg)
    if name in OVS_DIFFERS:
        want_ovs, want_model, _why = OVS_DIFFERS[name]
        assert (_show(theirs), _show(ours)) == (_show(want_ovs), _show(want_model))
    else:
        assert _show(ours) == _show(theirs), f"{name}: model {_show(ours)}, OVS {_show(theirs)}"


def test_add_on_a_full_table_is_refused_as_ovs_refuses_it(tmp_path: Any) -> None:
    """--table-size on 1.3: an ADD past the limit is TABLE_FULL; replacing or modifying an entry is not,
    and another table has its own limit (Open vSwitch's flow limit with overflow policy "refuse")."""
    def rule(port: int, *, prio: int = 10, table: int = 0, command: int = ofp.OFPFC_ADD) -> Any:
        return flow(match(("in_port", port)), apply(OUT1), priority=prio, table=table, command=command)

    msgs = [rule(1), rule(2), rule(3), rule(4), rule(1), rule(2, command=ofp.OFPFC_MODIFY_STRICT),
            rule(1, prio=11), rule(1, table=1), rule(2, table=1), rule(3, table=1), rule(4, table=1)]
    with OvsSandbox13(tmp_path, ports=4) as sandbox:
        sandbox.limit_table(3, table=0)
        sandbox.limit_table(3, table=1)
        theirs = sandbox.openflow_errors([wire(m) for m in msgs])
    p = Pipeline13(254, [1, 2, 3, 4], table_size=3)
    ours: list[tuple[int, int] | None] = []
    for m in msgs:
        try:
            apply_flow_mod(p, m)
            ours.append(None)
        except OFError as exc:
            ours.append((exc.err_type, exc.err_code))
    full = (ofp.OFPET_FLOW_MOD_FAILED, ofp.OFPFMFC_TABLE_FULL)
    assert [_show(a) for a in ours] == [_show(a) for a in theirs]
    assert ours == [None, None, None, full, None, None, full, None, None, None, full]
