"""Pure parts of the observed findings: error names, the refused message's rendering, replay's and the
campaign's identity of a traceback or a refusal."""

from __future__ import annotations

from os_ken.ofproto import ofproto_v1_0 as of10
from os_ken.ofproto import ofproto_v1_0_parser as p10
from os_ken.ofproto import ofproto_v1_3 as of13
from os_ken.ofproto import ofproto_v1_3_parser as p13

from netsleuth.campaign.signature import signature_of
from netsleuth.invariants import openflow_errors
from netsleuth.jobs.replay import Target
from netsleuth.openflow.codec import DATAPATH, DATAPATH13
from netsleuth.trace import schema as ts


def test_error_names_per_version() -> None:
    assert openflow_errors.error_names(1, of10.OFPET_BAD_ACTION, of10.OFPBAC_BAD_OUT_PORT) == ("BAD_ACTION",
                                                                                               "BAD_OUT_PORT")
    assert openflow_errors.error_names(4, of13.OFPET_BAD_MATCH, of13.OFPBMC_BAD_PREREQ) == ("BAD_MATCH", "BAD_PREREQ")
    assert openflow_errors.error_names(1, 99, 7) == ("type 99", "code 7")


def test_refused_flow_mods_rendered_short() -> None:
    fm = p10.OFPFlowMod(DATAPATH, p10.OFPMatch(dl_type=0x88CC), 0, of10.OFPFC_ADD, 0, 0, 100, 0xFFFFFFFF,
                        of10.OFPP_NONE, 0, [p10.OFPActionOutput(0)])
    assert openflow_errors.render(fm, 1) == "ADD priority=100 dl_type=0x88cc -> output:0"
    fm13 = p13.OFPFlowMod(DATAPATH13, table_id=1, priority=5, match=p13.OFPMatch(eth_type=0x0800),
                          instructions=[p13.OFPInstructionActions(of13.OFPIT_APPLY_ACTIONS,
                                                                  [p13.OFPActionOutput(3)])])
    assert openflow_errors.render(fm13, 4) == "ADD table=1 priority=5 eth_type=2048 -> apply:output:3"
    f = openflow_errors.finding("s2", "c0", 1, fm, of10.OFPET_BAD_ACTION, of10.OFPBAC_BAD_OUT_PORT, 7, 41)
    assert f.message == "s2 refused c0's FLOW_MOD with ERROR BAD_ACTION/BAD_OUT_PORT"
    assert f.details["request_text"] == "FLOW_MOD xid 7 (trace seq 41): ADD priority=100 dl_type=0x88cc -> output:0"
    assert f.details["group"] == ["BAD_ACTION", "BAD_OUT_PORT", "FLOW_MOD"]


def _violation(invariant: str, group: list[str], switches: tuple[str, ...] = (), message: str = "m") -> ts.Violation:
    return ts.Violation(seq=1, t=0.0, invariant=invariant, message=message, persistent=True, hosts=(),
                        switches=switches, details={"group": group})


def test_replay_and_campaign_recognise_the_same_defect() -> None:
    recorded = _violation("exceptions", ["KeyError", "app.py", "forget_port", "118"], message="raised KeyError: (3, 3)")
    again = _violation("exceptions", ["KeyError", "app.py", "forget_port", "118"], message="raised KeyError: (1, 1)")
    other = _violation("exceptions", ["KeyError", "app.py", "learn", "90"])
    target = Target("exceptions", (), (), recorded.message, tuple(recorded.details["group"]))
    assert target.found_in([again]) and not target.found_in([other])
    assert signature_of(recorded, None).id == signature_of(again, None).id != signature_of(other, None).id
    refused = _violation("openflow-errors", ["BAD_ACTION", "BAD_OUT_PORT", "FLOW_MOD"], switches=("s1",))
    elsewhere = _violation("openflow-errors", ["BAD_ACTION", "BAD_OUT_PORT", "FLOW_MOD"], switches=("s3",))
    assert signature_of(refused, None).id == signature_of(elsewhere, None).id
    assert signature_of(refused, None).text == "openflow-errors: ERROR BAD_ACTION/BAD_OUT_PORT answering FLOW_MOD"
