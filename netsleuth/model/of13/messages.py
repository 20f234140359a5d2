"""Apply os-ken OpenFlow 1.3 FLOW_MOD / GROUP_MOD / METER_MOD messages to a pipeline.

The switch receives controller messages as os-ken ``ofproto_v1_3_parser``
objects; this module is the one place that reads their fields and calls the
pipeline, so the switch stays a thin shell and the translation is tested
against Open vSwitch's answers to the same messages.  Every rejection is an
``OFError`` with the (type, code) the switch must put in its ERROR reply.
"""

from __future__ import annotations

from typing import Any

from os_ken.ofproto import ofproto_v1_3 as ofp

from netsleuth.model.of13.errors import OFError
from netsleuth.model.of13.flowtable import RemovedFlow
from netsleuth.model.of13.groups import Bucket
from netsleuth.model.of13.instructions import Instructions
from netsleuth.model.of13.meters import Band
from netsleuth.model.of13.oxm import OxmMatch
from netsleuth.model.of13.pipeline import Pipeline13


def apply_flow_mod(p: Pipeline13, msg: Any, now: float = 0.0) -> list[RemovedFlow]:
    """One OFPFlowMod; returns the entries a DELETE removed (for FLOW_REMOVED)."""
    match = OxmMatch.from_ofp(msg.match)
    inst = Instructions.from_ofp(msg.instructions)
    cmd = msg.command
    if cmd == ofp.OFPFC_ADD:
        p.add_flow(msg.table_id, match, msg.priority, inst, cookie=msg.cookie, idle_timeout=msg.idle_timeout,
                   hard_timeout=msg.hard_timeout, flags=msg.flags, now=now)
        return []
    if cmd in (ofp.OFPFC_MODIFY, ofp.OFPFC_MODIFY_STRICT):
        p.modify_flows(msg.table_id, match, inst, strict=cmd == ofp.OFPFC_MODIFY_STRICT, priority=msg.priority,
                       cookie=msg.cookie, cookie_mask=msg.cookie_mask, flags=msg.flags)
        return []
    if cmd in (ofp.OFPFC_DELETE, ofp.OFPFC_DELETE_STRICT):
        return p.tables.delete(msg.table_id, match, strict=cmd == ofp.OFPFC_DELETE_STRICT, priority=msg.priority,
                               out_port=msg.out_port, out_group=msg.out_group, cookie=msg.cookie,
                               cookie_mask=msg.cookie_mask)
    raise OFError(ofp.OFPET_FLOW_MOD_FAILED, ofp.OFPFMFC_BAD_COMMAND, f"flow_mod command {cmd}",
                  "use ADD, MODIFY(_STRICT) or DELETE(_STRICT)")


def apply_group_mod(p: Pipeline13, msg: Any, now: float = 0.0) -> list[RemovedFlow]:
    """One OFPGroupMod; returns the flows a DELETE took with it (OFPRR_GROUP_DELETE)."""
    buckets = tuple(Bucket.from_ofp(b) for b in msg.buckets)
    if msg.command == ofp.OFPGC_ADD:
        p.add_group(msg.group_id, msg.type, buckets, now)
        return []
    if msg.command == ofp.OFPGC_MODIFY:
        p.modify_group(msg.group_id, msg.type, buckets, now)
        return []
    if msg.command == ofp.OFPGC_DELETE:
        return p.delete_group(msg.group_id)
    raise OFError(ofp.OFPET_GROUP_MOD_FAILED, ofp.OFPGMFC_BAD_COMMAND, f"group_mod command {msg.command}",
                  "use ADD, MODIFY or DELETE")


def band_from_ofp(b: Any) -> Band:
    """A meter band from os-ken's OFPMeterBandDrop/DscpRemark (others: OFPMMFC_BAD_BAND)."""
    if b.type not in (ofp.OFPMBT_DROP, ofp.OFPMBT_DSCP_REMARK):
        raise OFError(ofp.OFPET_METER_MOD_FAILED, ofp.OFPMMFC_BAD_BAND, f"meter band type {b.type}",
                      "use drop or dscp_remark bands")
    return Band(b.type, b.rate, b.burst_size, getattr(b, "prec_level", 0))


def apply_meter_mod(p: Pipeline13, msg: Any, now: float = 0.0) -> list[RemovedFlow]:
    """One OFPMeterMod; returns the flows a DELETE took with it."""
    bands = tuple(band_from_ofp(b) for b in msg.bands)
    if msg.command == ofp.OFPMC_ADD:
        p.add_meter(msg.meter_id, msg.flags, bands, now)
        return []
    if msg.command == ofp.OFPMC_MODIFY:
        p.modify_meter(msg.meter_id, msg.flags, bands, now)
        return []
    if msg.command == ofp.OFPMC_DELETE:
        return p.delete_meter(msg.meter_id)
    raise OFError(ofp.OFPET_METER_MOD_FAILED, ofp.OFPMMFC_BAD_COMMAND, f"meter_mod command {msg.command}",
                  "use ADD, MODIFY or DELETE")


__all__ = ["apply_flow_mod", "apply_group_mod", "apply_meter_mod", "band_from_ofp"]
