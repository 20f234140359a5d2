"""SDNRacer-style happens-before events from a netsleuth trace (no controller instrumentation).

SDNRacer records its events inside an instrumented controller and switch, so
causality is explicit there.  A netsleuth trace (:mod:`netsleuth.trace.schema`)
records what crossed the control channels (``of_to_switch``: a controller
message delivered to and applied by a switch; ``of_to_controller``: a switch
message delivered to the controller), every dataplane arrival (``packet``,
with ``pid`` = the lineage shared by all copies of one emitted frame) and the
inputs.  This module turns it into :class:`netsleuth.races.events.HbEvent`
objects for :func:`netsleuth.races.job.detect_races`, replaying the trace with
:func:`netsleuth.world.rebuild.replay_states` so each switch's flow table is
known at every point.

Events made (SDNRacer's kinds) and the operations they carry:

* ``packet`` at a switch -> ``HbPacketHandle`` with one flow-table READ: the
  entry the packet hits in the rebuilt table at that point
  (``FlowTable.peek`` on ``packet.match_fields(port)``; the hit refreshes the
  entry's idle timer so rebuilt idle timeouts follow the traffic), or a miss.
* ``packet`` at a host -> ``HbHostHandle``.  A frame first seen on the switch
  port that faces a host is that host's ``HbHostSend``.
* Each hop gets an ``HbPacketSend`` between the emitter and the arrival.
* ``of_to_controller`` -> ``HbMessageSend`` (switch side) followed by
  ``HbControllerHandle``.  ``of_to_switch`` -> ``HbControllerSend`` followed
  by ``HbMessageHandle``; a FLOW_MOD handle carries its WRITE.
* ``FLOW_REMOVED`` with reason idle/hard timeout -> ``HbAsyncFlowExpiry``
  (EXPIRY of the removed entry) before the message send it causes.
* Handshake, config and statistics messages (SDNRacer's skip list) are
  left out.  Barrier ordering and the expiry rule are then
  :func:`netsleuth.races.hb.build_hb_graph`'s, exactly as for hb.json.

On an OpenFlow 1.3 switch (:mod:`netsleuth.races.of13.from_trace`) the same
events carry 1.3 operations, each naming the table, group or meter it
touches: a packet goes through the rebuilt switch's pipeline
(``Pipeline13.process``) and READs every table it passes through
(goto-table), with the OXM fields that table looked up and the entry it
hit, and every group and meter it used; a FLOW_MOD WRITEs its table (a
DELETE of ``OFPTT_ALL`` all of them), a GROUP_MOD or METER_MOD its group or
meter (a DELETE also every table: the flows using it go too); a PACKET_OUT
READs what its actions reach (OFPP_TABLE, groups), a FLOW_MOD releasing a
buffered packet the tables from table 0; flow, aggregate, group and meter
MULTIPART requests READ what they name (other MULTIPART messages,
EXPERIMENTER and the async configuration are left out like 1.0's STATS and
VENDOR); FLOW_REMOVED by timeout is an expiry, by a flow, group or meter
delete caused by that delete; a connection made slave by ROLE_REQUEST
writes nothing (the switch refuses it whatever the order); a lost
connection takes its unanswered PACKET_INs and the switch's buffers with
it (rule 4 below then never ties a FLOW_MOD sent on the next connection,
such as the table-miss entry installed again, to a PACKET_IN of the old one).

Causality rules (each an ``pid``/``mid`` link; no program order is added):

1. Packet hops.  An arrival at (N, P) with lineage x was emitted by the link
   peer (N', P') (topology links, updated by host migrations).  If N' is a
   host it is a host send.  If N' is a switch the emitter is the latest
   earlier event on N' that sent lineage x out of P': an arrival of x on N'
   whose hit entry's actions output to P' (FLOOD/ALL/IN_PORT expanded with
   the switch's ports), a PACKET_OUT whose packet is of lineage x (known
   from its buffer or from the PACKET_IN it answers, rule 4), or a FLOW_MOD
   releasing a buffered packet of x.  Failing the port check, the latest
   emitter of x on N'; failing that, a PACKET_OUT of unknown lineage on N'
   carrying the same frame bytes.
2. PACKET_IN.  Caused by the latest arrival on that switch and in_port whose
   frame starts with the PACKET_IN's data and that has no PACKET_IN yet
   (fallback: the latest such arrival that missed).  With a buffer id the
   arrival also "puts" the packet in the buffer: a later message using that
   buffer id on that switch gets it (buffer put -> buffer get).
3. Replies.  A switch message with a non-zero xid (BARRIER_REPLY, ERROR,
   ECHO_REPLY) is caused by the handle of the controller message with that
   xid on that switch; FLOW_REMOVED(delete) by the latest DELETE flow_mod
   handled there; FLOW_REMOVED(timeout) by its expiry event.
4. Controller causality, inferred from what the controller sent.  A
   controller message to switch S is the output of handling S's PACKET_IN p
   when (a) its buffer_id equals p's buffer_id, else (b) a PACKET_OUT's data
   equals p's data (latest such p), else (c) a FLOW_MOD's match covers
   (POX semantics) the packet of the most recent PACKET_IN on S; if it does
   not, the most recent still unanswered PACKET_IN on S whose packet it
   covers.  All messages so attributed to p are siblings under p's
   ``HbControllerHandle`` (unordered among themselves, as in SDNRacer).
5. Hosts.  A host send is caused by a reception at that host when it
   answers it: an ARP reply to a received request (spa/tpa swapped), an ICMP
   echo reply to a received echo request (same ident/seq, addresses
   swapped), or an IPv4 packet queued for ARP resolution and released by a
   received ARP reply for its destination, provided no ``traffic`` input of
   that host came after that reply.  Other host sends are roots (the
   ``traffic`` input that started them is kept in their label).

Limits of the inference (all make the graph *less* ordered, so they can add
races, never hide one): controller causality is only inferred from
PACKET_INs on the same switch, so a controller reacting to a PACKET_IN of
another switch (e.g. path installation by l2_multi), to PORT_STATUS,
FLOW_REMOVED or BARRIER_REPLY, or to its own timers, yields root sends
(proactive events); rule (c) can attribute a proactive FLOW_MOD to an
unrelated PACKET_IN whose packet it happens to cover, and an app that
rewrites the packet before its PACKET_OUT (or sends it to another switch)
loses rules (b)/1.  Expiries are only seen through FLOW_REMOVED, i.e. for
entries installed with OFPFF_SEND_FLOW_REM.  Times are the trace's ``t``
(for runs against a real controller, seconds of the recording).

The builder is one class grown in layers, one module per group of rules:
``records.py`` (its records and state), ``packets.py`` (rules 1 and 5),
``to_controller.py`` (rules 2 and 3), ``to_switch.py`` (rule 4: the whole
builder); this module reads the trace and feeds it the events.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netsleuth.races.events import HbEvent
from netsleuth.races.from_trace.to_switch import _Builder
from netsleuth.trace import schema as ts


@dataclass
class TraceEvents:
    """The events of one netsleuth trace, with where each came from and what it was.

    ``origin``: eid -> seq of the trace event it was made from; ``labels``:
    eid -> the event in plain words (switch names, messages, packets);
    ``stats``: how many links each rule made and how many arrivals stayed
    unexplained.
    """

    events: list[HbEvent]
    origin: dict[int, int]
    labels: dict[int, str]
    stats: dict[str, int] = field(default_factory=dict)


# ------------------------------------------------------------------ helpers


def trace_file(path: str | Path) -> Path:
    """``path`` itself, or ``path/trace.jsonl`` for a run directory."""
    p = Path(path)
    if p.is_dir() and (p / "trace.jsonl").is_file():
        return p / "trace.jsonl"
    return p


def is_netsleuth_trace(path: str | Path) -> bool:
    """Whether the file's first line is a netsleuth trace header (cheap sniff)."""
    p = trace_file(path)
    try:
        with p.open("rb") as f:
            first = f.readline(1 << 20)
    except OSError:
        return False
    if ts.FORMAT.encode() not in first:  # not even mentioned: no need to parse (which may be deep garbage)
        return False
    try:
        d = json.loads(first)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return False
    return isinstance(d, dict) and d.get("format") == ts.FORMAT


























# ------------------------------------------------------------------ entry points


def events_from_trace(trace: str | Path | ts.Trace) -> TraceEvents:
    """The HB events of a netsleuth trace (a path, a run directory or a :class:`Trace`)."""
    from netsleuth.trace.io import read_trace
    from netsleuth.world.rebuild import replay_states

    where = str(trace) if not isinstance(trace, ts.Trace) else "the trace"
    if not isinstance(trace, ts.Trace):
        trace = read_trace(trace_file(trace))
    _need_openflow_bodies(trace, where)
    b = _Builder(trace.header)
    for e, world in replay_states(trace.header, trace.events):
        b.seq = e.seq
        if isinstance(e, ts.PacketArrival):
            b.on_packet(e, world)
        elif isinstance(e, ts.ControlToSwitch):
            b.on_to_switch(e, world)
        elif isinstance(e, ts.ControlToController):
            b.on_to_controller(e, world)
        elif isinstance(e, ts.SwitchDisconnected):
            b.on_disconnect(e)
        elif e.is_input:
            b.on_input(e)
    return TraceEvents(b.events, b.origin, b.labels, dict(b.stats))


def _need_openflow_bodies(trace: ts.Trace, where: str) -> None:
    """Races are between the OpenFlow messages a switch handled: a trace without them has nothing to race.

    STS before mid-2013 recorded each OpenFlow message only as a fingerprint
    (its type and a few fields), so a trace imported from such a run keeps
    the inputs but no message bodies; say that instead of "no events".
    """
    from netsleuth.errors import TraceFormatError

    if not trace.events or any(isinstance(e, (ts.ControlToSwitch, ts.ControlToController)) for e in trace.events):
        return  # an empty trace simply has no races
    if trace.header.extra.get("imported_from") == "sts":
        raise TraceFormatError(
            f"{where} holds no OpenFlow message bodies: the STS run recorded its OpenFlow messages only as "
            "fingerprints, and races are between the messages a switch handled",
            "race an STS trace whose ControlMessage lines carry b64_packet (STS from mid-2013 on), "
            "or record the controller with netsleuth run/fuzz")
    raise TraceFormatError(f"{where} holds no OpenFlow message bodies, and races are between the messages a "
                           "switch handled", "give a trace recorded by netsleuth run/fuzz, or an SDNRacer hb.json")


def race_text(labels: dict[int, str], graph: Any, race: Any) -> str:
    """A race in plain words: the two events' labels (``graph`` is the report's HbGraph)."""
    a, k = graph.events[race.i], graph.events[race.k]
    return f"{race.kind} race: {labels.get(a.eid, a.kind)}  vs  {labels.get(k.eid, k.kind)}"


__all__ = ["TraceEvents", "events_from_trace", "is_netsleuth_trace", "race_text", "trace_file"]
