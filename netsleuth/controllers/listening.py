"""Who listens on a TCP port: the kernel's socket tables, asked over netlink (sock_diag).

A controller start polls every 50 ms until its controller listens. psutil's
``net_connections`` answers by reading ``/proc/net/tcp`` and ``tcp6``
(which walk every bucket of the kernel's connection hash, some
milliseconds each however few sockets there are) and every descriptor of
every process on the machine, each time: on a busy machine that cost more
CPU than the controller's own start. A sock_diag dump asked for listening
sockets only walks the listening table and costs some tens of
microseconds; whose socket it is (a walk over ``/proc/*/fd``) is worked out
only once something listens.
"""

from __future__ import annotations

import os
import socket
import struct

_NETLINK_SOCK_DIAG = 4
_SOCK_DIAG_BY_FAMILY = 20
_NLM_F_REQUEST, _NLM_F_DUMP = 0x1, 0x300
_NLMSG_ERROR, _NLMSG_DONE = 2, 3
_TCPF_LISTEN = 1 << 10
_NLMSG_HDR = struct.Struct("=IHHII")        # length, type, flags, sequence, port id
_DIAG_REQ = struct.Struct("=BBBBI48x")       # family, protocol, extensions, pad, states, socket id (any)
# inet_diag_msg after the header: family, state, timer, retransmits (4 bytes), then the socket id,
# whose first field is the source port in network order; the inode follows the id (48 bytes) and
# four 32-bit counters (expires, rqueue, wqueue, uid).
_SPORT_AT, _INODE_AT = 4, 4 + 48 + 16


def _listening_inodes(port: int) -> set[int]:
    """The inodes of the sockets listening on TCP ``port`` (IPv4 and IPv6) in this network namespace."""
    inodes: set[int] = set()
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG) as nl:
        for seq, family in enumerate((socket.AF_INET, socket.AF_INET6), 1):
            req = _DIAG_REQ.pack(family, socket.IPPROTO_TCP, 0, 0, _TCPF_LISTEN)
            nl.send(_NLMSG_HDR.pack(_NLMSG_HDR.size + len(req), _SOCK_DIAG_BY_FAMILY,
                                    _NLM_F_REQUEST | _NLM_F_DUMP, seq, 0) + req)
            done = False
            while not done:
                data = nl.recv(1 << 16)
                if not data:
                    break
                off = 0
                while off + _NLMSG_HDR.size <= len(data):
                    length, kind = _NLMSG_HDR.unpack_from(data, off)[:2]
                    if kind == _NLMSG_DONE or length < _NLMSG_HDR.size:
                        done = True
                        break
                    if kind == _NLMSG_ERROR:
                        errno = -struct.unpack_from("=i", data, off + _NLMSG_HDR.size)[0]
                        if errno:
                            raise OSError(errno, f"sock_diag: {os.strerror(errno)}")
                    else:
                        body = off + _NLMSG_HDR.size
                        if struct.unpack_from(">H", data, body + _SPORT_AT)[0] == port:
                            inodes.add(struct.unpack_from("=I", data, body + _INODE_AT)[0])
                    off += (length + 3) & ~3
    return inodes


def port_listening(port: int) -> bool:
    """Whether any socket listens on TCP ``port``."""
    return bool(_listening_inodes(port))


def listeners(port: int) -> list[int | None]:
    """The process ids listening on TCP ``port`` (``[None]`` where no readable process holds the socket)."""
    inodes = _listening_inodes(port)
    if not inodes:
        return []
    links = {f"socket:[{inode}]" for inode in inodes}
    pids: list[int | None] = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fds = os.listdir(f"/proc/{entry.name}/fd")
        except OSError:
            continue   # gone meanwhile, or not ours to read
        for fd in fds:
            try:
                if os.readlink(f"/proc/{entry.name}/fd/{fd}") in links:
                    pids.append(int(entry.name))
                    break
            except OSError:
                continue
    return pids or [None]
