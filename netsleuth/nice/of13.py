"""The model checker's OpenFlow 1.3 switches: the model's 1.3 part, copied and hashed.

An app that speaks only OpenFlow 1.3 is checked against switches that run
1.3 (``System.of13``).  They are the same :class:`~netsleuth.nice.state.MCSwitch`
with the model's 1.3 part (:class:`~netsleuth.model.of13.switch.OpenFlow13` over a
:class:`~netsleuth.model.of13.pipeline.Pipeline13`: every table, groups,
meters) in place of the 1.0 table, so 1.3 semantics are the model's own:
a packet that matches nothing is dropped, the table-miss entry the app
installs (priority 0) is what sends it to the controller, an output to
OFPP_CONTROLLER carries its max_len, and the switch buffers a packet only
when that max_len asks for fewer bytes than the frame has (OFPCML_NO_BUFFER:
the whole frame, OFP_NO_BUFFER).

This module adds what the search needs on top, as :class:`MCSwitch` does for
1.0: copies that share what a transition does not change, a canonical key
over the whole 1.3 state, and PACKET_INs as the light, lineage-carrying
:class:`~netsleuth.nice.messages.PacketIn` the properties read.  The model
checker has a single controller connection (0), in the equal role.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from netsleuth.model import switch as sw
from netsleuth.model.of13.frame import Frame
from netsleuth.model.of13.pipeline import Pipeline13
from netsleuth.model.of13.switch import ConnState, OpenFlow13
from netsleuth.model.ofdp import ofp13
from netsleuth.model.packet import Packet
from netsleuth.nice import messages as m

CONN = 0  # the model checker's one controller connection
OFP_VERSION_13 = ofp13.OFP_VERSION


class MCOpenFlow13(OpenFlow13):
    """The model's 1.3 part whose PACKET_INs are :class:`~netsleuth.nice.messages.PacketIn` values."""

    def _packet_in(self, frame: Frame, in_port: int, tag: Any, e: Any) -> list[Any]:
        # The model's own rules (of13.switch.OpenFlow13._packet_in): NO_PACKET_IN silences table
        # misses only, the connection's async mask must want the reason, and a packet is
        # buffered only when max_len asks for fewer bytes than it has.
        port = self.switch.ports.get(in_port)
        if e.reason == ofp13.OFPR_NO_MATCH and port is not None and port.config & ofp13.OFPPC_NO_PACKET_IN:
            return []
        if not any(st.wants(st.packet_in_mask, e.reason) for st in self.conns.values()):
            return []
        packet = e.frame.to_packet()
        total_len = packet.frame_len()
        buffer_id = m.NO_BUFFER
        view = packet
        if e.max_len != ofp13.OFPCML_NO_BUFFER and self.switch.n_buffers and e.max_len < total_len:
            buffer_id = self.switch.buffer(packet, in_port, tag)
            view = Packet.from_bytes(packet.to_bytes()[:e.max_len])  # what the controller sees of it
        return [sw.ToController(CONN, m.PacketIn(buffer_id, total_len, in_port, e.reason, view, tag,
                                                 e.table_id, e.cookie))]


def speak13(s: sw.Switch) -> None:
    """Make a fresh switch run OpenFlow 1.3 with the model checker's connection already there."""
    s.negotiated = OFP_VERSION_13
    part = MCOpenFlow13(s)
    part.sync_ports()
    part.conns[CONN] = ConnState()
    s.of13 = part


def copy13(part: OpenFlow13, new: sw.Switch, *, table: bool) -> OpenFlow13:
    """``part`` for the copy ``new`` of its switch: the pipeline is shared unless ``table``."""
    c = object.__new__(type(part))
    c.__dict__.update(part.__dict__)
    c.switch = new
    c.conns = {k: replace(v) for k, v in part.conns.items()}
    if table:
        c.pipeline = copy_pipeline(part.pipeline)
    return c


def copy_pipeline(p: Pipeline13) -> Pipeline13:
    """An independent copy of a pipeline, as ``Pipeline13.copy`` makes, in a small fraction of its time.

    ``Pipeline13.copy`` is a deep copy: right, but it also copies every
    immutable match, instruction and action, and a search copies a
    pipeline at every rule change (deep copies were nine tenths of a 1.3
    search's time).  This copies only what the pipeline mutates: the table
    lists and their sort keys, each entry (MODIFY rewrites an entry's
    instructions in place; lookups count), and each group's and meter's
    counters and token buckets.  It reads the tables' private lists, which
    is why it lives next to the search and is checked against
    ``Pipeline13.copy`` by the tests.
    """
    new = copy.copy(p)
    t = p.tables
    nt = copy.copy(t)
    nt._tables = [[copy.copy(e) for e in tab] if tab else [] for tab in t._tables]
    nt._keys = [list(k) if k else [] for k in t._keys]
    # The per-table lookup counters stay shared: they feed only table statistics, which hosted apps
    # cannot request in the model (osken_host.to_channel_message), and are not hashed.
    new.tables = nt
    groups = copy.copy(p.groups)
    groups.groups = {gid: replace(g, bucket_counts=[list(c) for c in g.bucket_counts or ()])
                     for gid, g in p.groups.groups.items()}
    new.groups = groups
    meters = copy.copy(p.meters)
    meters.meters = {mid: replace(mt, state=[replace(b) for b in mt.state]) for mid, mt in p.meters.meters.items()}
    new.meters = meters
    new.ports = dict(p.ports)
    return new


def key13(part: OpenFlow13, with_counters: bool) -> tuple:
    """Everything in a 1.3 switch's part that can steer its future, canonically.

    Flow entries in lookup order, table by table (install order does not
    matter), groups and meters by id (a meter's token buckets too: they
    decide its drops), and the connection's role and asynchronous masks.
    Counters only when the app reads statistics.  The pipeline's own port
    view is left out: it is derived from the switch's ports, which the
    switch key holds.
    """
    p = part.pipeline
    entries: tuple[tuple[Any, ...], ...]
    if with_counters:
        entries = tuple((e.table_id, e.priority, e.match.sort_key(), e.instructions, e.cookie, e.idle_timeout,
                         e.hard_timeout, e.flags, e.packet_count, e.byte_count) for e in p.tables)
    else:
        entries = tuple((e.table_id, e.priority, e.match.sort_key(), e.instructions, e.cookie, e.idle_timeout,
                         e.hard_timeout, e.flags) for e in p.tables)
    groups = tuple((gid, g.type, g.buckets) for gid, g in sorted(p.groups.groups.items()))
    meters = tuple((mid, mt.flags, mt.bands, tuple(b.tokens for b in mt.state))
                   for mid, mt in sorted(p.meters.meters.items()))
    conns = tuple((c, st.role, st.packet_in_mask, st.port_status_mask, st.flow_removed_mask)
                  for c, st in sorted(part.conns.items()))
    return (entries, groups, meters, conns, part.generation_id, part.miss_send_len, part.config_flags)


def packets_change_pipeline(part: OpenFlow13) -> bool:
    """Whether a packet through the pipeline changes hashed state (meters spend tokens)."""
    return bool(part.pipeline.meters.meters)


__all__ = ["CONN", "MCOpenFlow13", "copy13", "copy_pipeline", "key13", "packets_change_pipeline", "speak13"]
