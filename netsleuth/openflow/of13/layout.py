"""The OpenFlow 1.3 wire layout the codec reads and writes: os-ken's pack strings as
structs, the fixed lengths of actions and instructions, and the version's names."""

from __future__ import annotations

import struct
from typing import Any

from os_ken.ofproto import ofproto_v1_3 as ofp
from os_ken.ofproto import ofproto_v1_3_parser as parser
from os_ken.ofproto import oxm_fields

from netsleuth.openflow import wire

OFP_VERSION: int = ofp.OFP_VERSION
ERROR_DATA_LEN = wire.ERROR_DATA_LEN


class _StubDatapath13:
    """What os-ken's 1.3 constructors and serializers reach through ``datapath``."""

    ofproto = ofp
    ofproto_parser = parser
    id = None

    def set_xid(self, msg: Any) -> int:
        return int(msg.xid or 0)


DATAPATH = _StubDatapath13()
_W = wire.Framing(OFP_VERSION, "1.3", DATAPATH)

TYPE_NAME: dict[int, str] = {getattr(ofp, n): n[len("OFPT_"):] for n in sorted(dir(ofp))
                             if n.startswith("OFPT_") and isinstance(getattr(ofp, n), int)}

_TL = struct.Struct("!HH")          # the type/length head of matches, instructions, actions, properties
_OXM = struct.Struct("!HBB")        # oxm_class, field<<1|hasmask, length
_HDR = wire.HEADER_SIZE
_MP_HDR = ofp.OFP_MULTIPART_REQUEST_SIZE

_SWITCH_CONFIG = struct.Struct(ofp.OFP_SWITCH_CONFIG_PACK_STR)
_FEATURES = struct.Struct(ofp.OFP_SWITCH_FEATURES_PACK_STR)
_PORT = struct.Struct(ofp.OFP_PORT_PACK_STR)
_PORT_STATUS = struct.Struct(ofp.OFP_PORT_STATUS_PACK_STR)
_PACKET_IN = struct.Struct(ofp.OFP_PACKET_IN_PACK_STR)
_PACKET_OUT = struct.Struct(ofp.OFP_PACKET_OUT_PACK_STR)
_FLOW_REMOVED0 = struct.Struct("!" + ofp._OFP_FLOW_REMOVED_PACK_STR0)
_GROUP_MOD = struct.Struct(ofp.OFP_GROUP_MOD_PACK_STR)
_BUCKET = struct.Struct(ofp.OFP_BUCKET_PACK_STR)
_PORT_MOD = struct.Struct(ofp.OFP_PORT_MOD_PACK_STR)
_METER_MOD = struct.Struct(ofp.OFP_METER_MOD_PACK_STR)
_TABLE_MOD = struct.Struct(ofp.OFP_TABLE_MOD_PACK_STR)
_MULTIPART = struct.Struct(ofp.OFP_MULTIPART_REQUEST_PACK_STR)
_FLOW_STATS_REQ0 = struct.Struct(ofp.OFP_FLOW_STATS_REQUEST_0_PACK_STR)
_PORT_STATS_REQ = struct.Struct(ofp.OFP_PORT_STATS_REQUEST_PACK_STR)
_QUEUE_STATS_REQ = struct.Struct(ofp.OFP_QUEUE_STATS_REQUEST_PACK_STR)
_GROUP_STATS_REQ = struct.Struct(ofp.OFP_GROUP_STATS_REQUEST_PACK_STR)
_METER_MP_REQ = struct.Struct(ofp.OFP_METER_MULTIPART_REQUEST_PACK_STR)
_EXP_MP = struct.Struct(ofp.OFP_EXPERIMENTER_MULTIPART_HEADER_PACK_STR)
_QGC_REQUEST = struct.Struct(ofp.OFP_QUEUE_GET_CONFIG_REQUEST_PACK_STR)
_QGC_REPLY = struct.Struct(ofp.OFP_QUEUE_GET_CONFIG_REPLY_PACK_STR)
_PACKET_QUEUE = struct.Struct(ofp.OFP_PACKET_QUEUE_PACK_STR)
_QUEUE_PROP = struct.Struct(ofp.OFP_QUEUE_PROP_HEADER_PACK_STR)
_ROLE = struct.Struct(ofp.OFP_ROLE_REQUEST_PACK_STR)
_ASYNC = struct.Struct(ofp.OFP_ASYNC_CONFIG_PACK_STR)
_EXPERIMENTER = struct.Struct(ofp.OFP_EXPERIMENTER_HEADER_PACK_STR)
_DESC = struct.Struct(ofp.OFP_DESC_PACK_STR)
_FLOW_STATS0 = struct.Struct(ofp.OFP_FLOW_STATS_0_PACK_STR)
_AGG_STATS = struct.Struct(ofp.OFP_AGGREGATE_STATS_REPLY_PACK_STR)
_TABLE_STATS = struct.Struct(ofp.OFP_TABLE_STATS_PACK_STR)
_PORT_STATS = struct.Struct(ofp.OFP_PORT_STATS_PACK_STR)
_QUEUE_STATS = struct.Struct(ofp.OFP_QUEUE_STATS_PACK_STR)
_GROUP_STATS = struct.Struct(ofp.OFP_GROUP_STATS_PACK_STR)
_BUCKET_COUNTER = struct.Struct(ofp.OFP_BUCKET_COUNTER_PACK_STR)
_GROUP_DESC = struct.Struct(ofp.OFP_GROUP_DESC_STATS_PACK_STR)
_GROUP_FEATURES = struct.Struct(ofp.OFP_GROUP_FEATURES_PACK_STR)
_METER_STATS = struct.Struct(ofp.OFP_METER_STATS_PACK_STR)
_METER_BAND_STATS = struct.Struct(ofp.OFP_METER_BAND_STATS_PACK_STR)
_METER_CONFIG = struct.Struct(ofp.OFP_METER_CONFIG_PACK_STR)
_METER_FEATURES = struct.Struct(ofp.OFP_METER_FEATURES_PACK_STR)
_HELLO_ELEM = struct.Struct(ofp.OFP_HELLO_ELEM_HEADER_PACK_STR)

# OXM payload sizes of the OpenFlow-basic class fields (value only; a mask doubles it).
_BASIC_FIELD_SIZE: dict[int, int] = {f.oxm_field: f.type.size for f in ofp.oxm_types
                                     if isinstance(f, oxm_fields.OpenFlowBasic)}
_BASIC_FIELD_NAME: dict[int, str] = {f.oxm_field: f.name for f in ofp.oxm_types
                                     if isinstance(f, oxm_fields.OpenFlowBasic)}
# Fixed length of every non-experimenter action os-ken registers (SET_FIELD varies with its OXM).
_ACTION_LEN: dict[int, int] = {t: c.cls_action_len for t, c in parser.OFPAction._ACTION_TYPES.items()
                               if t not in (ofp.OFPAT_EXPERIMENTER, ofp.OFPAT_SET_FIELD)}
_INSTRUCTION_LEN: dict[int, int] = {
    ofp.OFPIT_GOTO_TABLE: ofp.OFP_INSTRUCTION_GOTO_TABLE_SIZE,
    ofp.OFPIT_WRITE_METADATA: ofp.OFP_INSTRUCTION_WRITE_METADATA_SIZE,
    ofp.OFPIT_METER: ofp.OFP_INSTRUCTION_METER_SIZE,
}
_ACTION_LIST_INSTRUCTIONS = (ofp.OFPIT_WRITE_ACTIONS, ofp.OFPIT_APPLY_ACTIONS, ofp.OFPIT_CLEAR_ACTIONS)
_METER_BANDS = (ofp.OFPMBT_DROP, ofp.OFPMBT_DSCP_REMARK, ofp.OFPMBT_EXPERIMENTER)
_TABLE_FEATURE_PROPS = frozenset((
    ofp.OFPTFPT_INSTRUCTIONS, ofp.OFPTFPT_INSTRUCTIONS_MISS, ofp.OFPTFPT_NEXT_TABLES,
    ofp.OFPTFPT_NEXT_TABLES_MISS, ofp.OFPTFPT_WRITE_ACTIONS, ofp.OFPTFPT_WRITE_ACTIONS_MISS,
    ofp.OFPTFPT_APPLY_ACTIONS, ofp.OFPTFPT_APPLY_ACTIONS_MISS, ofp.OFPTFPT_MATCH, ofp.OFPTFPT_WILDCARDS,
    ofp.OFPTFPT_WRITE_SETFIELD, ofp.OFPTFPT_WRITE_SETFIELD_MISS, ofp.OFPTFPT_APPLY_SETFIELD,
    ofp.OFPTFPT_APPLY_SETFIELD_MISS, ofp.OFPTFPT_EXPERIMENTER, ofp.OFPTFPT_EXPERIMENTER_MISS))

_Decoder = wire.Decoder


def _round8(n: int) -> int:
    return (n + 7) // 8 * 8


def is_of13(msg: Any) -> bool:
    """True for an os-ken ``ofproto_v1_3_parser`` object (message, action, ...)."""
    return bool(type(msg).__module__ == parser.__name__)


def msg_type_name(msg: Any) -> str:
    """``"MULTIPART_REQUEST"`` for an OFPFlowStatsRequest: the OFPT_* name without the prefix."""
    return TYPE_NAME[msg.cls_msg_type]
