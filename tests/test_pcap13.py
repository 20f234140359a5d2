"""pcap export of OpenFlow 1.3 messages, with tshark's openflow_v4 dissector as the oracle.

A trace holding one 1.3 message of every type the switch sends or receives
(plus a 1.0 connection alongside) is exported; tshark must decode every 1.3
message as ``openflow_v4`` with the type and xid the trace recorded, in
order, and nothing may be malformed.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from of13_catalog import CONTROLLER_TO_SWITCH, SWITCH_TO_CONTROLLER, with_xid
from os_ken.ofproto import ofproto_v1_0_parser as p10

from netsleuth.openflow.codec import DATAPATH, TYPE_NAME_13, msg_to_json
from netsleuth.rootcause.pcap import build_pcap
from netsleuth.trace import schema as ts
from netsleuth.trace.fingerprint import of_fingerprint

TSHARK = shutil.which("tshark")
pytestmark = pytest.mark.skipif(TSHARK is None, reason="tshark is installed by `make` (Debian package tshark)")
CODE_13 = {name: code for code, name in TYPE_NAME_13.items()}


def _tshark(pcap: Path, display_filter: str, *fields: str, occurrence: str = "a") -> list[list[str]]:
    cmd = [str(TSHARK), "-r", str(pcap), "-Y", display_filter, "-T", "fields", "-E", f"occurrence={occurrence}",
           "-E", "aggregator=;", "-E", "separator=|"]
    for f in fields:
        cmd += ["-e", f]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return [line.split("|") for line in proc.stdout.splitlines()]


def _events() -> list[ts.Event]:
    events: list[ts.Event] = []
    t = 0.0
    for i, (name, build) in enumerate([*CONTROLLER_TO_SWITCH.items(), *SWITCH_TO_CONTROLLER.items()]):
        js = msg_to_json(with_xid(build(), 100 + i))
        cls = ts.ControlToSwitch if name in CONTROLLER_TO_SWITCH else ts.ControlToController
        t += 0.001
        events.append(cls(seq=len(events), t=t, conn=1, controller="c0", dpid=1, msg=js, fp=of_fingerprint(js)))
    # a 1.0 switch on another connection, in the same capture
    for i, m in enumerate([p10.OFPHello(DATAPATH), p10.OFPFeaturesRequest(DATAPATH), p10.OFPBarrierRequest(DATAPATH)]):
        js = msg_to_json(with_xid(m, 500 + i))
        t += 0.001
        events.append(ts.ControlToSwitch(seq=len(events), t=t, conn=2, controller="c0", dpid=2, msg=js,
                                         fp=of_fingerprint(js)))
    events.append(ts.SwitchDisconnected(seq=len(events), t=t + 0.01, dpid=1, conn=1, controller="c0", reason="test"))
    return events


@pytest.mark.real
def test_tshark_decodes_every_1_3_message_as_openflow_v4(tmp_path: Path) -> None:
    events = _events()
    export = build_pcap(events)
    assert export.skipped == []
    pcap = tmp_path / "of13.pcap"
    pcap.write_bytes(export.data)
    of13 = [e for e in events if isinstance(e, (ts.ControlToSwitch, ts.ControlToController)) and e.conn == 1]
    recorded = [(CODE_13[e.msg["type"]], e.msg["xid"]) for e in of13]
    assert export.versions == {"1.3": len(of13), "1.0": 3}
    assert {e.msg["type"] for e in of13} == set(TYPE_NAME_13.values())  # all 30 OpenFlow 1.3 message types

    # One message per TCP segment here; the first occurrence is the message itself (an ERROR's
    # data holds the offending request's header, which tshark dissects as a message of its own).
    rows = _tshark(pcap, "openflow_v4", "openflow_v4.version", "openflow_v4.type", "openflow_v4.xid",
                   occurrence="f")
    decoded = [(int(v, 0), int(t, 0), int(x, 0)) for v, t, x in rows]
    assert [(t, x) for _, t, x in decoded] == recorded  # every message, same type and xid, same order
    assert {v for v, _, _ in decoded} == {4}
    assert len(_tshark(pcap, "openflow_v1", "frame.number")) == 3
    assert _tshark(pcap, "tcp.analysis.flags#1", "frame.number") == []
    # Nothing malformed, but for one frame: tshark's openflow_v4 dissector raises an exception on
    # every experimenter multipart *reply* body (whatever its length; the request dissects fine),
    # so that frame is expected, and only that one.
    malformed = _tshark(pcap, "_ws.malformed || _ws.expert.severity >= error", "openflow_v4.type",
                        "openflow_v4.xid", occurrence="f")
    (exp_reply,) = [e for e in of13 if e.msg["body"].get("OFPExperimenterStatsReply")]
    assert malformed == [[str(CODE_13["MULTIPART_REPLY"]), str(exp_reply.msg["xid"])]]


@pytest.mark.real
def test_tshark_reads_the_1_3_flow_mod_fields(tmp_path: Path) -> None:
    events = _events()
    pcap = tmp_path / "of13.pcap"
    pcap.write_bytes(build_pcap(events).data)
    # simple_switch_13's learned flow: priority 1, in_port 1, output 2, buffer 7.
    rows = _tshark(pcap, "openflow_v4.type == 14 && openflow_v4.flowmod.priority == 1",
                   "openflow_v4.flowmod.buffer_id", "openflow_v4.oxm.field", "openflow_v4.oxm.value_uint32",
                   "openflow_v4.oxm.value_etheraddr", "openflow_v4.action.output.port")
    assert len(rows) == 1
    buffer_id, fields, in_port, macs, out_ports = rows[0]
    assert int(buffer_id) == 7 and out_ports.split(";") == ["2"]
    assert fields.split(";") == ["0", "3", "4"] and in_port == "1"  # in_port, eth_dst, eth_src
    assert macs.split(";") == ["00:00:00:00:00:02", "00:00:00:00:00:01"]


def test_1_3_messages_and_fingerprints_survive_the_trace_file(tmp_path: Path) -> None:
    from netsleuth.openflow.codec import encode, msg_from_json
    from netsleuth.trace.io import read_trace, write_trace

    events = _events()
    from netsleuth.model.topology import parse_topo

    header = ts.TraceHeader(topology=parse_topo("linear,2").to_json(),  # s1 and s2: the two connections' dpids
                            topology_spec="linear,2", controller="osken:os_ken.app.simple_switch_13", seed=1,
                            tool_version="0.1.0", command="test")
    write_trace(tmp_path / "t.jsonl", ts.Trace(header, events))
    back = read_trace(tmp_path / "t.jsonl").events
    msgs = [(a, b) for a, b in zip(events, back, strict=True)
            if isinstance(a, (ts.ControlToSwitch, ts.ControlToController))]
    assert len(msgs) == len([e for e in events if hasattr(e, "msg")])
    for recorded, read in msgs:
        assert read.msg == recorded.msg and read.fp == recorded.fp == of_fingerprint(read.msg)
        assert encode(msg_from_json(read.msg)) == encode(msg_from_json(recorded.msg))
    assert len({e.fp for _, e in msgs}) > 40  # fingerprints tell the 1.3 messages apart
