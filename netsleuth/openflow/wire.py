"""Message framing and small packing helpers that OpenFlow 1.0 and 1.3 share.

Why this module exists: :mod:`netsleuth.openflow.of10` and
:mod:`netsleuth.openflow.of13` read and write different message bodies, but
the frame around a body is the same in both versions: the 8-byte
``version/type/length/xid`` header, the checks a decoder makes on it before
any body is looked at, the stamping of a decoded os-ken object, and the
OFPET_BAD_REQUEST errors (BAD_VERSION, BAD_TYPE, BAD_LEN) a switch answers
malformed framing with.  Both versions number those errors alike, so one
:class:`Framing`, built with the version's wire number, name and stub
datapath, serves both; the body-level checks stay in each version's module.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from os_ken.lib import addrconv
from os_ken.lib.packet import packet as oslib_packet
from os_ken.ofproto import ofproto_v1_0 as _ofp

from netsleuth.errors import CodecError

__all__ = ["ERROR_DATA_LEN", "HEADER", "HEADER_SIZE", "Decoder", "Framing", "mac_bin", "pack_match",
           "packet_out_body", "parse_tl_list", "serialize_list", "text", "walk_tl"]

ERROR_DATA_LEN = 64  # an error carries at least the first 64 bytes of the offending request
HEADER = struct.Struct(_ofp.OFP_HEADER_PACK_STR)  # "!BBHI" in every OpenFlow version
HEADER_SIZE = _ofp.OFP_HEADER_SIZE
_TL = struct.Struct("!HH")  # the type/length head of an action or instruction

# OpenFlow 1.0 and 1.3 give these the same numbers (type 1; codes 0, 1 and 6).
_BAD_REQUEST = _ofp.OFPET_BAD_REQUEST
_BAD_VERSION = _ofp.OFPBRC_BAD_VERSION
_BAD_TYPE = _ofp.OFPBRC_BAD_TYPE
_BAD_LEN = _ofp.OFPBRC_BAD_LEN

Decoder = Callable[[bytes, int], Any]


class Framing:
    """The header, errors and os-ken glue of one OpenFlow version (``version`` is its wire number)."""

    def __init__(self, version: int, name: str, datapath: Any) -> None:
        self.version = version
        self.name = name
        self.datapath = datapath

    # errors ---------------------------------------------------------------

    def error(self, err_type: int, code: int, problem: str, data: bytes, xid: int) -> CodecError:
        """The OFPT_ERROR a switch answers ``data`` with, carrying its first 64 bytes."""
        return CodecError(problem, err_type, code, xid, bytes(data[:ERROR_DATA_LEN]), version=self.version)

    def raiser(self, err_type: int, code: int, data: bytes, xid: int) -> Callable[[str], CodecError]:
        """The error of one type and code for ``data``, waiting only for the problem in words."""
        return lambda problem: self.error(err_type, code, problem, data, xid)

    def bad_request(self, code: int, problem: str, data: bytes, xid: int) -> CodecError:
        return self.error(_BAD_REQUEST, code, problem, data, xid)

    def bad_len(self, problem: str, data: bytes, xid: int) -> CodecError:
        return self.bad_request(_BAD_LEN, problem, data, xid)

    def need(self, data: bytes, xid: int, size: int, *, exact: bool, what: str) -> None:
        """Raise BAD_LEN unless ``data`` is ``size`` bytes (or, not ``exact``, at least that)."""
        n = len(data)
        if n < size or (exact and n != size):
            want = f"{size}" if exact else f"at least {size}"
            raise self.bad_len(f"{what} is {n} bytes, expected {want}", data, xid)

    # decoding -------------------------------------------------------------

    def decode(self, data: bytes, decoders: Mapping[int, Decoder]) -> Any:
        """Check the header of exactly one complete message and hand it to its type's decoder."""
        data = bytes(data)
        if len(data) < HEADER_SIZE:
            raise self.bad_len(f"message is {len(data)} bytes, shorter than the OpenFlow header", data, 0)
        version, msg_type, length, xid = HEADER.unpack_from(data)
        if version != self.version:
            raise self.bad_request(_BAD_VERSION, f"OpenFlow version {version} is not {self.version} "
                                                 f"(OpenFlow {self.name})", data, xid)
        if length != len(data):
            raise self.bad_len(f"header length {length} but {len(data)} bytes given", data, xid)
        decoder = decoders.get(msg_type)
        if decoder is None:
            raise self.bad_request(_BAD_TYPE, f"unknown OpenFlow {self.name} message type {msg_type}", data, xid)
        return decoder(data, xid)

    def stamp(self, msg: Any, data: bytes, xid: int) -> Any:
        """Set the header fields and ``buf`` os-ken's own parsers would have set."""
        msg.set_headers(self.version, msg.cls_msg_type, len(data), xid)
        msg.set_buf(data)
        return msg

    def osken(self, cls: Any) -> Decoder:
        """Decode with os-ken's own parser for ``cls`` (structures already checked)."""

        def run(data: bytes, xid: int) -> Any:
            try:
                return cls.parser(self.datapath, self.version, cls.cls_msg_type, len(data), xid, data)
            except (struct.error, AssertionError, KeyError, IndexError, TypeError, ValueError) as exc:
                raise self.bad_len(f"os-ken could not parse {cls.__name__}: {exc!r}", data, xid) from exc

        return run

    def fixed(self, size: int, then: Decoder, what: str, *, exact: bool = True) -> Decoder:
        """``then``, after checking the message is ``size`` bytes (at least that, not ``exact``)."""

        def run(data: bytes, xid: int) -> Any:
            self.need(data, xid, size, exact=exact, what=what)
            return then(data, xid)

        return run

    def header_only(self, cls: Any) -> Decoder:
        """A message that is its header and nothing more (BARRIER_REQUEST, FEATURES_REQUEST, ...)."""
        return self.fixed(HEADER_SIZE, lambda data, xid: self.stamp(cls(self.datapath), data, xid), cls.__name__)

    # encoding -------------------------------------------------------------

    def frame(self, msg: Any, body: bytes) -> bytes:
        """Put the header before ``body`` and set on ``msg`` what os-ken's ``serialize`` sets."""
        msg.version, msg.msg_type = self.version, msg.cls_msg_type
        msg.msg_len = HEADER_SIZE + len(body)
        if msg.xid is None:
            msg.xid = 0
        out: bytes = HEADER.pack(self.version, msg.cls_msg_type, msg.msg_len, msg.xid) + body
        msg.buf = out
        return out


def mac_bin(mac: Any) -> bytes:
    """Six bytes from a MAC given as ``"aa:bb:..."`` text or as bytes."""
    return addrconv.mac.text_to_bin(mac) if isinstance(mac, str) else bytes(mac)


def text(value: Any) -> bytes:
    """UTF-8 bytes from text, or the bytes as they are (port names, descriptions)."""
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


def serialize_list(items: Any) -> bytes:
    """Actions, instructions, buckets or bands, each with os-ken's ``serialize(buf, offset)``."""
    buf = bytearray()
    off = 0
    for item in items or ():
        item.serialize(buf, off)
        off += item.len
    if len(buf) < off:  # os-ken leaves some trailing padding (a vendor action's, say) unwritten
        buf += bytes(off - len(buf))
    return bytes(buf)


def walk_tl(data: bytes, start: int, end: int, *, what: str, head: int,
            bad_len: Callable[[str], CodecError]) -> Iterator[tuple[int, int, int]]:
    """``(type, offset, length)`` of each element of ``data[start:end]``, its length checked before it is yielded.

    1.0 actions, 1.3 actions and 1.3 instructions are all lists of elements
    that open with a 16-bit type and a 16-bit length, at least 8 and a
    multiple of 8, that must end inside the list. A switch rejects a bad
    length the same way in each; only the error's type and code differ,
    which ``bad_len`` (given the problem in words) supplies. ``head`` is how
    many bytes must remain for an element to be read at all.
    """
    off = start
    while off < end:
        if end - off < head:
            raise bad_len(f"{end - off} trailing bytes are not an {what}")
        etype, elen = _TL.unpack_from(data, off)
        if elen < 8 or elen % 8 or off + elen > end:
            raise bad_len(f"{what} type {etype} has bad length {elen}")
        yield etype, off, elen
        off += elen


def check_fixed_len(lengths: Mapping[int, int], etype: int, elen: int, *, what: str,
                    unknown: Callable[[str], CodecError], bad_len: Callable[[str], CodecError]) -> None:
    """Refuse an element whose type has no fixed length in ``lengths`` or whose length is not that one."""
    want = lengths.get(etype)
    if want is None:
        raise unknown(f"unknown {what} type {etype}")
    if elen != want:
        raise bad_len(f"{what} type {etype} has length {elen}, expected {want}")


def parse_tl_list(data: bytes, start: int, end: int, parse: Callable[[bytes, int], Any]) -> list[Any]:
    """Actions or instructions in ``data[start:end]`` (already checked), each read by os-ken's ``parse``."""
    out = []
    off = start
    while off < end:
        out.append(parse(data, off))
        off += _TL.unpack_from(data, off)[1]
    return out


def packet_out_body(msg: Any, fixed: struct.Struct) -> bytes:
    """A PACKET_OUT after its header: ``fixed`` (buffer_id, in_port, actions_len), actions, data.

    Not os-ken's ``serialize``: it refuses data together with a buffer_id,
    which the wire allows (and in 1.0 writes data over the fixed part when
    there are no actions).
    """
    data = msg.data
    if isinstance(data, oslib_packet.Packet):
        data.serialize()
        data = data.data
    actions = serialize_list(msg.actions)
    return fixed.pack(msg.buffer_id, msg.in_port, len(actions)) + actions + as_bytes(data)


def as_bytes(data: Any) -> bytes:
    """A message's data field as bytes (None is none).

    Refuses a number: ``bytes(n)`` is n zero bytes, so a trace line holding ``"data": 4294967296``
    would otherwise make encoding it (which reading a trace does) allocate 4 GiB.
    """
    if isinstance(data, int):
        raise TypeError(f"data must be bytes, not the number {data}")
    return bytes(data or b"")


def pack_match(match: Any) -> bytes:
    """An os-ken match's wire bytes (``OFPMatch.serialize`` writes into a buffer)."""
    buf = bytearray()
    match.serialize(buf, 0)
    return bytes(buf)
