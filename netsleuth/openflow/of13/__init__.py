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

The package is split by job: :mod:`.layout` (structs and lengths),
:mod:`.checks` (walking the variable-length structures), :mod:`.decode` and
:mod:`.encode`; this module is the API the rest of netsleuth uses.
"""

from __future__ import annotations

from netsleuth.openflow.of13.decode import decode
from netsleuth.openflow.of13.encode import DECODED_CLASSES, encode, hello
from netsleuth.openflow.of13.layout import DATAPATH, ERROR_DATA_LEN, OFP_VERSION, TYPE_NAME, is_of13, msg_type_name

__all__ = ["DATAPATH", "DECODED_CLASSES", "ERROR_DATA_LEN", "OFP_VERSION", "TYPE_NAME", "decode", "encode",
           "hello", "is_of13", "msg_type_name"]
