"""The kernel's forwarding table of each router namespace, read over rtnetlink.

A daemon's own table (``show route``) says what it chose; the kernel's table
is what packets follow. One ``NETLINK_ROUTE`` socket per namespace, opened
inside it (``setns`` for the moment of ``socket()``: a socket stays in the
namespace it was made in), answers a dump of the main table in well under
a millisecond -- against ~5 ms for an ``ip route`` process -- so the tables
can be read after every delivered message.

:func:`parse_routes` is the sans-I/O half: netlink bytes in, :class:`KRoute`
out. :class:`KernelTables` is the edge.
"""

from __future__ import annotations

import ctypes
import os
import select
import socket
import struct
from collections.abc import Mapping
from dataclasses import dataclass

from netsleuth.errors import NetsleuthError

NETLINK_ROUTE = 0
RTM_NEWLINK, RTM_GETLINK, RTM_NEWROUTE, RTM_GETROUTE = 16, 18, 24, 26
NLMSG_ERROR, NLMSG_DONE = 2, 3
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
RTMGRP_IPV4_ROUTE = 0x40
RTA_DST, RTA_OIF, RTA_GATEWAY, RTA_MULTIPATH, RTA_TABLE = 1, 4, 5, 9, 15
IFLA_IFNAME = 3
RT_TABLE_MAIN = 254
_DUMP_SEQ = 1
MEMO_SIZE = 4096   # routes a table remembers the bytes of (a router's table holds a few hundred at most)
CLONE_NEWNET = 0x40000000
TYPES = {1: "unicast", 2: "local", 3: "broadcast", 6: "blackhole", 7: "unreachable", 8: "prohibit"}
PROTOS = {2: "kernel", 3: "boot", 4: "static", 12: "bird", 186: "bgp", 188: "ospf", 189: "rip"}


class KernelTableError(NetsleuthError):
    """A namespace's routing table cannot be read."""


@dataclass(frozen=True, order=True)
class KRoute:
    """One main-table IPv4 route: prefix, kind, who installed it, next hops as (gateway or "", interface)."""

    prefix: str
    kind: str
    proto: str
    nexthops: tuple[tuple[str, str], ...]

    def words(self) -> str:
        hops = ", ".join(f"via {g} dev {d}" if g else f"dev {d}" for g, d in self.nexthops)
        kind = "" if self.kind == "unicast" else f" {self.kind}"
        return f"{self.prefix}{kind} {hops} proto {self.proto}".replace("  ", " ")


def _attrs(data: bytes, start: int, end: int) -> dict[int, list[bytes]]:
    out: dict[int, list[bytes]] = {}
    pos = start
    while pos + 4 <= end:
        ln, kind = struct.unpack_from("=HH", data, pos)
        if ln < 4:
            break
        out.setdefault(kind & 0x3FFF, []).append(data[pos + 4: pos + ln])
        pos += (ln + 3) & ~3
    return out


def _ip(b: bytes) -> str:
    return ".".join(map(str, b[:4]))


def _messages(data: bytes) -> list[tuple[int, bytes]]:
    """(type, body) of every netlink message in ``data``."""
    out = []
    pos = 0
    while pos + 16 <= len(data):
        ln, kind = struct.unpack_from("=IH", data, pos)
        if ln < 16:
            break
        out.append((kind, data[pos + 16: pos + ln]))
        pos += (ln + 3) & ~3
    return out


def _ends_dump(data: bytes) -> bool:
    """Does this chunk of a dump's answer end it (NLMSG_DONE or an error), or carry nothing?

    The kernel puts NLMSG_DONE (a bare 20-byte message) at the end of the dump's last chunk, so
    that is looked at first; other chunks have their message headers walked (types only).
    """
    if len(data) >= 20 and struct.unpack_from("=IH", data, len(data) - 20) == (20, NLMSG_DONE):
        return True
    pos, end, unpack = 0, len(data) - 16, struct.unpack_from
    while pos <= end:
        ln, kind = unpack("=IH", data, pos)
        if kind in (NLMSG_DONE, NLMSG_ERROR):
            return True
        if ln < 16:
            break
        pos += (ln + 3) & ~3
    return pos == 0


def parse_links(data: bytes) -> dict[int, str]:
    """ifindex -> name from an RTM_GETLINK dump."""
    out = {}
    for kind, body in _messages(data):
        if kind != RTM_NEWLINK or len(body) < 16:
            continue
        index = struct.unpack_from("=i", body, 4)[0]
        name = _attrs(body, 16, len(body)).get(IFLA_IFNAME, [b""])[0].rstrip(b"\0").decode()
        out[index] = name
    return out


def parse_routes(data: bytes, ifnames: dict[int, str], memo: dict[bytes, KRoute | None] | None = None
                 ) -> list[KRoute]:
    """The main table's IPv4 routes in an RTM_GETROUTE dump.

    ``memo`` (kept by the caller for dumps of one namespace, whose ``ifnames`` they share): each
    message's bytes -> its route (None: not a main-table IPv4 route). A run parses a table of some
    seventy routes whenever one of them changes, and the others come back as the very same bytes.
    """
    out = []
    unpack, pos, size = struct.unpack_from, 0, len(data)
    while pos + 16 <= size:
        ln, kind = unpack("=IH", data, pos)
        if ln < 16:
            break
        end = min(pos + ln, size)
        if kind == RTM_NEWROUTE and end - pos >= 28:
            if memo is None:
                r = _route(data, pos + 16, end, ifnames)
            else:
                key = data[pos:end]
                r = memo[key] if key in memo else memo.setdefault(key, _route(data, pos + 16, end, ifnames))
            if r is not None:
                out.append(r)
        pos += (ln + 3) & ~3
    out.sort(key=_route_order)
    return out


def _route_order(r: KRoute) -> tuple:
    """The order of KRoute's fields (the dataclass's own), without its comparison methods' tuples per pair."""
    return (r.prefix, r.kind, r.proto, r.nexthops)


def _route(data: bytes, start: int, end: int, ifnames: dict[int, str]) -> KRoute | None:
    """The route of the RTM_NEWROUTE message whose body is ``data[start:end]``, or None if not main IPv4."""
    unpack = struct.unpack_from
    family, dst_len, _src_len, _tos, table, proto, _scope, rtype = unpack("=8B", data, start)
    if family != socket.AF_INET:
        return None
    at: dict[int, tuple[int, int]] = {}   # attribute type -> where its first value starts and ends
    pos = start + 12
    while pos + 4 <= end:
        ln, kind = unpack("=HH", data, pos)
        if ln < 4:
            break
        at.setdefault(kind & 0x3FFF, (pos + 4, min(pos + ln, end)))
        pos += (ln + 3) & ~3
    if RTA_TABLE in at:
        table = unpack("=I", data, at[RTA_TABLE][0])[0]
    if table != RT_TABLE_MAIN:
        return None
    dst = _ip(data[slice(*at[RTA_DST])]) if RTA_DST in at else "0.0.0.0"
    hops: list[tuple[str, str]] = []
    if RTA_MULTIPATH in at:
        mp = data[slice(*at[RTA_MULTIPATH])]
        pos = 0
        while pos + 8 <= len(mp):
            ln, _flags, _hops, oif = unpack("=HBBi", mp, pos)
            if ln < 8:
                break
            sub = _attrs(mp, pos + 8, pos + ln)
            gw = _ip(sub[RTA_GATEWAY][0]) if RTA_GATEWAY in sub else ""
            hops.append((gw, ifnames.get(oif, str(oif))))
            pos += (ln + 3) & ~3
    elif RTA_OIF in at:
        oif = unpack("=i", data, at[RTA_OIF][0])[0]
        gw = _ip(data[slice(*at[RTA_GATEWAY])]) if RTA_GATEWAY in at else ""
        hops.append((gw, ifnames.get(oif, str(oif))))
    return KRoute(f"{dst}/{dst_len}", TYPES.get(rtype, str(rtype)), PROTOS.get(proto, str(proto)),
                  tuple(sorted(hops)))


_libc = None


def _setns(fd: int) -> None:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise KernelTableError(f"cannot enter a router's network namespace ({os.strerror(err)})", "run as root")


def netlink_in(ns_path: str, groups: int = 0) -> socket.socket:
    """A NETLINK_ROUTE socket that lives in the namespace at ``ns_path`` (this thread returns home after),
    subscribed to the multicast ``groups`` (a mask of RTMGRP_* bits)."""
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        target = os.open(ns_path, os.O_RDONLY)
        try:
            _setns(target)
            try:
                s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE)
            finally:
                _setns(home)
        finally:
            os.close(target)
    finally:
        os.close(home)
    s.bind((0, groups))
    s.settimeout(5.0)
    return s


class NetlinkTable:
    """One namespace's main table, read on demand.

    Most reads find the table as it was (a round of timers reads every router's, a delivery its
    receiver's, and few of them change a route), so a second socket listens for the kernel's route
    notifications: the kernel queues one on it, in the writer's own system call, for every IPv4
    route added, changed or removed in the namespace. A read that finds none since the last dump
    returns that dump's routes without asking for another.
    """

    def __init__(self, ns_path: str) -> None:
        self.sock = netlink_in(ns_path)
        self.watch = netlink_in(ns_path, RTMGRP_IPV4_ROUTE)
        self.watch.setblocking(False)
        self._last_key: bytes | None = None
        self._last: list[KRoute] = []
        self._routes: dict[bytes, KRoute | None] = {}   # parse_routes' memo (emptied past MEMO_SIZE entries)
        self.dumps = 0
        self.ifnames = parse_links(self._dump(RTM_GETLINK, struct.pack("=Bxxxiii", socket.AF_UNSPEC, 0, 0, 0)))

    def _changed(self) -> bool:
        """Whether a route notification arrived since the last call (read them all)."""
        changed = False
        while True:
            try:
                if not self.watch.recv(1 << 16):
                    return changed
            except BlockingIOError:
                return changed
            except OSError:   # ENOBUFS: notifications were lost -- the table may have changed
                pass
            changed = True

    def _dump(self, kind: int, body: bytes) -> bytes:
        # Every dump carries the same sequence number, which the kernel repeats in each message
        # header: a table that did not change then dumps to the very same bytes.
        self.sock.send(struct.pack("=IHHII", 16 + len(body), kind, NLM_F_REQUEST | NLM_F_DUMP, _DUMP_SEQ, 0) + body)
        chunks = []
        while True:
            data = self.sock.recv(1 << 20)
            chunks.append(data)
            if _ends_dump(data):
                return b"".join(chunks)

    def routes(self) -> list[KRoute]:
        """The table now: dumped only after a route notification, parsed only when its bytes changed."""
        # the notifications are read before the dump: one that comes after it is kept for the next read
        if not self._changed() and self._last_key is not None:
            return self._last
        self.dumps += 1
        rtm = struct.pack("=8BI", socket.AF_INET, 0, 0, 0, 0, 0, 0, 0, 0)
        data = self._dump(RTM_GETROUTE, rtm)
        if data != self._last_key:
            if len(self._routes) > MEMO_SIZE:
                self._routes.clear()
            self._last_key, self._last = data, parse_routes(data, self.ifnames, self._routes)
        return self._last

    def close(self) -> None:
        self.sock.close()
        self.watch.close()


def with_news(tables: Mapping[str, NetlinkTable]) -> set[str]:
    """The names of ``tables`` whose :meth:`~NetlinkTable.routes` may answer something new: a route
    notification waits on its watch socket (or an error, such as lost notifications), or it was never
    dumped. The others would answer their last dump as it was: one poll of every watch socket finds
    the few to read, instead of a read tried on each."""
    by_sock = {t.watch: name for name, t in tables.items()}
    ready, _, _ = select.select(list(by_sock), [], [], 0)
    return {by_sock[s] for s in ready} | {name for name, t in tables.items() if t._last_key is None}
