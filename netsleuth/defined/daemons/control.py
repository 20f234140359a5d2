"""Reading a daemon's own state through its control socket.

BIRD answers on ``bird.ctl`` (the birdc protocol: a greeting, then one
command per line; reply lines start with a four-digit code, ``-`` while more
follow, a space on the last); FRR's daemons answer on ``<daemon>.vty`` (the
vtysh protocol: a command ended by a NUL; the reply ends with three NULs and
a status byte). Both take well under a millisecond, against about 20 ms for
a ``birdc``/``vtysh`` process per question. The parsers turn the replies
into plain routes: ``{prefix: [{"best", "from", "next_hop", "as_path", "med", ...}]}``.
"""

from __future__ import annotations

import json
import re
import socket
import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from netsleuth.errors import NetsleuthError

T = TypeVar("T")


class ControlError(NetsleuthError):
    """A daemon's control socket does not answer or answers with an error."""


def _connect(path: Path, timeout: float) -> socket.socket:
    """A blocking connection whose reads and writes the kernel gives up after ``timeout`` seconds.

    A Python socket with a timeout polls before every send and every receive: two system calls
    more per question, and a run asks the daemons tens of thousands (a poke per delivered message).
    The kernel's own timeouts (SO_RCVTIMEO, SO_SNDTIMEO) bound the wait without them; :func:`_recv`
    and :func:`_send` raise TimeoutError when one runs out, as the socket's own timeout did.
    """
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(str(path))
    except OSError as exc:
        s.close()
        raise ControlError(f"cannot reach {path.name} ({exc.strerror})", "check that the daemon runs") from None
    tv = struct.pack("@ll", int(timeout), int(timeout % 1 * 1_000_000))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, tv)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, tv)
    s.settimeout(None)
    return s


def _recv(sock: socket.socket) -> bytes:
    try:
        return sock.recv(65536)
    except BlockingIOError:   # SO_RCVTIMEO ran out
        raise TimeoutError("timed out") from None


def _send(sock: socket.socket, data: bytes) -> None:
    try:
        sock.sendall(data)
    except BlockingIOError:   # SO_SNDTIMEO ran out
        raise TimeoutError("timed out") from None


class BirdControl:
    """One connection to a BIRD control socket."""

    # a reply's last line: a four-digit code and a space, the whole line received
    FINAL = re.compile(rb"^[0-9]{4} [^\n]*\n", re.M)

    def __init__(self, path: Path, timeout: float = 5.0) -> None:
        self.sock = _connect(path, timeout)
        self.buf = b""
        self._reply()  # the greeting: 0001 BIRD x.y ready.

    def _reply(self) -> list[tuple[str, str]]:
        return _bird_lines(self._raw_reply())

    def _raw_reply(self) -> list[bytes]:
        """The lines of the next reply, up to its final one (a code and a space), undecoded."""
        while True:
            m = self.FINAL.search(self.buf)
            if m is not None:
                end = m.end()
                lines, self.buf = self.buf[: end - 1].split(b"\n"), self.buf[end:]
                return lines
            data = _recv(self.sock)
            if not data:
                raise ControlError("BIRD closed its control socket", "see the router's bird.log")
            self.buf += data

    def ask(self, cmd: str) -> list[tuple[str, str]]:
        """(code, text) per reply line; raises on an error code (8xxx, 9xxx)."""
        self.send(cmd)
        return self.answer(cmd)

    def send(self, cmd: str) -> None:
        """The first half of :meth:`ask`: lets a caller question many daemons at once, then read each."""
        _send(self.sock, cmd.encode() + b"\n")

    def answer(self, cmd: str) -> list[tuple[str, str]]:
        """The second half of :meth:`ask`: the reply to the command :meth:`send` sent."""
        lines = self._reply()
        _refused(cmd, lines)
        return lines

    def answered(self, cmd: str) -> None:
        """:meth:`answer` for a caller that only needs the reply read (a poke), not its text.

        An error reply is one line whose code starts with 8 or 9: only such a reply is decoded.
        """
        raw = self._raw_reply()
        if any(ln[:1] in (b"8", b"9") and ln[:4].isdigit() for ln in raw):
            _refused(cmd, _bird_lines(raw))

    def close(self) -> None:
        self.sock.close()


def _refused(cmd: str, lines: list[tuple[str, str]]) -> None:
    """Raise if BIRD's reply to ``cmd`` holds an error line (a code starting with 8 or 9)."""
    bad = [t for c, t in lines if c[:1] in ("8", "9")]
    if bad:
        raise ControlError(f"BIRD refused {cmd!r}: {bad[0]}", "check the command")


def _bird_lines(raw: list[bytes]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    code = ""
    for b in raw:
        s = b.decode(errors="replace")
        if len(s) >= 5 and s[:4].isdigit() and s[4] in "- ":
            code, text = s[:4], s[5:]
        else:
            text = s[1:] if s.startswith(" ") else s
        out.append((code, text))
    return out


class FrrControl:
    """One connection to an FRR daemon's vty socket (``bgpd.vty``, ``zebra.vty``, ``ripd.vty``)."""

    def __init__(self, path: Path, timeout: float = 5.0) -> None:
        self.sock = _connect(path, timeout)
        self.ask("enable")   # a vty starts in view mode; some show commands are enable-only

    def ask(self, cmd: str) -> str:
        self.send(cmd)
        return self.answer(cmd)

    def send(self, cmd: str) -> None:
        """The first half of :meth:`ask` (see :meth:`BirdControl.send`)."""
        _send(self.sock, cmd.encode() + b"\0")

    def answer(self, cmd: str) -> str:
        """The second half of :meth:`ask`: the reply to the command :meth:`send` sent."""
        buf = b""
        while not (len(buf) >= 4 and buf[-4:-1] == b"\0\0\0"):
            data = _recv(self.sock)
            if not data:
                raise ControlError("FRR closed its vty socket", "see the router's logs")
            buf += data
        if buf[-1] != 0:
            raise ControlError(f"FRR refused {cmd!r}: {buf[:-4].decode(errors='replace').strip()[:200]}",
                               "check the command")
        return buf[:-4].decode(errors="replace")

    def answered(self, cmd: str) -> None:
        """:meth:`answer` for a caller that only needs the reply read (see :meth:`BirdControl.answered`)."""
        self.answer(cmd)

    def ask_json(self, cmd: str) -> dict:
        text = self.ask(cmd + " json")
        try:
            return json.loads(text) if text.strip() else {}
        except json.JSONDecodeError:
            raise ControlError(f"FRR's answer to {cmd!r} is not JSON", "check the FRR version") from None

    def close(self) -> None:
        self.sock.close()


# ----------------------------------------------------------------- parsers

_ROUTE = re.compile(r"^(\S+/\d+)?\s+(\w+)\s+\[(\S+) [^\]]*\]\s*(\*)?")


def bird_routes(lines: list[tuple[str, str]]) -> dict[str, list[dict]]:
    """Parse ``show route all``: prefix -> routes, each with best, from (protocol), next_hop, as_path, med."""
    out: dict[str, list[dict]] = {}
    prefix = ""
    cur: dict | None = None
    for code, text in lines:
        if code != "1007" and code != "1008" and not text.startswith(("\t", " ")):
            continue
        m = _ROUTE.match(text) if code == "1007" else None
        if m:
            prefix = m.group(1) or prefix
            cur = {"best": bool(m.group(4)), "from": m.group(3)}
            out.setdefault(prefix, []).append(cur)
            continue
        if cur is None:
            continue
        t = text.strip()
        if t.startswith("via "):
            cur["via"] = t.split()[1]
        elif t.startswith("BGP.next_hop:"):
            cur["next_hop"] = t.split()[1]
        elif t.startswith("BGP.as_path:"):
            cur["as_path"] = [int(x) for x in t.split()[1:] if x.isdigit()]
        elif t.startswith("BGP.med:"):
            cur["med"] = int(t.split()[1])
        elif t.startswith("RIP.metric:"):
            cur["metric"] = int(t.split()[1])
        elif t.startswith("Type:"):
            cur["type"] = t.split()[1]
    return out


def bird_import_updates(lines: list[tuple[str, str]]) -> int:
    """The "Import updates: received" count of ``show protocols all NAME``."""
    for _, text in lines:
        t = text.strip()
        if t.startswith("Import updates:"):
            return int(t.split()[2])
    return 0


def frr_bgp_routes(d: dict) -> dict[str, list[dict]]:
    """Parse ``show bgp ipv4 unicast json``: prefix -> paths."""
    out: dict[str, list[dict]] = {}
    for prefix, paths in sorted(d.get("routes", {}).items()):
        for p in paths:
            nh = (p.get("nexthops") or [{}])[0].get("ip", "")
            out.setdefault(prefix, []).append({
                "best": bool(p.get("bestpath")), "from": p.get("peerId", ""), "next_hop": nh,
                "as_path": [int(x) for x in str(p.get("path", "")).split() if x.isdigit()],
                "med": p.get("metric")})
    return out


def frr_zebra_routes(d: dict) -> dict[str, list[dict]]:
    """Parse zebra's ``show ip route json``: prefix -> routes (protocol, selected, next hops, metric)."""
    out: dict[str, list[dict]] = {}
    for prefix, routes in sorted(d.items()):
        for r in routes:
            nhs = [n.get("ip") or n.get("interfaceName", "") for n in r.get("nexthops", [])]
            out.setdefault(prefix, []).append({"best": bool(r.get("selected")), "from": r.get("protocol", ""),
                                               "via": nhs[0] if nhs else "", "metric": r.get("metric")})
    return out


_RIP = re.compile(r"^([A-Z])\((\w)\)\s+(\S+/\d+)\s+(\S+)\s+(\d+)\s+(\S+)", re.M)


def frr_rip_routes(text: str) -> dict[str, list[dict]]:
    """Parse ripd's ``show ip rip``: prefix -> routes; metric 16 (timed out, awaiting garbage) is not best."""
    out: dict[str, list[dict]] = {}
    for m in _RIP.finditer(text):
        code, sub, prefix, nh, metric, frm = m.groups()
        out.setdefault(prefix, []).append({"best": int(metric) < 16, "from": f"{code}({sub})",
                                           "via": nh, "metric": int(metric)})
    return out


def wait_for(pred: Callable[[], T], timeout: float, what: str, step: float = 0.005) -> T:
    """Poll ``pred`` until it returns something truthy; raise ControlError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise ControlError(f"timed out waiting for {what}", "see the daemons' logs in the run directory")
        time.sleep(step)
