"""The switch side of one OpenFlow 1.0 control connection, as a state machine.

Why sans-I/O: the same connection logic must serve a real controller over
TCP (thousands of switches at once), a replayed trace and the model checker,
which copies and hashes states.  So this class never touches a socket or a
clock: the runtime feeds it received bytes (:meth:`receive_data`) and writes
out whatever bytes it returns (:meth:`initiate`, :meth:`send`, the
``reply`` of an event).

It owns what is connection-level rather than switch-level: framing (a TCP
chunk may hold half a message or several), the HELLO exchange and version
negotiation, transaction ids for what the switch sends, and turning
malformed input into the OFPT_ERROR a real switch would answer with.

States: ``AWAIT_HELLO`` -> ``CONNECTED`` -> ``CLOSED``.  The connection
closes itself only when going on is impossible: no common version, a
non-HELLO first message, or a header whose length makes framing unsafe.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass
from typing import Any

from os_ken.ofproto import ofproto_v1_0 as ofp
from os_ken.ofproto import ofproto_v1_0_parser as parser

from netsleuth.errors import CodecError, NetsleuthError
from netsleuth.openflow.codec import DATAPATH, ERROR_DATA_LEN, OFP_VERSION, decode, encode

__all__ = ["State", "SwitchConnection", "Connected", "ErrorEvent", "VersionMismatch", "ConnectionStateError"]

_HEADER = struct.Struct("!BBHI")
_HEADER_SIZE = _HEADER.size
_ERROR_HEAD = struct.Struct("!HH")
_HELLO_ELEM = struct.Struct("!HH")
_OFPHET_VERSIONBITMAP = 1  # OpenFlow 1.3+ hello element
_XID_MASK = 0xFFFFFFFF


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
    """The peer cannot speak OpenFlow 1.0; send ``reply`` and close (state is CLOSED)."""

    peer_version: int
    reason: str
    reply: bytes


class SwitchConnection:
    """Switch side of one control connection: bytes in, messages and events out."""

    __slots__ = ("state", "version", "peer_version", "_buf", "_next_xid", "_hello_sent")

    def __init__(self, *, first_xid: int = 1) -> None:
        self.state = State.AWAIT_HELLO
        self.version: int | None = None       # negotiated, once CONNECTED
        self.peer_version: int | None = None  # from the peer's HELLO header
        self._buf = bytearray()
        self._next_xid = first_xid & _XID_MASK
        self._hello_sent = False

    # ---------------------------------------------------------------- output

    def initiate(self) -> bytes:
        """Our HELLO, to send as soon as the TCP connection is up (once)."""
        if self._hello_sent:
            raise ConnectionStateError("HELLO already sent on this connection",
                                        "call initiate() once per connection")
        self._hello_sent = True
        return self.send(parser.OFPHello(DATAPATH))

    def send(self, msg: Any) -> bytes:
        """Bytes for ``msg``; a ``None`` xid gets the next one of this connection."""
        if self.state is State.CLOSED:
            raise ConnectionStateError("cannot send on a closed OpenFlow connection",
                                        "open a new SwitchConnection for the next TCP connection")
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

        Items are os-ken message objects, :class:`Connected`,
        :class:`ErrorEvent` or :class:`VersionMismatch`.  Incomplete trailing
        bytes stay buffered for the next call.  Nothing comes out once CLOSED.
        """
        if self.state is State.CLOSED:
            return []
        buf = self._buf
        buf += data
        out: list[object] = []
        off, end = 0, len(buf)
        # the handlers below can close the connection, which mypy's narrowing above does not see
        while end - off >= _HEADER_SIZE and self.state is not State.CLOSED:  # type: ignore[comparison-overlap]
            version, msg_type, length, xid = _HEADER.unpack_from(buf, off)
            if length < _HEADER_SIZE:
                frame = bytes(buf[off:off + _HEADER_SIZE])
                err = CodecError(f"header length {length} is shorter than the header; framing is lost",
                                 ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BAD_LEN, xid, frame)
                out.append(ErrorEvent(err, _error_bytes(err), fatal=True))
                self.state = State.CLOSED
                break
            if end - off < length:
                break
            frame = bytes(buf[off:off + length])
            off += length
            if self.state is State.AWAIT_HELLO:
                out.append(self._on_hello(frame, version, msg_type, xid))
            else:
                out.append(self._on_message(frame, version, msg_type, xid))
        if self.state is State.CLOSED:
            buf.clear()
        else:
            del buf[:off]
        return out

    def _on_hello(self, frame: bytes, version: int, msg_type: int, xid: int) -> object:
        if msg_type != ofp.OFPT_HELLO:
            return self._fail(CodecError(f"first message has type {msg_type}, not HELLO",
                                         ofp.OFPET_HELLO_FAILED, ofp.OFPHFC_INCOMPATIBLE, xid,
                                         b"expected OFPT_HELLO first"))
        self.peer_version = version
        if version < OFP_VERSION:
            return self._fail(CodecError(f"peer HELLO announces OpenFlow version {version}, older than 1.0",
                                         ofp.OFPET_HELLO_FAILED, ofp.OFPHFC_INCOMPATIBLE, xid,
                                         b"only OpenFlow 1.0 (0x01) is supported"))
        versions = _hello_bitmap_versions(frame) if version > OFP_VERSION else None
        if versions is not None and OFP_VERSION not in versions:
            return self._mismatch(version, xid, f"peer supports only OpenFlow wire versions {sorted(versions)}")
        # OF1.0 negotiation: the smaller of the two versions, i.e. 1.0.  A peer
        # that announced a higher version may still refuse 1.0; see _on_message.
        self.version = min(OFP_VERSION, version)
        self.state = State.CONNECTED
        return Connected(self.version, version)

    def _on_message(self, frame: bytes, version: int, msg_type: int, xid: int) -> object:
        if version != OFP_VERSION:
            if msg_type == ofp.OFPT_ERROR and len(frame) >= _HEADER_SIZE + _ERROR_HEAD.size \
                    and _ERROR_HEAD.unpack_from(frame, _HEADER_SIZE)[0] == ofp.OFPET_HELLO_FAILED:
                text = frame[_HEADER_SIZE + _ERROR_HEAD.size:].split(b"\0", 1)[0].decode("ascii", "replace")
                return self._mismatch(version, xid, f"peer rejected OpenFlow 1.0: {text}".rstrip(": "))
            if self.peer_version is not None and version > OFP_VERSION and version == self.peer_version:
                return self._mismatch(version, xid, f"peer keeps speaking OpenFlow wire version {version}")
        try:
            msg = decode(frame)
        except CodecError as err:
            return ErrorEvent(err, b"" if msg_type == ofp.OFPT_ERROR else _error_bytes(err))
        if msg_type == ofp.OFPT_ERROR and msg.type == ofp.OFPET_HELLO_FAILED:
            text = bytes(msg.data).split(b"\0", 1)[0].decode("ascii", "replace")
            return self._mismatch(version, xid, f"peer rejected OpenFlow 1.0: {text}".rstrip(": "))
        return msg

    def _fail(self, err: CodecError) -> ErrorEvent:
        self.state = State.CLOSED
        return ErrorEvent(err, _error_bytes(err), fatal=True)

    def _mismatch(self, peer_version: int, xid: int, reason: str) -> VersionMismatch:
        self.state = State.CLOSED
        err = CodecError(reason, ofp.OFPET_HELLO_FAILED, ofp.OFPHFC_INCOMPATIBLE, xid,
                         b"only OpenFlow 1.0 (0x01) is supported")
        return VersionMismatch(peer_version, reason, _error_bytes(err))


def _error_bytes(err: CodecError) -> bytes:
    """The OFPT_ERROR answering ``err``: same xid, at most 64 bytes of data."""
    msg = parser.OFPErrorMsg(DATAPATH, err.err_type, err.err_code, bytes(err.data[:ERROR_DATA_LEN]))
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
