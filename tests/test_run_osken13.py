"""OpenFlow 1.3 end to end: real os-ken 1.4.1 apps against the 1.3 switch.

The controllers are the unmodified apps shipped with os-ken (from
.venv-controller); the switches negotiate the version with them over real
TCP, and the trace, pcap and tools are checked on what was recorded.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cli_process import cli as run_cli

from netsleuth.jobs.fuzz import FuzzOptions, fuzz
from netsleuth.jobs.run import RunOptions, run
from netsleuth.live.ready import SpanningTreeConverged, faucet_stack_up
from netsleuth.model.topo_builders import parse_topo
from netsleuth.schedulers.fuzz import Rates
from netsleuth.trace.io import read_trace

pytestmark = pytest.mark.real

SS13 = "osken:os_ken.app.simple_switch_13"
SS10 = "osken:os_ken.app.simple_switch"
STP13 = "osken:os_ken.app.simple_switch_stp_13"


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return run_cli(*args, timeout=timeout)


@pytest.fixture(scope="module")
def ss13_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ss13")
    proc = cli("run", "--controller", SS13, "--topo", "linear,3", "--pingall", "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def test_simple_switch_13_pingall_clean(ss13_run: Path) -> None:
    d = json.loads((ss13_run / "result.json").read_text())
    assert d["pingall"]["ok"] == 6 and d["pingall"]["failed"] == 0
    assert d["violations"] == []
    assert [c["logged_errors"] for c in d["controllers"]] == [[]]
    trace = read_trace(ss13_run / "trace.jsonl")
    assert trace.header.openflow == {"s1": "1.3", "s2": "1.3", "s3": "1.3"}
    msgs = [e for e in trace.events if e.kind in ("of_to_switch", "of_to_controller")]
    assert {e.msg["version"] for e in msgs} == {4}
    types = {e.msg["type"] for e in msgs}
    assert {"FEATURES_REPLY", "MULTIPART_REQUEST", "MULTIPART_REPLY", "FLOW_MOD", "PACKET_IN", "PACKET_OUT"} <= types
    # the table-miss entry's packet-ins: reason NO_MATCH with the OXM in_port the app reads
    pin = next(e.msg["body"]["OFPPacketIn"] for e in msgs if e.msg["type"] == "PACKET_IN")
    assert pin["reason"] == 0
    assert "in_port" in json.dumps(pin["match"])


def test_tools_on_a_13_trace(ss13_run: Path, tmp_path: Path) -> None:
    trace = ss13_run / "trace.jsonl"
    pcap = tmp_path / "run.pcap"
    proc = cli("pcap", str(trace), "--out", str(pcap))
    assert proc.returncode == 0, proc.stderr
    if shutil.which("tshark"):
        shown = subprocess.run(["tshark", "-r", str(pcap), "-Y", "openflow_v4"], capture_output=True, text=True,
                               timeout=60).stdout
        assert "OFPT_FLOW_MOD" in shown and "OFPT_PACKET_IN" in shown
    assert cli("diff", str(trace), str(trace)).returncode == 0
    html = tmp_path / "viz.html"
    proc = cli("viz", str(trace), "--html", str(html))
    assert proc.returncode == 0 and html.stat().st_size > 0, proc.stderr
    proc = cli("races", str(trace), "--json")
    assert proc.returncode == 0, proc.stderr
    proc = cli("invariants", str(trace), "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_openflow_10_against_a_13_only_app_is_a_usage_error(tmp_path: Path) -> None:
    proc = cli("run", "--controller", SS13, "--topo", "linear,2", "--openflow", "1.0", "--out", str(tmp_path),
               timeout=90)
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, proc.stderr
    assert "OpenFlow version mismatch" in lines[0] and "1.0" in lines[0]
    assert "--openflow" in lines[0].split(" -- fix: ")[1]


def test_simple_switch_10_negotiates_10_under_auto(tmp_path: Path) -> None:
    result = run(RunOptions(controller=SS10, topo="linear,3", out=tmp_path, pingall=True))
    assert result.data["pingall"]["ok"] == 6 and result.exit_code == 0
    assert read_trace(tmp_path / "trace.jsonl").header.openflow == {"s1": "1.0", "s2": "1.0", "s3": "1.0"}


def test_simple_switch_13_on_a_ring_floods_in_a_loop(tmp_path: Path) -> None:
    proc = cli("run", "--controller", SS13, "--topo", "ring,4", "--pingall", "--ping-timeout", "0.5",
               "--out", str(tmp_path))
    assert proc.returncode == 1, proc.stderr
    d = json.loads((tmp_path / "result.json").read_text())
    loops = [v for v in d["violations"] if v["invariant"] == "dataplane-loops"]
    assert loops
    assert all(v["details"]["path"][-1] in v["details"]["path"][:-1] for v in loops)


@pytest.mark.slow
def test_stp_13_on_a_ring_is_loop_free_after_warmup(tmp_path: Path) -> None:
    # os-ken's stplib: 15 s forward delay, listen then learn, so ports forward after ~30 s. The warm-up
    # ends when every port is forwarding or blocked; 40 s is only its bound.
    ports = sum(s.num_ports for s in parse_topo("ring,4").switches)
    result = run(RunOptions(controller=STP13, topo="ring,4", out=tmp_path, pingall=True, ping_timeout=1.0,
                            warmup=40.0, warmup_ready=SpanningTreeConverged(min_ports=ports)))
    d = result.data
    assert d["warmup"] == 40.0
    assert 25.0 < d["warmup_seconds"] < 40.0, d["warmup_seconds"]  # converged, through listen and learn
    assert d["violations"] == [], d["violations"]
    assert d["pingall"]["ok"] == 12
    trace = read_trace(tmp_path / "trace.jsonl")
    assert trace.header.extra["warmup"] == 40.0
    # STP blocked a port with PORT_MOD (NO_FWD) and BPDUs went out as packet-outs and came back as packet-ins
    port_mods = [e for e in trace.events if e.kind == "of_to_switch" and e.msg["type"] == "PORT_MOD"]
    assert any(e.msg["body"]["OFPPortMod"]["config"] & 0x20 for e in port_mods)
    bpdu_ins = [e for e in trace.events if e.kind == "of_to_controller" and e.msg["type"] == "PACKET_IN"
                and base64.b64decode(e.msg["body"]["OFPPacketIn"]["data"])[:6] == bytes.fromhex("0180c2000000")]
    assert bpdu_ins


@pytest.mark.slow
def test_faucet_stack_comes_up_during_warmup(tmp_path: Path) -> None:
    # Faucet finds its stack links with LLDP packet-outs every few seconds; traffic before that is lost.
    # The default checks: Faucet's pipeline drops some header classes on purpose (eth_type 0x9000, tagged
    # frames on its untagged ports, unknown sources), which are drop rules, the controller's choice, and
    # neither blackholes nor unreachable traffic.
    # The warm-up ends once the stack is up (15 s its bound).
    result = run(RunOptions(controller="faucet:auto", topo="linear,3", out=tmp_path, pingall=True, warmup=15.0,
                            warmup_ready=faucet_stack_up()))
    assert result.data["pingall"]["ok"] == 6, result.data["pingall"]
    assert {"blackholes", "reachability", "loops"} <= set(result.data["checks"]), result.data["checks"]
    assert result.data["violations"] == []
    assert read_trace(tmp_path / "trace.jsonl").header.openflow == {"s1": "1.3", "s2": "1.3", "s3": "1.3"}


@pytest.mark.slow
def test_fuzz_finds_the_migration_blackhole_and_minimize_reduces_it(tmp_path: Path) -> None:
    # The default checks: header-space blackholes over the 1.3 pipelines find the stale entry
    # that outputs to the port the host left (simple_switch_13's table-miss entry to the
    # controller is no blackhole, and neither would a drop rule be).
    found = []
    for seed in range(1, 6):
        out = tmp_path / f"seed{seed}"
        result = fuzz(FuzzOptions(SS13, "linear,3", out, steps=400, seed=seed,
                                  rates=Rates().with_overrides(["host_migration=0.03", "traffic=0.3"]),
                                  round_seconds=0.02))
        persistent = [v for v in result.violations if v["persistent"]]
        if persistent:
            assert {v["invariant"] for v in persistent} <= {"blackholes", "reachability"}, persistent
            hole = next(v for v in persistent if v["invariant"] == "blackholes")
            moved = {e.host for e in read_trace(out / "trace.jsonl").events if e.kind == "host_migration"}
            assert set(hole["hosts"]) & moved, "the dropped traffic involves a host that moved"
            assert "outputs to" in hole["message"], hole["message"]  # forwarding meant to deliver it
            found.append(out)
    assert len(found) >= 4, f"migration blackhole found for {len(found)} of 5 seeds"
    # the header-space finding explains itself: the stale rule outputs to the port the host left
    smallest = min(found, key=lambda d: sum(json.loads((d / "result.json").read_text())["inputs"].values()))
    trace = read_trace(smallest / "trace.jsonl")
    target = next(e for e in trace.events if e.kind == "violation" and e.persistent and e.invariant == "blackholes")
    move = next(e for e in trace.events if e.kind == "host_migration")
    assert target.details["where"] == move.old_switch, (target.message, move)
    why = " ".join(target.details["why"])
    assert f"actions=output:{move.old_port} outputs to port {move.old_port}" in why, target.details
    mcs = tmp_path / "mcs"
    proc = cli("minimize", str(smallest / "trace.jsonl"), "--out", str(mcs), "--executor", "serial", timeout=1500)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    d = json.loads((mcs / "result.json").read_text())
    assert d["inputs_after"] <= 4, d["inputs_after"]
    kinds = {e.kind for e in read_trace(mcs / "mcs.jsonl").events}
    assert "host_migration" in kinds, "the move is part of every explanation of this blackhole"


@pytest.mark.slow
def test_trace_packet_explains_a_packet_lost_after_a_migration(tmp_path: Path) -> None:
    # delivery is observed on real packets, so the lost one can be traced from the trace alone
    result = fuzz(FuzzOptions(SS13, "linear,3", tmp_path, steps=400, seed=1,
                              rates=Rates().with_overrides(["host_migration=0.03", "traffic=0.3"]),
                              checks="delivery,dataplane-loops", keep_going=True, round_seconds=0.02))
    # delivery follows ARP too: an ARP request sent while its switch reconnects is lost as well; the
    # migration's loss is an IPv4 packet
    target = next(v for v in result.violations if v["persistent"] and v["invariant"] == "delivery"
                  and not v["message"].startswith("ARP"))
    trace = read_trace(tmp_path / "trace.jsonl")
    moved = {e.host for e in trace.events if e.kind == "host_migration"}
    assert set(target["hosts"]) & moved, "the lost traffic involves a host that moved"
    src, dst = target["hosts"]
    last = target["seq"]
    sent = [e for e in trace.events if e.kind == "traffic" and e.host == src and e.dst == dst and e.seq < last]
    outputs = [cli("trace-packet", str(tmp_path / "trace.jsonl"), e.id).stdout for e in sent[-3:]]
    assert any("no longer has" in out and "moved from" in out for out in outputs), outputs
    proc = cli("reduce", str(tmp_path / "trace.jsonl"), "--out", str(tmp_path / "reduced.jsonl"))
    assert proc.returncode == 0 and "keep seq" in proc.stdout, proc.stdout + proc.stderr


def test_reading_a_13_trace_validates_its_messages(ss13_run: Path, tmp_path: Path) -> None:
    from netsleuth.errors import TraceFormatError

    lines = (ss13_run / "trace.jsonl").read_text().splitlines()
    assert len(read_trace(ss13_run / "trace.jsonl").events) == len(lines) - 1

    def edited(index: int, change: Any) -> Path:
        copy = list(lines)
        d = json.loads(copy[index])
        change(d)
        copy[index] = json.dumps(d)
        path = tmp_path / f"edited{index}.jsonl"
        path.write_text("\n".join(copy) + "\n")
        return path

    flow_mod = next(i for i, line in enumerate(lines) if '"FLOW_MOD"' in line)
    packet_in = next(i for i, line in enumerate(lines) if '"PACKET_IN"' in line)
    cases = [
        (0, lambda d: d["openflow"].update(s9="1.3"), "openflow versions"),
        (0, lambda d: d["openflow"].update(s1="2.0"), "openflow versions"),
        (flow_mod, lambda d: d["msg"].update(version=5), "version"),
        (flow_mod, lambda d: d["msg"]["body"]["OFPFlowMod"].update(table_id=300), "FLOW_MOD"),
        (packet_in, lambda d: d.update(kind="of_to_switch"), "PACKET_IN"),
    ]
    for index, change, words in cases:
        with pytest.raises(TraceFormatError) as err:
            read_trace(edited(index, change))
        assert words in err.value.problem
