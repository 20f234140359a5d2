"""Version negotiation of SwitchConnection, against the spec and against real os-ken controllers.

The unit tests build peer HELLOs byte by byte from the OpenFlow 1.3 spec
(section 6.3.1, ``ofp_hello_elem_versionbitmap``).  The harness tests start
the real os-ken 1.4.1 ``osken-manager`` from ``.venv-controller`` with
``simple_switch_13`` (1.3 only) or ``simple_switch`` (1.0 only), open a TCP
connection to it with a SwitchConnection, play the switch's part of the
handshake and check what the controller sends decodes.
"""

from __future__ import annotations

import socket
import struct
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
from os_ken.ofproto import ofproto_v1_0 as ofp10
from os_ken.ofproto import ofproto_v1_0_parser as p10
from os_ken.ofproto import ofproto_v1_3 as ofp13
from os_ken.ofproto import ofproto_v1_3_parser as p13

from netsleuth.controllers.external import OSKEN_MAIN, find_controller_python
from netsleuth.errors import NetsleuthError
from netsleuth.model.packet import arp_request
from netsleuth.openflow import codec
from netsleuth.openflow.codec import DATAPATH, DATAPATH13
from netsleuth.openflow.connection import (
    Connected,
    ConnectionStateError,
    ErrorEvent,
    State,
    SwitchConnection,
    VersionMismatch,
    offered_versions,
)


def hello(version: int, bitmap: list[int] | None = None, xid: int = 1) -> bytes:
    body = b""
    if bitmap is not None:
        bits = sum(1 << v for v in bitmap)
        body = struct.pack("!HHI", 1, 8, bits)  # OFPHET_VERSIONBITMAP, length 8, one 32-bit word
    return struct.pack("!BBHI", version, 0, 8 + len(body), xid) + body


# ----------------------------------------------------------------------------- our HELLO


def test_offering_1_0_only_sends_the_bare_1_0_hello():
    assert SwitchConnection().initiate() == struct.pack("!BBHI", 1, 0, 8, 1)


@pytest.mark.parametrize("versions,bits", [((4,), 1 << 4), ((1, 4), (1 << 1) | (1 << 4))])
def test_offering_1_3_sends_a_1_3_hello_with_the_version_bitmap(versions, bits):
    wire = SwitchConnection(versions=versions).initiate()
    assert wire == struct.pack("!BBHIHHI", 4, 0, 16, 1, 1, 8, bits)
    parsed = codec.decode(wire, version=4)
    assert isinstance(parsed, p13.OFPHello) and parsed.elements[0].versions == sorted(versions)


def test_unknown_offered_version_is_refused():
    with pytest.raises(NetsleuthError):
        SwitchConnection(versions=(1, 3))
    assert offered_versions("auto") == (1, 4) and offered_versions("1.3") == (4,)
    with pytest.raises(NetsleuthError):
        offered_versions("1.5")


# ----------------------------------------------------------------------------- negotiation


@pytest.mark.parametrize("ours,peer,expected", [
    ((1, 4), hello(4, [1, 4]), 4),       # both bitmaps: the highest common
    ((1, 4), hello(4, [4]), 4),
    ((1, 4), hello(5, [1, 4, 5]), 4),    # a 1.4 peer that also speaks 1.3
    ((1, 4), hello(5, [1, 5]), 1),       # ... and one that only adds 1.0
    ((1, 4), hello(1), 1),               # no bitmap: min(ours, theirs)
    ((1, 4), hello(4), 4),
    ((4,), hello(4), 4),
    ((4,), hello(6), 4),
    ((1,), hello(4), 1),
    ((1,), hello(4, [1, 4]), 1),
])
def test_negotiated_version(ours, peer, expected):
    c = SwitchConnection(versions=ours)
    c.initiate()
    (ev,) = c.receive_data(peer)
    assert ev == Connected(expected, peer[0])
    assert (c.state, c.version) == (State.CONNECTED, expected)


@pytest.mark.parametrize("ours,peer", [
    ((4,), hello(1)),                    # min(4, 1) = 1, which we do not offer
    ((1, 4), hello(3)),                  # min(4, 3) = 1.2
    ((4,), hello(5, [1, 5])),            # no common version in the bitmaps
    ((1,), hello(4, [4, 5])),
])
def test_no_common_version_is_hello_failed_and_closes(ours, peer):
    c = SwitchConnection(versions=ours)
    c.initiate()
    (ev,) = c.receive_data(peer)
    assert isinstance(ev, VersionMismatch) and c.state is State.CLOSED
    version, msg_type, length, xid = struct.unpack_from("!BBHI", ev.reply)
    err_type, err_code = struct.unpack_from("!HH", ev.reply, 8)
    assert (msg_type, err_type, err_code, xid) == (1, 0, 0, 1)  # OFPT_ERROR, HELLO_FAILED, INCOMPATIBLE
    assert version in ours and length == len(ev.reply)


def test_1_3_connection_decodes_1_3_and_answers_malformed_input_in_1_3():
    c = SwitchConnection(versions=(1, 4))
    c.initiate()
    assert c.receive_data(hello(4, [1, 4])) == [Connected(4, 4)]
    barrier = p13.OFPBarrierRequest(DATAPATH13)
    barrier.xid = 9
    bad_flow_mod = bytearray(codec.encode(p13.OFPFlowMod(DATAPATH13, match=p13.OFPMatch(), instructions=[
        p13.OFPInstructionActions(ofp13.OFPIT_APPLY_ACTIONS, [p13.OFPActionOutput(1)])])))
    bad_flow_mod[4:8] = struct.pack("!I", 10)
    bad_flow_mod[-16:-14] = struct.pack("!H", 0x7777)  # unknown action type
    got = c.receive_data(codec.encode(barrier) + bytes(bad_flow_mod))
    assert isinstance(got[0], p13.OFPBarrierRequest) and got[0].xid == 9
    ev = got[1]
    assert isinstance(ev, ErrorEvent) and not ev.fatal
    assert (ev.error.err_type, ev.error.err_code) == (ofp13.OFPET_BAD_ACTION, ofp13.OFPBAC_BAD_TYPE)
    assert "OpenFlow 1.3" in ev.error.fix
    reply = codec.decode(ev.reply, version=4)
    assert isinstance(reply, p13.OFPErrorMsg) and reply.xid == 10 and reply.data == bytes(bad_flow_mod[:64])
    # A 1.0 message on the 1.3 connection is a BAD_VERSION error, answered in 1.3.
    (ev,) = c.receive_data(codec.encode(p10.OFPBarrierRequest(DATAPATH)))
    assert isinstance(ev, ErrorEvent) and ev.error.err_code == ofp13.OFPBRC_BAD_VERSION
    assert ev.reply[0] == 4 and c.state is State.CONNECTED


def test_send_checks_the_message_version_and_assigns_xids():
    c = SwitchConnection(versions=(1, 4))
    assert c.initiate()[4:8] == struct.pack("!I", 1)
    c.receive_data(hello(4, [4]))
    assert codec.decode(c.send(p13.OFPBarrierReply(DATAPATH13)), version=4).xid == 2
    with pytest.raises(ConnectionStateError, match="negotiated OpenFlow 1.3"):
        c.send(p10.OFPBarrierReply(DATAPATH))


def test_peer_rejecting_our_version_after_hello_is_a_mismatch():
    c = SwitchConnection(versions=(1, 4))
    c.initiate()
    c.receive_data(hello(1))
    err = p13.OFPErrorMsg(DATAPATH13, ofp13.OFPET_HELLO_FAILED, ofp13.OFPHFC_INCOMPATIBLE, b"unsupported version 0x1")
    err.xid = 3
    (ev,) = c.receive_data(codec.encode(err))
    assert isinstance(ev, VersionMismatch) and "unsupported version 0x1" in ev.reason


# ----------------------------------------------------------------------------- real os-ken controllers


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def osken(request: pytest.FixtureRequest) -> Iterator[Any]:
    """Start ``osken-manager <app>`` on a free port; yields a connect() function.

    It runs through netsleuth's osken_main.py, which is osken-manager plus the
    one-line shim os-ken 1.4.1 needs with the current eventlet.
    """
    python = find_controller_python()
    procs: list[subprocess.Popen[bytes]] = []

    def start(app: str, *extra: str) -> socket.socket:
        port = _free_port()
        proc = subprocess.Popen([python, str(OSKEN_MAIN), "--ofp-tcp-listen-port", str(port), "--ofp-listen-host",
                                 "127.0.0.1", *extra, app], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        procs.append(proc)
        deadline = time.monotonic() + 30
        while True:
            try:
                return socket.create_connection(("127.0.0.1", port), timeout=1)
            except OSError as exc:
                if proc.poll() is not None or time.monotonic() > deadline:
                    stderr = proc.stderr.read().decode()[-2000:]  # type: ignore[union-attr]
                    raise RuntimeError(f"{app} did not listen: {stderr}") from exc
                time.sleep(0.1)

    yield start
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _features_reply(version: int, request: Any) -> Any:
    if version == 4:
        reply = p13.OFPSwitchFeatures(DATAPATH13, datapath_id=1, n_buffers=0, n_tables=254, auxiliary_id=0,
                                      capabilities=ofp13.OFPC_FLOW_STATS)
        reply.reserved = 0
    else:
        reply = p10.OFPSwitchFeatures(DATAPATH, datapath_id=1, n_buffers=0, n_tables=1, capabilities=0, actions=0,
                                      ports={})
    reply.xid = request.xid
    return reply


def _port13(no: int) -> p13.OFPPort:
    return p13.OFPPort(no, f"00:00:00:00:01:{no:02x}", f"s1-eth{no}".encode(), 0, 0, 0, 0, 0, 0, 0, 0)


def _packet_in(version: int) -> Any:
    frame = arp_request(0x000000000001, 0x0A000001, 0x0A000002).to_bytes()
    if version == 4:
        return p13.OFPPacketIn(DATAPATH13, ofp13.OFP_NO_BUFFER, len(frame), ofp13.OFPR_NO_MATCH, 0, 0,
                               p13.OFPMatch(in_port=1), frame)
    return p10.OFPPacketIn(DATAPATH, ofp10.OFP_NO_BUFFER, len(frame), 1, ofp10.OFPR_NO_MATCH, frame)


def _play_switch(sock: socket.socket, versions: tuple[int, ...], *, until: type, count: int = 1,
                 timeout: float = 30.0) -> list[Any]:
    """Be the switch: HELLO, answer FEATURES/PORT_DESC/ECHO, send one PACKET_IN; collect until the
    ``count``-th ``until``."""
    conn = SwitchConnection(versions=versions)
    sock.sendall(conn.initiate())
    got: list[Any] = []
    deadline = time.monotonic() + timeout
    sock.settimeout(0.5)
    while time.monotonic() < deadline and conn.state is not State.CLOSED:
        try:
            data = sock.recv(65536)
        except TimeoutError:
            continue
        if not data:
            break
        for item in conn.receive_data(data):
            got.append(item)
            if isinstance(item, (VersionMismatch, ErrorEvent)):
                if item.reply:
                    sock.sendall(item.reply)
                continue
            if isinstance(item, Connected):
                continue
            name = codec.msg_type_name(item)
            if name == "FEATURES_REQUEST":
                sock.sendall(conn.send(_features_reply(conn.version or 1, item)))
                if conn.version == 1:  # 1.0 controllers are in MAIN state now
                    sock.sendall(conn.send(_packet_in(1)))
            elif isinstance(item, p13.OFPPortDescStatsRequest):
                reply = p13.OFPPortDescStatsReply(DATAPATH13, body=[_port13(1), _port13(2)], flags=0)
                reply.type, reply.xid = ofp13.OFPMP_PORT_DESC, item.xid
                sock.sendall(conn.send(reply))
                sock.sendall(conn.send(_packet_in(4)))
            elif name == "ECHO_REQUEST":
                reply = (p13.OFPEchoReply(DATAPATH13, item.data) if conn.version == 4
                         else p10.OFPEchoReply(DATAPATH, item.data))
                reply.xid = item.xid
                sock.sendall(conn.send(reply))
            if isinstance(item, until):
                count -= 1
                if count == 0:
                    return got
    return got


@pytest.mark.real
def test_simple_switch_13_negotiates_1_3_and_its_messages_decode(osken):
    sock = osken("os_ken.app.simple_switch_13")
    with sock:
        got = _play_switch(sock, (1, 4), until=p13.OFPPacketOut)
    assert got[0] == Connected(4, 4), got[:3]
    msgs = [m for m in got if not isinstance(m, (Connected, ErrorEvent, VersionMismatch))]
    assert not [m for m in got if isinstance(m, (ErrorEvent, VersionMismatch))]
    names = [codec.msg_type_name(m) for m in msgs]
    assert names[:2] == ["FEATURES_REQUEST", "MULTIPART_REQUEST"], names
    assert isinstance(msgs[1], p13.OFPPortDescStatsRequest)
    # simple_switch_13's table-miss entry: priority 0, match everything, send to the controller unbuffered.
    (miss,) = [m for m in msgs if isinstance(m, p13.OFPFlowMod)]
    assert (miss.command, miss.priority, miss.table_id, miss.buffer_id) == (ofp13.OFPFC_ADD, 0, 0, ofp13.OFP_NO_BUFFER)
    assert list(miss.match.items()) == []
    (inst,) = miss.instructions
    assert inst.type == ofp13.OFPIT_APPLY_ACTIONS
    (out,) = inst.actions
    assert (out.port, out.max_len) == (ofp13.OFPP_CONTROLLER, ofp13.OFPCML_NO_BUFFER)
    # Our PACKET_IN (an ARP request) is flooded back with a 1.3 PACKET_OUT carrying the frame.
    po = msgs[-1]
    assert isinstance(po, p13.OFPPacketOut) and po.in_port == 1
    assert [a.port for a in po.actions] == [ofp13.OFPP_FLOOD]
    assert bytes(po.data) == _packet_in(4).data
    for m in msgs:  # every message re-encodes to the bytes the controller sent, and survives JSON
        assert codec.encode(codec.msg_from_json(codec.msg_to_json(m))) == bytes(m.buf)


@pytest.mark.real
def test_simple_switch_negotiates_1_0_from_an_auto_switch(osken):
    sock = osken("os_ken.app.simple_switch")
    with sock:
        got = _play_switch(sock, (1, 4), until=p10.OFPPacketOut)
    assert got[0] == Connected(1, 1)
    msgs = [m for m in got if not isinstance(m, (Connected, ErrorEvent, VersionMismatch))]
    assert codec.msg_type_name(msgs[0]) == "FEATURES_REQUEST" and isinstance(msgs[0], p10.OFPFeaturesRequest)
    po = msgs[-1]
    assert isinstance(po, p10.OFPPacketOut) and [a.port for a in po.actions] == [ofp10.OFPP_FLOOD]


@pytest.mark.real
def test_simple_switch_refuses_a_1_3_only_switch(osken):
    sock = osken("os_ken.app.simple_switch")
    with sock:
        got = _play_switch(sock, (4,), until=VersionMismatch, timeout=15)
    assert isinstance(got[0], VersionMismatch), got
    assert got[0].peer_version == 1


@pytest.mark.real
def test_rest_router_configures_a_1_3_switch_with_set_async_and_flow_mods(osken):
    """os-ken's rest_router (1.0/1.2/1.3) sets up a 1.3 switch: SET_ASYNC (in 1.3 where 1.2 gets a
    SET_CONFIG; no os-ken 1.4.1 app sends a 1.3 SET_CONFIG), then its ARP, normal and drop flows."""
    sock = osken("os_ken.app.rest_router", "--wsapi-host", "127.0.0.1", "--wsapi-port", str(_free_port()))
    with sock:
        got = _play_switch(sock, (1, 4), until=p13.OFPFlowMod, count=3)
    assert got[0] == Connected(4, 4)
    assert not [m for m in got if isinstance(m, (ErrorEvent, VersionMismatch))], got
    msgs = [m for m in got if not isinstance(m, Connected)]
    assert [codec.msg_type_name(m) for m in msgs] == [
        "FEATURES_REQUEST", "MULTIPART_REQUEST", "SET_ASYNC", "FLOW_MOD", "FLOW_MOD", "FLOW_MOD"]
    set_async = msgs[2]
    assert set_async.packet_in_mask[0] == 1 << ofp13.OFPR_ACTION | 1 << ofp13.OFPR_INVALID_TTL
    arp, normal, drop = msgs[3:]
    assert dict(arp.match.items()) == {"eth_type": 0x0806}
    assert [(a.port, a.max_len) for a in arp.instructions[0].actions] == [(ofp13.OFPP_CONTROLLER,
                                                                         ofp13.OFPCML_NO_BUFFER)]
    assert [a.port for a in normal.instructions[0].actions] == [ofp13.OFPP_NORMAL]
    assert [i.actions for i in drop.instructions] == [[]] and dict(drop.match.items()) == {"eth_type": 0x0800}
    assert dict(normal.match.items()) == {} and normal.priority < drop.priority  # drop IP unless routed
    for m in msgs:
        assert codec.encode(codec.msg_from_json(codec.msg_to_json(m))) == bytes(m.buf)
