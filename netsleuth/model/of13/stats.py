"""Multipart (statistics) reply bodies of an OpenFlow 1.3 pipeline, as os-ken objects.

The switch answers MULTIPART_REQUESTs from the pipeline's state; building
the bodies here keeps the semantics (which entries a flow-stats request
selects, what a duration is at ``now``, which features the model has) in the
model and the switch a thin encoder.  Durations come from the injected
clock, never the wall clock.
"""

from __future__ import annotations

import math
from typing import Any

from os_ken.ofproto import ofproto_v1_3 as ofp
from os_ken.ofproto import ofproto_v1_3_parser as parser

from netsleuth.model.of13.fieldspec import SPECS
from netsleuth.model.of13.flowtable import FULL64
from netsleuth.model.of13.groups import GROUP_TYPES
from netsleuth.model.of13.oxm import OxmMatch
from netsleuth.model.of13.pipeline import Pipeline13

MAX_GROUPS = 0xFFFFFF00
MAX_METERS = 0xFFFF0000


def _duration(seconds: float) -> tuple[int, int]:
    seconds = max(0.0, seconds)
    whole = math.floor(seconds)
    return int(whole), int(round((seconds - whole) * 1e9)) % 1_000_000_000


def flow_stats(p: Pipeline13, now: float, *, table_id: int = ofp.OFPTT_ALL, match: OxmMatch | None = None,
               out_port: int = ofp.OFPP_ANY, out_group: int = ofp.OFPG_ANY, cookie: int = 0,
               cookie_mask: int = 0) -> list[Any]:
    """OFPMP_FLOW: the entries a non-strict selection names, in table then priority order."""
    entries = p.tables.select(table_id, match or OxmMatch(), out_port=out_port, out_group=out_group, cookie=cookie,
                              cookie_mask=cookie_mask)
    out = []
    for e in entries:
        sec, nsec = _duration(e.duration(now))
        out.append(parser.OFPFlowStats(e.table_id, sec, nsec, e.priority, e.idle_timeout, e.hard_timeout, e.flags,
                                       e.cookie, e.packet_count, e.byte_count, e.match.to_ofp(),
                                       e.instructions.to_ofp()))
    return out


def aggregate_stats(p: Pipeline13, *, table_id: int = ofp.OFPTT_ALL, match: OxmMatch | None = None,
                    out_port: int = ofp.OFPP_ANY, out_group: int = ofp.OFPG_ANY, cookie: int = 0,
                    cookie_mask: int = 0) -> Any:
    """OFPMP_AGGREGATE over the same selection as ``flow_stats``."""
    entries = p.tables.select(table_id, match or OxmMatch(), out_port=out_port, out_group=out_group, cookie=cookie,
                              cookie_mask=cookie_mask)
    return parser.OFPAggregateStats(sum(e.packet_count for e in entries), sum(e.byte_count for e in entries),
                                    len(entries))


def table_stats(p: Pipeline13) -> list[Any]:
    """OFPMP_TABLE: one body per table."""
    return [parser.OFPTableStats(t, p.tables.active_count(t), c.lookup_count, c.matched_count)
            for t, c in enumerate(p.tables.counters)]


def table_features(p: Pipeline13) -> list[Any]:
    """OFPMP_TABLE_FEATURES: every table takes the full metadata and every OXM field (no properties listed)."""
    return [parser.OFPTableFeaturesStats(t, f"table{t}", FULL64, FULL64, 0, 1_000_000, [])
            for t in range(p.tables.n_tables)]


def group_stats(p: Pipeline13, now: float, group_id: int = ofp.OFPG_ALL) -> list[Any]:
    """OFPMP_GROUP: counters per group and bucket; ref_count is the number of flow entries using it."""
    ids = sorted(p.groups.groups) if group_id == ofp.OFPG_ALL else [g for g in (group_id,) if g in p.groups.groups]
    out = []
    for gid in ids:
        g = p.groups.groups[gid]
        refs = sum(1 for e in p.tables if e.instructions.uses_group(gid))
        sec, nsec = _duration(now - g.installed_at)
        buckets = [parser.OFPBucketCounter(pk, by) for pk, by in (g.bucket_counts or [])]
        out.append(parser.OFPGroupStats(group_id=gid, ref_count=refs, packet_count=g.packet_count,
                                        byte_count=g.byte_count, duration_sec=sec, duration_nsec=nsec,
                                        bucket_stats=buckets))
    return out


def group_desc(p: Pipeline13) -> list[Any]:
    """OFPMP_GROUP_DESC: type and buckets of every group, by id."""
    return [parser.OFPGroupDescStats(g.type, gid, [b.to_ofp() for b in g.buckets])
            for gid, g in sorted(p.groups.groups.items())]


def group_features() -> Any:
    """OFPMP_GROUP_FEATURES: all four types, weights, liveness and chaining; every action in every type."""
    types = sum(1 << t for t in GROUP_TYPES)
    caps = ofp.OFPGFC_SELECT_WEIGHT | ofp.OFPGFC_SELECT_LIVENESS | ofp.OFPGFC_CHAINING | ofp.OFPGFC_CHAINING_CHECKS
    actions = sum(1 << a for a in (ofp.OFPAT_OUTPUT, ofp.OFPAT_COPY_TTL_OUT, ofp.OFPAT_COPY_TTL_IN,
                                   ofp.OFPAT_SET_MPLS_TTL, ofp.OFPAT_DEC_MPLS_TTL, ofp.OFPAT_PUSH_VLAN,
                                   ofp.OFPAT_POP_VLAN, ofp.OFPAT_PUSH_MPLS, ofp.OFPAT_POP_MPLS, ofp.OFPAT_SET_QUEUE,
                                   ofp.OFPAT_GROUP, ofp.OFPAT_SET_NW_TTL, ofp.OFPAT_DEC_NW_TTL, ofp.OFPAT_SET_FIELD))
    return parser.OFPGroupFeaturesStats(types, caps, [MAX_GROUPS] * 4, [actions] * 4)


def meter_stats(p: Pipeline13, now: float, meter_id: int = ofp.OFPM_ALL) -> list[Any]:
    ids = sorted(p.meters.meters) if meter_id == ofp.OFPM_ALL else [m for m in (meter_id,) if m in p.meters.meters]
    out = []
    for mid in ids:
        m = p.meters.meters[mid]
        flows = sum(1 for e in p.tables if e.instructions.meter == mid)
        sec, nsec = _duration(now - m.installed_at)
        bands = [parser.OFPMeterBandStats(s.packet_count, s.byte_count) for s in m.state]
        out.append(parser.OFPMeterStats(mid, flows, m.packet_count, m.byte_count, sec, nsec, bands))
    return out


def meter_config(p: Pipeline13, meter_id: int = ofp.OFPM_ALL) -> list[Any]:
    ids = sorted(p.meters.meters) if meter_id == ofp.OFPM_ALL else [m for m in (meter_id,) if m in p.meters.meters]
    out = []
    for mid in ids:
        m = p.meters.meters[mid]
        bands: list[Any] = []
        for b in m.bands:
            if b.type == ofp.OFPMBT_DROP:
                bands.append(parser.OFPMeterBandDrop(b.rate, b.burst_size))
            else:
                bands.append(parser.OFPMeterBandDscpRemark(b.rate, b.burst_size, b.prec_level))
        out.append(parser.OFPMeterConfigStats(m.flags, mid, bands))
    return out


def meter_features() -> Any:
    caps = ofp.OFPMF_KBPS | ofp.OFPMF_PKTPS | ofp.OFPMF_BURST | ofp.OFPMF_STATS
    return parser.OFPMeterFeaturesStats(MAX_METERS, (1 << ofp.OFPMBT_DROP) | (1 << ofp.OFPMBT_DSCP_REMARK), caps, 8, 0)


def oxm_field_codes() -> list[int]:
    """Every OXM basic field the model matches (for table-features properties)."""
    return [s.code for s in SPECS]


__all__ = ["aggregate_stats", "flow_stats", "group_desc", "group_features", "group_stats", "meter_config",
           "meter_features", "meter_stats", "oxm_field_codes", "table_features", "table_stats"]
