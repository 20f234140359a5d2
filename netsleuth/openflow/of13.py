"""OpenFlow 1.3 bytes <-> os-ken message objects, in both directions.

The 1.3 counterpart of :mod:`netsleuth.openflow.of10`, for the same reason:
netsleuth is the *switch*, and os-ken's ``ofproto_v1_3_parser`` (a controller
library) parses only what a switch sends and serializes only what a
controller sends.  This module parses what a controller sends (FLOW_MOD,
GROUP_MOD, METER_MOD, PACKET_OUT, PORT_MOD, TABLE_MOD, every MULTIPART_REQUEST
body including table-features, ROLE_REQUEST, GET/SET_ASYNC, SET_CONFIG,
QUEUE_GET_CONFIG_REQUEST, EXPERIMENTER, ...) and writes what a switch sends
(FEATURES_REPLY, PACKET_IN, FLOW_REMOVED, PORT_STATUS, every MULTIPART_REPLY
body, ROLE_REPLY, GET_ASYNC_REPLY, ...), always with os-ken's own pack strings
and its ``OFPMatch``/``OFPInstruction``/``OFPAction``/``OFPBucket``/meter-band
parsers and serializers, so the rest of netsleuth sees os-ken objects only.

Every variable-length structure (match and its OXM TLVs, instruction,
action, bucket, meter band, table-features property, multipart record) is
walked and checked here *before* os-ken's parsers see it: those parsers
assume well-formed input, and on a zero length several of them loop forever.
Malformed input raises :class:`~netsleuth.errors.CodecError` with the 1.3
error a switch answers with: OFPET_BAD_REQUEST (BAD_LEN, BAD_TYPE,
BAD_MULTIPART, BAD_VERSION), OFPET_BAD_MATCH, OFPET_BAD_INSTRUCTION,
OFPET_BAD_ACTION, OFPET_GROUP_MOD_FAILED/BAD_BUCKET,
OFPET_METER_MOD_FAILED/BAD_BAND or OFPET_TABLE_FEATURES_FAILED.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from os_ken.lib import addrconv
from os_ken.ofproto import ofproto_common, oxm_fields
from os_ken.ofproto import ofproto_v1_3 as ofp
from os_ken.ofproto import ofproto_v1_3_parser as parser

from netsleuth.errors import CodecError
from netsleuth.openflow import wire

__all__ = ["DATAPATH", "DECODED_CLASSES", "ERROR_DATA_LEN", "OFP_VERSION", "TYPE_NAME", "decode", "encode",
           "hello", "is_of13", "msg_type_name"]

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


# --------------------------------------------------------------------------
# errors


# --------------------------------------------------------------------------
# checking variable-length structures (before os-ken's parsers see them)


def _check_oxm(data: bytes, off: int, end: int, xid: int, *, err_type: int, bad_len: int, bad_field: int,
               seen: set[tuple[int, int]] | None) -> tuple[int, int, bool, int]:
    """One OXM TLV at ``off``: (class, field, hasmask, total length)."""
    if end - off < _OXM.size:
        raise _W.error(err_type, bad_len, f"{end - off} trailing bytes are not an OXM field", data, xid)
    oxm_class, fh, length = _OXM.unpack_from(data, off)
    field, hasmask = fh >> 1, bool(fh & 1)
    if off + _OXM.size + length > end:
        raise _W.error(err_type, bad_len, f"OXM field {field} of length {length} runs past its container", data, xid)
    if oxm_class == oxm_fields.OFPXMC_OPENFLOW_BASIC:
        size = _BASIC_FIELD_SIZE.get(field)
        if size is None:
            raise _W.error(err_type, bad_field, f"unknown OpenFlow-basic OXM field {field}", data, xid)
        if length != size * (2 if hasmask else 1):
            raise _W.error(err_type, bad_len, f"OXM field {_BASIC_FIELD_NAME[field]} has length {length}, "
                           f"expected {size * (2 if hasmask else 1)}", data, xid)
    else:
        if oxm_class == oxm_fields.OFPXMC_EXPERIMENTER and length < 4:
            raise _W.error(err_type, bad_len, "experimenter OXM field lacks its experimenter id", data, xid)
        try:
            n, value, mask, _len = ofp.oxm_parse(data, off)
            ofp.oxm_to_user(n, value, mask)
        except Exception as exc:  # noqa: BLE001 -- os-ken raises a bare Exception for a bad payload length
            raise _W.error(err_type, bad_field, f"unparseable OXM field class {oxm_class:#x}: {exc!r}",
                           data, xid) from exc
    if seen is not None:
        if (oxm_class, field) in seen:
            raise _W.error(ofp.OFPET_BAD_MATCH, ofp.OFPBMC_DUP_FIELD,
                           f"OXM field {_BASIC_FIELD_NAME.get(field, field)} appears twice in the match", data, xid)
        seen.add((oxm_class, field))
    return oxm_class, field, hasmask, _OXM.size + length


def _check_match(data: bytes, off: int, end: int, xid: int) -> int:
    """Check the ofp_match at ``off``; return its padded length."""
    if end - off < 4:
        raise _W.error(ofp.OFPET_BAD_MATCH, ofp.OFPBMC_BAD_LEN, "truncated ofp_match", data, xid)
    mtype, mlen = _TL.unpack_from(data, off)
    if mtype != ofp.OFPMT_OXM:
        raise _W.error(ofp.OFPET_BAD_MATCH, ofp.OFPBMC_BAD_TYPE, f"match type {mtype} is not OXM (1)", data, xid)
    if mlen < 4 or off + _round8(mlen) > end:
        raise _W.error(ofp.OFPET_BAD_MATCH, ofp.OFPBMC_BAD_LEN, f"ofp_match length {mlen} does not fit", data, xid)
    pos, mend = off + 4, off + mlen
    seen: set[tuple[int, int]] = set()
    earlier: dict[str, tuple[int, int | None]] = {}  # OpenFlow-basic fields so far: (value, mask or None)
    while pos < mend:
        oxm_class, field, hasmask, tlv_len = _check_oxm(
            data, pos, mend, xid, err_type=ofp.OFPET_BAD_MATCH, bad_len=ofp.OFPBMC_BAD_LEN,
            bad_field=ofp.OFPBMC_BAD_FIELD, seen=seen)
        if oxm_class == oxm_fields.OFPXMC_OPENFLOW_BASIC:
            size = _BASIC_FIELD_SIZE[field]
            value = int.from_bytes(data[pos + 4:pos + 4 + size], "big")
            mask = int.from_bytes(data[pos + 4 + size:pos + 4 + 2 * size], "big") if hasmask else None
            name = _BASIC_FIELD_NAME[field]
            _check_field(name, value, mask, (1 << 8 * size) - 1, earlier, data, xid)
            earlier[name] = (value, None if mask == (1 << 8 * size) - 1 else mask)
        pos += tlv_len
    return _round8(mlen)


# Fields whose mask, unless all ones or all zeros, a 1.3 switch refuses (spec table 11 marks them not
# maskable; Open vSwitch also masks transport ports, as later versions of the spec do, so those pass).
_NOT_MASKABLE = frozenset({"in_port", "in_phy_port", "eth_type", "vlan_pcp", "ip_dscp", "ip_ecn", "ip_proto",
                           "icmpv4_type", "icmpv4_code", "arp_op", "icmpv6_type", "icmpv6_code", "mpls_label",
                           "mpls_tc", "mpls_bos"})
_IP_TYPES = frozenset({0x0800, 0x86DD})
# Field -> (the field it requires, the values that field must match exactly): spec table 11.
_PREREQUISITES: dict[str, tuple[str, frozenset[int]]] = {
    **{f: ("eth_type", _IP_TYPES) for f in ("ip_dscp", "ip_ecn", "ip_proto")},
    **{f: ("eth_type", frozenset({0x0800})) for f in ("ipv4_src", "ipv4_dst")},
    **{f: ("ip_proto", frozenset({6})) for f in ("tcp_src", "tcp_dst")},
    **{f: ("ip_proto", frozenset({17})) for f in ("udp_src", "udp_dst")},
    **{f: ("ip_proto", frozenset({132})) for f in ("sctp_src", "sctp_dst")},
    **{f: ("ip_proto", frozenset({1})) for f in ("icmpv4_type", "icmpv4_code")},
    **{f: ("eth_type", frozenset({0x0806})) for f in ("arp_op", "arp_spa", "arp_tpa", "arp_sha", "arp_tha")},
    **{f: ("eth_type", frozenset({0x86DD})) for f in ("ipv6_src", "ipv6_dst", "ipv6_flabel", "ipv6_exthdr")},
    **{f: ("ip_proto", frozenset({58})) for f in ("icmpv6_type", "icmpv6_code")},
    "ipv6_nd_target": ("icmpv6_type", frozenset({135, 136})),
    "ipv6_nd_sll": ("icmpv6_type", frozenset({135})),
    "ipv6_nd_tll": ("icmpv6_type", frozenset({136})),
    **{f: ("eth_type", frozenset({0x8847, 0x8848})) for f in ("mpls_label", "mpls_tc", "mpls_bos")},
    "pbb_isid": ("eth_type", frozenset({0x88E7})),
}


# Fields narrower than their OXM payload: the largest value (and mask) they can hold.
_FIELD_MAX = {"vlan_vid": 0x1FFF, "vlan_pcp": 7, "ip_dscp": 63, "ip_ecn": 3, "ipv6_flabel": 0xFFFFF,
              "mpls_label": 0xFFFFF, "mpls_tc": 7, "mpls_bos": 1, "ipv6_exthdr": 0x1FF}


def _check_field(name: str, value: int, mask: int | None, ones: int,
                 earlier: dict[str, tuple[int, int | None]], data: bytes, xid: int) -> None:
    """One OpenFlow-basic match field, checked in the order Open vSwitch checks it (so the first error
    of a bad match is the one OVS would answer): no value bit outside the mask (BAD_WILDCARDS); a mask
    other than all ones (exact) or all zeros (wildcard) only on a maskable field (BAD_MASK); a value
    that fits the field (BAD_VALUE); and the field's prerequisite matched exactly by a field *earlier*
    in the match (BAD_PREREQ; prerequisites come first, spec 7.2.3.6).
    """
    def bad(code: int, why: str) -> CodecError:
        return _W.error(ofp.OFPET_BAD_MATCH, code, why, data, xid)

    if mask is not None and value & ~mask:
        raise bad(ofp.OFPBMC_BAD_WILDCARDS, f"OXM field {name} value {value:#x} has bits outside its mask {mask:#x}")
    if mask is not None and mask not in (0, ones) and name in _NOT_MASKABLE:
        raise bad(ofp.OFPBMC_BAD_MASK, f"OXM field {name} cannot be masked")
    top = _FIELD_MAX.get(name)
    if top is not None and value & (ones if mask is None else mask) > top:
        raise bad(ofp.OFPBMC_BAD_VALUE, f"OXM field {name} value {value:#x} does not fit its {top.bit_length()} bits")
    if name == "vlan_pcp":
        vid = earlier.get("vlan_vid")
        if vid is None or not vid[0] & ofp.OFPVID_PRESENT or not (ones if vid[1] is None else vid[1]) & \
                ofp.OFPVID_PRESENT:
            raise bad(ofp.OFPBMC_BAD_PREREQ, "vlan_pcp needs an earlier match on a present VLAN tag "
                      "(vlan_vid with OFPVID_PRESENT)")
        return
    rule = _PREREQUISITES.get(name)
    if rule is not None:
        needed, allowed = rule
        got = earlier.get(needed)
        if got is None or got[1] is not None or got[0] not in allowed:
            want = " or ".join(f"{v:#x}" if needed == "eth_type" else str(v) for v in sorted(allowed))
            raise bad(ofp.OFPBMC_BAD_PREREQ, f"OXM field {name} needs an earlier exact {needed} match of {want}")


def _bad_action(code: int, problem: str, data: bytes, xid: int) -> CodecError:
    return _W.error(ofp.OFPET_BAD_ACTION, code, problem, data, xid)


def _check_actions(data: bytes, start: int, end: int, xid: int) -> None:
    """Walk an action list so that os-ken's asserting parsers only see good ones."""
    off = start
    while off < end:
        if end - off < ofp.OFP_ACTION_HEADER_SIZE:
            raise _bad_action(ofp.OFPBAC_BAD_LEN, f"{end - off} trailing bytes are not an action", data, xid)
        atype, alen = _TL.unpack_from(data, off)
        if alen < ofp.OFP_ACTION_HEADER_SIZE or alen % 8 or off + alen > end:
            raise _bad_action(ofp.OFPBAC_BAD_LEN, f"action type {atype} has bad length {alen}", data, xid)
        if atype == ofp.OFPAT_EXPERIMENTER:
            (_, _, experimenter) = _EXPERIMENTER_ACTION.unpack_from(data, off)
            if experimenter == ofproto_common.NX_EXPERIMENTER_ID:
                try:  # os-ken's Nicira action parsers reject unknown subtypes and short bodies
                    parser.OFPAction.parser(data[off:off + alen], 0)
                except Exception as exc:  # noqa: BLE001 -- any failure of a third-party parser
                    raise _bad_action(ofp.OFPBAC_BAD_EXP_TYPE, f"unparseable Nicira action: {exc!r}",
                                      data, xid) from exc
        elif atype == ofp.OFPAT_SET_FIELD:
            _cls, field, hasmask, olen = _check_oxm(
                data, off + 4, off + alen, xid, err_type=ofp.OFPET_BAD_ACTION, bad_len=ofp.OFPBAC_BAD_SET_LEN,
                bad_field=ofp.OFPBAC_BAD_SET_TYPE, seen=None)
            if hasmask:
                raise _bad_action(ofp.OFPBAC_BAD_SET_ARGUMENT, "a SET_FIELD action cannot carry a mask", data, xid)
            if _round8(4 + olen) != alen:
                raise _bad_action(ofp.OFPBAC_BAD_SET_LEN, f"SET_FIELD length {alen} does not match its field",
                                  data, xid)
        else:
            want = _ACTION_LEN.get(atype)
            if want is None:
                raise _bad_action(ofp.OFPBAC_BAD_TYPE, f"unknown action type {atype}", data, xid)
            if alen != want:
                raise _bad_action(ofp.OFPBAC_BAD_LEN, f"action type {atype} has length {alen}, expected {want}",
                                  data, xid)
        off += alen


_EXPERIMENTER_ACTION = struct.Struct(ofp.OFP_ACTION_EXPERIMENTER_HEADER_PACK_STR)


def _parse_actions(data: bytes, start: int, end: int, xid: int) -> list[Any]:
    _check_actions(data, start, end, xid)
    return wire.parse_tl_list(data, start, end, parser.OFPAction.parser)


def _bad_inst(code: int, problem: str, data: bytes, xid: int) -> CodecError:
    return _W.error(ofp.OFPET_BAD_INSTRUCTION, code, problem, data, xid)


def _check_instructions(data: bytes, start: int, end: int, xid: int) -> None:
    off = start
    while off < end:
        if end - off < 4:
            raise _bad_inst(ofp.OFPBIC_BAD_LEN, f"{end - off} trailing bytes are not an instruction", data, xid)
        itype, ilen = _TL.unpack_from(data, off)
        if ilen < 8 or ilen % 8 or off + ilen > end:
            raise _bad_inst(ofp.OFPBIC_BAD_LEN, f"instruction type {itype} has bad length {ilen}", data, xid)
        if itype in _ACTION_LIST_INSTRUCTIONS:
            _check_actions(data, off + ofp.OFP_INSTRUCTION_ACTIONS_SIZE, off + ilen, xid)
        elif itype in _INSTRUCTION_LEN:
            if ilen != _INSTRUCTION_LEN[itype]:
                raise _bad_inst(ofp.OFPBIC_BAD_LEN, f"instruction type {itype} has length {ilen}, "
                                f"expected {_INSTRUCTION_LEN[itype]}", data, xid)
        elif itype == ofp.OFPIT_EXPERIMENTER:
            raise _bad_inst(ofp.OFPBIC_BAD_EXPERIMENTER, "experimenter instructions are not supported", data, xid)
        else:
            raise _bad_inst(ofp.OFPBIC_UNKNOWN_INST, f"unknown instruction type {itype}", data, xid)
        off += ilen


def _parse_instructions(data: bytes, start: int, end: int, xid: int) -> list[Any]:
    _check_instructions(data, start, end, xid)
    return wire.parse_tl_list(data, start, end, parser.OFPInstruction.parser)


def _check_buckets(data: bytes, start: int, end: int, xid: int) -> None:
    off = start
    while off < end:
        if end - off < _BUCKET.size:
            raise _W.error(ofp.OFPET_GROUP_MOD_FAILED, ofp.OFPGMFC_BAD_BUCKET,
                           f"{end - off} trailing bytes are not a bucket", data, xid)
        (blen,) = struct.unpack_from("!H", data, off)
        if blen < _BUCKET.size or blen % 8 or off + blen > end:
            raise _W.error(ofp.OFPET_GROUP_MOD_FAILED, ofp.OFPGMFC_BAD_BUCKET, f"bucket has bad length {blen}",
                           data, xid)
        _check_actions(data, off + _BUCKET.size, off + blen, xid)
        off += blen


def _parse_buckets(data: bytes, start: int, end: int, xid: int) -> list[Any]:
    _check_buckets(data, start, end, xid)
    out = []
    off = start
    while off < end:
        bucket = parser.OFPBucket.parser(data, off)
        out.append(bucket)
        off += bucket.len
    return out


def _check_bands(data: bytes, start: int, end: int, xid: int, *, err_type: int, bad_band: int) -> None:
    off = start
    while off < end:
        if end - off < 4:
            raise _W.bad_len(f"{end - off} trailing bytes are not a meter band", data, xid)
        btype, blen = _TL.unpack_from(data, off)
        if btype not in _METER_BANDS:
            raise _W.error(err_type, bad_band, f"unknown meter band type {btype}", data, xid)
        # os-ken reads and writes every band (experimenter ones too) as exactly 16 bytes.
        if blen != ofp.OFP_METER_BAND_DROP_SIZE or off + blen > end:
            raise _W.bad_len(f"meter band type {btype} has length {blen}, expected 16", data, xid)
        off += blen


def _parse_bands(data: bytes, start: int, end: int, xid: int, *, err_type: int, bad_band: int) -> list[Any]:
    _check_bands(data, start, end, xid, err_type=err_type, bad_band=bad_band)
    return [parser.OFPMeterBandHeader.parser(data, off) for off in range(start, end, ofp.OFP_METER_BAND_DROP_SIZE)]


def _check_table_features(data: bytes, start: int, end: int, xid: int) -> None:
    def bad(code: int, why: str) -> CodecError:
        return _W.error(ofp.OFPET_TABLE_FEATURES_FAILED, code, why, data, xid)

    off = start
    while off < end:
        if end - off < ofp.OFP_TABLE_FEATURES_SIZE:
            raise bad(ofp.OFPTFFC_BAD_LEN, f"{end - off} trailing bytes are not an ofp_table_features")
        (tlen,) = struct.unpack_from("!H", data, off)
        if tlen < ofp.OFP_TABLE_FEATURES_SIZE or tlen % 8 or off + tlen > end:
            raise bad(ofp.OFPTFFC_BAD_LEN, f"ofp_table_features has bad length {tlen}")
        poff, pend = off + ofp.OFP_TABLE_FEATURES_SIZE, off + tlen
        while poff < pend:
            if pend - poff < 4:
                raise bad(ofp.OFPTFFC_BAD_LEN, "truncated table-features property")
            ptype, plen = _TL.unpack_from(data, poff)
            if ptype not in _TABLE_FEATURE_PROPS:
                raise bad(ofp.OFPTFFC_BAD_TYPE, f"unknown table-features property type {ptype}")
            if plen < 4 or poff + _round8(plen) > pend:
                raise bad(ofp.OFPTFFC_BAD_LEN, f"table-features property {ptype} has bad length {plen}")
            if ptype in (ofp.OFPTFPT_EXPERIMENTER, ofp.OFPTFPT_EXPERIMENTER_MISS) and plen < 12:
                raise bad(ofp.OFPTFFC_BAD_LEN, "experimenter table-features property lacks its ids")
            _check_ids(data, poff, plen, ptype, bad)
            poff += _round8(plen)
        off += tlen


def _check_ids(data: bytes, poff: int, plen: int, ptype: int, bad: Callable[[int, str], CodecError]) -> None:
    """Instruction/action ids are TLVs of at least 4 bytes; OXM ids are 4 (or 8, experimenter) bytes."""
    tlv = {ofp.OFPTFPT_INSTRUCTIONS, ofp.OFPTFPT_INSTRUCTIONS_MISS, ofp.OFPTFPT_WRITE_ACTIONS,
           ofp.OFPTFPT_WRITE_ACTIONS_MISS, ofp.OFPTFPT_APPLY_ACTIONS, ofp.OFPTFPT_APPLY_ACTIONS_MISS}
    oxm = {ofp.OFPTFPT_MATCH, ofp.OFPTFPT_WILDCARDS, ofp.OFPTFPT_WRITE_SETFIELD, ofp.OFPTFPT_WRITE_SETFIELD_MISS,
           ofp.OFPTFPT_APPLY_SETFIELD, ofp.OFPTFPT_APPLY_SETFIELD_MISS}
    off, end = poff + 4, poff + plen
    while off < end and (ptype in tlv or ptype in oxm):
        if end - off < 4:
            raise bad(ofp.OFPTFFC_BAD_LEN, f"table-features property {ptype}: truncated id")
        if ptype in tlv:
            (_t, ilen) = _TL.unpack_from(data, off)
            if ilen < 4 or off + ilen > end:
                raise bad(ofp.OFPTFFC_BAD_LEN, f"table-features property {ptype}: id of length {ilen}")
            off += ilen
        else:
            oxm_class = struct.unpack_from("!H", data, off)[0]
            off += 8 if oxm_class == oxm_fields.OFPXMC_EXPERIMENTER else 4
            if off > end:
                raise bad(ofp.OFPTFFC_BAD_LEN, f"table-features property {ptype}: truncated OXM id")


def _parse_table_features(data: bytes, start: int, end: int, xid: int) -> list[Any]:
    _check_table_features(data, start, end, xid)
    out = []
    off = start
    while off < end:
        try:
            features = parser.OFPTableFeaturesStats.parser(data, off)
        except (struct.error, AssertionError, KeyError, IndexError, TypeError, ValueError) as exc:
            raise _W.error(ofp.OFPET_TABLE_FEATURES_FAILED, ofp.OFPTFFC_BAD_LEN,
                           f"os-ken could not parse ofp_table_features: {exc!r}", data, xid) from exc
        out.append(features)
        off += features.length
    return out


# --------------------------------------------------------------------------
# decoding


def decode(data: bytes) -> Any:
    """Decode exactly one complete OpenFlow 1.3 message (header included).

    Returns an os-ken ``ofproto_v1_3_parser`` message object with ``xid``,
    ``version``, ``msg_type``, ``msg_len`` and ``buf`` set.  Raises
    :class:`CodecError` (the 1.3 error type/code, the xid and the first 64
    bytes) when the bytes are not a valid message.
    """
    return _W.decode(data, _DECODERS)


def _decode_hello(data: bytes, xid: int) -> Any:
    # os-ken's HELLO parser loops forever on a zero-length element; walk them here.
    elements = []
    off, end = _HDR, len(data)
    while off < end:
        if end - off < _HELLO_ELEM.size:
            raise _W.bad_len("truncated HELLO element", data, xid)
        etype, elen = _HELLO_ELEM.unpack_from(data, off)
        if elen < _HELLO_ELEM.size or off + elen > end:
            raise _W.bad_len(f"HELLO element type {etype} has bad length {elen}", data, xid)
        if etype == ofp.OFPHET_VERSIONBITMAP:
            elements.append(parser.OFPHelloElemVersionBitmap.parser(data, off))
        off += min(_round8(elen), end - off)  # elements are padded to 8 bytes
    msg = parser.OFPHello(DATAPATH, elements)
    return _W.stamp(msg, data, xid)


def _decode_error(data: bytes, xid: int) -> Any:
    _W.need(data, xid, ofp.OFP_ERROR_MSG_SIZE, exact=False, what="ERROR")
    (etype,) = struct.unpack_from("!H", data, _HDR)
    if etype == ofp.OFPET_EXPERIMENTER:
        _W.need(data, xid, ofp.OFP_ERROR_EXPERIMENTER_MSG_SIZE, exact=False, what="experimenter ERROR")
    return _W.osken(parser.OFPErrorMsg)(data, xid)


def _decode_experimenter(data: bytes, xid: int) -> Any:
    # Kept opaque (experimenter, exp_type, bytes): os-ken turns some Nicira
    # payloads into classes it cannot serialize back.
    _W.need(data, xid, ofp.OFP_EXPERIMENTER_HEADER_SIZE, exact=False, what="EXPERIMENTER")
    experimenter, exp_type = _EXPERIMENTER.unpack_from(data, _HDR)
    msg = parser.OFPExperimenter(DATAPATH, experimenter, exp_type, data[ofp.OFP_EXPERIMENTER_HEADER_SIZE:])
    return _W.stamp(msg, data, xid)


def _decode_set_config(data: bytes, xid: int) -> Any:
    flags, miss_send_len = _SWITCH_CONFIG.unpack_from(data, _HDR)
    return _W.stamp(parser.OFPSetConfig(DATAPATH, flags, miss_send_len), data, xid)


def _decode_packet_in(data: bytes, xid: int) -> Any:
    _W.need(data, xid, ofp.OFP_PACKET_IN_SIZE, exact=False, what="PACKET_IN")
    mlen = _check_match(data, _HDR + _PACKET_IN.size, len(data), xid)
    if _HDR + _PACKET_IN.size + mlen + 2 > len(data):
        raise _W.bad_len("PACKET_IN lacks the 2 pad bytes after its match", data, xid)
    return _W.osken(parser.OFPPacketIn)(data, xid)


def _decode_flow_removed(data: bytes, xid: int) -> Any:
    _W.need(data, xid, ofp.OFP_FLOW_REMOVED_SIZE, exact=False, what="FLOW_REMOVED")
    start = ofp.OFP_FLOW_REMOVED_SIZE - ofp.OFP_MATCH_SIZE
    mlen = _check_match(data, start, len(data), xid)
    if start + mlen != len(data):
        raise _W.bad_len("FLOW_REMOVED has bytes after its match", data, xid)
    return _W.osken(parser.OFPFlowRemoved)(data, xid)


def _decode_port_status(data: bytes, xid: int) -> Any:
    return _W.osken(parser.OFPPortStatus)(data, xid)


def _decode_packet_out(data: bytes, xid: int) -> Any:
    _W.need(data, xid, ofp.OFP_PACKET_OUT_SIZE, exact=False, what="PACKET_OUT")
    buffer_id, in_port, actions_len = _PACKET_OUT.unpack_from(data, _HDR)
    end = ofp.OFP_PACKET_OUT_SIZE + actions_len
    if end > len(data):
        raise _W.bad_len(f"PACKET_OUT actions_len {actions_len} runs past the message", data, xid)
    actions = _parse_actions(data, ofp.OFP_PACKET_OUT_SIZE, end, xid)
    payload = data[end:] or None
    return _W.stamp(parser.OFPPacketOut(DATAPATH, buffer_id, in_port, actions, payload), data, xid)


def _decode_flow_mod(data: bytes, xid: int) -> Any:
    _W.need(data, xid, ofp.OFP_FLOW_MOD_SIZE, exact=False, what="FLOW_MOD")
    start = ofp.OFP_FLOW_MOD_SIZE - ofp.OFP_MATCH_SIZE
    mlen = _check_match(data, start, len(data), xid)
    _check_instructions(data, start + mlen, len(data), xid)
    return _W.osken(parser.OFPFlowMod)(data, xid)


def _decode_group_mod(data: bytes, xid: int) -> Any:
    _W.need(data, xid, ofp.OFP_GROUP_MOD_SIZE, exact=False, what="GROUP_MOD")
    command, gtype, group_id = _GROUP_MOD.unpack_from(data, _HDR)
    buckets = _parse_buckets(data, ofp.OFP_GROUP_MOD_SIZE, len(data), xid)
    return _W.stamp(parser.OFPGroupMod(DATAPATH, command, gtype, group_id, buckets), data, xid)


def _decode_port_mod(data: bytes, xid: int) -> Any:
    port_no, hw_addr, config, mask, advertise = _PORT_MOD.unpack_from(data, _HDR)
    msg = parser.OFPPortMod(DATAPATH, port_no, addrconv.mac.bin_to_text(hw_addr), config, mask, advertise)
    return _W.stamp(msg, data, xid)


def _decode_meter_mod(data: bytes, xid: int) -> Any:
    _W.need(data, xid, ofp.OFP_METER_MOD_SIZE, exact=False, what="METER_MOD")
    command, flags, meter_id = _METER_MOD.unpack_from(data, _HDR)
    bands = _parse_bands(data, ofp.OFP_METER_MOD_SIZE, len(data), xid,
                         err_type=ofp.OFPET_METER_MOD_FAILED, bad_band=ofp.OFPMMFC_BAD_BAND)
    return _W.stamp(parser.OFPMeterMod(DATAPATH, command, flags, meter_id, bands), data, xid)


def _decode_table_mod(data: bytes, xid: int) -> Any:
    table_id, config = _TABLE_MOD.unpack_from(data, _HDR)
    return _W.stamp(parser.OFPTableMod(DATAPATH, table_id, config), data, xid)


def _decode_multipart_request(data: bytes, xid: int) -> Any:
    _W.need(data, xid, _MP_HDR, exact=False, what="MULTIPART_REQUEST")
    mtype, flags = _MULTIPART.unpack_from(data, _HDR)
    body = len(data) - _MP_HDR

    def body_len(size: int) -> None:
        if body != size:
            raise _W.bad_len(f"multipart request type {mtype} body is {body} bytes, expected {size}", data, xid)

    msg: Any
    empty = {ofp.OFPMP_DESC: parser.OFPDescStatsRequest, ofp.OFPMP_TABLE: parser.OFPTableStatsRequest,
             ofp.OFPMP_GROUP_DESC: parser.OFPGroupDescStatsRequest,
             ofp.OFPMP_GROUP_FEATURES: parser.OFPGroupFeaturesStatsRequest,
             ofp.OFPMP_METER_FEATURES: parser.OFPMeterFeaturesStatsRequest,
             ofp.OFPMP_PORT_DESC: parser.OFPPortDescStatsRequest}
    if mtype in empty:
        body_len(0)
        msg = empty[mtype](DATAPATH, flags)
    elif mtype in (ofp.OFPMP_FLOW, ofp.OFPMP_AGGREGATE):
        if body < _FLOW_STATS_REQ0.size + 4:
            raise _W.bad_len(f"multipart request type {mtype} body is {body} bytes", data, xid)
        table_id, out_port, out_group, cookie, cookie_mask = _FLOW_STATS_REQ0.unpack_from(data, _MP_HDR)
        moff = _MP_HDR + _FLOW_STATS_REQ0.size
        mlen = _check_match(data, moff, len(data), xid)
        body_len(_FLOW_STATS_REQ0.size + mlen)
        match = parser.OFPMatch.parser(data, moff)
        cls = parser.OFPFlowStatsRequest if mtype == ofp.OFPMP_FLOW else parser.OFPAggregateStatsRequest
        msg = cls(DATAPATH, flags, table_id, out_port, out_group, cookie, cookie_mask, match)
    elif mtype == ofp.OFPMP_PORT_STATS:
        body_len(_PORT_STATS_REQ.size)
        msg = parser.OFPPortStatsRequest(DATAPATH, flags, _PORT_STATS_REQ.unpack_from(data, _MP_HDR)[0])
    elif mtype == ofp.OFPMP_QUEUE:
        body_len(_QUEUE_STATS_REQ.size)
        port_no, queue_id = _QUEUE_STATS_REQ.unpack_from(data, _MP_HDR)
        msg = parser.OFPQueueStatsRequest(DATAPATH, flags, port_no, queue_id)
    elif mtype == ofp.OFPMP_GROUP:
        body_len(_GROUP_STATS_REQ.size)
        msg = parser.OFPGroupStatsRequest(DATAPATH, flags, _GROUP_STATS_REQ.unpack_from(data, _MP_HDR)[0])
    elif mtype in (ofp.OFPMP_METER, ofp.OFPMP_METER_CONFIG):
        body_len(_METER_MP_REQ.size)
        cls = parser.OFPMeterStatsRequest if mtype == ofp.OFPMP_METER else parser.OFPMeterConfigStatsRequest
        msg = cls(DATAPATH, flags, _METER_MP_REQ.unpack_from(data, _MP_HDR)[0])
    elif mtype == ofp.OFPMP_TABLE_FEATURES:
        msg = parser.OFPTableFeaturesStatsRequest(DATAPATH, flags,
                                                  _parse_table_features(data, _MP_HDR, len(data), xid))
    elif mtype == ofp.OFPMP_EXPERIMENTER:
        if body < _EXP_MP.size:
            raise _W.bad_len("experimenter multipart request lacks its experimenter id and type", data, xid)
        experimenter, exp_type = _EXP_MP.unpack_from(data, _MP_HDR)
        msg = parser.OFPExperimenterStatsRequest(DATAPATH, flags, experimenter, exp_type,
                                                 data[_MP_HDR + _EXP_MP.size:])
    else:
        raise _W.error(ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BAD_MULTIPART, f"unknown multipart type {mtype}", data, xid)
    return _W.stamp(msg, data, xid)


def _check_records(data: bytes, xid: int, mtype: int, *, len_at: int, minimum: int,
                   inner: Callable[[int, int], None] | None = None) -> None:
    """Variable-length multipart reply records: a 16-bit length at ``len_at`` of each."""
    off, end = _MP_HDR, len(data)
    while off < end:
        if end - off < minimum:
            raise _W.bad_len(f"multipart reply type {mtype}: truncated record", data, xid)
        (rlen,) = struct.unpack_from("!H", data, off + len_at)
        if rlen < minimum or off + rlen > end:
            raise _W.bad_len(f"multipart reply type {mtype}: record has bad length {rlen}", data, xid)
        if inner is not None:
            inner(off, off + rlen)
        off += rlen


def _decode_multipart_reply(data: bytes, xid: int) -> Any:
    _W.need(data, xid, _MP_HDR, exact=False, what="MULTIPART_REPLY")
    mtype, _ = _MULTIPART.unpack_from(data, _HDR)
    body = len(data) - _MP_HDR
    fixed = {ofp.OFPMP_DESC: _DESC.size, ofp.OFPMP_AGGREGATE: _AGG_STATS.size,
             ofp.OFPMP_GROUP_FEATURES: _GROUP_FEATURES.size, ofp.OFPMP_METER_FEATURES: _METER_FEATURES.size}
    records = {ofp.OFPMP_TABLE: _TABLE_STATS.size, ofp.OFPMP_PORT_STATS: _PORT_STATS.size,
               ofp.OFPMP_QUEUE: _QUEUE_STATS.size, ofp.OFPMP_PORT_DESC: _PORT.size}

    def flow_stats(off: int, end: int) -> None:
        start = off + ofp.OFP_FLOW_STATS_SIZE - ofp.OFP_MATCH_SIZE
        if start + 4 > end:
            raise _W.bad_len("truncated ofp_flow_stats", data, xid)
        mlen = _check_match(data, start, end, xid)
        _check_instructions(data, start + mlen, end, xid)

    def group_stats(off: int, end: int) -> None:
        if (end - off - _GROUP_STATS.size) % _BUCKET_COUNTER.size:
            raise _W.bad_len("ofp_group_stats bucket counters are not whole", data, xid)

    def group_desc(off: int, end: int) -> None:
        _check_buckets(data, off + _GROUP_DESC.size, end, xid)

    def meter_stats(off: int, end: int) -> None:
        if (end - off - _METER_STATS.size) % _METER_BAND_STATS.size:
            raise _W.bad_len("ofp_meter_stats band stats are not whole", data, xid)

    def meter_config(off: int, end: int) -> None:
        _check_bands(data, off + _METER_CONFIG.size, end, xid, err_type=ofp.OFPET_BAD_REQUEST,
                     bad_band=ofp.OFPBRC_BAD_LEN)

    if mtype in fixed:
        if body != fixed[mtype]:
            raise _W.bad_len(f"multipart reply type {mtype} body is {body} bytes, expected {fixed[mtype]}", data, xid)
    elif mtype in records:
        if body % records[mtype]:
            raise _W.bad_len(f"multipart reply type {mtype} body is not whole {records[mtype]}-byte records",
                             data, xid)
    elif mtype == ofp.OFPMP_FLOW:
        _check_records(data, xid, mtype, len_at=0, minimum=ofp.OFP_FLOW_STATS_SIZE, inner=flow_stats)
    elif mtype == ofp.OFPMP_GROUP:
        _check_records(data, xid, mtype, len_at=0, minimum=_GROUP_STATS.size, inner=group_stats)
    elif mtype == ofp.OFPMP_GROUP_DESC:
        _check_records(data, xid, mtype, len_at=0, minimum=_GROUP_DESC.size, inner=group_desc)
    elif mtype == ofp.OFPMP_METER:
        _check_records(data, xid, mtype, len_at=4, minimum=_METER_STATS.size, inner=meter_stats)
    elif mtype == ofp.OFPMP_METER_CONFIG:
        _check_records(data, xid, mtype, len_at=0, minimum=_METER_CONFIG.size, inner=meter_config)
    elif mtype == ofp.OFPMP_TABLE_FEATURES:
        _check_table_features(data, _MP_HDR, len(data), xid)
    elif mtype == ofp.OFPMP_EXPERIMENTER:
        if body < _EXP_MP.size:
            raise _W.bad_len("experimenter multipart reply lacks its experimenter id and type", data, xid)
        # os-ken reads the rest of the message as one record (a list of one, like its other bodies).
    else:
        raise _W.error(ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BAD_MULTIPART, f"unknown multipart type {mtype}", data, xid)
    if body == 0 and mtype in fixed:
        raise _W.bad_len(f"multipart reply type {mtype} has no body", data, xid)
    return _W.osken(parser.OFPMultipartReply)(data, xid)


def _decode_queue_get_config_reply(data: bytes, xid: int) -> Any:
    _W.need(data, xid, ofp.OFP_QUEUE_GET_CONFIG_REPLY_SIZE, exact=False, what="QUEUE_GET_CONFIG_REPLY")
    off, end = ofp.OFP_QUEUE_GET_CONFIG_REPLY_SIZE, len(data)
    while off < end:
        if end - off < ofp.OFP_PACKET_QUEUE_SIZE:
            raise _W.bad_len("truncated ofp_packet_queue", data, xid)
        _qid, _port, qlen = _PACKET_QUEUE.unpack_from(data, off)
        if qlen < ofp.OFP_PACKET_QUEUE_SIZE or off + qlen > end:
            raise _W.bad_len(f"ofp_packet_queue has bad length {qlen}", data, xid)
        poff, pend = off + ofp.OFP_PACKET_QUEUE_SIZE, off + qlen
        while poff < pend:
            if pend - poff < ofp.OFP_QUEUE_PROP_HEADER_SIZE:
                raise _W.bad_len("truncated queue property", data, xid)
            prop, plen = _QUEUE_PROP.unpack_from(data, poff)
            if prop not in (ofp.OFPQT_MIN_RATE, ofp.OFPQT_MAX_RATE, ofp.OFPQT_EXPERIMENTER):
                # os-ken's queue parser loops forever on a property type it does not know
                raise _W.bad_len(f"unknown queue property type {prop}", data, xid)
            want = 16 if prop != ofp.OFPQT_EXPERIMENTER else None
            if (want is not None and plen != want) or plen < 16 or plen % 8 or poff + plen > pend:
                raise _W.bad_len(f"queue property {prop} has bad length {plen}", data, xid)
            poff += plen
        off += qlen
    return _W.osken(parser.OFPQueueGetConfigReply)(data, xid)


def _decode_queue_get_config_request(data: bytes, xid: int) -> Any:
    (port,) = _QGC_REQUEST.unpack_from(data, _HDR)
    return _W.stamp(parser.OFPQueueGetConfigRequest(DATAPATH, port), data, xid)


def _decode_role_request(data: bytes, xid: int) -> Any:
    role, generation_id = _ROLE.unpack_from(data, _HDR)
    return _W.stamp(parser.OFPRoleRequest(DATAPATH, role, generation_id), data, xid)


def _decode_set_async(data: bytes, xid: int) -> Any:
    v = _ASYNC.unpack_from(data, _HDR)
    msg = parser.OFPSetAsync(DATAPATH, [v[0], v[1]], [v[2], v[3]], [v[4], v[5]])
    return _W.stamp(msg, data, xid)


_DECODERS: dict[int, _Decoder] = {
    ofp.OFPT_HELLO: _decode_hello,
    ofp.OFPT_ERROR: _decode_error,
    ofp.OFPT_ECHO_REQUEST: _W.osken(parser.OFPEchoRequest),
    ofp.OFPT_ECHO_REPLY: _W.osken(parser.OFPEchoReply),
    ofp.OFPT_EXPERIMENTER: _decode_experimenter,
    ofp.OFPT_FEATURES_REQUEST: _W.header_only(parser.OFPFeaturesRequest),
    ofp.OFPT_FEATURES_REPLY: _W.fixed(ofp.OFP_SWITCH_FEATURES_SIZE, _W.osken(parser.OFPSwitchFeatures),
                                      "FEATURES_REPLY"),
    ofp.OFPT_GET_CONFIG_REQUEST: _W.header_only(parser.OFPGetConfigRequest),
    ofp.OFPT_GET_CONFIG_REPLY: _W.fixed(ofp.OFP_SWITCH_CONFIG_SIZE, _W.osken(parser.OFPGetConfigReply),
                                        "GET_CONFIG_REPLY"),
    ofp.OFPT_SET_CONFIG: _W.fixed(ofp.OFP_SWITCH_CONFIG_SIZE, _decode_set_config, "SET_CONFIG"),
    ofp.OFPT_PACKET_IN: _decode_packet_in,
    ofp.OFPT_FLOW_REMOVED: _decode_flow_removed,
    ofp.OFPT_PORT_STATUS: _W.fixed(ofp.OFP_PORT_STATUS_SIZE, _decode_port_status, "PORT_STATUS"),
    ofp.OFPT_PACKET_OUT: _decode_packet_out,
    ofp.OFPT_FLOW_MOD: _decode_flow_mod,
    ofp.OFPT_GROUP_MOD: _decode_group_mod,
    ofp.OFPT_PORT_MOD: _W.fixed(ofp.OFP_PORT_MOD_SIZE, _decode_port_mod, "PORT_MOD"),
    ofp.OFPT_TABLE_MOD: _W.fixed(ofp.OFP_TABLE_MOD_SIZE, _decode_table_mod, "TABLE_MOD"),
    ofp.OFPT_MULTIPART_REQUEST: _decode_multipart_request,
    ofp.OFPT_MULTIPART_REPLY: _decode_multipart_reply,
    ofp.OFPT_BARRIER_REQUEST: _W.header_only(parser.OFPBarrierRequest),
    ofp.OFPT_BARRIER_REPLY: _W.header_only(parser.OFPBarrierReply),
    ofp.OFPT_QUEUE_GET_CONFIG_REQUEST: _W.fixed(ofp.OFP_QUEUE_GET_CONFIG_REQUEST_SIZE,
                                                _decode_queue_get_config_request, "QUEUE_GET_CONFIG_REQUEST"),
    ofp.OFPT_QUEUE_GET_CONFIG_REPLY: _decode_queue_get_config_reply,
    ofp.OFPT_ROLE_REQUEST: _W.fixed(ofp.OFP_ROLE_REQUEST_SIZE, _decode_role_request, "ROLE_REQUEST"),
    ofp.OFPT_ROLE_REPLY: _W.fixed(ofp.OFP_ROLE_REQUEST_SIZE, _W.osken(parser.OFPRoleReply), "ROLE_REPLY"),
    ofp.OFPT_GET_ASYNC_REQUEST: _W.header_only(parser.OFPGetAsyncRequest),
    ofp.OFPT_GET_ASYNC_REPLY: _W.fixed(ofp.OFP_ASYNC_CONFIG_SIZE, _W.osken(parser.OFPGetAsyncReply), "GET_ASYNC_REPLY"),
    ofp.OFPT_SET_ASYNC: _W.fixed(ofp.OFP_ASYNC_CONFIG_SIZE, _decode_set_async, "SET_ASYNC"),
    ofp.OFPT_METER_MOD: _decode_meter_mod,
}


# --------------------------------------------------------------------------
# encoding


def hello(versions: list[int] | tuple[int, ...]) -> Any:
    """A 1.3 HELLO announcing ``versions`` (wire numbers) in a version-bitmap element."""
    return parser.OFPHello(DATAPATH, [parser.OFPHelloElemVersionBitmap(sorted(versions))])


def encode(msg: Any) -> bytes:
    """Serialize an os-ken OpenFlow 1.3 message; ``msg.xid`` is kept (None -> 0).

    Controller->switch and symmetric types use os-ken's own ``serialize``;
    switch->controller types, which os-ken can only parse, are written here.
    Like os-ken's ``serialize``, this sets ``version``, ``msg_type``,
    ``msg_len``, ``xid`` and ``buf`` on ``msg``.
    """
    writer = _BODY_WRITERS.get(type(msg))
    if writer is None and isinstance(msg, parser.OFPMultipartReply):
        writer = _write_multipart_reply
    if writer is None:
        if msg.datapath is None:
            msg.datapath = DATAPATH
        msg.serialize()
        return bytes(msg.buf)
    return _W.frame(msg, writer(msg))


def _port_fields(port: Any) -> tuple[Any, ...]:
    return (port.port_no, wire.mac_bin(port.hw_addr), wire.text(port.name), port.config, port.state, port.curr,
            port.advertised, port.supported, port.peer, port.curr_speed, port.max_speed)


def _write_hello(msg: Any) -> bytes:
    out = []
    for elem in msg.elements or ():
        versions = list(elem.versions)
        words = [0] * (max(versions) // 32 + 1 if versions else 1)
        for v in versions:
            words[v // 32] |= 1 << (v % 32)
        body = struct.pack(f"!{len(words)}I", *words)
        elen = _HELLO_ELEM.size + len(body)
        out.append(_HELLO_ELEM.pack(ofp.OFPHET_VERSIONBITMAP, elen) + body + bytes(_round8(elen) - elen))
    return b"".join(out)


def _write_features(msg: Any) -> bytes:
    return _FEATURES.pack(msg.datapath_id, msg.n_buffers, msg.n_tables, msg.auxiliary_id, msg.capabilities,
                          getattr(msg, "reserved", 0) or 0)


def _write_switch_config(msg: Any) -> bytes:
    return _SWITCH_CONFIG.pack(msg.flags, msg.miss_send_len)


def _write_packet_in(msg: Any) -> bytes:
    data = wire.as_bytes(msg.data)
    total_len = len(data) if msg.total_len is None else msg.total_len
    match = wire.pack_match(msg.match if msg.match is not None else parser.OFPMatch())
    return (_PACKET_IN.pack(msg.buffer_id, total_len, msg.reason, msg.table_id, msg.cookie) + match
            + b"\0\0" + data)


def _write_flow_removed(msg: Any) -> bytes:
    return _FLOW_REMOVED0.pack(msg.cookie, msg.priority, msg.reason, msg.table_id, msg.duration_sec,
                               msg.duration_nsec, msg.idle_timeout, msg.hard_timeout, msg.packet_count,
                               msg.byte_count) + wire.pack_match(msg.match)


def _write_port_status(msg: Any) -> bytes:
    return _PORT_STATUS.pack(msg.reason, *_port_fields(msg.desc))


def _write_packet_out(msg: Any) -> bytes:
    return wire.packet_out_body(msg, _PACKET_OUT)


def _write_queue_get_config_reply(msg: Any) -> bytes:
    out = [_QGC_REPLY.pack(msg.port)]
    for queue in msg.queues or ():
        props = []
        for prop in queue.properties or ():
            if prop.property in (ofp.OFPQT_MIN_RATE, ofp.OFPQT_MAX_RATE):
                props.append(_QUEUE_PROP.pack(prop.property, 16) + struct.pack("!H6x", prop.rate))
            else:  # experimenter
                body = struct.pack("!I4x", prop.experimenter) + wire.as_bytes(prop.data)
                plen = _round8(8 + len(body))
                props.append(_QUEUE_PROP.pack(prop.property, plen) + body + bytes(plen - 8 - len(body)))
        body = b"".join(props)
        out.append(_PACKET_QUEUE.pack(queue.queue_id, queue.port, ofp.OFP_PACKET_QUEUE_SIZE + len(body)) + body)
    return b"".join(out)


def _write_role_reply(msg: Any) -> bytes:
    return _ROLE.pack(msg.role, msg.generation_id)


def _write_get_async_reply(msg: Any) -> bytes:
    return _ASYNC.pack(*msg.packet_in_mask, *msg.port_status_mask, *msg.flow_removed_mask)


def _as_list(body: Any) -> list[Any]:
    return list(body) if isinstance(body, list) else [body]


def _write_flow_stats(s: Any) -> bytes:
    rest = wire.pack_match(s.match) + wire.serialize_list(s.instructions)
    length = _FLOW_STATS0.size + len(rest)
    return _FLOW_STATS0.pack(length, s.table_id, s.duration_sec, s.duration_nsec, s.priority, s.idle_timeout,
                             s.hard_timeout, s.flags, s.cookie, s.packet_count, s.byte_count) + rest


def _write_group_stats(s: Any) -> bytes:
    counters = b"".join(_BUCKET_COUNTER.pack(c.packet_count, c.byte_count) for c in s.bucket_stats or ())
    return _GROUP_STATS.pack(_GROUP_STATS.size + len(counters), s.group_id, s.ref_count, s.packet_count,
                             s.byte_count, s.duration_sec, s.duration_nsec) + counters


def _write_group_desc(s: Any) -> bytes:
    buckets = wire.serialize_list(s.buckets)
    return _GROUP_DESC.pack(_GROUP_DESC.size + len(buckets), s.type, s.group_id) + buckets


def _write_meter_stats(s: Any) -> bytes:
    bands = b"".join(_METER_BAND_STATS.pack(b.packet_band_count, b.byte_band_count) for b in s.band_stats or ())
    return _METER_STATS.pack(s.meter_id, _METER_STATS.size + len(bands), s.flow_count, s.packet_in_count,
                             s.byte_in_count, s.duration_sec, s.duration_nsec) + bands


def _write_meter_config(s: Any) -> bytes:
    bands = wire.serialize_list(s.bands)
    return _METER_CONFIG.pack(_METER_CONFIG.size + len(bands), s.flags, s.meter_id) + bands


def _write_group_features(s: Any) -> bytes:
    return _GROUP_FEATURES.pack(s.types, s.capabilities, *s.max_groups, *s.actions)


def _write_multipart_body(mtype: int, body: Any) -> bytes:
    if mtype in _SINGLE_RECORD and isinstance(body, list):
        (body,) = body  # os-ken parses some single-record bodies (meter features) as a list of one
    if mtype == ofp.OFPMP_DESC:
        return _DESC.pack(*(wire.text(getattr(body, f)) for f in parser.OFPDescStats._fields))
    if mtype == ofp.OFPMP_AGGREGATE:
        return _AGG_STATS.pack(body.packet_count, body.byte_count, body.flow_count)
    if mtype == ofp.OFPMP_GROUP_FEATURES:
        return _write_group_features(body)
    if mtype == ofp.OFPMP_METER_FEATURES:
        return _METER_FEATURES.pack(*body)
    if mtype == ofp.OFPMP_EXPERIMENTER:
        return bytes(body.serialize())
    items = _as_list(body)
    if mtype == ofp.OFPMP_TABLE:
        return b"".join(_TABLE_STATS.pack(*t) for t in items)
    if mtype == ofp.OFPMP_PORT_STATS:
        return b"".join(_PORT_STATS.pack(*p) for p in items)
    if mtype == ofp.OFPMP_QUEUE:
        return b"".join(_QUEUE_STATS.pack(*q) for q in items)
    if mtype == ofp.OFPMP_PORT_DESC:
        return b"".join(_PORT.pack(*_port_fields(p)) for p in items)
    if mtype == ofp.OFPMP_TABLE_FEATURES:
        return b"".join(bytes(t.serialize()) for t in items)
    writer: dict[int, Callable[[Any], bytes]] = {
        ofp.OFPMP_FLOW: _write_flow_stats, ofp.OFPMP_GROUP: _write_group_stats,
        ofp.OFPMP_GROUP_DESC: _write_group_desc, ofp.OFPMP_METER: _write_meter_stats,
        ofp.OFPMP_METER_CONFIG: _write_meter_config}
    if mtype not in writer:
        raise ValueError(f"cannot encode multipart reply of type {mtype}")
    return b"".join(writer[mtype](s) for s in items)


_SINGLE_RECORD = (ofp.OFPMP_DESC, ofp.OFPMP_AGGREGATE, ofp.OFPMP_GROUP_FEATURES, ofp.OFPMP_METER_FEATURES,
                  ofp.OFPMP_EXPERIMENTER)


def _write_multipart_reply(msg: Any) -> bytes:
    mtype = msg.type if getattr(msg, "type", None) is not None else msg.cls_stats_type
    return _MULTIPART.pack(mtype, msg.flags or 0) + _write_multipart_body(mtype, msg.body)


_BODY_WRITERS: dict[type, Callable[[Any], bytes]] = {
    parser.OFPHello: _write_hello,
    parser.OFPSwitchFeatures: _write_features,
    parser.OFPGetConfigReply: _write_switch_config,
    parser.OFPPacketIn: _write_packet_in,
    parser.OFPFlowRemoved: _write_flow_removed,
    parser.OFPPortStatus: _write_port_status,
    parser.OFPPacketOut: _write_packet_out,
    parser.OFPQueueGetConfigReply: _write_queue_get_config_reply,
    parser.OFPRoleReply: _write_role_reply,
    parser.OFPGetAsyncReply: _write_get_async_reply,
}

_MP_REQUESTS = (
    parser.OFPDescStatsRequest, parser.OFPFlowStatsRequest, parser.OFPAggregateStatsRequest,
    parser.OFPTableStatsRequest, parser.OFPPortStatsRequest, parser.OFPQueueStatsRequest,
    parser.OFPGroupStatsRequest, parser.OFPGroupDescStatsRequest, parser.OFPGroupFeaturesStatsRequest,
    parser.OFPMeterStatsRequest, parser.OFPMeterConfigStatsRequest, parser.OFPMeterFeaturesStatsRequest,
    parser.OFPTableFeaturesStatsRequest, parser.OFPPortDescStatsRequest, parser.OFPExperimenterStatsRequest)
_MP_REPLIES = tuple(parser.OFPMultipartReply._STATS_MSG_TYPES.values())

# Every class decode() can return.
DECODED_CLASSES = frozenset({
    parser.OFPHello, parser.OFPErrorMsg, parser.OFPEchoRequest, parser.OFPEchoReply, parser.OFPExperimenter,
    parser.OFPFeaturesRequest, parser.OFPSwitchFeatures, parser.OFPGetConfigRequest, parser.OFPGetConfigReply,
    parser.OFPSetConfig, parser.OFPPacketIn, parser.OFPFlowRemoved, parser.OFPPortStatus, parser.OFPPacketOut,
    parser.OFPFlowMod, parser.OFPGroupMod, parser.OFPPortMod, parser.OFPTableMod, parser.OFPMeterMod,
    parser.OFPBarrierRequest, parser.OFPBarrierReply, parser.OFPQueueGetConfigRequest,
    parser.OFPQueueGetConfigReply, parser.OFPRoleRequest, parser.OFPRoleReply, parser.OFPGetAsyncRequest,
    parser.OFPGetAsyncReply, parser.OFPSetAsync, *_MP_REQUESTS, *_MP_REPLIES,
})
