"""`netsleuth pcap`: tshark, an independent OpenFlow dissector, is the oracle.

The trace of a real simple_switch fuzz run is exported, then tshark must
decode every control message as OpenFlow 1.0 with the type and xid the
trace recorded, in order, with nothing malformed; the dataplane frames must
be the recorded hops.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from netsleuth.openflow.codec import TYPE_NAME
from netsleuth.trace import schema as ts
from netsleuth.trace.io import read_trace

TSHARK = shutil.which("tshark")
pytestmark = [pytest.mark.skipif(TSHARK is None, reason="tshark is installed by `make` (Debian package tshark)"),
              pytest.mark.real]
CODE = {name: code for code, name in TYPE_NAME.items()}


def _tshark(pcap: Path, display_filter: str, *fields: str) -> list[list[str]]:
    cmd = [TSHARK, "-r", str(pcap), "-Y", display_filter, "-T", "fields", "-E", "occurrence=a",
           "-E", "aggregator=;", "-E", "separator=|"]
    for f in fields:
        cmd += ["-e", f]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return [line.split("|") for line in proc.stdout.splitlines()]


def _export(trace: Path, out: Path, *extra: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "netsleuth.cli", "pcap", str(trace), "--out", str(out), "--json",
                           *extra], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_tshark_decodes_every_control_message_with_its_type(tools_fuzz_trace: Path, tmp_path: Path) -> None:
    pcap = tmp_path / "control.pcap"
    d = _export(tools_fuzz_trace, pcap)
    trace = read_trace(tools_fuzz_trace)
    recorded = [(CODE[e.msg["type"]], e.msg["xid"] or 0) for e in trace.events
                if isinstance(e, (ts.ControlToSwitch, ts.ControlToController))]
    assert len(recorded) >= 100 and d["of_messages"] == len(recorded) and d["skipped"] == []
    assert len({e.msg["type"] for e in trace.events if hasattr(e, "msg")}) >= 5  # several message types

    rows = _tshark(pcap, "openflow_v1", "openflow_1_0.type", "openflow.xid")
    decoded = [(int(t), int(x)) for types, xids in rows for t, x in zip(types.split(";"), xids.split(";"), strict=True)]
    assert decoded == recorded  # 100%, same types, same xids, same order
    assert Counter(TYPE_NAME[t] for t, _ in decoded) == Counter(d["messages"])
    # nothing malformed, and no TCP analysis warning (retransmission, lost segment, ...) on our framing:
    # layer 1 is the synthetic TCP; layer 2 would be a TCP SYN carried inside a PACKET_IN.
    assert _tshark(pcap, "_ws.malformed || tcp.analysis.flags#1", "frame.number") == []

    # one TCP stream per recorded connection, all of them to the OpenFlow port
    conns = {e.conn for e in trace.events if isinstance(e, (ts.ControlToSwitch, ts.ControlToController))}
    streams = {int(r[0].split(";")[0]) for r in _tshark(pcap, "tcp.port#1 == 6653", "tcp.stream")}  # outer TCP
    assert len(streams) == len(conns) == d["streams"]


def test_dataplane_frames_are_the_recorded_hops(tools_fuzz_trace: Path, tmp_path: Path) -> None:
    pcap = tmp_path / "all.pcap"
    d = _export(tools_fuzz_trace, pcap, "--dataplane")
    trace = read_trace(tools_fuzz_trace)
    hops = [e for e in trace.events if isinstance(e, ts.PacketArrival)]
    assert d["dataplane_frames"] == len(hops) > 0
    rows = _tshark(pcap, "!(tcp.port == 6653)", "eth.src", "eth.dst", "frame.protocols")
    assert len(rows) == len(hops)
    for (src, dst, protocols), e in zip(rows, hops, strict=True):
        assert (src, dst) == (e.packet["eth_src"], e.packet["eth_dst"])
        kind = e.packet.get("l4", e.packet.get("l3", {})).get("kind")
        assert {"arp": "arp", "icmp": "icmp", "tcp": "tcp"}[kind] in protocols.split(":"), (protocols, e.seq)
    assert _tshark(pcap, "_ws.malformed", "frame.number") == []


def test_bad_trace_is_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format": "something else"}\n')
    proc = subprocess.run([sys.executable, "-m", "netsleuth.cli", "pcap", str(bad), "--out", str(tmp_path / "x")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and "fix:" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not (tmp_path / "x").exists()
