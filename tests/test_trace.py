"""Trace format v1: schema, JSONL files, masked fingerprints."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from os_ken.ofproto import ofproto_v1_0 as ofp
from os_ken.ofproto import ofproto_v1_0_parser as p

from netsleuth.errors import TraceFormatError
from netsleuth.model.packet import Packet, arp_request, icmp_echo, lldp_frame, udp_packet
from netsleuth.model.topology import parse_topo
from netsleuth.trace import (
    EVENT_KINDS,
    ControllerEvent,
    ControlToController,
    ControlToSwitch,
    Event,
    InputEvent,
    PacketArrival,
    PingResult,
    SwitchConnected,
    SwitchDisconnected,
    Trace,
    TraceHeader,
    TraceWriter,
    TrafficInjection,
    Violation,
    event_from_json,
    event_kind,
    event_to_json,
    header_from_json,
    header_to_json,
    iter_trace,
    of_fingerprint,
    packet_fingerprint,
    read_header,
    read_trace,
    write_trace,
)
from netsleuth.trace.io import dumps_line


# ----------------------------------------------------------------- helpers
class StubDatapath:
    """os-ken message constructors only need these two attributes."""

    ofproto = ofp
    ofproto_parser = p


DP = StubDatapath()
H1, H2 = "00:00:00:00:00:01", "00:00:00:00:00:02"
PING = icmp_echo(H1, H2, "10.0.0.1", "10.0.0.2", ident=1, seq=1)


def js(msg, type_: str, xid: int = 0) -> dict:
    """The codec's JSON form of an os-ken message."""
    return json.loads(json.dumps({"type": type_, "xid": xid, "body": msg.to_jsondict()}))


def match(**kw) -> p.OFPMatch:
    wildcards = kw.pop("wildcards", None)
    return p.OFPMatch(wildcards=wildcards, **kw)


def flow_mod(*, xid=1, cookie=0, buffer_id=0xFFFFFFFF, m=None, actions=None, priority=100,
             idle=10, hard=0, command=ofp.OFPFC_ADD) -> dict:
    m = m if m is not None else match(in_port=1, dl_dst=b"\x00\x00\x00\x00\x00\x02")
    actions = actions if actions is not None else [p.OFPActionOutput(2)]
    msg = p.OFPFlowMod(DP, match=m, cookie=cookie, command=command, idle_timeout=idle, hard_timeout=hard,
                       priority=priority, buffer_id=buffer_id, out_port=ofp.OFPP_NONE, flags=0, actions=actions)
    return js(msg, "FLOW_MOD", xid)


def packet_in(*, xid=0, buffer_id=1, in_port=1, reason=ofp.OFPR_NO_MATCH, data=None) -> dict:
    data = PING.to_bytes() if data is None else data
    msg = p.OFPPacketIn(DP, buffer_id=buffer_id, total_len=len(data) + 7, in_port=in_port, reason=reason, data=data)
    return js(msg, "PACKET_IN", xid)


def packet_out(*, xid=0, buffer_id=0xFFFFFFFF, in_port=1, data=b"", actions=None) -> dict:
    actions = actions if actions is not None else [p.OFPActionOutput(ofp.OFPP_FLOOD)]
    return js(p.OFPPacketOut(DP, buffer_id=buffer_id, in_port=in_port, actions=actions, data=data), "PACKET_OUT", xid)


def header(**kw) -> TraceHeader:
    fields = dict(topology=parse_topo("single,2").to_json(), topology_spec="single,2",
                  controller="os-ken:simple_switch", seed=42, tool_version="0.1.0", command="netsleuth fuzz")
    fields.update(kw)
    return TraceHeader(**fields)


def sample_events() -> list[Event]:
    fm = flow_mod()
    pi = packet_in()
    return [
        ControllerEvent(seq=0, t=0.0, controller="c0", what="started", detail="pid 123"),
        SwitchConnected(seq=1, t=0.01, dpid=1, conn=0, controller="c0"),
        TrafficInjection(seq=2, t=0.5, id="i1", deps=(), host="h1", packet=PING.to_json(), dst="h2"),
        PacketArrival(seq=3, t=0.5, node="s1", port=1, pid=0, packet=PING.to_json(), fp=packet_fingerprint(PING)),
        ControlToController(seq=4, t=0.5, conn=0, controller="c0", dpid=1, msg=pi, fp=of_fingerprint(pi)),
        ControlToSwitch(seq=5, t=0.51, conn=0, controller="c0", dpid=1, msg=fm, fp=of_fingerprint(fm)),
        TrafficInjection(seq=6, t=0.6, id="i2", deps=("i1",), host="h2", packet=PING.to_json(), dst=None),
        PingResult(seq=7, t=0.62, src="h1", dst="h2", ok=True, rtt=0.02),
        PingResult(seq=8, t=1.5, src="h2", dst="h1", ok=False, rtt=None),
        Violation(seq=9, t=2.0, invariant="dataplane-loops", message="ICMP looped", persistent=True,
                  hosts=("h1",), switches=("s1",), details={"pid": 3, "path": ["s1:1", "s2:2"]}),
        SwitchDisconnected(seq=10, t=3.0, dpid=1, conn=0, controller="c0", reason="controller closed"),
        ControllerEvent(seq=11, t=3.0, controller="c0", what="exited", detail="code 1 — ünïcode"),
    ]


def write_lines(path: Path, *lines: str, end: str = "\n") -> Path:
    path.write_text("\n".join(lines) + end, encoding="utf-8")
    return path


HEADER_LINE = json.dumps(header_to_json(header()), sort_keys=True)


# ------------------------------------------------------------------ schema
def test_all_kinds_registered_with_input_flag():
    kinds = {"of_to_switch", "of_to_controller", "switch_connected", "switch_disconnected", "traffic",
             "packet", "ping", "violation", "controller_event"}
    assert kinds <= set(EVENT_KINDS)
    assert {k for k in kinds if EVENT_KINDS[k].is_input} == {"traffic"}
    assert issubclass(TrafficInjection, InputEvent) and TrafficInjection.kind == "traffic"


@pytest.mark.parametrize("ev", sample_events(), ids=lambda e: f"{e.kind}-{e.seq}")
def test_event_json_round_trip(ev):
    d = event_to_json(ev)
    assert d["kind"] == ev.kind
    back = event_from_json(json.loads(json.dumps(d)))
    assert back == ev and type(back) is type(ev)


def test_tuples_come_back_as_tuples_and_fingerprints_stay_hashable():
    ev = event_from_json(json.loads(json.dumps(event_to_json(sample_events()[5]))))
    assert isinstance(ev.fp, tuple) and hash(ev.fp) == hash(of_fingerprint(flow_mod()))
    v = event_from_json(json.loads(json.dumps(event_to_json(sample_events()[9]))))
    assert v.hosts == ("h1",) and v.switches == ("s1",)


def test_float_fields_are_written_as_floats():
    d = event_to_json(PingResult(seq=0, t=1, src="a", dst="b", ok=True, rtt=2))
    assert type(d["t"]) is float and type(d["rtt"]) is float


@pytest.mark.parametrize("change, words", [
    ({"kind": "teleport"}, "unknown event kind"),
    ({"kind": None}, "lacks its 'kind'"),
    ({"rtt": "fast"}, "'rtt'"),
    ({"ok": 1}, "'ok'"),
    ({"seq": True}, "'seq'"),
    ({"seq": 1.5}, "'seq'"),
    ({"t": float("inf")}, "'t'"),
    ({"colour": "red"}, "unknown field"),
])
def test_event_from_json_rejects_bad_events(change, words):
    d = event_to_json(PingResult(seq=0, t=1.0, src="a", dst="b", ok=True, rtt=None))
    d.update(change)
    d = {k: v for k, v in d.items() if v is not None or k == "rtt"}
    with pytest.raises(TraceFormatError) as err:
        event_from_json(d)
    assert words in err.value.problem and err.value.fix


def test_event_from_json_missing_field_and_non_objects():
    d = event_to_json(sample_events()[1])
    del d["dpid"]
    with pytest.raises(TraceFormatError, match="lacks required field 'dpid'"):
        event_from_json(d)
    with pytest.raises(TraceFormatError, match="JSON object"):
        event_from_json([1, 2])
    with pytest.raises(TraceFormatError, match="list of strings"):
        event_from_json({**event_to_json(sample_events()[2]), "deps": "i1"})
    with pytest.raises(TraceFormatError, match="second trace header"):
        event_from_json(header_to_json(header()))


def test_optional_deps_default_when_absent():
    d = event_to_json(sample_events()[2])
    del d["deps"]
    assert event_from_json(d).deps == ()


def test_event_to_json_rejects_unrecordable_values():
    with pytest.raises(TraceFormatError, match="'fp'"):
        event_to_json(PacketArrival(seq=0, t=0.0, node="s1", port=1, pid=0, packet={}, fp=["IPv4"]))
    with pytest.raises(TraceFormatError, match="'rtt'"):
        event_to_json(PingResult(seq=0, t=0.0, src="a", dst="b", ok=True, rtt=math.nan))
    with pytest.raises(TraceFormatError, match="'hosts'"):
        event_to_json(Violation(seq=0, t=0.0, invariant="x", message="", persistent=False, hosts=["h1"],
                                switches=(), details={}))


def test_adding_a_kind_is_a_decorator_and_a_dataclass():
    try:
        @event_kind("test_wait")
        @dataclass(frozen=True, slots=True, kw_only=True)
        class Wait(InputEvent):
            seconds: float

        ev = Wait(seq=3, t=1.0, id="i9", deps=("i1", "i2"), seconds=0.25)
        assert event_from_json(json.loads(json.dumps(event_to_json(ev)))) == ev
        assert Wait.is_input
        with pytest.raises(ValueError, match="already registered"):
            event_kind("test_wait")(Wait)
    finally:
        EVENT_KINDS.pop("test_wait", None)

    @dataclass(frozen=True, slots=True, kw_only=True)
    class Unregistered(Event):
        pass

    with pytest.raises(TraceFormatError, match="not a registered event kind"):
        event_to_json(Unregistered(seq=0, t=0.0))


def test_header_round_trip_and_no_timestamps():
    h = header(extra={"fuzz": {"rounds": 3}})
    d = header_to_json(h)
    assert d["format"] == "netsleuth-trace" and d["version"] == 1
    assert not {"time", "timestamp", "date", "created"} & set(d)
    assert header_from_json(json.loads(json.dumps(d))) == h
    assert header(seed=None).command == "netsleuth fuzz" and TraceHeader(
        topology={}, topology_spec="", controller="", seed=None, tool_version="x").extra == {}


@pytest.mark.parametrize("change, words", [
    ({"format": "pcap"}, "not a netsleuth trace header"),
    ({"version": 2}, "newer"),
    ({"version": 0}, "invalid version"),
    ({"version": "1"}, "invalid version"),
    ({"seed": "42"}, "'seed'"),
])
def test_header_from_json_rejects(change, words):
    with pytest.raises(TraceFormatError) as err:
        header_from_json({**header_to_json(header()), **change})
    assert words in err.value.problem


# ---------------------------------------------------------------------- io
def test_write_read_round_trip_is_lossless_and_byte_identical(tmp_path):
    events = sample_events()
    a, b, c = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    with TraceWriter(a, header()) as w:
        for ev in events:
            w.write(ev)
    trace = read_trace(a)
    assert trace == Trace(header(), events)
    write_trace(b, trace)
    assert b.read_bytes() == a.read_bytes()
    write_trace(c, Trace(header(), sample_events()))  # same inputs, same bytes
    assert c.read_bytes() == a.read_bytes()


def test_lines_are_compact_sorted_json(tmp_path):
    path = tmp_path / "t.jsonl"
    write_trace(path, Trace(header(), sample_events()[:3]))
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 4 and json.loads(lines[0])["format"] == "netsleuth-trace"
    for line in lines:
        assert line == json.dumps(json.loads(line), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def test_writer_flushes_every_200_events_and_file_stays_valid(tmp_path):
    path = tmp_path / "t.jsonl"
    w = TraceWriter(path, header())
    assert read_trace(path).events == []  # the header alone is a valid trace
    for i in range(199):
        w.write(SwitchConnected(seq=i, t=float(i), dpid=1, conn=0, controller="c0"))
    assert read_trace(path).events == []
    w.write(SwitchConnected(seq=199, t=199.0, dpid=1, conn=0, controller="c0"))
    assert len(read_trace(path).events) == 200
    assert path.read_bytes().endswith(b"\n")
    w.write(SwitchConnected(seq=200, t=200.0, dpid=1, conn=0, controller="c0"))
    w.close()
    assert w.closed and len(read_trace(path).events) == 201
    with pytest.raises(ValueError, match="closed"):
        w.write(SwitchConnected(seq=201, t=201.0, dpid=1, conn=0, controller="c0"))


def test_interrupted_run_keeps_what_it_recorded(tmp_path):
    path = tmp_path / "t.jsonl"
    with pytest.raises(KeyboardInterrupt):
        with TraceWriter(path, header(), flush_every=1000) as w:
            for ev in sample_events()[:5]:
                w.write(ev)
            raise KeyboardInterrupt
    assert read_trace(path).events == sample_events()[:5]


def test_writer_rejects_non_json_dict_values(tmp_path):
    with TraceWriter(tmp_path / "t.jsonl", header()) as w:
        with pytest.raises(TraceFormatError, match="seq=4"):
            w.write(Violation(seq=4, t=0.0, invariant="x", message="", persistent=False, hosts=(), switches=(),
                              details={"raw": b"\x00"}))


def test_iter_trace_streams_and_read_header(tmp_path):
    path = tmp_path / "t.jsonl"
    write_trace(path, Trace(header(), sample_events()))
    assert read_header(path) == header()
    it = iter_trace(path)
    assert next(it) == sample_events()[0]
    assert list(it) == sample_events()[1:]
    # a bad line is reported when the stream reaches it, events before it still arrive
    bad = write_lines(tmp_path / "bad.jsonl", HEADER_LINE, json.dumps(event_to_json(sample_events()[0])), "{oops")
    it = iter_trace(bad)
    assert next(it) == sample_events()[0]
    with pytest.raises(TraceFormatError, match=r"bad\.jsonl line 3"):
        next(it)


def _error(path: Path) -> TraceFormatError:
    with pytest.raises(TraceFormatError) as err:
        read_trace(path)
    assert err.value.fix
    return err.value


def test_missing_and_unreadable_files(tmp_path):
    err = _error(tmp_path / "nope.jsonl")
    assert "nope.jsonl" in err.problem and "does not exist" in err.problem
    with pytest.raises(TraceFormatError, match="does not exist"):
        iter_trace(tmp_path / "nope.jsonl")  # fails at the call, not at the first next()
    assert "cannot open" in _error(tmp_path).problem  # a directory


def test_empty_file(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    assert "empty.jsonl line 1" in _error(path).problem and "empty" in _error(path).problem


@pytest.mark.parametrize("lines, where, words", [
    ([json.dumps(event_to_json(sample_events()[0]))], 1, "not a netsleuth trace header"),
    (['{"format": "netsleuth-trace", "version": 9}'], 1, "newer"),
    (["[1, 2]"], 1, "not a netsleuth trace header"),
    ([HEADER_LINE, json.dumps(event_to_json(sample_events()[0])), "{not json"], 3, "malformed JSON"),
    ([HEADER_LINE, '{"kind": "ping", "seq": 1}'], 2, "lacks required field"),
    ([HEADER_LINE, '{"kind": "warp", "seq": 1, "t": 0.0}'], 2, "unknown event kind"),
    ([HEADER_LINE, "", json.dumps(event_to_json(sample_events()[0]))], 2, "blank line"),
    ([HEADER_LINE, HEADER_LINE], 2, "second trace header"),
])
def test_bad_files_name_file_and_line(tmp_path, lines, where, words):
    path = write_lines(tmp_path / "t.jsonl", *lines)
    err = _error(path)
    assert f"t.jsonl line {where}:" in err.problem and words in err.problem


def test_truncated_last_line_says_how_to_recover(tmp_path):
    ok = json.dumps(event_to_json(sample_events()[0]))
    path = write_lines(tmp_path / "t.jsonl", HEADER_LINE, ok, ok[:20], end="")
    err = _error(path)
    assert "t.jsonl line 3:" in err.problem and "cut off" in err.fix


def test_invalid_utf8_line(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(HEADER_LINE.encode() + b"\n\xff\xfe\n")
    assert "t.jsonl line 2:" in _error(path).problem


_names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)
_json = st.recursive(st.none() | st.booleans() | st.integers(-2**60, 2**60) | _names
                     | st.floats(allow_nan=False, allow_infinity=False),
                     lambda kids: st.lists(kids, max_size=3) | st.dictionaries(_names, kids, max_size=3),
                     max_leaves=8)
_fp = st.recursive(st.none() | st.booleans() | st.integers() | _names,
                   lambda kids: st.lists(kids, max_size=3).map(tuple), max_leaves=8).map(lambda x: (x,))
_time = st.floats(0, 1e6, allow_nan=False)
_event = st.one_of(
    st.builds(ControlToSwitch, seq=st.integers(0), t=_time, conn=st.integers(0), controller=_names,
              dpid=st.integers(0, 2**64 - 1), msg=st.dictionaries(_names, _json, max_size=3), fp=_fp),
    st.builds(TrafficInjection, seq=st.integers(0), t=_time, id=_names, deps=st.lists(_names).map(tuple),
              host=_names, packet=st.dictionaries(_names, _json, max_size=3), dst=st.none() | _names),
    st.builds(PingResult, seq=st.integers(0), t=_time, src=_names, dst=_names, ok=st.booleans(),
              rtt=st.none() | _time),
    st.builds(Violation, seq=st.integers(0), t=_time, invariant=_names, message=_names, persistent=st.booleans(),
              hosts=st.lists(_names).map(tuple), switches=st.lists(_names).map(tuple),
              details=st.dictionaries(_names, _json, max_size=3)),
)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(events=st.lists(_event, max_size=6))
def test_property_schema_round_trip_is_identity(events):
    # The schema's codec alone, on arbitrary field values: whatever it writes
    # it reads back equal, as the same bytes. (Reading a file also checks the
    # content against the header's topology: test_trace_validate.py;
    # test_write_read_round_trip_is_lossless_and_byte_identical covers files.)
    for ev in events:
        line = dumps_line(event_to_json(ev))
        back = event_from_json(json.loads(line))
        assert back == ev
        assert dumps_line(event_to_json(back)) == line


# ------------------------------------------------------------ fingerprints
def test_packet_fingerprints():
    assert packet_fingerprint(PING) == ("IPv4", H1, H2, "10.0.0.1", "10.0.0.2")
    assert packet_fingerprint(PING.to_json()) == packet_fingerprint(PING)
    other_seq = icmp_echo(H1, H2, "10.0.0.1", "10.0.0.2", ident=9, seq=5, payload=b"x" * 20)
    assert packet_fingerprint(other_seq) == packet_fingerprint(PING)  # only addresses count for IPv4
    assert packet_fingerprint(udp_packet(H1, H2, "10.0.0.1", "10.0.0.3", 1, 2)) != packet_fingerprint(PING)
    assert packet_fingerprint(arp_request(H1, "10.0.0.1", "10.0.0.2")) == ("ARP",)
    assert packet_fingerprint(arp_request(H2, "10.0.0.9", "10.0.0.1")) == ("ARP",)
    assert packet_fingerprint(lldp_frame(H1, b"dpid:1", 3)) == ("LLDP",)
    v6 = Packet(1, 2, 0x86DD, payload=b"\x60" + b"\0" * 39)
    assert packet_fingerprint(v6) == ("eth", 0x86DD, H1, H2)
    with pytest.raises(TraceFormatError):
        packet_fingerprint({"eth_src": "nonsense"})


def test_flow_mod_masks_xid_cookie_buffer_id():
    base = of_fingerprint(flow_mod())
    assert base[0] == "FLOW_MOD"
    assert of_fingerprint(flow_mod(xid=99, cookie=0xABC, buffer_id=7)) == base
    assert of_fingerprint(flow_mod(m=match(in_port=2, dl_dst=b"\x00\x00\x00\x00\x00\x02"))) != base
    assert of_fingerprint(flow_mod(actions=[p.OFPActionOutput(3)])) != base
    assert of_fingerprint(flow_mod(actions=[p.OFPActionSetDlSrc(b"\x00" * 6), p.OFPActionOutput(2)])) != base
    assert of_fingerprint(flow_mod(actions=[])) != base
    assert of_fingerprint(flow_mod(priority=1)) != base
    assert of_fingerprint(flow_mod(idle=0)) != base
    assert of_fingerprint(flow_mod(hard=5)) != base
    assert of_fingerprint(flow_mod(command=ofp.OFPFC_DELETE)) != base


def test_flow_mod_match_is_compared_semantically():
    wc = ofp.OFPFW_ALL & ~ofp.OFPFW_IN_PORT
    clean = match(wildcards=wc, in_port=1)
    garbage = match(wildcards=wc, in_port=1, dl_src=b"\x11" * 6, tp_dst=80)  # wildcarded fields ignored
    assert of_fingerprint(flow_mod(m=clean)) == of_fingerprint(flow_mod(m=garbage))
    assert "in_port=1" in of_fingerprint(flow_mod(m=clean))


def test_packet_in_keeps_port_and_packet_only():
    base = of_fingerprint(packet_in())
    assert base == ("PACKET_IN", 1, packet_fingerprint(PING))
    assert of_fingerprint(packet_in(xid=5, buffer_id=0xFFFFFFFF, reason=ofp.OFPR_ACTION)) == base
    assert of_fingerprint(packet_in(data=PING.to_bytes()[:40])) == base  # truncated to miss_send_len
    assert of_fingerprint(packet_in(in_port=2)) != base
    assert of_fingerprint(packet_in(data=arp_request(H1, "10.0.0.1", "10.0.0.2").to_bytes())) != base


def test_packet_out_data_counts_only_without_buffer():
    raw = PING.to_bytes()
    unbuffered = of_fingerprint(packet_out(data=raw))
    assert unbuffered == ("PACKET_OUT", packet_fingerprint(PING), 1, (("Output", ("max_len", 65509),
                                                                        ("port", ofp.OFPP_FLOOD)),))
    assert of_fingerprint(packet_out(data=raw, xid=8)) == unbuffered
    assert of_fingerprint(packet_out(buffer_id=3, data=raw))[1] == ()
    assert of_fingerprint(packet_out(buffer_id=3)) == of_fingerprint(packet_out(buffer_id=4, data=raw))
    assert of_fingerprint(packet_out(data=raw, in_port=2)) != unbuffered
    assert of_fingerprint(packet_out(data=raw, actions=[p.OFPActionOutput(1)])) != unbuffered


def _flow_removed(reason=ofp.OFPRR_IDLE_TIMEOUT, cookie=0, packets=0, priority=10) -> dict:
    msg = p.OFPFlowRemoved(DP)
    for k, v in dict(match=match(in_port=1), cookie=cookie, priority=priority, reason=reason, duration_sec=3,
                     duration_nsec=packets * 7, idle_timeout=10, packet_count=packets,
                     byte_count=packets * 98).items():
        setattr(msg, k, v)
    return js(msg, "FLOW_REMOVED")


def test_flow_removed_keeps_match_reason_priority():
    base = of_fingerprint(_flow_removed())
    assert of_fingerprint(_flow_removed(cookie=4, packets=12)) == base
    assert of_fingerprint(_flow_removed(reason=ofp.OFPRR_HARD_TIMEOUT)) != base
    assert of_fingerprint(_flow_removed(priority=11)) != base


def _port_status(reason=ofp.OFPPR_MODIFY, port_no=1, hw="02:00:00:00:00:01", state=0) -> dict:
    desc = p.OFPPhyPort(port_no=port_no, hw_addr=hw, name=b"s1-eth1", config=0, state=state, curr=0,
                        advertised=0, supported=0, peer=0)
    return js(p.OFPPortStatus(DP, reason=reason, desc=desc), "PORT_STATUS", 3)


def test_port_status_error_features_stats():
    assert of_fingerprint(_port_status()) == ("PORT_STATUS", ofp.OFPPR_MODIFY, 1, "02:00:00:00:00:01")
    assert of_fingerprint(_port_status(state=ofp.OFPPS_LINK_DOWN)) == of_fingerprint(_port_status())
    assert of_fingerprint(_port_status(reason=ofp.OFPPR_DELETE)) != of_fingerprint(_port_status())

    err = js(p.OFPErrorMsg(DP, type_=1, code=2, data=b"zz"), "ERROR", 4)
    assert of_fingerprint(err) == ("ERROR", 1, 2)
    assert of_fingerprint(js(p.OFPErrorMsg(DP, type_=1, code=2, data=b"other"), "ERROR", 5)) == ("ERROR", 1, 2)

    feat = p.OFPSwitchFeatures(DP, datapath_id=5, n_buffers=256, n_tables=1, capabilities=0, actions=0, ports={})
    assert of_fingerprint(js(feat, "FEATURES_REPLY")) == ("FEATURES_REPLY", 5)

    req = js(p.OFPFlowStatsRequest(DP, 0, match(), 0xFF, ofp.OFPP_NONE), "STATS_REQUEST")
    assert of_fingerprint(req) == ("STATS_REQUEST", ofp.OFPST_FLOW, 0)
    assert of_fingerprint(js(p.OFPDescStatsRequest(DP, 0), "STATS_REQUEST")) == ("STATS_REQUEST", ofp.OFPST_DESC, 0)

    def agg_reply(packets: int) -> dict:
        msg = p.OFPAggregateStatsReply(DP)
        msg.type, msg.flags = ofp.OFPST_AGGREGATE, 0
        msg.body = p.OFPAggregateStats(packets, packets * 60, 1)
        return js(msg, "STATS_REPLY")

    assert of_fingerprint(agg_reply(3)) == of_fingerprint(agg_reply(30)) == ("STATS_REPLY", ofp.OFPST_AGGREGATE, 0)


def test_other_types_keep_only_their_type():
    assert of_fingerprint(js(p.OFPHello(DP), "HELLO", 1)) == ("HELLO",)
    assert of_fingerprint(js(p.OFPEchoRequest(DP, data=b"a"), "ECHO_REQUEST", 1)) == of_fingerprint(
        js(p.OFPEchoRequest(DP, data=b"bb"), "ECHO_REQUEST", 2)) == ("ECHO_REQUEST",)
    assert of_fingerprint(js(p.OFPBarrierRequest(DP), "BARRIER_REQUEST", 9)) == ("BARRIER_REQUEST",)
    assert of_fingerprint(js(p.OFPSetConfig(DP, 0, 128), "SET_CONFIG")) == ("SET_CONFIG",)
    assert of_fingerprint(js(p.OFPFeaturesRequest(DP), "FEATURES_REQUEST")) == ("FEATURES_REQUEST",)


def test_fingerprints_survive_the_trace(tmp_path):
    path = tmp_path / "t.jsonl"
    write_trace(path, Trace(header(), sample_events()))
    recorded = read_trace(path).events
    for ev in recorded:
        if hasattr(ev, "fp"):
            assert isinstance(ev.fp, tuple) and hash(ev.fp) is not None
    # computable from the trace alone, and equal to what was recorded
    for ev in recorded:
        if isinstance(ev, (ControlToSwitch, ControlToController)):
            assert of_fingerprint(ev.msg) == ev.fp
        if isinstance(ev, PacketArrival):
            assert packet_fingerprint(ev.packet) == ev.fp
    assert len({ev.fp for ev in recorded if hasattr(ev, "fp")}) == 3


@pytest.mark.parametrize("msg", [
    {},
    {"type": "FLOW_MOD"},
    {"type": "FLOW_MOD", "xid": 1, "body": {"OFPFlowMod": {"command": 0}}},
    {"type": "PACKET_IN", "xid": 1, "body": {"OFPPacketIn": {"in_port": 1, "data": "!!notbase64"}}},
    {"type": "FLOW_MOD", "xid": 1, "body": {"OFPFlowMod": {**flow_mod()["body"]["OFPFlowMod"],
                                                          "match": {"OFPMatch": {"in_port": 1}}}}},
])
def test_of_fingerprint_rejects_garbled_messages(msg):
    with pytest.raises(TraceFormatError) as err:
        of_fingerprint(msg)
    assert "msg_to_json" in err.value.fix
