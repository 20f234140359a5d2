"""The relay process: ``python -m netsleuth.defined.daemons.relay FD`` inside the relay namespace.

The edge around :class:`~.relaycore.RelayCore`: one AF_PACKET socket per
relay-side veth, and a control stream on file descriptor FD (a socketpair
end netsleuth passes down). netsleuth writes one JSON object per line --
first the setup ``{"ends": {...}, "owner": {...}, "hold": bool}``, then
commands ``{"cmd": "release", "id": N}``, ``{"cmd": "hold", "on": bool}``,
``{"cmd": "stats"}`` (after reading every frame already queued: a barrier), ``{"cmd": "link",
"ifaces": [...], "up": bool}`` (cut or mend a link) -- and reads the core's events back as JSON lines.
The relay exits when the control stream closes.
"""

from __future__ import annotations

import json
import os
import selectors
import socket
import struct
import sys
import threading
import time

from netsleuth.defined.daemons.relaycore import RelayCore
from netsleuth.defined.daemons.wire import HEADER, TYPES, tcp_of

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
SOL_PACKET = 263
PACKET_STATISTICS = 6
PACKET_IGNORE_OUTGOING = 23   # Linux 4.20
# How long a barrier waits for frames the kernel has counted but not yet handed to the relay's
# sockets; past it the barrier answers anyway (a frame lost there would otherwise hang the run).
IN_FLIGHT_WAIT = 5.0


def rx_counts() -> dict[str, int]:
    """Frames each interface of this namespace has received, as the kernel counts them.

    A veth counts a frame on the receiving end when the sender transmits it,
    before the frame is handed to packet sockets (that happens later, in a
    softirq that a busy machine may defer): the count says what is on its way.
    """
    global _NET_DEV
    if _NET_DEV is None:   # a proc file read from offset 0 is generated afresh: one open file serves every read
        _NET_DEV = os.open("/proc/self/net/dev", os.O_RDONLY)
    size = 1 << 16   # (a buffer past 128 KiB would be mapped and unmapped on every read)
    while len(data := os.pread(_NET_DEV, size, 0)) == size:
        size *= 4
    counts = {}
    for line in data.decode().splitlines()[2:]:
        name, _, rest = line.partition(":")
        counts[name.strip()] = int(rest.split()[1])
    return counts


_NET_DEV: int | None = None


def _open(iface: str) -> socket.socket:
    """A packet socket on ``iface`` alone, for every protocol.

    It is made with protocol 0 (it takes no frame yet) and given ETH_P_ALL by ``bind``: a
    socket made with a protocol already listens on every interface, and binding it to one
    then unhooks it first, which waits for an RCU grace period (~9 ms per socket here, half
    a second for the 48 interfaces of a 24-link map); hooking it once, at bind, waits for none.
    """
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    s.bind((iface, ETH_P_ALL))   # (Python puts the protocol in network byte order itself)
    s.setblocking(False)
    return s


def ignore_outgoing(s: socket.socket) -> bool:
    """Have the kernel keep the frames going out of the socket's interface from it; False if it cannot.

    Only the relay sends on its interfaces, and a packet socket does not see its own frames, so
    none comes in practice; with the option set, none can, and a frame is read without its address
    (which costs Python an ioctl per frame, to name the interface).
    """
    try:
        s.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
    except OSError:
        return False
    return True


class Relay:
    def __init__(self, ctl: socket.socket) -> None:
        self.ctl = ctl
        self.rbuf = b""
        self.sel = selectors.DefaultSelector()
        self.socks: dict[str, socket.socket] = {}
        self.core: RelayCore | None = None
        # per interface: frames the kernel had counted when its socket opened, and frames read (or
        # dropped by a full socket buffer) since
        self.base: dict[str, int] = {}
        self.read: dict[str, int] = {}
        self.no_outgoing = True   # every socket leaves outgoing frames out (ignore_outgoing)

    def _send(self, out: list[tuple[str, bytes]]) -> None:
        for iface, frame in out:
            try:
                self.socks[iface].send(frame)
            except OSError:
                pass  # the link is down (its namespace is going away): the frame is lost, as on a wire

    def _emit(self) -> None:
        assert self.core is not None
        evs = self.core.take_events()
        if evs:
            self.ctl.sendall(b"".join((json.dumps(e) + "\n").encode() for e in evs))

    def _command(self, d: dict) -> None:
        if self.core is None:
            ends = {k: (v[0], v[1]) for k, v in d["ends"].items()}
            self.core = RelayCore(ends, d["owner"], bool(d.get("hold", True)), bool(d.get("hold_datagrams", False)))
            for iface in sorted(ends):
                s = self.socks[iface] = _open(iface)
                self.no_outgoing = ignore_outgoing(s) and self.no_outgoing
                self.sel.register(s, selectors.EVENT_READ, iface)
            counts = rx_counts()
            for iface in sorted(ends):
                self.base[iface], self.read[iface] = counts.get(iface, 0), 0
            self.ctl.sendall(b'{"ev": "ready"}\n')
            return
        cmd = d.get("cmd")
        if cmd == "release":
            self._send(self.core.release(int(d["id"])))
        elif cmd == "hold":
            self._send(self.core.set_hold(bool(d["on"])))
        elif cmd == "dump":
            self.ctl.sendall((json.dumps({"ev": "dump", **self.core.dump()}) + "\n").encode())
        elif cmd == "link":
            self._drain(exact=True)
            self.core.set_link(list(d["ifaces"]), bool(d["up"]))
            self._emit()
            self.ctl.sendall((json.dumps({"ev": "link", "ifaces": d["ifaces"], "up": d["up"]}) + "\n").encode())
        elif cmd == "stats":
            # a barrier: every frame the daemons sent before this command is read (and held) first;
            # "exact" waits for those still on their way in the kernel too (_drain)
            self._drain(exact=bool(d.get("exact")))
            self._emit()
            self.ctl.sendall((json.dumps({"ev": "stats", "frames": self.core.frames, "rip": self.core.rip})
                              + "\n").encode())

    def _drain(self, exact: bool = False) -> None:
        """Read every frame already queued on the relay's sockets; ``exact``: those still on their way too.

        A frame a daemon sent before the barrier is counted on the relay's end of
        the veth at once but may reach the relay's socket only later; a round
        closed without it would deliver it a round later, in another order than
        a run on an idle machine. An exact barrier reads until every frame the
        kernel counted is read (it costs a read of the namespace's counters, so
        netsleuth asks for it only to confirm that a round is closed).
        """
        deadline = time.monotonic() + IN_FLIGHT_WAIT
        while True:
            self._read_queued()
            if not exact:
                return
            if not self._in_flight() or time.monotonic() > deadline:
                return
            time.sleep(0.0005)

    def _read_queued(self) -> None:
        """Read each socket that has a frame queued, to the end, in interface name order.

        One poll of the selector finds them: a barrier visits the few sockets that hold
        something instead of trying a read on every one of the relay's interfaces.
        """
        ready = sorted(key.data for key, _ in self.sel.select(0) if key.data is not None)
        for iface in ready:
            self._frames(self.socks[iface], iface, limit=1 << 30)

    def _in_flight(self) -> bool:
        """Whether the kernel has counted a frame on some interface that the relay has not read yet."""
        counts = rx_counts()
        short = [iface for iface in self.socks if counts.get(iface, 0) - self.base[iface] > self.read[iface]]
        for iface in short:
            # a frame a full socket buffer dropped is counted here, or the barrier would wait for it (the
            # kernel keeps counting drops until asked: an interface asked only when it looks short misses none)
            drops = struct.unpack("II", self.socks[iface].getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))[1]
            self.read[iface] += drops
        return any(counts.get(iface, 0) - self.base[iface] > self.read[iface] for iface in short)

    def _control(self) -> bool:
        data = self.ctl.recv(65536)
        if not data:
            return False
        *lines, self.rbuf = (self.rbuf + data).split(b"\n")   # (a batch of releases comes in one read)
        for line in lines:
            if line.strip():
                self._command(json.loads(line))
        return True

    def run(self) -> None:
        self.sel.register(self.ctl, selectors.EVENT_READ, None)
        while True:
            for key, _ in self.sel.select():
                if key.data is None:
                    if not self._control():
                        return
                else:
                    # one frame per socket and wake-up: a socket that holds more is ready again at once,
                    # and one that held one is not tried again for nothing (a failed read and an exception)
                    self._frames(key.fileobj, key.data, limit=1)  # type: ignore[arg-type]
            if self.core is not None:
                self._emit()

    def _frames(self, s: socket.socket, iface: str, limit: int) -> None:
        assert self.core is not None
        for _ in range(limit):
            try:
                if self.no_outgoing:
                    frame = s.recv(65536)
                else:
                    frame, addr = s.recvfrom(65536)
                    if addr[2] == PACKET_OUTGOING:
                        continue
            except BlockingIOError:
                return
            self.read[iface] += 1
            out = self.core.on_frame(iface, frame)
            if TRACE:
                _trace(iface, frame, out)
            self._send(out)


# NETSLEUTH_RELAY_TRACE=1: one line per BGP segment in relay.log (wall time, interface, flow, flags, sequence
# numbers, the BGP messages it starts, how many frames went out at once) -- to read beside the daemons' logs
TRACE = bool(os.environ.get("NETSLEUTH_RELAY_TRACE"))


def _trace(iface: str, frame: bytes, out: list) -> None:
    seg = tcp_of(frame)
    if seg is None or not seg.bgp:
        return
    p, kinds = seg.payload, []
    while len(p) >= HEADER:
        kinds.append(TYPES.get(p[18], str(p[18])))
        p = p[max(HEADER, int.from_bytes(p[16:18], "big")):]
    t = time.time()
    print(f"{time.strftime('%H:%M:%S', time.gmtime(t))}.{int(t * 1e6) % 1000000:06d} {iface} "
          f"{seg.src}:{seg.sport}>{seg.dst}:{seg.dport} flags={seg.flags:#04x} seq={seg.seq} ack={seg.ack} "
          f"len={len(seg.payload)} {','.join(kinds) or '-'} out={len(out)}", file=sys.stderr, flush=True)


def close_all(socks: list[socket.socket]) -> None:
    """Close packet sockets side by side, each in a thread of its own.

    Closing a packet socket waits for an RCU grace period (~10 ms here). Closed one after
    the other -- as the kernel closes a dying process's files -- the 48 sockets of a
    24-link map hold the relay's exit (and the run's end) for half a second; closes that
    wait together share their grace periods (~60 ms in all).
    """
    threads = [threading.Thread(target=s.close) for s in socks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def main(argv: list[str]) -> int:
    ctl = socket.socket(fileno=int(argv[0]))
    ctl.setblocking(True)
    relay = Relay(ctl)
    try:
        relay.run()
    except (BrokenPipeError, ConnectionResetError, KeyboardInterrupt):
        pass
    close_all(list(relay.socks.values()))
    return 0


if __name__ == "__main__":
    os._exit(main(sys.argv[1:]))
