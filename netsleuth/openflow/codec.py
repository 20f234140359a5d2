"""OpenFlow bytes <-> os-ken message objects, for every version netsleuth speaks.

The one entry point the rest of netsleuth uses.  It only dispatches: by the
version a caller expects (or the header's version byte) when decoding, and by
the os-ken module a message object comes from when encoding or naming it.
The work is done by :mod:`~netsleuth.openflow.of10` and
:mod:`~netsleuth.openflow.of13`; the trace's JSON form by
:mod:`~netsleuth.openflow.json_view`.

The names that existed before OpenFlow 1.3 keep their 1.0 meaning:
``decode(data)`` accepts OpenFlow 1.0 only (anything else is a BAD_VERSION
error, as a 1.0 switch answers), ``DATAPATH``, ``OFP_VERSION`` and
``TYPE_NAME`` are 1.0's.  ``decode(data, version=None)`` takes either
version, by the header's version byte; the 1.3 names carry a ``13``.
"""

from __future__ import annotations

from typing import Any

from netsleuth.errors import CodecError
from netsleuth.openflow import of10, of13
from netsleuth.openflow.json_view import json_version, msg_from_json, msg_to_json

__all__ = ["DATAPATH", "DATAPATH13", "ERROR_DATA_LEN", "OFP_VERSION", "OFP_VERSION_13", "SUPPORTED_VERSIONS",
           "TYPE_NAME", "TYPE_NAME_13", "CodecError", "datapath_for", "decode", "encode", "json_version",
           "msg_from_json", "msg_to_json", "msg_type_name", "msg_version", "version_name"]

OFP_VERSION: int = of10.OFP_VERSION        # 1: OpenFlow 1.0
OFP_VERSION_13: int = of13.OFP_VERSION     # 4: OpenFlow 1.3
SUPPORTED_VERSIONS: tuple[int, ...] = (OFP_VERSION, OFP_VERSION_13)
ERROR_DATA_LEN = 64  # an error carries at least the first 64 bytes of the offending request
DATAPATH = of10.DATAPATH
DATAPATH13 = of13.DATAPATH
TYPE_NAME = of10.TYPE_NAME
TYPE_NAME_13 = of13.TYPE_NAME

_VERSION_NAMES = {1: "1.0", 2: "1.1", 3: "1.2", 4: "1.3", 5: "1.4", 6: "1.5"}


def version_name(version: int) -> str:
    """``"1.3"`` for wire version 4."""
    return _VERSION_NAMES.get(version, f"wire version {version}")


def datapath_for(version: int) -> Any:
    """The stub datapath os-ken's constructors of ``version`` need."""
    return DATAPATH13 if version == OFP_VERSION_13 else DATAPATH


def decode(data: bytes, version: int | None = OFP_VERSION) -> Any:
    """Decode one complete OpenFlow message of ``version`` (None: any version netsleuth speaks).

    Raises :class:`CodecError` with the error a switch speaking that version
    answers: OFPBRC_BAD_VERSION when the header names another version.
    """
    if version is None:
        wire = data[0] if len(data) >= 1 else OFP_VERSION
        version = wire if wire in SUPPORTED_VERSIONS else OFP_VERSION
    if version == OFP_VERSION_13:
        return of13.decode(data)
    return of10.decode(data)


def msg_version(msg: Any) -> int:
    """The wire version of an os-ken message object (1 or 4), from its class."""
    return OFP_VERSION_13 if of13.is_of13(msg) else OFP_VERSION


def encode(msg: Any) -> bytes:
    """Serialize an os-ken message of either version; ``msg.xid`` is kept (None -> 0)."""
    if of13.is_of13(msg):
        return of13.encode(msg)
    return of10.encode(msg)


def msg_type_name(msg: Any) -> str:
    """``"FLOW_MOD"`` for an OFPFlowMod of either version: its OFPT_* name without the prefix."""
    if of13.is_of13(msg):
        return of13.msg_type_name(msg)
    return of10.msg_type_name(msg)
