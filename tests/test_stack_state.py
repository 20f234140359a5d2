"""Faucet's stack state from recorded LLDP PACKET_INs, as `step`'s `show ports` tells it (no Faucet needed)."""

from __future__ import annotations

from pathlib import Path

from os_ken.ofproto import ofproto_v1_3_parser as parser13

from netsleuth.invariants.policy.faucet import policy_from_text
from netsleuth.model.packet import LLDP, Packet
from netsleuth.model.topo_builders import parse_topo
from netsleuth.openflow.codec import DATAPATH13, msg_to_json
from netsleuth.rootcause.stack_state import root_text, watch_events
from netsleuth.trace import schema as ts
from netsleuth.trace.fingerprint import of_fingerprint

DATA = Path(__file__).parent / "data" / "faucet"
TOPO = parse_topo("linear,3")
POLICY = policy_from_text((DATA / "acl_block_ssh.yaml").read_text(), TOPO)
BY_DPID = {s.dpid: s.name for s in TOPO.switches}


def beacon(seq: int, t: float, at_dpid: int, in_port: int, from_dp: str, from_port: int) -> ts.ControlToController:
    """The PACKET_IN of a Faucet LLDP beacon: port id subtype 5 with the port number, system name = dp name."""
    name = from_dp.encode()
    tlvs = bytes([(5 << 1) | (len(name) >> 8), len(name) & 0xFF]) + name
    frame = Packet(0x0E0000000001, 0x0180C200000E, 0x88CC,
                   l3=LLDP(b"\x04" + bytes(6), b"\x05" + str(from_port).encode(), 15, tlvs))
    data = frame.to_bytes()
    msg = parser13.OFPPacketIn(DATAPATH13, buffer_id=0xFFFFFFFF, total_len=len(data), reason=1, table_id=0,
                               cookie=0, match=parser13.OFPMatch(in_port=in_port), data=data)
    body = msg_to_json(msg)
    return ts.ControlToController(seq=seq, t=t, conn=1, controller="c0", dpid=at_dpid, msg=body,
                                  fp=of_fingerprint(body))


def states(events: list[ts.Event], now: float) -> dict[str, str]:
    rows = watch_events(events, BY_DPID).rows(POLICY, now)
    return {f"{r.switch}:{r.port}": f"{r.state} {r.last_seen}" for r in rows}


def test_stack_ports_come_up_with_lldp_from_their_configured_peer() -> None:
    assert states([], 0.0) == {"s1:2": "init never", "s2:2": "init never", "s2:3": "init never",
                               "s3:2": "init never"}
    got = states([beacon(1, 6.0, 2, 2, "s1", 2), beacon(2, 6.5, 1, 2, "s2", 2)], 8.0)
    assert got["s2:2"] == "up 2.0 s ago from s1:2"
    assert got["s1:2"] == "up 1.5 s ago from s2:2"
    assert got["s2:3"] == "init never"
    assert root_text(POLICY).startswith("stack root s2")


def test_a_stack_port_goes_down_after_three_missed_beacons_and_bad_when_miscabled() -> None:
    events = [beacon(1, 6.0, 2, 2, "s1", 2), beacon(2, 6.0, 2, 3, "s1", 2)]   # s2:3 hears s1, not s3
    got = states(events, 21.0)        # 15 s later: max_lldp_lost (3) x send_interval (5 s)
    assert got["s2:2"].startswith("down 15.0 s ago")
    assert got["s2:3"].startswith("bad") and got["s2:3"].endswith("from s1:2")
    assert states(events, 20.9)["s2:2"].startswith("up")
