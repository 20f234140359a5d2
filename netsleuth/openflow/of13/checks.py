"""Walking and checking 1.3's variable-length structures before os-ken's parsers see them.

os-ken's parsers assume well-formed input, and on a zero length several of
them loop forever; every match and OXM TLV, instruction, action, bucket,
meter band and table-features property is checked here first, raising the
:class:`~netsleuth.errors.CodecError` a switch answers with.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from os_ken.ofproto import ofproto_common, oxm_fields
from os_ken.ofproto import ofproto_v1_3 as ofp
from os_ken.ofproto import ofproto_v1_3_parser as parser

from netsleuth.errors import CodecError
from netsleuth.openflow import wire
from netsleuth.openflow.of13.layout import (
    _ACTION_LEN,
    _ACTION_LIST_INSTRUCTIONS,
    _BASIC_FIELD_NAME,
    _BASIC_FIELD_SIZE,
    _BUCKET,
    _INSTRUCTION_LEN,
    _METER_BANDS,
    _OXM,
    _TABLE_FEATURE_PROPS,
    _TL,
    _W,
    _round8,
)

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
    bad_len = _W.raiser(ofp.OFPET_BAD_ACTION, ofp.OFPBAC_BAD_LEN, data, xid)
    unknown = _W.raiser(ofp.OFPET_BAD_ACTION, ofp.OFPBAC_BAD_TYPE, data, xid)

    for atype, off, alen in wire.walk_tl(data, start, end, what="action", head=ofp.OFP_ACTION_HEADER_SIZE,
                                         bad_len=bad_len):
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
            wire.check_fixed_len(_ACTION_LEN, atype, alen, what="action", unknown=unknown, bad_len=bad_len)


_EXPERIMENTER_ACTION = struct.Struct(ofp.OFP_ACTION_EXPERIMENTER_HEADER_PACK_STR)


def _parse_actions(data: bytes, start: int, end: int, xid: int) -> list[Any]:
    _check_actions(data, start, end, xid)
    return wire.parse_tl_list(data, start, end, parser.OFPAction.parser)


def _bad_inst(code: int, problem: str, data: bytes, xid: int) -> CodecError:
    return _W.error(ofp.OFPET_BAD_INSTRUCTION, code, problem, data, xid)


def _check_instructions(data: bytes, start: int, end: int, xid: int) -> None:
    bad_len = _W.raiser(ofp.OFPET_BAD_INSTRUCTION, ofp.OFPBIC_BAD_LEN, data, xid)

    for itype, off, ilen in wire.walk_tl(data, start, end, what="instruction", head=4, bad_len=bad_len):
        if itype in _ACTION_LIST_INSTRUCTIONS:
            _check_actions(data, off + ofp.OFP_INSTRUCTION_ACTIONS_SIZE, off + ilen, xid)
        elif itype in _INSTRUCTION_LEN:
            if ilen != _INSTRUCTION_LEN[itype]:
                raise bad_len(f"instruction type {itype} has length {ilen}, expected {_INSTRUCTION_LEN[itype]}")
        elif itype == ofp.OFPIT_EXPERIMENTER:
            raise _bad_inst(ofp.OFPBIC_BAD_EXPERIMENTER, "experimenter instructions are not supported", data, xid)
        else:
            raise _bad_inst(ofp.OFPBIC_UNKNOWN_INST, f"unknown instruction type {itype}", data, xid)


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
