"""POX gar, the controller of STS's case studies, under netsleuth: its forwarding components reach every host.

Each case runs unmodified POX (tests/pox_checkout.py) as a ``pox:`` spec
and pings all pairs.  They hold netsleuth's switches to what POX relies on
from Open vSwitch: match fields without their prerequisites are ignored
(l2_pairs' rules would otherwise never match and every ping would bounce
through the controller), an empty PACKET_OUT is accepted (l2_multi floods
so), and with ``--buffer-packets`` every PACKET_IN is buffered, as OVS did
before 2.7 (l2_multi and l3_learning release the packet with the FLOW_MOD
they install; without buffers they drop it).  Spanning tree runs need a
warm-up: with --hold-down POX keeps flooding off for one discovery cycle
plus a second (6 s) after a switch connects, which no message shows; the
others warm up as ``run`` does by default, until POX has stopped changing
tables and, with discovery, has seen every link.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from netsleuth.jobs.run import RunOptions, run
from netsleuth.model.switch_io import SwitchLimits
from netsleuth.trace.io import read_trace

pytestmark = [pytest.mark.real, pytest.mark.slow]

STP = "openflow.discovery openflow.spanning_tree --no-flood --hold-down"
HOLD_DOWN = 7.0
OFPP_TABLE = 0xfff9


def pingall(out: Path, components: str, topo: str, *, buffers: int = 0, warmup: float | str = "auto") -> dict:
    result = run(RunOptions(controller=f"pox:{components}", topo=topo, out=out, pingall=True, warmup=warmup,
                            limits=SwitchLimits(buffer_packets=buffers)))
    d = result.data
    if warmup == "auto":  # it ends once POX is done (discovery saw every link), long before the bound
        assert d["warmup_seconds"] < 20, d["warmup_seconds"]
    assert d["controllers"][0]["alive"], (out / "controller.log").read_text()[-2000:]
    assert not [v for v in d["violations"] if v.get("persistent", True)], d["violations"]
    return d


def sent(out: Path, msg_type: str) -> int:
    return sum(1 for e in read_trace(out / "trace.jsonl").events
               if getattr(e, "kind", "") == "of_to_switch" and e.msg.get("type") == msg_type)


@pytest.mark.parametrize("components", [
    "forwarding.l2_learning",
    "forwarding.l2_pairs",
    # the load balancer takes the first switch that connects; --ip and --servers are required
    "misc.ip_loadbalancer --ip=10.0.1.1 --servers=10.0.0.2,10.0.0.3 forwarding.l2_learning",
])
def test_layer2_components_reach_every_host(components: str, pox_env: Path, tmp_path: Path) -> None:
    d = pingall(tmp_path, components, "linear,3")
    assert d["pingall"]["ok"] == 6, d["pingall"]
    if components == "forwarding.l2_pairs":
        # its rules match: a handful of FLOW_MODs, not thousands of PACKET_IN/FLOW_MOD rounds
        assert 0 < sent(tmp_path, "FLOW_MOD") < 100


@pytest.mark.parametrize("components", ["openflow.discovery forwarding.l2_multi", "forwarding.l3_learning"])
def test_components_that_expect_buffering_reach_every_host_with_it(components: str, pox_env: Path,
                                                                    tmp_path: Path) -> None:
    d = pingall(tmp_path, components, "linear,3", buffers=256)
    assert d["pingall"]["ok"] == 6, d["pingall"]
    header = read_trace(tmp_path / "trace.jsonl").header
    assert header.extra["switch"] == {"buffer_packets": 256}  # a replay runs the same switches
    assert header.controller == f"pox:{components}"


@pytest.mark.parametrize("forwarding,buffers", [("forwarding.l2_learning", 0), ("forwarding.l2_pairs", 0),
                                                ("forwarding.l2_multi", 256)])
def test_spanning_tree_on_a_mesh_reaches_every_host(forwarding: str, buffers: int, pox_env: Path,
                                                    tmp_path: Path) -> None:
    d = pingall(tmp_path, f"{STP} {forwarding}", "sts-mesh,4", buffers=buffers, warmup=HOLD_DOWN)
    assert d["pingall"]["ok"] == 12, d["pingall"]
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["controller"] == f"pox:{STP} {forwarding}"


def test_a_pox_trace_replays_with_its_controller_and_switches(pox_env: Path, tmp_path: Path) -> None:
    """The header's pox: spec (plain options) runs again without --controller, on switches that buffer."""
    from netsleuth.jobs.replay import ReplayOptions, replay

    pingall(tmp_path / "run", "openflow.discovery --link-timeout=10 forwarding.l2_multi", "linear,3", buffers=64)
    d = replay(ReplayOptions(trace=tmp_path / "run" / "trace.jsonl", out=tmp_path / "replay"))
    assert d["completed"]
    header = read_trace(tmp_path / "replay" / "trace.jsonl").header
    assert header.controller == "pox:openflow.discovery --link-timeout=10 forwarding.l2_multi"
    assert header.extra["switch"] == {"buffer_packets": 64}
    # l2_multi ran again: once a path is installed it sends the packet back through the table
    released = [e for e in read_trace(tmp_path / "replay" / "trace.jsonl").events
                if getattr(e, "kind", "") == "of_to_switch" and e.msg.get("type") == "PACKET_OUT"
                and [["Output", ["max_len", 0], ["port", OFPP_TABLE]]] == json.loads(json.dumps(e.fp[3]))]
    assert released


def test_clients_of_the_load_balancer_fill_a_25_entry_table(pox_env: Path, tmp_path: Path) -> None:
    """STS's load-balancer case on gar: clients open connections to the virtual IP until a switch's
    25-entry table is full; the refused FLOW_MOD is an openflow-errors violation, and gar's crash
    printing the ERROR (its Python 3 hexdump) an exceptions violation."""
    from netsleuth.jobs.fuzz import FuzzOptions, fuzz
    from netsleuth.schedulers.fuzz import Rates

    lb = "misc.ip_loadbalancer --ip=10.0.1.1 --servers=123.123.2.3,123.123.3.3 --dpid=1"
    result = fuzz(FuzzOptions(controller=f"pox:{STP} {lb} forwarding.l2_learning", topo="sts-mesh,3", out=tmp_path,
                              steps=150, seed=1, rates=Rates({"service_traffic": 0.5}), warmup=HOLD_DOWN,
                              limits=SwitchLimits(table_size=25), services=("10.0.1.1",)))
    d = result.data
    found = {v["invariant"]: v for v in d["violations"] if v.get("persistent")}
    assert "ALL_TABLES_FULL" in found["openflow-errors"]["message"], found
    assert "TypeError" in found["exceptions"]["message"], found
    connections = d["inputs"]["traffic"]
    assert 10 <= connections <= 60, d["inputs"]  # the table fills after a few dozen, not at once or never
    header = read_trace(tmp_path / "trace.jsonl").header
    assert header.extra["services"] == ["10.0.1.1"] and header.extra["switch"] == {"table_size": 25}
