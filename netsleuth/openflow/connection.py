"""The switch side of one OpenFlow control connection, as a state machine.

Why sans-I/O: the same connection logic must serve a real controller over
TCP (thousands of switches at once), a replayed trace and the model checker,
which copies and hashes states.  So this class never touches a socket or a
clock: the runtime feeds it received bytes (:meth:`receive_data`) and writes
out whatever bytes it returns (:meth:`initiate`, :meth:`send`, the
``reply`` of an event).

It owns what is connection-level rather than switch-level: framing (a TCP
chunk may hold half a message or several), the HELLO exchange and version
negotiation, transaction ids for what the switch sends, and turning
malformed input into the OFPT_ERROR a real switch would answer with, in the
negotiated version.

Version negotiation follows the OpenFlow 1.3 spec (section 6.3.1): the switch
offers a set of versions (``{1.0}``, ``{1.3}`` or ``{1.0, 1.3}``; wire numbers
1 and 4).  Its HELLO carries the highest one in its header and, when it
offers anything beyond 1.0, a version-bitmap element listing them all.  On
the peer's HELLO the connection speaks the highest version in both bitmaps
when the peer sent a bitmap, otherwise the smaller of the two header
versions; a result we do not offer is OFPET_HELLO_FAILED/OFPHFC_INCOMPATIBLE
and the connection closes.

States: ``AWAIT_HELLO`` -> ``CONNECTED`` -> ``CLOSED``.  The connection
closes itself only when going on is impossible: no common version, a
non-HELLO first message, or a header whose length makes framing unsafe.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from os_ken.ofproto import ofproto_v1_0 as ofp
from os_ken.ofproto import ofproto_v1_0_parser as parser
from os_ken.ofproto import ofproto_v1_3_parser as parser13

from netsleuth.errors import CodecError, NetsleuthError
from netsleuth.openflow import of13
from netsleuth.openflow.codec import (
    DATAPATH,
    DATAPATH13,
    ERROR_DATA_LEN,
    OFP_VERSION,
    OFP_VERSION_13,
    SUPPORTED_VERSIONS,
    decode,
    encode,
    msg_version,
    version_name,
)

__all__ = ["OPENFLOW_OPTIONS", "State", "SwitchConnection", "Connected", "ErrorEvent", "VersionMismatch",
           "ConnectionStateError", "offered_versions"]

_HEADER = struct.Struct("!BBHI")
_HEADER_SIZE = _HEADER.size
_ERROR_HEAD = struct.Struct("!HH")
_HELLO_ELEM = struct.Struct("!HH")
_OFPHET_VERSIONBITMAP = 1  # OpenFlow 1.3+ hello element
_XID_MASK = 0xFFFFFFFF

# ``--openflow`` choices -> the wire versions the switch offers.
OPENFLOW_OPTIONS: dict[str, tuple[int, ...]] = {"1.0": (OFP_VERSION,), "1.3": (OFP_VERSION_13,),
                                                "auto": (OFP_VERSION, OFP_VERSION_13)}


def offered_versions(option: str) -> tuple[int, ...]:
    """The wire versions for an ``--openflow`` value (``1.0``, ``1.3`` or ``auto``)."""
    try:
        return OPENFLOW_OPTIONS[option]
    except KeyError:
        raise NetsleuthError(f"unknown OpenFlow version {option!r}",
                             f"use one of {', '.join(OPENFLOW_OPTIONS)}") from None


class State(enum.Enum):
    AWAIT_HELLO = "AWAIT_HELLO"
    CONNECTED = "CONNECTED"
    CLOSED = "CLOSED"


class ConnectionStateError(NetsleuthError):
    """The connection's state does not allow this (send after close, a second HELLO)."""


@dataclass(frozen=True, slots=True)
class Connected:
    """The HELLO exchange finished: ``version`` is what both sides now speak."""

    version: int
    peer_version: int


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    """The peer sent something malformed; send ``reply`` (an OFPT_ERROR) back.

    ``reply`` is empty when the offending message was itself an OFPT_ERROR
    (answering errors with errors can ping-pong forever).
    """

    error: CodecError
    reply: bytes
    fatal: bool = False


@dataclass(frozen=True, slots=True)
class VersionMismatch:
    """The peer speaks no version we offer; send ``reply`` and close (state is CLOSED)."""

    peer_version: int
    reason: str
    reply: bytes


class SwitchConnection:
    """Switch side of one control connection: bytes in, messages and events out.

    ``versions`` are the wire versions offered (1 = OpenFlow 1.0, 4 = 1.3);
    the default, 1.0 alone, is what netsleuth offered before it spoke 1.3.
    """

    __slots__ = ("state", "version", "peer_version", "versions", "_buf", "_next_xid", "_hello_sent")

    def __init__(self, *, first_xid: int = 1, versions: Iterable[int] = (OFP_VERSION,)) -> None:
        offered = tuple(sorted(set(versions)))
        unknown = [v for v in offered if v not in SUPPORTED_VERSIONS]
        if not offered or unknown:
            raise NetsleuthError(f"cannot offer OpenFlow wire versions {list(offered)}",
                                 "offer 1 (OpenFlow 1.0), 4 (OpenFlow 1.3) or both")
        self.versions: tuple[int, ...] = offered
        self.state = State.AWAIT_HELLO
        self.version: int | None = None       # negotiated, once CONNECTED
        self.peer_version: int | None = None  # from the peer's HELLO header
        self._buf = bytearray()
        self._next_xid = first_xid & _XID_MASK
        self._hello_sent = False

    # ---------------------------------------------------------------- output

    def initiate(self) -> bytes:
        """Our HELLO, to send as soon as the TCP connection is up (once).

        Offering 1.0 alone gives the bare 1.0 HELLO; otherwise the HELLO is in
        the highest version offered and carries a version bitmap of them all.
        """
        if self._hello_sent:
            raise ConnectionStateError("HELLO already sent on this connection",
                                       "call initiate() once per connection")
        self._hello_sent = True
        if self.versions == (OFP_VERSION,):
            return self._stamp_and_encode(parser.OFPHello(DATAPATH))
        return self._stamp_and_encode(of13.hello(self.versions))

    def send(self, msg: Any) -> bytes:
        """Bytes for ``msg``; a ``None`` xid gets the next one of this connection.

        Once connected, ``msg`` must be of the negotiated version.
        """
        if self.state is State.CLOSED:
            raise ConnectionStateError("cannot send on a closed OpenFlow connection",
                                       "open a new SwitchConnection for the next TCP connection")
        if self.version is not None and msg_version(msg) != self.version:
            raise ConnectionStateError(
                f"cannot send an OpenFlow {version_name(msg_version(msg))} message on a connection that "
                f"negotiated OpenFlow {version_name(self.version)}",
                "build messages with the os-ken parser of the connection's version (connection.version)")
        return self._stamp_and_encode(msg)

    def _stamp_and_encode(self, msg: Any) -> bytes:
        if msg.xid is None:
            msg.xid = self._next_xid
            self._next_xid = (self._next_xid + 1) & _XID_MASK
        return encode(msg)

    def close(self) -> None:
        """The transport went away (or we hung up): drop buffered bytes."""
        self.state = State.CLOSED
        self._buf.clear()

    # ----------------------------------------------------------------- input

    def receive_data(self, data: bytes) -> list[object]:
        """Feed received bytes; get decoded messages and events, in arrival order.

        Items are os-ken message objects (of the negotiated version),
        :class:`Connected`, :class:`ErrorEvent` or :class:`VersionMismatch`.
        Incomplete trailing bytes stay buffered for the next call.  Nothing
        comes out once CLOSED.
        """
        if self.closed:
            return []
        buf = self._buf
        buf += data
        out: list[object] = []
        off, end = 0, len(buf)
        while end - off >= _HEADER_SIZE and not self.closed:
            version, msg_type, length, xid = _HEADER.unpack_from(buf, off)
            if length < _HEADER_SIZE:
                frame = bytes(buf[off:off + _HEADER_SIZE])
                reply_version = self.version or self._reply_version(version)
                err = CodecError(f"header length {length} is shorter than the header; framing is lost",
                                 ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BAD_LEN, xid, frame, version=reply_version)
                out.append(ErrorEvent(err, _error_bytes(err), fatal=True))
                self.close()
                break
            if end - off < length:
                break
            frame = bytes(buf[off:off + length])
            off += length
            if self.state is State.AWAIT_HELLO:
                out.append(self._on_hello(frame, version, msg_type, xid))
            else:
                out.append(self._on_message(frame, version, msg_type, xid))
        if self.closed:
            buf.clear()
        else:
            del buf[:off]
        return out

    @property
    def closed(self) -> bool:
        """True once the connection is CLOSED (a property, so that checks see changes made by handlers)."""
        return self.state is State.CLOSED

    def _reply_version(self, peer_version: int) -> int:
        """The version to answer in before one is agreed: ours nearest below the peer's."""
        below = [v for v in self.versions if v <= peer_version]
        return max(below) if below else min(self.versions)

    def _on_hello(self, frame: bytes, version: int, msg_type: int, xid: int) -> object:
        # OFPT_HELLO (0) and OFPET_HELLO_FAILED/OFPHFC_INCOMPATIBLE (0/0) are the same in every version.
        if msg_type != ofp.OFPT_HELLO:
            return self._fail(CodecError(f"first message has type {msg_type}, not HELLO",
                                         ofp.OFPET_HELLO_FAILED, ofp.OFPHFC_INCOMPATIBLE, xid,
                                         b"expected OFPT_HELLO first", version=self._reply_version(version)))
        self.peer_version = version
        if version < OFP_VERSION:
            return self._fail(CodecError(f"peer HELLO announces OpenFlow version {version}, older than 1.0",
                                         ofp.OFPET_HELLO_FAILED, ofp.OFPHFC_INCOMPATIBLE, xid,
                                         self._offer_text(), version=min(self.versions)))
        theirs = _hello_bitmap_versions(frame) if version >= OFP_VERSION_13 else None
        if theirs is not None:
            common = set(self.versions) & theirs
            if not common:
                return self._mismatch(version, xid, f"peer supports only OpenFlow wire versions {sorted(theirs)}")
            negotiated = max(common)
        else:
            negotiated = min(max(self.versions), version)
            if negotiated not in self.versions:
                return self._mismatch(version, xid, f"peer HELLO announces OpenFlow wire version {version} "
                                      f"without a version bitmap, so the connection would speak "
                                      f"OpenFlow {version_name(negotiated)}")
        # A peer that announced a higher version may still refuse ours; see _on_message.
        self.version = negotiated
        self.state = State.CONNECTED
        return Connected(negotiated, version)

    def _on_message(self, frame: bytes, version: int, msg_type: int, xid: int) -> object:
        ours = self.version if self.version is not None else OFP_VERSION
        if version != ours:
            if msg_type == ofp.OFPT_ERROR and len(frame) >= _HEADER_SIZE + _ERROR_HEAD.size \
                    and _ERROR_HEAD.unpack_from(frame, _HEADER_SIZE)[0] == ofp.OFPET_HELLO_FAILED:
                text = frame[_HEADER_SIZE + _ERROR_HEAD.size:].split(b"\0", 1)[0].decode("ascii", "replace")
                return self._mismatch(version, xid, f"peer rejected OpenFlow {version_name(ours)}: {text}"
                                      .rstrip(": "))
            if self.peer_version is not None and version > ours and version == self.peer_version:
                return self._mismatch(version, xid, f"peer keeps speaking OpenFlow wire version {version}")
        try:
            msg = decode(frame, ours)
        except CodecError as err:
            return ErrorEvent(err, b"" if msg_type == ofp.OFPT_ERROR else _error_bytes(err))
        if msg_type == ofp.OFPT_ERROR and msg.type == ofp.OFPET_HELLO_FAILED:
            text = bytes(msg.data).split(b"\0", 1)[0].decode("ascii", "replace")
            return self._mismatch(version, xid, f"peer rejected OpenFlow {version_name(ours)}: {text}".rstrip(": "))
        return msg

    def _offer_text(self) -> bytes:
        names = ", ".join(version_name(v) for v in self.versions)
        return f"supported OpenFlow versions: {names}".encode("ascii")

    def _fail(self, err: CodecError) -> ErrorEvent:
        self.close()
        return ErrorEvent(err, _error_bytes(err), fatal=True)

    def _mismatch(self, peer_version: int, xid: int, reason: str) -> VersionMismatch:
        self.close()
        err = CodecError(reason, ofp.OFPET_HELLO_FAILED, ofp.OFPHFC_INCOMPATIBLE, xid, self._offer_text(),
                         version=self._reply_version(peer_version))
        return VersionMismatch(peer_version, reason, _error_bytes(err))


def _error_bytes(err: CodecError) -> bytes:
    """The OFPT_ERROR answering ``err`` in its version: same xid, at most 64 bytes of data."""
    data = bytes(err.data[:ERROR_DATA_LEN])
    msg: Any
    if err.version == OFP_VERSION_13:
        msg = parser13.OFPErrorMsg(DATAPATH13, err.err_type, err.err_code, data)
    else:
        msg = parser.OFPErrorMsg(DATAPATH, err.err_type, err.err_code, data)
    msg.xid = err.xid
    return encode(msg)


def _hello_bitmap_versions(frame: bytes) -> set[int] | None:
    """Versions in an OpenFlow 1.3+ HELLO version bitmap, or None if there is none.

    Malformed elements are ignored, as OF1.0 says to ignore a HELLO body.
    """
    off, end = _HEADER_SIZE, len(frame)
    while end - off >= _HELLO_ELEM.size:
        etype, elen = _HELLO_ELEM.unpack_from(frame, off)
        if elen < _HELLO_ELEM.size or off + elen > end:
            return None
        if etype == _OFPHET_VERSIONBITMAP:
            versions: set[int] = set()
            for i, boff in enumerate(range(off + _HELLO_ELEM.size, off + elen - 3, 4)):
                (bits,) = struct.unpack_from("!I", frame, boff)
                versions.update(i * 32 + b for b in range(32) if bits >> b & 1)
            return versions
        off += (elen + 7) // 8 * 8  # elements are padded to 8 bytes
    return None
