"""A model-checking counterexample as the inputs of a real run (``netsleuth replay`` against the controller).

A counterexample fixes every choice of the model: which host sends, which
switch or controller handler runs next.  A real network makes the internal
choices itself, so only the *inputs* carry over -- what hosts send and where
they move -- in the order the counterexample has them, spaced ``gap``
seconds apart so each one's consequences settle before the next (what the
model's sequential schedule did):

* ``send``      -> TrafficInjection of the host's ping (same ident and seq);
* ``sendpkt``   -> TrafficInjection of that packet;
* ``move``      -> HostMigration to the same port, then the gratuitous ARP
                   the model's moved host sends (a TrafficInjection);
* ``out``, ``recv`` and everything the switches and the controller do are
  internal: real hosts answer pings themselves.  The FLOW_MODs the model's
  app sent are kept as expected control messages, so ``replay`` waits (by
  fingerprint, up to the gap plus its epsilon) until the real controller has
  installed them again before the next input;
* faults (rule expiry, packet drop/duplication, link failure) have no input
  here and are refused with a clear error.

The model's property becomes the real run's invariant: a packet lost for good
(NoBlackHoles, NoBlackHolesMobile) is the ``blackholes`` check, with the host
pair and the switches where the pair's packet is dropped computed from the
counterexample's final flow tables with the same tracer the real check uses
(so ``replay`` compares like with like; for an OpenFlow 1.3 app, through
the final pipelines, which the real run's header-space check reads too).  A counterexample that needs a
particular interleaving of internal events may not reproduce (the real run
picks its own); one like simple_switch's migration blackhole, whose cause is
the rules the inputs make the app install, does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from netsleuth import __version__
from netsleuth.errors import TraceFormatError
from netsleuth.invariants.forwarding import PathOutcome, trace_packet
from netsleuth.model.of13.frame import Frame
from netsleuth.model.of13.pipeline import Pipeline13, PortState
from netsleuth.model.ofdp import ofp13
from netsleuth.model.packet import Packet, arp_request, icmp_echo
from netsleuth.nice import messages as m
from netsleuth.nice.errors import ConversionError
from netsleuth.nice.job import load_counterexample
from netsleuth.nice.loading import make_system
from netsleuth.nice.of13 import copy_pipeline
from netsleuth.nice.state import SystemState
from netsleuth.nice.system import System
from netsleuth.nice.transitions import (
    CTL,
    MOVE,
    OF,
    OUT,
    PKT,
    RECV,
    SEND,
    SENDPKT,
    TIMER,
    Transition,
    transition_from_json,
)
from netsleuth.nice.violation import PropertyViolation
from netsleuth.openflow.codec import msg_to_json
from netsleuth.trace import schema as ts
from netsleuth.trace.controller_spec import HOSTED, ControllerSpec
from netsleuth.trace.fingerprint import of_fingerprint
from netsleuth.trace.io import read_trace, write_trace

BLACKHOLE_PROPERTIES = ("NoBlackHoles", "NoBlackHolesMobile")


@dataclass
class _ModelView:
    """The slice of :class:`~netsleuth.invariants.view.NetworkView` that ``trace_packet`` reads, over a model state."""

    system: System
    state: SystemState
    switches: dict = field(init=False)

    def __post_init__(self) -> None:
        self.switches = {s.name: s for s in self.state.switches}

    def is_switch_up(self, name: str) -> bool:
        return True

    def peer(self, node: str, port: int) -> tuple[str, int] | None:
        p = self.system.peer.get((node, port))
        if p is not None:
            s = self.switches[node].ports.get(port)
            return p if s is not None and s.link_up else None
        for hs in self.state.hosts:
            if hs.location == (node, port):
                return (hs.host.name, 0)
        return None


def _is_flow_mod(msg: Any) -> bool:
    return type(msg) is m.FlowMod or (type(msg) is m.ToSwitch13 and msg.type_name == "FLOW_MOD")


def _trace13(view: _ModelView, switch: str, in_port: int, packet: Packet) -> PathOutcome:
    """``trace_packet`` over OpenFlow 1.3 switches: every copy through each switch's pipeline.

    Each switch's pipeline is copied first (a lookup counts, meters spend
    tokens) and sees its switch's ports as they are: an output to a port
    that is down goes nowhere, as in the switch's 1.3 part.
    """
    out = PathOutcome()
    pipelines: dict[str, Pipeline13] = {}
    work: list[tuple[str, int, Packet, tuple[tuple[str, int], ...]]] = [(switch, in_port, packet, ())]
    while work and out.hops < 10_000:
        node, port, pkt, hops = work.pop()
        out.hops += 1
        if (node, port) in hops:
            out.loops.append([f"{n}:{p}" for n, p in hops + ((node, port),)])
            continue
        hops = hops + ((node, port),)
        s = view.switches[node]
        p = pipelines.get(node)
        if p is None:
            p = pipelines[node] = copy_pipeline(s.of13.pipeline)
            p.ports = {no: PortState(live=x.usable) for no, x in s.ports.items()}
        result = p.process(Frame.from_packet(pkt), port, 0.0)
        if not result.outputs:
            table, entry = result.path[-1] if result.path else (0, None)
            why = (f"no entry matches in table {table} (OpenFlow 1.3 drops a table miss)" if entry is None
                   else f"rule {entry} sends nothing")
            out.drops.append((node, why))
        for e in result.outputs:
            if e.port == ofp13.OFPP_CONTROLLER:
                out.punted.append(node)
                continue
            x = s.ports.get(e.port)
            peer = view.peer(node, e.port) if x is not None and x.usable else None
            if peer is None:
                out.drops.append((node, f"port {e.port} has no live link"))
                continue
            nxt, nxt_port = peer
            if nxt in view.switches:
                work.append((nxt, nxt_port, e.frame.to_packet(), hops))
            else:
                out.delivered.append(nxt)
    out.delivered.sort()
    return out


def _target(system: System, final: SystemState, v: PropertyViolation) -> ts.Violation:
    if v.prop not in BLACKHOLE_PROPERTIES:
        raise ConversionError(f"property {v.prop} has no real-run invariant to convert to",
                              f"convert counterexamples of {', '.join(BLACKHOLE_PROPERTIES)} (the blackholes check)")
    view = _ModelView(system, final)
    lost = []
    for hs in final.hosts:
        src = hs.host.name
        sw_name, port = hs.location
        for other in final.hosts:
            dst = other.host.name
            if dst == src:
                continue
            pkt = icmp_echo(hs.host.mac, other.host.mac, hs.host.ip, other.host.ip, 1, 1)
            if system.of13:
                o = _trace13(view, sw_name, port, pkt)
            else:
                o = trace_packet(view, sw_name, port, pkt)  # type: ignore[arg-type]  # duck-typed: the slice of NetworkView trace_packet reads
            # NICE's NoBlackHoles counts drop rules too (a packet the network keeps from its host)
            drops = o.drops + o.filtered
            if dst not in o.delivered and not o.punted and drops:
                lost.append(((src, dst), tuple(dict.fromkeys(w for w, _ in drops)), drops[0]))
    wanted = [x for x in lost if set(x[0]) <= set(v.hosts)]  # the pair the model's violation names
    if not wanted:
        raise ConversionError(f"the counterexample's final flow tables do not drop the packets of "
                              f"{'/'.join(v.hosts)} ({v.message})",
                              "only blackholes that the flow tables still cause at the end carry over to a real run")
    (src, dst), switches, (where, why) = wanted[0]
    return ts.Violation(seq=0, t=0.0, invariant="blackholes", persistent=True, hosts=(src, dst), switches=switches,
                        message=f"packets {src} -> {dst} are dropped at {where}: {why}",
                        details={"model_property": v.prop, "model_message": v.message})


def counterexample_inputs(system: System, path: list[Transition], violation: PropertyViolation, *,
                          gap: float = 0.3, seed: int | None = 0) -> ts.Trace:
    """The trace (header, inputs, target violation) a real run replays; see the module docstring."""
    cfg = system.config
    app = ControllerSpec.parse(cfg.app_spec.strip())
    if app.kind not in HOSTED:
        raise ConversionError(f"{cfg.app_spec} is an in-process app with no controller process to replay against",
                              "convert counterexamples of hosted os-ken apps or POX components "
                              "(netsleuth check osken:MODULE or pox:COMPONENTS)")
    st = system.initial()
    controller = "c0"  # the name a replay session gives its (only) controller
    events: list[ts.Event] = []
    t = 0.0

    n_inputs = 0

    def add(cls: type, **kw: Any) -> None:
        nonlocal t, n_inputs
        t += gap
        n_inputs += 1
        events.append(cls(seq=len(events), t=round(t, 6), id=f"i{n_inputs}", **kw))

    for tr in path:
        kind = tr[0]
        if system.is_fault(tr):
            raise ConversionError(f"the counterexample uses the fault {system.describe(st, tr)!r}, which has no "
                                  "real-run input", "search without --faults to get a convertible counterexample")
        if kind == SEND:
            hs = st.hosts[tr[1]]
            dst = hs.to_send[0]
            h, d = hs.host, cfg.topology.host(dst)
            pkt = icmp_echo(h.mac, d.mac, h.ip, d.ip, tr[1] + 1, hs.next_seq)  # the model's ping (fire_hosts.fire_send)
            add(ts.TrafficInjection, host=h.name, packet=pkt.to_json(), dst=dst)
        elif kind == SENDPKT:
            hs = st.hosts[tr[1]]
            add(ts.TrafficInjection, host=hs.host.name, packet=tr[2].to_json(),
                dst=system.host_by_mac.get(tr[2].eth_dst))
        elif kind == MOVE:
            hs = st.hosts[tr[1]]
            (old_sw, old_port), (new_sw, new_port) = hs.location, hs.moves_left[0]
            add(ts.HostMigration, host=hs.host.name, old_switch=old_sw, old_port=old_port, new_switch=new_sw,
                new_port=new_port)
            h = hs.host
            add(ts.TrafficInjection, host=h.name, packet=arp_request(h.mac, h.ip, h.ip).to_json(), dst=None)
        elif kind == OF and _is_flow_mod(st.to_sw[tr[1]][0]):
            # The rule changes the inputs so far made the app send: the replay waits for the real
            # controller to send them again (happens-before, matched by fingerprint) before the
            # next input, instead of trusting the gap alone.
            head = st.to_sw[tr[1]][0]
            js = msg_to_json(m.of13_message(head.data) if type(head) is m.ToSwitch13 else m.to_ofp(head))
            events.append(ts.ControlToSwitch(seq=len(events), t=round(t, 6), conn=0, controller=controller,
                                             dpid=system.dpid_of[tr[1]], msg=js, fp=of_fingerprint(js)))
        elif kind not in (OUT, RECV, PKT, OF, CTL, TIMER):
            raise ConversionError(f"transition {tr!r} has no real-run input",
                                  "convert counterexamples of the standard model transitions")
        st, _ = system.fire(st, tr)
    _check_ports(system, events)
    target = _target(system, st, violation)
    events.append(ts.Violation(**{**_fields(target), "seq": len(events), "t": round(t + gap, 6)}))
    header = ts.TraceHeader(topology=cfg.topology.to_json(), topology_spec=cfg.topology.spec,
                            controller=str(app.real()), seed=seed, tool_version=__version__,
                            command="check",
                            openflow={sw.name: "1.3" for sw in cfg.topology.switches} if system.of13 else {},
                            extra={"converted_from": "model-checking counterexample",
                                   "model_property": violation.prop, "transitions": len(path), "persist": 3})
    return ts.Trace(header, events)


def _check_ports(system: System, events: list[ts.Event]) -> None:
    """A real migration plugs the host into the next free port of its new switch; the model's must agree."""
    top = {s.name: max(system.topology.ports(s.name), default=0) for s in system.topology.switches}
    for e in events:
        if isinstance(e, ts.HostMigration):
            want = top[e.new_switch] + 1
            if e.new_port != want:
                raise ConversionError(f"{e.host} moves to {e.new_switch}:{e.new_port} in the model, but a real "
                                      f"migration attaches it to {e.new_switch}:{want}",
                                      "move hosts to the first spare port (the mobile scenario does)")
            top[e.new_switch] = want


def convert_counterexample(cex: Path | str, out: Path | str, *, gap: float = 0.3) -> dict[str, Any]:
    """Read a counterexample written by ``netsleuth check --out``, re-fire it in a fresh model (it must
    still do what it says) and write the real-run trace to ``out``; returns a small report."""
    trace = read_trace(cex)
    h = trace.header
    config, steps, target = load_counterexample(trace, str(cex))
    if target is None:
        raise TraceFormatError(f"{cex} has no violation", "convert a counterexample that ends in a violation")
    system = make_system(config)
    st = system.initial()
    path = []
    for k, e in enumerate(steps):
        tr = transition_from_json([e.transition["kind"], *e.transition["args"]])
        if tr not in system.enabled(st) or system.describe(st, tr) != e.what:
            raise ConversionError(f"step {k} of {cex} ({e.what!r}) does not replay in the model",
                                  "re-run `netsleuth check` with the same app and options")
        path.append(tr)
        st, _ = system.fire(st, tr)
    v = PropertyViolation(target.invariant, target.message, tuple(target.hosts), tuple(target.switches))
    converted = counterexample_inputs(system, path, v, gap=gap, seed=h.seed)
    write_trace(out, converted)
    inputs = [e for e in converted.events if e.is_input]
    expected = [e for e in converted.events if isinstance(e, ts.ControlToSwitch)]
    final = cast(ts.Violation, converted.events[-1])  # counterexample_inputs ends the trace with the target
    return {"command": "cex-inputs", "counterexample": str(cex), "out": str(out), "controller": h.controller,
            "transitions": len(path), "inputs": len(inputs), "kinds": [e.kind for e in inputs],
            "expected_flow_mods": len(expected),
            "target": {"invariant": final.invariant, "hosts": list(final.hosts), "switches": list(final.switches),
                       "message": final.message}}


def _fields(v: ts.Violation) -> dict:
    return {k: getattr(v, k) for k in ("invariant", "message", "persistent", "hosts", "switches", "details")}


__all__ = ["ConversionError", "convert_counterexample", "counterexample_inputs"]
