"""The sans-I/O OpenFlow 1.0 switch, driven the way a real controller drives it.

Every controller message is an os-ken OF1.0 object, encoded to bytes and
decoded again by the codec before the switch sees it (the path real TCP
takes), and every reply goes through encode/decode before it is inspected.
"""

from __future__ import annotations

import struct

import pytest
from os_ken.ofproto import ofproto_v1_0 as ofp
from os_ken.ofproto import ofproto_v1_0_parser as P
from wire import round_trip

from netsleuth.errors import CodecError
from netsleuth.model.addr import int_to_mac, ip_to_int, mac_to_int
from netsleuth.model.ofdp import DATAPATH as DP
from netsleuth.model.packet import Packet, arp_request, icmp_echo, udp_packet
from netsleuth.model.switch import NO_BUFFER, Emit, Switch, ToController, port_hw_addr
from netsleuth.openflow import codec

H1, H2 = "00:00:00:00:00:01", "00:00:00:00:00:02"
# Big enough that every miss_send_len used below truncates it.
BIG = icmp_echo(H1, H2, "10.0.0.1", "10.0.0.2", ident=7, seq=1, payload=bytes(range(200)))
SMALL = arp_request(H1, "10.0.0.1", "10.0.0.2")
UDP = udp_packet(H1, H2, "10.0.0.1", "10.0.0.2", 1000, 2000, payload=b"u" * 100)


# ------------------------------------------------------------------ helpers
def wire(msg, xid: int = 1):
    """What the switch receives when a controller sends ``msg``: bytes, then decode."""
    msg.xid = xid
    return codec.decode(codec.encode(msg))


class Rig:
    """One switch plus a clock; ``send`` returns (decoded messages, emits)."""

    def __init__(self, ports=(1, 2, 3), dpid: int = 1, **kw) -> None:
        self.sw = Switch(dpid, ports, **kw)
        self.now = 0.0

    def split(self, outputs):
        msgs, emits = [], []
        for o in outputs:
            if isinstance(o, ToController):
                msgs.append(round_trip(o.msg))
            else:
                assert isinstance(o, Emit)
                emits.append(o)
        return msgs, emits

    def send(self, msg, xid: int = 1, conn: int = 0):
        return self.split(self.sw.handle_message(conn, wire(msg, xid), self.now))

    def packet(self, in_port: int, pkt: Packet, tag=None):
        return self.split(self.sw.receive_packet(in_port, pkt, self.now, tag))

    # controller-side constructors
    def flow_mod(self, match=None, actions=(), *, command=ofp.OFPFC_ADD, priority=100, cookie=0,
                 idle=0, hard=0, flags=0, buffer_id=NO_BUFFER, out_port=ofp.OFPP_NONE, xid=1):
        msg = P.OFPFlowMod(DP, match=match if match is not None else P.OFPMatch(), cookie=cookie,
                           command=command, idle_timeout=idle, hard_timeout=hard, priority=priority,
                           buffer_id=buffer_id, out_port=out_port, flags=flags, actions=list(actions))
        return self.send(msg, xid)

    def packet_out(self, actions, *, buffer_id=NO_BUFFER, in_port=ofp.OFPP_NONE, data=None, xid=1):
        msg = P.OFPPacketOut(DP, buffer_id=buffer_id, in_port=in_port, actions=list(actions), data=data)
        return self.send(msg, xid)

    def stats(self, req, xid=1):
        msgs, emits = self.send(req, xid)
        assert not emits and len(msgs) == 1
        assert msgs[0].xid == xid
        return msgs[0]


def only(msgs, cls):
    assert len(msgs) == 1, msgs
    assert isinstance(msgs[0], cls), msgs[0]
    return msgs[0]


def error_of(msgs, xid=None):
    err = only(msgs, P.OFPErrorMsg)
    if xid is not None:
        assert err.xid == xid
    return err.type, err.code


def emitted(emits):
    return sorted(e.port for e in emits)


def mac_bin(mac: str) -> bytes:
    return mac_to_int(mac).to_bytes(6, "big")


def hw(rig, port_no: int) -> str:
    """A port's MAC as a controller writes it in PORT_MOD (os-ken wants text)."""
    return int_to_mac(rig.sw.ports[port_no].hw_addr)


def same(a: Packet, b: Packet) -> bool:
    return a.to_bytes() == b.to_bytes()


def out(port, max_len=0xFFE5):
    return P.OFPActionOutput(port, max_len)


# ------------------------------------------------------------------ handshake and config
def test_features_reply_reports_dpid_ports_and_buffers():
    rig = Rig(ports=(3, 1, 2), dpid=0xABCDEF, n_buffers=17)
    msgs, _ = rig.send(P.OFPFeaturesRequest(DP), xid=42)
    reply = only(msgs, P.OFPSwitchFeatures)
    assert reply.xid == 42
    assert reply.datapath_id == 0xABCDEF
    assert reply.n_buffers == 17
    assert reply.n_tables == 1
    assert sorted(reply.ports) == [1, 2, 3]
    for no, port in reply.ports.items():
        assert port.port_no == no
        assert port.hw_addr == ":".join(f"{b:02x}" for b in port_hw_addr(0xABCDEF, no).to_bytes(6, "big"))
        assert port.state == 0 and port.config == 0
    assert len({p.hw_addr for p in reply.ports.values()}) == 3
    assert reply.actions & (1 << ofp.OFPAT_OUTPUT)


def test_hello_and_echo_reply():
    rig = Rig()
    assert rig.send(P.OFPHello(DP), xid=3) == ([], [])
    msgs, _ = rig.send(P.OFPEchoRequest(DP, data=b"are you there?"), xid=0x1234)
    reply = only(msgs, P.OFPEchoReply)
    assert reply.xid == 0x1234
    assert reply.data == b"are you there?"
    msgs, _ = rig.send(P.OFPEchoRequest(DP, data=b""), xid=9)
    assert only(msgs, P.OFPEchoReply).xid == 9


def test_barrier_reply_keeps_xid_after_earlier_messages_are_applied():
    rig = Rig()
    rig.flow_mod(P.OFPMatch(in_port=1), [out(2)], xid=1)
    msgs, _ = rig.send(P.OFPBarrierRequest(DP), xid=0xDEADBEEF)
    assert only(msgs, P.OFPBarrierReply).xid == 0xDEADBEEF
    assert len(rig.sw.table) == 1


def test_get_and_set_config_change_packet_in_length():
    rig = Rig()
    msgs, _ = rig.send(P.OFPGetConfigRequest(DP), xid=5)
    cfg = only(msgs, P.OFPGetConfigReply)
    assert cfg.xid == 5 and cfg.miss_send_len == 128 and cfg.flags == 0

    full = BIG.to_bytes()
    msgs, _ = rig.packet(1, BIG)
    assert only(msgs, P.OFPPacketIn).data == full[:128]

    assert rig.send(P.OFPSetConfig(DP, ofp.OFPC_FRAG_NORMAL, 64), xid=6) == ([], [])
    msgs, _ = rig.send(P.OFPGetConfigRequest(DP), xid=7)
    assert only(msgs, P.OFPGetConfigReply).miss_send_len == 64
    msgs, _ = rig.packet(1, BIG)
    pin = only(msgs, P.OFPPacketIn)
    assert pin.data == full[:64] and pin.total_len == len(full) and pin.buffer_id != NO_BUFFER

    rig.send(P.OFPSetConfig(DP, 0, 0xFFFF))
    msgs, _ = rig.packet(1, BIG)
    pin = only(msgs, P.OFPPacketIn)
    assert pin.data == full and pin.buffer_id == NO_BUFFER


# ------------------------------------------------------------------ packet-in and buffers
def test_table_miss_packet_in_truncates_and_buffers():
    rig = Rig(ports=(1, 2, 3, 4))
    rig.send(P.OFPSetConfig(DP, 0, 50))
    full = BIG.to_bytes()
    msgs, emits = rig.packet(3, BIG)
    assert emits == []
    pin = only(msgs, P.OFPPacketIn)
    assert pin.reason == ofp.OFPR_NO_MATCH
    assert pin.in_port == 3
    assert pin.total_len == len(full)
    assert pin.data == full[:50]
    assert pin.buffer_id != NO_BUFFER and pin.buffer_id in rig.sw.buffers


def test_untruncated_packet_in_is_the_whole_frame():
    """No buffer: data is the entire frame and total_len is its length (OF1.0 5.4.1)."""
    rig = Rig()
    for pkt in (SMALL, BIG):
        rig.send(P.OFPSetConfig(DP, 0, 0xFFFF))
        msgs, _ = rig.packet(2, pkt)
        pin = only(msgs, P.OFPPacketIn)
        assert pin.buffer_id == NO_BUFFER
        assert pin.data == pkt.to_bytes()
        assert pin.total_len == len(pin.data)
        assert same(Packet.from_bytes(pin.data), pkt)


def test_packet_out_with_buffer_consumes_it():
    rig = Rig()
    rig.send(P.OFPSetConfig(DP, 0, 32))
    msgs, _ = rig.packet(1, BIG, tag="lineage-1")
    bid = only(msgs, P.OFPPacketIn).buffer_id
    msgs, emits = rig.packet_out([out(3)], buffer_id=bid, in_port=1, xid=11)
    assert msgs == []
    assert [(e.port, e.packet, e.tag) for e in emits] == [(3, BIG, "lineage-1")]
    assert bid not in rig.sw.buffers
    msgs, emits = rig.packet_out([out(3)], buffer_id=bid, in_port=1, xid=12)
    assert emits == []
    assert error_of(msgs, xid=12) == (ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BUFFER_UNKNOWN)


def test_packet_out_with_data():
    rig = Rig()
    msgs, emits = rig.packet_out([out(2), out(3)], data=UDP.to_bytes(), in_port=ofp.OFPP_NONE)
    assert msgs == []
    assert [e.port for e in emits] == [2, 3] and all(same(e.packet, UDP) for e in emits)
    assert rig.sw.ports[2].counters.tx_packets == 1


def test_packet_out_data_continues_packet_in_lineage():
    rig = Rig()
    rig.send(P.OFPSetConfig(DP, 0, 0xFFFF))
    msgs, _ = rig.packet(1, UDP, tag="t-udp")
    pin = only(msgs, P.OFPPacketIn)
    _, emits = rig.packet_out([out(2)], data=pin.data, in_port=1)
    assert [(e.port, e.tag) for e in emits] == [(2, "t-udp")]


def test_flow_mod_with_buffer_id_applies_new_rule_to_buffered_packet():
    rig = Rig()
    rig.send(P.OFPSetConfig(DP, 0, 40))
    msgs, _ = rig.packet(1, BIG, tag="p")
    bid = only(msgs, P.OFPPacketIn).buffer_id
    msgs, emits = rig.flow_mod(P.OFPMatch(in_port=1, dl_dst=mac_bin(H2)), [out(2)], buffer_id=bid)
    assert msgs == []
    assert [(e.port, e.packet, e.tag) for e in emits] == [(2, BIG, "p")]
    (entry,) = rig.sw.table.entries()
    assert entry.packet_count == 1
    assert bid not in rig.sw.buffers
    # the rule now forwards new packets without a PACKET_IN
    msgs, emits = rig.packet(1, BIG)
    assert msgs == [] and emitted(emits) == [2]
    # a FLOW_MOD naming a consumed buffer still installs, and reports the buffer
    msgs, emits = rig.flow_mod(P.OFPMatch(in_port=2), [out(1)], buffer_id=bid, xid=77)
    assert emits == [] and error_of(msgs, xid=77) == (ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BUFFER_UNKNOWN)
    assert len(rig.sw.table) == 2


def test_buffer_exhaustion_evicts_oldest():
    rig = Rig(n_buffers=2)
    rig.send(P.OFPSetConfig(DP, 0, 20))
    ids = []
    for seq in range(3):
        pkt = icmp_echo(H1, H2, "10.0.0.1", "10.0.0.2", ident=1, seq=seq, payload=b"z" * 64)
        msgs, _ = rig.packet(1, pkt, tag=seq)
        ids.append(only(msgs, P.OFPPacketIn).buffer_id)
    assert len(set(ids)) == 3 and NO_BUFFER not in ids
    assert len(rig.sw.buffers) == 2
    msgs, emits = rig.packet_out([out(2)], buffer_id=ids[0], in_port=1, xid=5)
    assert emits == [] and error_of(msgs, 5) == (ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BUFFER_UNKNOWN)
    for seq in (1, 2):
        msgs, emits = rig.packet_out([out(2)], buffer_id=ids[seq], in_port=1)
        assert msgs == [] and [(e.port, e.tag, e.packet.l4.seq) for e in emits] == [(2, seq, seq)]


def test_a_switch_without_buffers_refuses_a_flow_mod_naming_one():
    """As Open vSwitch, which has had no buffers since 2.7: the flow is not installed."""
    rig = Rig(n_buffers=0)
    msgs, emits = rig.flow_mod(P.OFPMatch(in_port=2), [out(1)], buffer_id=3, xid=8)
    assert emits == [] and error_of(msgs, xid=8) == (ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BUFFER_UNKNOWN)
    assert len(rig.sw.table) == 0


def test_no_buffers_sends_whole_packet():
    rig = Rig(n_buffers=0)
    msgs, _ = rig.send(P.OFPFeaturesRequest(DP))
    assert only(msgs, P.OFPSwitchFeatures).n_buffers == 0
    msgs, _ = rig.packet(1, BIG)
    pin = only(msgs, P.OFPPacketIn)
    assert pin.buffer_id == NO_BUFFER and pin.data == BIG.to_bytes()


def test_buffer_ids_are_deterministic():
    def run():
        rig = Rig(n_buffers=3)
        rig.send(P.OFPSetConfig(DP, 0, 24))
        seen = []
        for seq in range(6):
            pkt = icmp_echo(H1, H2, "10.0.0.1", "10.0.0.2", ident=2, seq=seq, payload=b"q" * 80)
            for o in rig.sw.receive_packet(1 + seq % 3, pkt, float(seq)):
                seen.append(codec.encode(o.msg))
        return seen

    first, second = run(), run()
    assert first == second
    ids = [codec.decode(b).buffer_id for b in first]
    assert ids == sorted(ids) and len(set(ids)) == 6


# ------------------------------------------------------------------ forwarding
def test_flood_skips_in_port_down_ports_and_no_flood_ports():
    rig = Rig(ports=(1, 2, 3, 4, 5))
    assert rig.split(rig.sw.set_link(3, False))[0]  # link down on port 3
    msgs, _ = rig.send(P.OFPPortMod(DP, 4, hw(rig, 4), ofp.OFPPC_NO_FLOOD, ofp.OFPPC_NO_FLOOD, 0))
    assert only(msgs, P.OFPPortStatus).desc.config & ofp.OFPPC_NO_FLOOD

    _, emits = rig.packet_out([out(ofp.OFPP_FLOOD)], data=UDP.to_bytes(), in_port=1)
    assert emitted(emits) == [2, 5]
    _, emits = rig.packet_out([out(ofp.OFPP_ALL)], data=UDP.to_bytes(), in_port=1)
    assert emitted(emits) == [2, 4, 5]
    _, emits = rig.packet_out([out(ofp.OFPP_IN_PORT)], data=UDP.to_bytes(), in_port=1)
    assert emitted(emits) == [1]
    # OF1.0: a packet goes back out its in port only through OFPP_IN_PORT
    _, emits = rig.packet_out([out(1)], data=UDP.to_bytes(), in_port=1)
    assert emitted(emits) == []
    # the same through a flow entry, packet arriving on port 2
    rig.flow_mod(P.OFPMatch(), [out(ofp.OFPP_FLOOD)])
    msgs, emits = rig.packet(2, UDP)
    assert msgs == [] and emitted(emits) == [1, 5]
    # the link comes back: port 3 floods again
    rig.sw.set_link(3, True)
    _, emits = rig.packet(2, UDP)
    assert emitted(emits) == [1, 3, 5]


def test_no_fwd_port_gets_nothing_even_by_flood():
    rig = Rig(ports=(1, 2, 3))
    rig.send(P.OFPPortMod(DP, 2, hw(rig, 2), ofp.OFPPC_NO_FWD, ofp.OFPPC_NO_FWD, 0))
    for action in (out(2), out(ofp.OFPP_FLOOD), out(ofp.OFPP_ALL)):
        _, emits = rig.packet_out([action], data=UDP.to_bytes(), in_port=1)
        assert 2 not in emitted(emits), action


def test_controller_action_sends_packet_in_with_reason_action_and_max_len():
    rig = Rig()
    rig.flow_mod(P.OFPMatch(in_port=1), [out(ofp.OFPP_CONTROLLER, 30), out(2)])
    full = BIG.to_bytes()
    msgs, emits = rig.packet(1, BIG)
    pin = only(msgs, P.OFPPacketIn)
    assert pin.reason == ofp.OFPR_ACTION and pin.in_port == 1
    assert pin.data == full[:30] and pin.total_len == len(full) and pin.buffer_id != NO_BUFFER
    assert emitted(emits) == [2]
    rig.flow_mod(P.OFPMatch(in_port=2), [out(ofp.OFPP_CONTROLLER, 0xFFFF)])
    msgs, _ = rig.packet(2, BIG)
    pin = only(msgs, P.OFPPacketIn)
    assert pin.reason == ofp.OFPR_ACTION and pin.data == full and pin.buffer_id == NO_BUFFER
    # the miss_send_len applies to misses only
    rig.send(P.OFPSetConfig(DP, 0, 10))
    msgs, _ = rig.packet(2, BIG)
    assert only(msgs, P.OFPPacketIn).data == full


def test_set_field_actions_apply_to_following_outputs_only():
    rig = Rig(ports=(1, 2, 3))
    new_mac, new_ip = "00:00:00:00:00:99", "10.9.9.9"
    actions = [out(2), P.OFPActionSetDlDst(mac_bin(new_mac)), P.OFPActionSetNwDst(ip_to_int(new_ip)),
               P.OFPActionSetTpDst(4242), P.OFPActionVlanVid(5), out(3)]
    rig.flow_mod(P.OFPMatch(in_port=1), actions)
    _, emits = rig.packet(1, UDP)
    assert emitted(emits) == [2, 3]
    first, second = sorted(emits, key=lambda e: e.port)
    assert same(first.packet, UDP)
    p = Packet.from_bytes(second.packet.to_bytes())
    assert p.eth_dst == int(new_mac.replace(":", ""), 16)
    assert p.l3.dst == ip_to_int(new_ip) and p.l3.src == UDP.l3.src
    assert p.l4.dst_port == 4242 and p.l4.src_port == 1000
    assert p.vlan is not None and p.vlan.vid == 5
    assert p.payload == UDP.payload


# ------------------------------------------------------------------ flow_mod corners
def test_check_overlap_error():
    rig = Rig()
    assert rig.flow_mod(P.OFPMatch(in_port=1), [out(2)], priority=10) == ([], [])
    msgs, _ = rig.flow_mod(P.OFPMatch(dl_type=0x0800), [out(3)], priority=10,
                           flags=ofp.OFPFF_CHECK_OVERLAP, xid=31)
    assert error_of(msgs, xid=31) == (ofp.OFPET_FLOW_MOD_FAILED, ofp.OFPFMFC_OVERLAP)
    assert len(rig.sw.table) == 1
    # other priority, or no overlap: accepted
    assert rig.flow_mod(P.OFPMatch(dl_type=0x0800), [out(3)], priority=11,
                        flags=ofp.OFPFF_CHECK_OVERLAP) == ([], [])
    assert rig.flow_mod(P.OFPMatch(in_port=2), [out(3)], priority=10,
                        flags=ofp.OFPFF_CHECK_OVERLAP) == ([], [])
    # without the flag the overlap is allowed
    assert rig.flow_mod(P.OFPMatch(dl_type=0x0806), [out(3)], priority=10) == ([], [])
    assert len(rig.sw.table) == 4


def _three_flows(rig):
    rig.flow_mod(P.OFPMatch(in_port=1), [out(2)], priority=10, cookie=0xA, flags=ofp.OFPFF_SEND_FLOW_REM)
    rig.flow_mod(P.OFPMatch(in_port=1, dl_type=0x0800), [out(3)], priority=20, cookie=0xB,
                 flags=ofp.OFPFF_SEND_FLOW_REM)
    rig.flow_mod(P.OFPMatch(in_port=1, dl_type=0x0806), [out(2)], priority=30, cookie=0xC)


def test_delete_strict_needs_exact_match_and_priority():
    rig = Rig()
    _three_flows(rig)
    # wrong priority: nothing
    assert rig.flow_mod(P.OFPMatch(in_port=1), command=ofp.OFPFC_DELETE_STRICT, priority=20) == ([], [])
    assert len(rig.sw.table) == 3
    msgs, _ = rig.flow_mod(P.OFPMatch(in_port=1), command=ofp.OFPFC_DELETE_STRICT, priority=10)
    rem = only(msgs, P.OFPFlowRemoved)
    assert rem.reason == ofp.OFPRR_DELETE and rem.cookie == 0xA and rem.priority == 10
    assert rem.match.in_port == 1
    assert sorted(e.cookie for e in rig.sw.table.entries()) == [0xB, 0xC]


def test_delete_with_out_port_and_flow_removed_only_when_asked():
    rig = Rig()
    _three_flows(rig)
    msgs, _ = rig.flow_mod(P.OFPMatch(in_port=1), command=ofp.OFPFC_DELETE, out_port=3)
    assert only(msgs, P.OFPFlowRemoved).cookie == 0xB
    assert sorted(e.cookie for e in rig.sw.table.entries()) == [0xA, 0xC]
    # non-strict delete of everything: FLOW_REMOVED only for SEND_FLOW_REM flows
    msgs, _ = rig.flow_mod(P.OFPMatch(), command=ofp.OFPFC_DELETE)
    assert [(m.cookie, m.reason) for m in msgs] == [(0xA, ofp.OFPRR_DELETE)]
    assert len(rig.sw.table) == 0


def test_delete_strict_with_out_port_filter():
    rig = Rig()
    _three_flows(rig)
    m = P.OFPMatch(in_port=1, dl_type=0x0800)
    assert rig.flow_mod(m, command=ofp.OFPFC_DELETE_STRICT, priority=20, out_port=2) == ([], [])
    msgs, _ = rig.flow_mod(m, command=ofp.OFPFC_DELETE_STRICT, priority=20, out_port=3)
    assert only(msgs, P.OFPFlowRemoved).cookie == 0xB


def test_idle_and_hard_timeouts():
    rig = Rig()
    rem = ofp.OFPFF_SEND_FLOW_REM
    rig.flow_mod(P.OFPMatch(in_port=1), [out(2)], idle=10, cookie=1, flags=rem)
    rig.flow_mod(P.OFPMatch(in_port=2), [out(1)], hard=20, cookie=2, flags=rem)
    rig.flow_mod(P.OFPMatch(in_port=3), [out(1)], hard=5, cookie=3)  # no FLOW_REMOVED wanted
    rig.now = 8.0
    rig.packet(1, BIG)  # refreshes the idle timer
    for t in (9.0, 15.0):
        rig.now = t
        rig.packet(2, BIG)  # use does not postpone a hard timeout
    assert rig.split(rig.sw.expire(4.9)) == ([], [])
    assert rig.split(rig.sw.expire(5.0)) == ([], [])
    assert sorted(e.cookie for e in rig.sw.table.entries()) == [1, 2]
    assert rig.split(rig.sw.expire(17.9)) == ([], [])
    msgs, _ = rig.split(rig.sw.expire(18.0))
    idle = only(msgs, P.OFPFlowRemoved)
    assert (idle.cookie, idle.reason) == (1, ofp.OFPRR_IDLE_TIMEOUT)
    assert idle.packet_count == 1 and idle.byte_count == len(BIG.to_bytes())
    assert idle.duration_sec == 18 and idle.idle_timeout == 10
    msgs, _ = rig.split(rig.sw.expire(20.0))
    hard = only(msgs, P.OFPFlowRemoved)
    assert (hard.cookie, hard.reason, hard.packet_count) == (2, ofp.OFPRR_HARD_TIMEOUT, 2)
    assert len(rig.sw.table) == 0


# ------------------------------------------------------------------ stats
def test_counters_in_flow_aggregate_table_and_port_stats():
    rig = Rig()
    rig.flow_mod(P.OFPMatch(in_port=1), [out(2)], priority=10, cookie=0x11)
    rig.flow_mod(P.OFPMatch(in_port=2), [out(3)], priority=10, cookie=0x22)
    n = len(BIG.to_bytes())
    for _ in range(3):
        rig.packet(1, BIG)
    rig.packet(2, BIG)
    rig.packet(3, BIG)  # miss

    flow = rig.stats(P.OFPFlowStatsRequest(DP, 0, P.OFPMatch(), 0xFF, ofp.OFPP_NONE), xid=50)
    assert isinstance(flow, P.OFPFlowStatsReply)
    got = sorted((s.cookie, s.packet_count, s.byte_count, s.priority) for s in flow.body)
    assert got == [(0x11, 3, 3 * n, 10), (0x22, 1, n, 10)]
    by_cookie = {s.cookie: s for s in flow.body}
    assert [a.port for a in by_cookie[0x11].actions] == [2]
    flow = rig.stats(P.OFPFlowStatsRequest(DP, 0, P.OFPMatch(), 0xFF, 3))
    assert [s.cookie for s in flow.body] == [0x22]

    agg = rig.stats(P.OFPAggregateStatsRequest(DP, 0, P.OFPMatch(), 0xFF, ofp.OFPP_NONE))
    body = agg.body[0] if isinstance(agg.body, list) else agg.body
    assert (body.packet_count, body.byte_count, body.flow_count) == (4, 4 * n, 2)
    agg = rig.stats(P.OFPAggregateStatsRequest(DP, 0, P.OFPMatch(in_port=1), 0xFF, ofp.OFPP_NONE))
    body = agg.body[0] if isinstance(agg.body, list) else agg.body
    assert (body.packet_count, body.flow_count) == (3, 1)

    table = rig.stats(P.OFPTableStatsRequest(DP, 0))
    (t,) = table.body
    assert (t.active_count, t.lookup_count, t.matched_count) == (2, 5, 4)

    ports = rig.stats(P.OFPPortStatsRequest(DP, 0, ofp.OFPP_NONE))
    c = {s.port_no: s for s in ports.body}
    assert sorted(c) == [1, 2, 3]
    assert (c[1].rx_packets, c[1].rx_bytes, c[1].tx_packets) == (3, 3 * n, 0)
    assert (c[2].rx_packets, c[2].tx_packets, c[2].tx_bytes) == (1, 3, 3 * n)
    assert (c[3].rx_packets, c[3].tx_packets) == (1, 1)
    one = rig.stats(P.OFPPortStatsRequest(DP, 0, 2))
    assert [s.port_no for s in one.body] == [2]
    msgs, _ = rig.send(P.OFPPortStatsRequest(DP, 0, 9), xid=8)
    assert error_of(msgs, 8)[0] == ofp.OFPET_BAD_REQUEST


def test_desc_stats():
    rig = Rig(dpid=7)
    desc = rig.stats(P.OFPDescStatsRequest(DP, 0), xid=3)
    assert isinstance(desc, P.OFPDescStatsReply)
    body = desc.body[0] if isinstance(desc.body, list) else desc.body
    assert body.mfr_desc.rstrip(b"\0") == b"netsleuth"
    assert body.serial_num.rstrip(b"\0") == b"7"
    assert body.dp_desc.rstrip(b"\0") == b"s7"
    assert body.sw_desc.rstrip(b"\0")


# ------------------------------------------------------------------ ports
def test_port_mod_errors():
    rig = Rig()
    msgs, _ = rig.send(P.OFPPortMod(DP, 9, hw(rig, 1), ofp.OFPPC_PORT_DOWN, ofp.OFPPC_PORT_DOWN, 0), xid=21)
    assert error_of(msgs, 21) == (ofp.OFPET_PORT_MOD_FAILED, ofp.OFPPMFC_BAD_PORT)
    msgs, _ = rig.send(P.OFPPortMod(DP, 1, "02:00:00:00:00:99", ofp.OFPPC_PORT_DOWN,
                                    ofp.OFPPC_PORT_DOWN, 0), xid=22)
    assert error_of(msgs, 22) == (ofp.OFPET_PORT_MOD_FAILED, ofp.OFPPMFC_BAD_HW_ADDR)
    assert rig.sw.ports[1].config == 0


def test_port_mod_port_down_makes_port_unusable():
    rig = Rig()
    rig.flow_mod(P.OFPMatch(in_port=1), [out(2)])
    rig.flow_mod(P.OFPMatch(in_port=3), [out(2)])
    msgs, _ = rig.send(P.OFPPortMod(DP, 2, hw(rig, 2), ofp.OFPPC_PORT_DOWN, ofp.OFPPC_PORT_DOWN, 0))
    st = only(msgs, P.OFPPortStatus)
    assert st.reason == ofp.OFPPR_MODIFY and st.desc.port_no == 2
    assert st.desc.config & ofp.OFPPC_PORT_DOWN
    # the same config again changes nothing and says nothing
    assert rig.send(P.OFPPortMod(DP, 2, hw(rig, 2), ofp.OFPPC_PORT_DOWN, ofp.OFPPC_PORT_DOWN, 0)) == ([], [])
    _, emits = rig.packet(1, BIG)
    assert emits == []
    _, emits = rig.packet_out([out(ofp.OFPP_FLOOD)], data=UDP.to_bytes(), in_port=1)
    assert emitted(emits) == [3]
    # packets arriving on the down port are dropped and counted
    msgs, emits = rig.packet(2, BIG)
    assert (msgs, emits) == ([], [])
    assert rig.sw.ports[2].counters.rx_dropped == 1 and rig.sw.ports[2].counters.rx_packets == 0
    # mask 0 leaves the config alone; clearing PORT_DOWN brings it back
    assert rig.send(P.OFPPortMod(DP, 2, hw(rig, 2), 0, 0, 0)) == ([], [])
    msgs, _ = rig.send(P.OFPPortMod(DP, 2, hw(rig, 2), 0, ofp.OFPPC_PORT_DOWN, 0))
    assert only(msgs, P.OFPPortStatus).desc.config == 0
    _, emits = rig.packet(3, BIG)
    assert emitted(emits) == [2]


def test_set_link_sends_port_status_with_link_down_state():
    rig = Rig()
    msgs, _ = rig.split(rig.sw.set_link(2, False))
    st = only(msgs, P.OFPPortStatus)
    assert st.reason == ofp.OFPPR_MODIFY and st.desc.port_no == 2
    assert st.desc.state & ofp.OFPPS_LINK_DOWN and st.desc.config == 0
    assert rig.sw.set_link(2, False) == []  # no change, no message
    msgs, _ = rig.send(P.OFPFeaturesRequest(DP))
    assert only(msgs, P.OFPSwitchFeatures).ports[2].state & ofp.OFPPS_LINK_DOWN
    msgs, _ = rig.split(rig.sw.set_link(2, True))
    assert only(msgs, P.OFPPortStatus).desc.state & ofp.OFPPS_LINK_DOWN == 0


# ------------------------------------------------------------------ errors
def test_unknown_message_type_is_rejected_by_codec():
    raw = struct.pack("!BBHI", 1, 0x63, 8, 0x55)
    with pytest.raises(CodecError) as exc:
        codec.decode(raw)
    assert (exc.value.err_type, exc.value.err_code, exc.value.xid) == (
        ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BAD_TYPE, 0x55)


def test_switch_to_controller_type_from_controller_is_bad_type():
    rig = Rig()
    msg = P.OFPPacketIn(DP, buffer_id=NO_BUFFER, total_len=60, in_port=1, reason=0, data=SMALL.to_bytes())
    msgs, emits = rig.send(msg, xid=0x77)
    assert emits == []
    err = only(msgs, P.OFPErrorMsg)
    assert (err.type, err.code, err.xid) == (ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BAD_TYPE, 0x77)
    assert err.data == codec.encode(wire(msg, 0x77))[:64]


def test_vendor_message_and_vendor_stats_are_bad_vendor():
    rig = Rig()
    v = P.OFPVendor(DP)
    v.vendor, v.data = 0x00002320, b"\x00\x00\x00\x10"
    msgs, _ = rig.send(v, xid=61)
    assert error_of(msgs, 61) == (ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BAD_VENDOR)
    msgs, _ = rig.send(P.OFPVendorStatsRequest(DP, 0, 0x00002320, b"\x00" * 8), xid=62)
    assert error_of(msgs, 62) == (ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BAD_VENDOR)


@pytest.mark.parametrize("port", [0, ofp.OFPP_MAX + 1, 0xFFF0, ofp.OFPP_NONE])
def test_bad_out_port_is_bad_action(port):
    rig = Rig()
    msgs, _ = rig.flow_mod(P.OFPMatch(in_port=1), [out(port)], xid=90)
    assert error_of(msgs, 90) == (ofp.OFPET_BAD_ACTION, ofp.OFPBAC_BAD_OUT_PORT)
    assert len(rig.sw.table) == 0
    msgs, emits = rig.packet_out([out(port)], data=UDP.to_bytes(), in_port=1, xid=91)
    assert emits == [] and error_of(msgs, 91) == (ofp.OFPET_BAD_ACTION, ofp.OFPBAC_BAD_OUT_PORT)


def test_bad_out_port_keeps_the_buffer():
    rig = Rig()
    rig.send(P.OFPSetConfig(DP, 0, 16))
    msgs, _ = rig.packet(1, BIG)
    bid = only(msgs, P.OFPPacketIn).buffer_id
    msgs, _ = rig.packet_out([out(0)], buffer_id=bid, in_port=1)
    assert error_of(msgs)[0] == ofp.OFPET_BAD_ACTION
    _, emits = rig.packet_out([out(2)], buffer_id=bid, in_port=1)
    assert emitted(emits) == [2]


def test_flow_mod_bad_command():
    rig = Rig()
    msgs, _ = rig.flow_mod(P.OFPMatch(), [out(2)], command=9, xid=13)
    assert error_of(msgs, 13) == (ofp.OFPET_FLOW_MOD_FAILED, ofp.OFPFMFC_BAD_COMMAND)


def test_no_recv_drops_arrivals_except_stp_and_no_packet_in_suppresses_misses():
    rig = Rig(ports=(1, 2, 3))
    rig.send(P.OFPPortMod(DP, 1, hw(rig, 1), ofp.OFPPC_NO_RECV, ofp.OFPPC_NO_RECV, 0))
    assert rig.packet(1, UDP) == ([], [])
    assert rig.sw.ports[1].counters.rx_dropped == 1
    bpdu = Packet(eth_src=mac_to_int(H1), eth_dst=0x0180C2000000, eth_type=0x0026, payload=b"\x42" * 38)
    msgs, _ = rig.packet(1, bpdu)
    assert only(msgs, P.OFPPacketIn).in_port == 1  # 802.1D still passes
    rig.send(P.OFPPortMod(DP, 2, hw(rig, 2), ofp.OFPPC_NO_PACKET_IN, ofp.OFPPC_NO_PACKET_IN, 0))
    assert rig.packet(2, UDP) == ([], [])  # table miss, but no PACKET_IN from this port
    msgs, _ = rig.packet(3, UDP)
    assert only(msgs, P.OFPPacketIn).in_port == 3


def test_error_from_controller_is_not_answered():
    rig = Rig()
    msgs, emits = rig.send(P.OFPErrorMsg(DP, type_=ofp.OFPET_BAD_REQUEST, code=ofp.OFPBRC_BAD_TYPE, data=b"x"))
    assert msgs == [] and emits == []


# ------------------------------------------------------------------ what POX relies on (Open vSwitch's behaviour)
def test_empty_packet_out_is_accepted_and_sends_nothing():
    """No buffer and no data: OVS accepts it silently (POX gar's l2_multi floods so)."""
    rig = Rig()
    msgs, emits = rig.packet_out([out(ofp.OFPP_FLOOD)], xid=4)
    assert msgs == [] and emits == []
    assert all(p.counters.tx_packets == 0 for p in rig.sw.ports.values())


def test_pox_style_flow_mod_ignores_network_fields_without_dl_type():
    """POX sends dl_type wildcarded with nw/tp fields zero but not wildcarded; they must not keep
    the rule from matching IP traffic (it would ping-pong PACKET_INs forever)."""
    rig = Rig()
    m = P.OFPMatch(wildcards=ofp.OFPFW_ALL & ~(ofp.OFPFW_DL_DST | ofp.OFPFW_NW_PROTO | ofp.OFPFW_NW_SRC_MASK
                                               | ofp.OFPFW_NW_DST_MASK | ofp.OFPFW_TP_SRC | ofp.OFPFW_TP_DST),
                   dl_dst=mac_bin(H2))
    msgs, _ = rig.flow_mod(m, [out(2)])
    assert msgs == []
    msgs, emits = rig.packet(1, icmp_echo(H1, H2, "10.0.0.1", "10.0.0.2", ident=1, seq=1))
    assert msgs == [] and emitted(emits) == [2]


def test_buffer_packets_buffers_every_packet_in():
    rig = Rig(buffer_packets=2)
    msgs, _ = rig.send(P.OFPFeaturesRequest(DP))
    assert only(msgs, P.OFPSwitchFeatures).n_buffers == 2
    pkt = icmp_echo(H1, H2, "10.0.0.1", "10.0.0.2", ident=1, seq=1)
    msgs, _ = rig.packet(1, pkt, tag="a")   # 98 bytes: fits miss_send_len 128, buffered all the same
    pin = only(msgs, P.OFPPacketIn)
    assert pin.buffer_id != NO_BUFFER and pin.data == pkt.to_bytes()
    msgs, emits = rig.flow_mod(P.OFPMatch(in_port=1, dl_dst=mac_bin(H2)), [out(3)], buffer_id=pin.buffer_id)
    assert msgs == [] and [(e.port, e.tag) for e in emits] == [(3, "a")]
    # released once: a second use is an unknown buffer, and the flow is installed all the same
    msgs, emits = rig.flow_mod(P.OFPMatch(in_port=2), [out(1)], buffer_id=pin.buffer_id, xid=9)
    assert emits == [] and error_of(msgs, xid=9) == (ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BUFFER_UNKNOWN)
    assert len(rig.sw.table) == 2
    assert rig.sw.rebooted().buffer_packets == 2


def test_default_switch_buffers_only_truncated_packet_ins():
    rig = Rig()
    msgs, _ = rig.packet(1, icmp_echo(H1, H2, "10.0.0.1", "10.0.0.2", ident=1, seq=1))
    assert only(msgs, P.OFPPacketIn).buffer_id == NO_BUFFER


def test_table_size_refuses_an_add_on_a_full_table():
    rig = Rig(table_size=2)
    for port in (1, 2):
        msgs, _ = rig.flow_mod(P.OFPMatch(in_port=port), [out(3)])
        assert msgs == []
    msgs, _ = rig.flow_mod(P.OFPMatch(in_port=3), [out(1)], xid=5)
    assert error_of(msgs, xid=5) == (ofp.OFPET_FLOW_MOD_FAILED, ofp.OFPFMFC_ALL_TABLES_FULL)
    assert len(rig.sw.table) == 2
    # replacing an entry (same match and priority) or modifying one does not grow the table
    msgs, _ = rig.flow_mod(P.OFPMatch(in_port=1), [out(2)])
    assert msgs == []
    msgs, _ = rig.flow_mod(P.OFPMatch(in_port=2), [out(1)], command=ofp.OFPFC_MODIFY)
    assert msgs == [] and len(rig.sw.table) == 2
    rig.flow_mod(P.OFPMatch(in_port=1), command=ofp.OFPFC_DELETE)
    msgs, _ = rig.flow_mod(P.OFPMatch(in_port=3), [out(1)])
    assert msgs == [] and len(rig.sw.table) == 2


def test_table_stats_report_the_table_size_as_the_capacity():
    """A TABLE_STATS reply's max_entries is what an ADD would hit: --table-size when set."""
    (t,) = Rig(openflow="1.0", table_size=25).stats(P.OFPTableStatsRequest(DP, 0)).body
    assert t.max_entries == 25
    (t,) = Rig(openflow="1.0").stats(P.OFPTableStatsRequest(DP, 0)).body
    assert t.max_entries == 1_000_000
