"""The OpenFlow 1.0 messages a switch writes from its own state: statistics replies, FLOW_REMOVED, PORT_STATUS.

They read the switch (its table, counters and ports) and change nothing, so
they live apart from the message handlers that do change it.
"""

from __future__ import annotations

from typing import Any

from netsleuth.model.actions import action_to_ofp
from netsleuth.model.flowentry import FlowEntry
from netsleuth.model.match import Match
from netsleuth.model.ofdp import DATAPATH, ofp, ofp_parser
from netsleuth.model.switch_io import Port

#: A table's capacity when --table-size sets none (what TABLE_STATS reports then).
MAX_TABLE_ENTRIES = 1_000_000


def stats_reply(sw: Any, msg: Any, now: float) -> Any:
    """The reply to a STATS_REQUEST from switch ``sw``'s state, or the (type, code) of the ERROR it draws."""
    kind = type(msg)
    if kind is ofp_parser.OFPDescStatsRequest:
        body = ofp_parser.OFPDescStats(b"netsleuth", b"netsleuth mock OpenFlow 1.0 switch",
                                       sw.sw_version.encode(), str(sw.dpid).encode(),
                                       sw.name.encode())
        reply = ofp_parser.OFPDescStatsReply(DATAPATH)
        reply.body = body
    elif kind is ofp_parser.OFPFlowStatsRequest:
        reply = ofp_parser.OFPFlowStatsReply(DATAPATH)
        reply.body = [flow_stats(e, now) for e in
                      sw.table.select(Match.from_ofp(msg.match), msg.out_port)]
    elif kind is ofp_parser.OFPAggregateStatsRequest:
        entries = sw.table.select(Match.from_ofp(msg.match), msg.out_port)
        reply = ofp_parser.OFPAggregateStatsReply(DATAPATH)
        reply.body = ofp_parser.OFPAggregateStats(
            sum(e.packet_count for e in entries), sum(e.byte_count for e in entries), len(entries))
    elif kind is ofp_parser.OFPTableStatsRequest:
        reply = ofp_parser.OFPTableStatsReply(DATAPATH)
        reply.body = [ofp_parser.OFPTableStats(0, b"classifier", ofp.OFPFW_ALL,
                                               sw.table_size or MAX_TABLE_ENTRIES,
                                               len(sw.table), sw.lookup_count,
                                               sw.matched_count)]
    elif kind is ofp_parser.OFPPortStatsRequest:
        reply = ofp_parser.OFPPortStatsReply(DATAPATH)
        wanted = [p for p in sw.ports.values() if msg.port_no in (ofp.OFPP_NONE, p.port_no)]
        if not wanted:
            return (ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BAD_STAT)
        reply.body = [ofp_parser.OFPPortStats(
            p.port_no, p.counters.rx_packets, p.counters.tx_packets, p.counters.rx_bytes,
            p.counters.tx_bytes, p.counters.rx_dropped, p.counters.tx_dropped, 0, 0, 0, 0, 0, 0)
            for p in wanted]
    elif kind is ofp_parser.OFPQueueStatsRequest:
        reply = ofp_parser.OFPQueueStatsReply(DATAPATH)
        reply.body = []
    elif kind is ofp_parser.OFPVendorStatsRequest:
        # OF1.0: OFPBRC_BAD_VENDOR covers the vendor id of a stats request too.
        return (ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BAD_VENDOR)
    else:
        return (ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BAD_STAT)
    reply.flags = 0
    return reply

def flow_stats(e: FlowEntry, now: float) -> Any:
    age = max(0.0, now - e.installed_at)
    sec = int(age)
    stats = ofp_parser.OFPFlowStats()
    stats.length = 0
    stats.table_id = 0
    stats.match = e.match.to_ofp()
    stats.duration_sec = sec
    stats.duration_nsec = int((age - sec) * 1e9)
    stats.priority = e.priority
    stats.idle_timeout = e.idle_timeout
    stats.hard_timeout = e.hard_timeout
    stats.cookie = e.cookie
    stats.packet_count = e.packet_count
    stats.byte_count = e.byte_count
    stats.actions = [action_to_ofp(a) for a in e.actions]
    return stats

def flow_removed(e: FlowEntry, reason: int, now: float) -> Any:
    age = max(0.0, now - e.installed_at)
    sec = int(age)
    # os-ken's OFPFlowRemoved (a switch->controller type) takes only the datapath.
    msg = ofp_parser.OFPFlowRemoved(DATAPATH)
    msg.match = e.match.to_ofp()
    msg.cookie = e.cookie
    msg.priority = e.priority
    msg.reason = reason
    msg.duration_sec = sec
    msg.duration_nsec = int((age - sec) * 1e9)
    msg.idle_timeout = e.idle_timeout
    msg.packet_count = e.packet_count
    msg.byte_count = e.byte_count
    msg.xid = 0  # asynchronous: no request to answer
    return msg

def port_status(port: Port, reason: int) -> Any:
    msg = ofp_parser.OFPPortStatus(DATAPATH, reason=reason, desc=port.phy())
    msg.xid = 0  # asynchronous: no request to answer
    return msg


__all__ = ["MAX_TABLE_ENTRIES", "flow_removed", "flow_stats", "port_status", "stats_reply"]
