"""Warm-up ready conditions (live/ready.py) on trace events as the recorder hands them over.

The real runs (an STP ring, a Faucet stack) are in test_run_osken13.py,
test_faucet_network.py and test_races_of13.py; here each condition's rule,
with os-ken's own PORT_MOD configs for the spanning tree's port states.
"""

from __future__ import annotations

from pathlib import Path

from os_ken.lib import stplib
from os_ken.ofproto import ofproto_v1_0, ofproto_v1_3

from netsleuth.live.ready import (
    ControllerQuiet,
    LinksDiscovered,
    SpanningTreeConverged,
    faucet_stack_up,
    switch_link_ends,
)
from netsleuth.model.topology_graph import Topology
from netsleuth.trace import schema as ts
from netsleuth.trace.io import read_trace

DATA = Path(__file__).parent / "data"


def to_switch(t: float, mtype: str, dpid: int = 1, body: dict | None = None) -> ts.ControlToSwitch:
    return ts.ControlToSwitch(seq=0, t=t, conn=0, controller="c0", dpid=dpid,
                              msg={"type": mtype, "xid": 1, "body": body or {}}, fp=("x",))


def port_mod(dpid: int, port: int, config: int) -> ts.ControlToSwitch:
    return to_switch(0.0, "PORT_MOD", dpid, {"OFPPortMod": {"port_no": port, "config": config}})


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_quiet_needs_a_message_then_the_settle_interval() -> None:
    clock = Clock()
    quiet = ControllerQuiet(2.0, clock=clock)
    clock.now = 10.0
    assert not quiet.ready()                       # silence before anything was sent does not count
    quiet.observe(to_switch(0.0, "ECHO_REQUEST"))  # neither does a keepalive
    assert not quiet.ready()
    quiet.observe(to_switch(0.0, "FLOW_MOD"))
    clock.now = 11.9
    assert not quiet.ready()
    quiet.observe(to_switch(0.0, "PACKET_OUT"))    # a new message restarts the interval
    clock.now = 13.5
    assert not quiet.ready()
    clock.now = 13.9
    assert quiet.ready() and quiet.seen == 2


def test_faucet_stack_up_waits_for_the_lldp_probes_and_the_flows_after_them() -> None:
    clock = Clock()
    up = faucet_stack_up(3.0)
    up.clock = clock
    up.observe(to_switch(0.0, "FLOW_MOD"))         # the connect-time pipeline
    clock.now = 5.0
    assert not up.ready()                          # quiet, but no probe went out yet
    up.observe(to_switch(0.0, "PACKET_OUT"))       # LLDP
    clock.now = 5.5
    up.observe(to_switch(0.0, "FLOW_MOD"))         # the stack's flows
    clock.now = 8.0
    up.observe(to_switch(0.0, "PACKET_OUT"))       # further probes do not hold it back
    assert not up.ready()
    clock.now = 8.6
    assert up.ready()


def test_spanning_tree_converges_when_no_port_listens_or_learns() -> None:
    for configs in (stplib.PORT_CONFIG_V1_0, stplib.PORT_CONFIG_V1_3):
        stp = SpanningTreeConverged(min_ports=3)
        assert not stp.ready()
        for port in (1, 2, 3):
            stp.observe(port_mod(1, port, configs[stplib.PORT_STATE_LISTEN]))
        assert not stp.ready()
        stp.observe(port_mod(1, 1, configs[stplib.PORT_STATE_BLOCK]))
        stp.observe(port_mod(1, 2, configs[stplib.PORT_STATE_LEARN]))
        stp.observe(port_mod(1, 3, configs[stplib.PORT_STATE_LEARN]))
        assert not stp.ready()
        stp.observe(port_mod(1, 2, configs[stplib.PORT_STATE_FORWARD]))
        assert not stp.ready()
        stp.observe(port_mod(1, 3, configs[stplib.PORT_STATE_FORWARD]))
        assert stp.ready()


def test_spanning_tree_needs_every_port_seen() -> None:
    stp = SpanningTreeConverged(min_ports=2)
    stp.observe(port_mod(1, 1, 0))
    assert not stp.ready()                          # port 2 has not been told anything yet
    stp.observe(port_mod(2, 1, ofproto_v1_3.OFPPC_NO_FWD | ofproto_v1_3.OFPPC_NO_PACKET_IN))
    assert stp.ready()
    assert ofproto_v1_0.OFPPC_NO_FWD == ofproto_v1_3.OFPPC_NO_FWD  # the one bit the rule reads


def test_links_discovered_waits_for_the_probe_a_controller_dropped_while_taking_its_switch_up() -> None:
    """A recorded POX run (discovery and l2_multi on linear,3): s1's first probe reached s2 before
    POX had finished s2's handshake, and POX dropped it; that link end was learned 4.3 s later.
    Counting that first PACKET_IN ended the warm-up at 1.3 s, and l2_multi, knowing no path to
    h1, dropped the first pings."""
    trace = read_trace(DATA / "ready" / "pox-probe-before-handshake.jsonl")
    links = LinksDiscovered(switch_link_ends(Topology.from_json(trace.header.topology)))
    ready_at, was_ready = None, links.ready()  # ready before the first probe: no discovery seen yet
    for event in trace.events:
        links.observe(event)
        if links.ready() and not was_ready:
            ready_at = event
        was_ready = links.ready()
    assert ready_at is not None and was_ready
    assert ready_at.kind == "of_to_controller" and (ready_at.dpid, ready_at.fp[1]) == (2, 2)
    assert ready_at.t > 4.0  # the next cycle's probe, not the one at 0.26 s that POX never saw
    first_traffic = next(e for e in trace.events if e.kind == "traffic")
    assert first_traffic.t < ready_at.t  # the recorded run sent its pings before then
