"""Lossless JSON for OpenFlow messages of every version netsleuth speaks.

Traces store each message as ``{"type": "FLOW_MOD", "xid": 7, "body":
{"OFPFlowMod": {...}}}``; OpenFlow 1.3 messages also carry ``"version": 4``
(1.0 messages carry no version key, so traces recorded before 1.3 existed
read exactly as before, and their fingerprints do not change).  ``body`` is
os-ken's ``to_jsondict()`` (bytes as base64), readable by os-ken tools too;
:func:`msg_from_json` inverts it exactly, so ``encode(msg_from_json(
msg_to_json(m))) == encode(m)`` and the xid survives.  Where os-ken cannot
read back what it wrote, the builders here repair it; where even that cannot
reproduce the bytes, ``"raw"`` (base64 of the message) is stored as well and
preferred on the way back.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
from collections.abc import Callable
from typing import Any

from os_ken.lib.packet import packet as oslib_packet
from os_ken.ofproto import ofproto_v1_0 as ofp
from os_ken.ofproto import ofproto_v1_0_parser as parser
from os_ken.ofproto import ofproto_v1_3_parser as parser13

from netsleuth.errors import CodecError, TraceFormatError
from netsleuth.openflow import of10, of13, wire
from netsleuth.openflow.jsondict import from_jsondict, to_jsondict
from netsleuth.openflow.of10 import DATAPATH

__all__ = ["msg_to_json", "msg_from_json", "json_version"]

_FIX = "record messages with netsleuth.openflow.codec.msg_to_json"
_NX_ACTION = getattr(parser, "NXAction", parser.OFPActionVendor)


def msg_to_json(msg: Any) -> dict[str, Any]:
    """The trace's JSON form of an os-ken message of either version (see the module doc)."""
    if of13.is_of13(msg):
        return _to_json13(msg)
    return _to_json10(msg)


def json_version(d: dict[str, Any]) -> int:
    """The OpenFlow wire version a message's JSON form is in (1 when it names none)."""
    version = d.get("version", of10.OFP_VERSION)
    if version not in (of10.OFP_VERSION, of13.OFP_VERSION):
        raise TraceFormatError(f"OpenFlow wire version {version!r} is not one netsleuth speaks (1 or 4)", _FIX)
    return int(version)


def msg_from_json(d: dict[str, Any]) -> Any:
    """Rebuild the message :func:`msg_to_json` described (``encode`` gives the same bytes)."""
    if not isinstance(d, dict) or "body" not in d and "raw" not in d:
        raise TraceFormatError(f"not an OpenFlow message JSON object: {d!r:.200}", _FIX)
    if json_version(d) == of13.OFP_VERSION:
        return _from_json13(d)
    return _from_json10(d)


# --------------------------------------------------------------------------
# OpenFlow 1.0


def _to_json10(msg: Any) -> dict[str, Any]:
    """``{"type": "FLOW_MOD", "xid": 7, "body": {"OFPFlowMod": {...}}}``: plain JSON values.

    ``body`` is os-ken's ``to_jsondict()`` (bytes as base64), so it can be
    read by os-ken tools too; :func:`msg_from_json` inverts it exactly.  The
    rare message os-ken cannot describe exactly (a port, table or switch
    name that is not text) also gets ``"raw"``: the base64 of its bytes.
    """
    if type(msg) not in of10.DECODED_CLASSES or (
            isinstance(msg, parser.OFPPacketOut) and isinstance(msg.data, oslib_packet.Packet)):
        # Nicira helpers, os-ken Packet objects...: os-ken cannot read their
        # JSON back, so describe the bytes they serialize to instead.
        xid = msg.xid
        msg = of10.decode(of10.encode(msg))
        msg.xid = xid
    if not _text_fields_ok(msg):
        # os-ken's JSON holds these names as text; for bytes that are not text
        # (a fuzzed switch description...) the body shows them with U+FFFD and
        # "raw" keeps the exact message, which msg_from_json prefers.
        xid = msg.xid
        raw = of10.encode(msg)
        readable = _with_text_fields_replaced(of10.decode(raw))
        return {"type": of10.msg_type_name(msg), "xid": xid, "body": to_jsondict(readable),
                "raw": base64.b64encode(raw).decode("ascii")}
    return {"type": of10.msg_type_name(msg), "xid": msg.xid, "body": to_jsondict(msg)}


def _decodes(value: Any, encoding: str) -> bool:
    if isinstance(value, str):
        return True
    try:
        bytes(value).decode(encoding)
    except UnicodeDecodeError:
        return False
    return True


def _text_fields_ok(msg: Any) -> bool:
    if isinstance(msg, parser.OFPSwitchFeatures):
        ports = msg.ports.values() if isinstance(msg.ports, dict) else (msg.ports or ())
        return all(_decodes(port.name, "utf-8") for port in ports)
    if isinstance(msg, parser.OFPPortStatus):
        return _decodes(msg.desc.name, "utf-8")
    if isinstance(msg, parser.OFPDescStatsReply):
        desc = msg.body[0] if isinstance(msg.body, list) else msg.body
        return all(_decodes(field, "ascii") for field in desc)
    if isinstance(msg, parser.OFPTableStatsReply):
        return all(_decodes(table.name, "utf-8") for table in msg.body or ())
    return True


def _as_text(value: bytes, encoding: str) -> bytes:
    return bytes(value).decode(encoding, "replace").encode(encoding, "replace")


def _with_text_fields_replaced(msg: Any) -> Any:
    """``msg`` (freshly decoded) with undecodable names made text, for display only."""
    if isinstance(msg, parser.OFPSwitchFeatures):
        msg.ports = {no: port._replace(name=_as_text(port.name, "utf-8")) for no, port in msg.ports.items()}
    elif isinstance(msg, parser.OFPPortStatus):
        msg.desc = msg.desc._replace(name=_as_text(msg.desc.name, "utf-8"))
    elif isinstance(msg, parser.OFPDescStatsReply):
        msg.body = parser.OFPDescStats(*(_as_text(field, "ascii") for field in msg.body))
    elif isinstance(msg, parser.OFPTableStatsReply):
        msg.body = [table._replace(name=_as_text(table.name, "utf-8")) for table in msg.body]
    return msg


def _from_json10(d: dict[str, Any]) -> Any:
    """Rebuild the message :func:`msg_to_json` described (``encode`` gives the same bytes)."""
    if "raw" in d:
        msg = of10.decode(base64.b64decode(d["raw"]))
        msg.xid = d.get("xid", msg.xid)
        return msg
    ((cls_name, attrs),) = d["body"].items()
    cls: Any = getattr(parser, cls_name, None)
    if cls not in of10.DECODED_CLASSES:
        raise TraceFormatError(f"{cls_name!r} is not an OpenFlow 1.0 message class netsleuth records",
                               _FIX)
    builder = _JSON_BUILDERS.get(cls)
    if builder is not None:
        msg = builder(cls, dict(attrs))
    elif issubclass(cls, parser.OFPStatsReply):
        msg = _stats_reply_from_json(cls, dict(attrs))
    else:
        msg = _osken_from_jsondict(cls, dict(attrs), datapath=DATAPATH)
    msg.xid = d.get("xid")
    return msg


def _osken_from_jsondict(cls: Any, attrs: dict[str, Any], **extra: Any) -> Any:
    # os-ken prints its arguments to stdout before re-raising a TypeError; keep stdout clean.
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            return from_jsondict(cls, attrs, **extra)
    except (TypeError, ValueError, KeyError, AttributeError, AssertionError, IndexError) as exc:
        raise TraceFormatError(f"cannot rebuild {cls.__name__} from JSON: {exc}",
                               _FIX) from exc


def _action_from_json(entry: dict[str, Any]) -> Any:
    ((name, fields),) = entry.items()
    cls = getattr(parser, name, None)
    if not (isinstance(cls, type) and issubclass(cls, parser.OFPAction)):
        raise TraceFormatError(f"{name!r} is not an OpenFlow 1.0 action class",
                               _FIX)
    fields = dict(fields)
    if issubclass(cls, _NX_ACTION):
        # os-ken writes these two but its Nicira constructors set them themselves
        # (except the catch-all NXActionUnknown, which takes the subtype).
        fields.pop("vendor", None)
        if cls.__name__ != "NXActionUnknown":
            fields.pop("subtype", None)
    return _osken_from_jsondict(cls, fields)


def _with_actions_from_json(cls: Any, attrs: dict[str, Any]) -> Any:
    actions = [_action_from_json(a) for a in attrs.pop("actions", None) or ()]
    msg = _osken_from_jsondict(cls, attrs, datapath=DATAPATH)
    msg.actions = actions
    return msg


def _b64(value: Any) -> bytes:
    return base64.b64decode(value) if isinstance(value, str) else wire.as_bytes(value)


def _stats_request_from_json(cls: Any, attrs: dict[str, Any]) -> Any:
    attrs.pop("type", None)  # implied by the class; os-ken's constructors do not take it
    flags = attrs.pop("flags", 0)
    msg = _osken_from_jsondict(cls, dict(attrs, flags=0), datapath=DATAPATH)
    msg.flags = flags
    return msg


def _vendor_from_json(cls: Any, attrs: dict[str, Any]) -> Any:
    msg = cls(DATAPATH)
    msg.vendor = attrs["vendor"]
    msg.data = _b64(attrs["data"])
    return msg


def _bag_from_json(cls: Any, attrs: dict[str, Any]) -> Any:
    """For classes whose constructor takes only the datapath: set attributes directly."""
    msg = cls(DATAPATH)
    for key, value in attrs.items():
        setattr(msg, key, cls._decode_value(key, value))
    return msg


def _flow_removed_from_json(cls: Any, attrs: dict[str, Any]) -> Any:
    msg = cls(DATAPATH)
    for key, value in attrs.items():
        setattr(msg, key, value)
    msg.match = parser.OFPMatch.from_jsondict(attrs["match"]["OFPMatch"])
    return msg


def _queue_get_config_reply_from_json(cls: Any, attrs: dict[str, Any]) -> Any:
    msg = cls(DATAPATH)
    msg.port = attrs["port"]
    msg.queues = []
    for entry in attrs["queues"]:
        (q,) = entry.values()
        queue = parser.OFPPacketQueue(q["queue_id"], q["len"])
        queue.properties = []
        for prop_entry in q["properties"]:
            ((prop_cls_name, prop),) = prop_entry.items()
            if prop_cls_name == "OFPQueuePropMinRate":
                queue.properties.append(parser.OFPQueuePropMinRate(prop["rate"]))
            else:
                queue.properties.append(parser.OFPQueuePropNone())
        msg.queues.append(queue)
    return msg


def _flow_stats_from_json(value: dict[str, Any]) -> Any:
    (fields,) = value.values()
    stats = parser.OFPFlowStats()
    for key, v in fields.items():
        setattr(stats, key, v)
    stats.match = parser.OFPMatch.from_jsondict(fields["match"]["OFPMatch"])
    stats.actions = [_action_from_json(a) for a in fields["actions"]]
    return stats


def _record_from_json(cls: Any, value: dict[str, Any]) -> Any:
    (fields,) = value.values()
    text = {f for fields_ in getattr(cls, "_TYPE", {}).values() for f in fields_}
    record = cls(**{f: (fields[f].encode("utf-8") if f in text else fields[f]) for f in cls._fields})
    return record


def _stats_reply_from_json(cls: Any, attrs: dict[str, Any]) -> Any:
    msg = cls(DATAPATH)
    msg.type, msg.flags = attrs.get("type"), attrs.get("flags")
    body: Any = attrs.get("body")
    stype = cls.cls_stats_type
    if stype == ofp.OFPST_VENDOR:
        entry = body[0] if isinstance(body, list) else body
        (fields,) = entry.values()
        msg.body = parser.OFPVendorStats(_b64(fields["specific_data"]))
    elif stype == ofp.OFPST_FLOW:
        msg.body = [_flow_stats_from_json(e) for e in body]
    elif stype == ofp.OFPST_DESC:
        msg.body = _record_from_json(parser.OFPDescStats, body)
    else:
        msg.body = [_record_from_json(cls.cls_stats_body_cls, e) for e in body]
    return msg


_JSON_BUILDERS: dict[type, Callable[[Any, dict[str, Any]], Any]] = {
    parser.OFPVendor: _vendor_from_json,
    parser.OFPFlowMod: _with_actions_from_json,
    parser.OFPPacketOut: _with_actions_from_json,
    parser.OFPGetConfigReply: _bag_from_json,
    parser.OFPFlowRemoved: _flow_removed_from_json,
    parser.OFPQueueGetConfigReply: _queue_get_config_reply_from_json,
    **{cls: _stats_request_from_json for cls in (
        parser.OFPDescStatsRequest, parser.OFPFlowStatsRequest, parser.OFPAggregateStatsRequest,
        parser.OFPTableStatsRequest, parser.OFPPortStatsRequest, parser.OFPQueueStatsRequest,
        parser.OFPVendorStatsRequest)},
}


# --------------------------------------------------------------------------
# OpenFlow 1.3


# os-ken's 1.3 classes read back their own ``to_jsondict`` for every message
# netsleuth decodes, so no per-class builders are needed; each message is
# still checked when it is recorded, and one whose JSON would not give back
# its exact bytes (a name that is not UTF-8, a field os-ken drops) is stored
# with "raw" too.


# The description of each distinct 1.3 message, by its bytes without the xid: a run sends the same
# FLOW_MODs, PACKET_OUTs and echoes many times (half the messages of an os-ken pingall, three
# quarters of a Faucet one), and describing one (decoding it, its JSON, rebuilding and encoding
# that to check it gives the bytes back) costs as much again as encoding it to find it here.
_DESCRIBED13: dict[bytes, tuple[str, str, bool]] = {}
_DESCRIBED13_MAX = 2048  # distinct messages kept; all forgotten at once when full


def _to_json13(msg: Any) -> dict[str, Any]:
    xid = msg.xid
    raw = of13.encode(msg)
    msg.xid = xid  # encode() writes 0 for a None xid; the caller may still want the connection to assign one
    key = raw[:4] + raw[8:]  # the xid is the header's last 4 bytes; the body's JSON does not show it
    described = _DESCRIBED13.get(key)
    if described is None:
        described = _describe13(raw)
        if len(_DESCRIBED13) >= _DESCRIBED13_MAX:
            _DESCRIBED13.clear()
        _DESCRIBED13[key] = described
    type_name, body_text, exact = described
    out: dict[str, Any] = {"version": of13.OFP_VERSION, "type": type_name, "xid": xid,
                           "body": json.loads(body_text)}  # a fresh object for each caller
    if not exact:
        out["raw"] = base64.b64encode(raw).decode("ascii")
    return out


def _describe13(raw: bytes) -> tuple[str, str, bool]:
    """(type name, JSON text of the body, whether the body gives back ``raw`` exactly) of a message.

    The xid does not matter: the body does not show it and the rebuilt message gets ``raw``'s.
    """
    canonical = of13.decode(raw)  # lengths filled in, os-ken helper classes replaced by what the wire says
    try:
        # Through JSON text and back: os-ken leaves some values (a port whose name is not UTF-8) as objects.
        body_text = json.dumps(to_jsondict(canonical))
        rebuilt = _body13(json.loads(body_text))
        rebuilt.xid = canonical.xid
        exact = of13.encode(rebuilt) == raw
    except (TraceFormatError, TypeError, ValueError, KeyError, AttributeError, UnicodeError):
        # A name that is not text: show it with U+FFFD, keep the exact message in "raw".
        body_text = json.dumps(to_jsondict(_with_text_fields_replaced13(of13.decode(raw))))
        exact = False
    return of13.msg_type_name(canonical), body_text, exact


def _with_text_fields_replaced13(msg: Any) -> Any:
    """``msg`` (freshly decoded) with names that are not UTF-8 made text, for display only."""
    def port(p: Any) -> Any:
        return p._replace(name=_as_text(p.name, "utf-8"))

    if isinstance(msg, parser13.OFPPortStatus):
        msg.desc = port(msg.desc)
    elif isinstance(msg, parser13.OFPPortDescStatsReply):
        msg.body = [port(p) for p in msg.body]
    elif isinstance(msg, parser13.OFPDescStatsReply):
        msg.body = parser13.OFPDescStats(*(_as_text(field, "ascii") for field in msg.body))
    elif isinstance(msg, (parser13.OFPTableFeaturesStatsReply, parser13.OFPTableFeaturesStatsRequest)):
        for table in msg.body:
            table.name = _as_text(table.name, "utf-8")
    return msg


def _from_json13(d: dict[str, Any]) -> Any:
    if "raw" in d:
        try:
            msg = of13.decode(base64.b64decode(d["raw"]))
        except (ValueError, CodecError) as exc:
            raise TraceFormatError(f"the raw bytes of a recorded OpenFlow 1.3 message do not decode: {exc}",
                                   _FIX) from None
        msg.xid = d.get("xid", msg.xid)
        return msg
    msg = _body13(d["body"])
    msg.xid = d.get("xid")
    return msg


def _body13(body: Any) -> Any:
    if not isinstance(body, dict) or len(body) != 1:
        raise TraceFormatError(f"OpenFlow 1.3 message body is not one {{class: fields}} object: {body!r:.200}", _FIX)
    ((cls_name, attrs),) = body.items()
    cls: Any = getattr(parser13, cls_name, None)
    if cls not in of13.DECODED_CLASSES:
        raise TraceFormatError(f"{cls_name!r} is not an OpenFlow 1.3 message class netsleuth records", _FIX)
    if not isinstance(attrs, dict):
        raise TraceFormatError(f"fields of {cls_name} are not a JSON object", _FIX)
    return _osken_from_jsondict(cls, dict(attrs), datapath=of13.DATAPATH)
