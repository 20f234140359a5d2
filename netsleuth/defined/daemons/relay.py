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
import sys

from netsleuth.defined.daemons.relaycore import RelayCore

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


def _open(iface: str) -> socket.socket:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((iface, 0))
    s.setblocking(False)
    return s


class Relay:
    def __init__(self, ctl: socket.socket) -> None:
        self.ctl = ctl
        self.rbuf = b""
        self.sel = selectors.DefaultSelector()
        self.socks: dict[str, socket.socket] = {}
        self.core: RelayCore | None = None

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
                self.sel.register(s, selectors.EVENT_READ, iface)
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
            self._drain()
            self.core.set_link(list(d["ifaces"]), bool(d["up"]))
            self._emit()
            self.ctl.sendall((json.dumps({"ev": "link", "ifaces": d["ifaces"], "up": d["up"]}) + "\n").encode())
        elif cmd == "stats":
            # a barrier: every frame the daemons sent before this command is read (and held) first
            self._drain()
            self._emit()
            self.ctl.sendall((json.dumps({"ev": "stats", "frames": self.core.frames, "rip": self.core.rip})
                              + "\n").encode())

    def _drain(self) -> None:
        """Read every frame already queued on the relay's sockets."""
        for iface in sorted(self.socks):
            self._frames(self.socks[iface], iface, limit=1 << 30)

    def _control(self) -> bool:
        data = self.ctl.recv(65536)
        if not data:
            return False
        self.rbuf += data
        while b"\n" in self.rbuf:
            line, self.rbuf = self.rbuf.split(b"\n", 1)
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
                    self._frames(key.fileobj, key.data)  # type: ignore[arg-type]
            if self.core is not None:
                self._emit()

    def _frames(self, s: socket.socket, iface: str, limit: int = 64) -> None:
        assert self.core is not None
        for _ in range(limit):
            try:
                frame, addr = s.recvfrom(65536)
            except BlockingIOError:
                return
            if addr[2] == PACKET_OUTGOING:
                continue
            self._send(self.core.on_frame(iface, frame))


def main(argv: list[str]) -> int:
    ctl = socket.socket(fileno=int(argv[0]))
    ctl.setblocking(True)
    try:
        Relay(ctl).run()
    except (BrokenPipeError, ConnectionResetError, KeyboardInterrupt):
        pass
    return 0


if __name__ == "__main__":
    os._exit(main(sys.argv[1:]))
