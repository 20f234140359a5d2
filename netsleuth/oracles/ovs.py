"""Open vSwitch as an oracle for OpenFlow 1.0 flow-table semantics.

netsleuth's switch model claims to forward like an OpenFlow 1.0 switch.  The
strongest cheap evidence for that claim is agreement with a real switch on
many random (flow table, packet) pairs, so this module runs a real Open
vSwitch -- userspace only (``--enable-dummy --disable-system``, bridges of
``datapath_type=dummy``), no kernel module, no root-owned state -- and asks
it, with ``ofproto/trace``, what it would do with a packet.

Why it is built the way it is:

* Everything (database, sockets, pid files, logs) lives in a private
  directory and every daemon and client is pointed at it explicitly, so a
  sandbox never touches a system OVS and two sandboxes run side by side.
* Rules are installed with ``ovs-ofctl -O OpenFlow10 -F openflow10``: real
  OpenFlow 1.0 flow_mods, not Nicira extensions, so OVS applies its 1.0
  rules (an exact match gets priority 65535).  The match is rendered from
  the match's masks and values, not ``str(match)``, because ovs-ofctl's
  text parser reads ``dl_vlan=0xffff,dl_vlan_pcp=N`` as "VLAN id 0", while
  on the wire OVS ignores the PCP of an untagged match.
* Traces go over the daemon's unixctl socket as JSON-RPC (what ovs-appctl
  does), one connection per sandbox: ~0.1 ms per trace instead of ~4 ms
  for a fresh ovs-appctl process.
* "Datapath actions:" is the ground truth of what leaves the switch.  It is
  replayed on the header values OVS parsed ("Flow:"), so each output carries
  the header fields that differ from the input at the moment it is sent.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
import weakref
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from netsleuth.errors import EnvironmentSetupError, NetsleuthError
from netsleuth.model.addr import int_to_ip, int_to_mac
from netsleuth.oracles.ovs_text import (  # the text half: rules out, traces in
    Normalization,
    OvsDecision,
    OvsRuleError,
    parse_dpif_show,
    parse_trace,
    render_rule,
)

INSTALL_FIX = "apt-get install openvswitch-switch"
BINARIES = ("ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl", "ovs-ofctl")
_SBIN_DIRS = ("/usr/sbin", "/usr/local/sbin", "/sbin")
_SCHEMA_DIRS = ("/usr/share/openvswitch", "/usr/local/share/openvswitch")


class OvsNotInstalledError(EnvironmentSetupError):
    """An Open vSwitch binary or the vswitch schema is missing."""


class OvsSandboxError(NetsleuthError):
    """The sandboxed daemons failed to start, crashed or refused a command."""


# --------------------------------------------------------------------- unixctl
class _Unixctl:
    """A JSON-RPC client for an OVS daemon's unixctl socket (what ovs-appctl speaks)."""

    def __init__(self, path: Path) -> None:
        self._dir_fd = os.open(path.parent, os.O_RDONLY)
        # Via /proc the socket address stays short whatever the directory's length.
        address = f"/proc/self/fd/{self._dir_fd}/{path.name}"
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(30)
        self._sock.connect(address)
        self._decoder = json.JSONDecoder()
        self._buf = ""
        self._id = 0

    def call(self, method: str, *params: str) -> str:
        self._id += 1
        self._sock.sendall(json.dumps({"method": method, "params": list(params), "id": self._id}).encode())
        while True:
            text = self._buf.lstrip()
            if text:
                try:
                    reply, end = self._decoder.raw_decode(text)
                except ValueError:
                    pass
                else:
                    self._buf = text[end:]
                    if reply.get("error") is not None:
                        raise OvsSandboxError(f"ovs-appctl {method} failed: {str(reply['error']).strip()}",
                                              "check the arguments against `ovs-appctl list-commands`")
                    return str(reply.get("result", ""))
            chunk = self._sock.recv(1 << 16)
            if not chunk:
                raise OvsSandboxError(f"ovs-vswitchd closed its control socket during {method}",
                                      "the daemon probably crashed: see ovs-vswitchd.log in the sandbox")
            self._buf += chunk.decode()

    def close(self) -> None:
        self._sock.close()
        os.close(self._dir_fd)


# --------------------------------------------------------------------- sandbox
def find_binaries(search_path: str | None = None) -> dict[str, str]:
    """Absolute paths of the OVS programs; OvsNotInstalledError names what is missing."""
    path = search_path if search_path is not None else os.pathsep.join(
        [os.environ.get("PATH", ""), *_SBIN_DIRS])
    found = {name: shutil.which(name, path=path) for name in BINARIES}
    missing = [name for name, where in found.items() if where is None]
    if missing:
        raise OvsNotInstalledError(f"Open vSwitch is not installed ({', '.join(missing)} not found)",
                                   INSTALL_FIX)
    return {name: str(where) for name, where in found.items()}


def find_schema(search_dirs: Sequence[str] | None = None) -> Path:
    dirs = list(search_dirs) if search_dirs is not None else [
        *([os.environ["OVS_PKGDATADIR"]] if "OVS_PKGDATADIR" in os.environ else []), *_SCHEMA_DIRS]
    for d in dirs:
        candidate = Path(d) / "vswitch.ovsschema"
        if candidate.is_file():
            return candidate
    raise OvsNotInstalledError("the Open vSwitch database schema vswitch.ovsschema was not found",
                               INSTALL_FIX)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie is dead for our purpose; its parent (init, after --detach) reaps it.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1] != "Z"
    except OSError:
        return False


def _stop_daemons(pids: list[int]) -> None:
    """Terminate the daemons this sandbox started (by pid), waiting for them to go."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            if _pid_alive(pid):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 5.0
        while any(_pid_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.01)
        if not any(_pid_alive(p) for p in pids):
            return


class OvsSandbox:
    """A private ovsdb-server + ovs-vswitchd with one dummy bridge of ``ports`` ports.

    ``with OvsSandbox(tmp_path) as ovs: ovs.replace_flows(rules); ovs.trace(1, pkt)``.
    Ports are named p1..pN with OpenFlow numbers 1..N; the bridge is
    fail_mode=secure (no flows of its own, no controller) and speaks only
    ``openflow`` (OpenFlow 1.0 unless told OpenFlow13; ``oracles/of13.py``
    builds on that).
    """

    def __init__(self, workdir: str | os.PathLike[str] | None = None, *, ports: int = 4,
                 bridge: str = "br0", keep: bool = False, search_path: str | None = None,
                 openflow: str = "OpenFlow10") -> None:
        if openflow not in ("OpenFlow10", "OpenFlow13"):
            raise OvsSandboxError(f"openflow={openflow!r}", "use OpenFlow10 or OpenFlow13")
        if not 1 <= ports <= 255:
            raise OvsSandboxError(f"ports={ports} is out of range", "use 1..255 ports")
        self.ports = ports
        self.openflow = openflow
        self.bridge = bridge
        self.keep = keep
        self._workdir = Path(workdir) if workdir is not None else None
        self._search_path = search_path
        self.dir: Path | None = None
        self._bins: dict[str, str] = {}
        self._pids: list[int] = []
        self._ctl: _Unixctl | None = None
        self._finalizer: weakref.finalize | None = None
        self.dp_to_of: dict[int, int] = {}

    # ------------------------------------------------------------ lifecycle
    def __enter__(self) -> OvsSandbox:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._bins = find_binaries(self._search_path)
        schema = find_schema()
        if self._workdir is not None:
            self._workdir.mkdir(parents=True, exist_ok=True)
        self.dir = Path(tempfile.mkdtemp(prefix="ovs-", dir=self._workdir)).resolve()
        if len(str(self.dir / f"{self.bridge}.mgmt")) > 100:
            # Unix socket names are limited to 108 bytes and OVS would bind
            # through /proc/self/fd, hiding the name _wait_for_ofctl_disconnect
            # looks for: use a short private directory instead.
            self.dir.rmdir()
            self.dir = Path(tempfile.mkdtemp(prefix="netsleuth-ovs-")).resolve()
        self._finalizer = weakref.finalize(self, _stop_daemons, self._pids)
        try:
            self._start_daemons(schema)
        except BaseException:
            self.stop()
            raise

    def _start_daemons(self, schema: Path) -> None:
        d = self.dir
        assert d is not None
        self._run("ovsdb-tool", "create", str(d / "conf.db"), str(schema))
        self._run("ovsdb-server", str(d / "conf.db"), f"--remote=punix:{d / 'db.sock'}",
                  f"--unixctl={d / 'ovsdb-server.ctl'}", f"--pidfile={d / 'ovsdb-server.pid'}",
                  f"--log-file={d / 'ovsdb-server.log'}", "-vconsole:off", "--detach")
        self._pids.append(self._read_pid("ovsdb-server.pid"))
        self._vsctl("--no-wait", "init")
        self._run("ovs-vswitchd", f"unix:{d / 'db.sock'}", "--enable-dummy", "--disable-system",
                  f"--unixctl={d / 'ovs-vswitchd.ctl'}", f"--pidfile={d / 'ovs-vswitchd.pid'}",
                  f"--log-file={d / 'ovs-vswitchd.log'}", "-vconsole:off", "--detach")
        self._pids.append(self._read_pid("ovs-vswitchd.pid"))
        cmd = ["add-br", self.bridge, "--", "set", "bridge", self.bridge, "datapath_type=dummy",
               "fail_mode=secure", f"protocols={self.openflow}"]
        for n in range(1, self.ports + 1):
            cmd += ["--", "add-port", self.bridge, f"p{n}", "--", "set", "interface", f"p{n}",
                    "type=dummy", f"ofport_request={n}"]
        self._vsctl(*cmd)
        self._ctl = _Unixctl(d / "ovs-vswitchd.ctl")
        self.dp_to_of = parse_dpif_show(self._ctl.call("dpif/show"), self.bridge)
        expected = set(range(1, self.ports + 1))
        if not expected <= set(self.dp_to_of.values()):
            raise OvsSandboxError(f"bridge {self.bridge} came up with OpenFlow ports "
                                  f"{sorted(self.dp_to_of.values())}, wanted 1..{self.ports}",
                                  "see ovs-vswitchd.log in the sandbox (keep=True keeps it)")

    def stop(self) -> None:
        if self._ctl is not None:
            self._ctl.close()
            self._ctl = None
        if self._finalizer is not None:
            self._finalizer()  # runs _stop_daemons once
            self._finalizer = None
        self._pids.clear()
        if self.dir is not None and not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)

    # ------------------------------------------------------------ commands
    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        for var in ("OVS_RUNDIR", "OVS_DBDIR", "OVS_LOGDIR", "OVS_SYSCONFDIR"):
            env[var] = str(self.dir)
        return env

    def _run(self, program: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([self._bins[program], *args], input=stdin, capture_output=True,
                              text=True, env=self._env(), timeout=60)
        if proc.returncode != 0:
            raise OvsSandboxError(f"{program} {' '.join(args[:3])} failed: {proc.stderr.strip()[:500]}",
                                  f"see the logs in {self.dir} (OvsSandbox(keep=True) keeps them)",
                                  details=self._log_tail())
        return proc

    def _vsctl(self, *args: str) -> None:
        # dir is set once the sandbox started
        self._run("ovs-vsctl", f"--db=unix:{self.dir / 'db.sock'}", "--timeout=20", *args)  # type: ignore[operator]

    def _read_pid(self, name: str) -> int:
        try:
            # dir is set once the sandbox started
            return int((self.dir / name).read_text().strip())  # type: ignore[operator]
        except (OSError, ValueError):
            raise OvsSandboxError(f"{name} was not written", "see the logs in the sandbox",
                                  details=self._log_tail()) from None

    def _log_tail(self) -> str:
        out = []
        for name in ("ovsdb-server.log", "ovs-vswitchd.log"):
            path = self.dir / name if self.dir else None
            if path and path.exists():
                out.append(f"== {name}\n" + "\n".join(path.read_text(errors="replace").splitlines()[-20:]))
        return "\n".join(out)

    def _ofctl(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        # dir is set once the sandbox started
        target = f"unix:{self.dir / (self.bridge + '.mgmt')}"  # type: ignore[operator]
        flags = ["-O", "OpenFlow10", "-F", "openflow10"] if self.openflow == "OpenFlow10" else ["-O", self.openflow]
        return self._run("ovs-ofctl", *flags, args[0], target, *args[1:], stdin=stdin)

    # ------------------------------------------------------------ API
    def replace_flows(self, rules: Iterable[Any]) -> tuple[Normalization, ...]:
        """Make the flow table exactly ``rules``.

        A rule is a ``(match, priority, actions)`` triple of netsleuth values
        or a ready ``add-flows`` line.  Returns the matches ovs-ofctl
        normalized (fields dropped for missing prerequisites), so a caller
        can tell when OVS installed something else than it asked for.
        """
        lines = ["delete"]
        for rule in rules:
            lines.append("add " + (rule if isinstance(rule, str) else render_rule(*rule)))
        try:
            proc = self._ofctl("add-flows", "-", stdin="\n".join(lines) + "\n")
        except OvsSandboxError as exc:
            raise OvsRuleError(f"ovs-ofctl rejected the rules: {exc.problem}",
                               "render only OpenFlow 1.0 matches/actions", details="\n".join(lines)) from None
        self._wait_for_ofctl_disconnect()
        pre = re.findall(r"\| pre: (.*)$", proc.stderr, re.M)
        post = re.findall(r"\|post: (.*)$", proc.stderr, re.M)
        return tuple(Normalization(a, b) for a, b in zip(pre, post, strict=False))

    def _wait_for_ofctl_disconnect(self, timeout: float = 5.0) -> None:
        """Wait until ovs-vswitchd has closed its side of ovs-ofctl's connection.

        While any OpenFlow 1.0 connection is open, even ovs-ofctl's, OVS sends
        table misses to "the controller"; without one it drops them.  Traces
        right after ovs-ofctl exits would see either, so replace_flows waits
        until the accepted socket is gone from /proc/net/unix.
        """
        path = str(self.dir / f"{self.bridge}.mgmt")  # type: ignore[operator]  # dir is set once the sandbox started
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                lines = Path("/proc/net/unix").read_text().splitlines()[1:]
            except OSError:
                return  # not Linux: best effort
            # Columns: Num RefCount Protocol Flags Type St Inode Path; St 01 = listening.
            if not any(len(cols) == 8 and cols[7] == path and cols[5] != "01"
                       for cols in (line.split() for line in lines)):
                return
            time.sleep(0.0005)
        raise OvsSandboxError("ovs-vswitchd kept ovs-ofctl's connection open",
                              "the daemon is stuck: see ovs-vswitchd.log in the sandbox")

    def dump_flows(self) -> str:
        return self._ofctl("dump-flows").stdout

    def openflow_exchange(self, messages: Iterable[bytes]) -> list[list[tuple[int, bytes]]]:
        """Send each OpenFlow message (wire bytes of the bridge's version) as a controller would, each
        followed by a barrier, on one fresh connection; per message, the (type, body) of every reply.

        How a model's answers to raw messages (errors, silent acceptance) are
        compared with a real switch's: ovs-ofctl would check or rewrite them first.
        """
        assert self.dir is not None
        version = 1 if self.openflow == "OpenFlow10" else 4
        barrier, barrier_reply = (18, 19) if version == 1 else (20, 21)
        path = self.dir / f"{self.bridge}.mgmt"
        dir_fd = os.open(path.parent, os.O_RDONLY)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(20)
        results: list[list[tuple[int, bytes]]] = []
        try:
            sock.connect(f"/proc/self/fd/{dir_fd}/{path.name}")
            sock.sendall(struct.pack("!BBHI", version, 0, 8, 1))
            buf = b""
            for i, msg in enumerate(messages):
                xid, barrier_xid = 0x1000 + i, 0x2000 + i
                sock.sendall(msg[:4] + struct.pack("!I", xid) + msg[8:])
                sock.sendall(struct.pack("!BBHI", version, barrier, 8, barrier_xid))
                replies: list[tuple[int, bytes]] = []
                while True:
                    while len(buf) < 8 or len(buf) < struct.unpack_from("!H", buf, 2)[0]:
                        chunk = sock.recv(1 << 16)
                        if not chunk:
                            raise OvsSandboxError("ovs-vswitchd closed the OpenFlow connection",
                                                  "see ovs-vswitchd.log in the sandbox")
                        buf += chunk
                    _, mtype, length, mxid = struct.unpack_from("!BBHI", buf)
                    body, buf = buf[8:length], buf[length:]
                    if mtype == barrier_reply and mxid == barrier_xid:
                        break
                    if mxid == xid:
                        replies.append((mtype, body))
                results.append(replies)
        finally:
            sock.close()
            os.close(dir_fd)
        self._wait_for_ofctl_disconnect()
        return results

    def tx_packets(self) -> int:
        """Packets the bridge's numbered ports (not LOCAL) have sent, together (``ovs-ofctl dump-ports``)."""
        text = self._ofctl("dump-ports").stdout
        return sum(int(n) for port, n in re.findall(r"port +(\w+): rx [^\n]*\n\s*tx pkts=(\d+)", text)
                   if port.isdigit())

    def limit_table(self, flows: int, table: int = 0) -> None:
        """``table`` holds at most ``flows`` entries; an ADD beyond is refused (not evicted)."""
        self._vsctl("--", "--id=@ft", "create", "Flow_Table", f"flow_limit={flows}", "overflow_policy=refuse",
                    "--", "set", "Bridge", self.bridge, f"flow_tables:{table}=@ft")

    def appctl(self, method: str, *params: str) -> str:
        """Any ovs-appctl command on this sandbox's ovs-vswitchd."""
        if self._ctl is None:
            raise OvsSandboxError("the sandbox is not running", "use it inside `with OvsSandbox(...)`")
        return self._ctl.call(method, *params)

    def trace(self, in_port: int, packet: Any) -> OvsDecision:
        """What the bridge does with ``packet`` arriving on OpenFlow port ``in_port``.

        ``packet`` is a netsleuth Packet (anything with ``to_bytes()``; traced
        as the exact wire bytes), raw bytes, or a mapping / string of
        ovs-ofctl flow fields (``{"dl_type": 0x0800, "nw_src": "10.0.0.1"}``).
        """
        if hasattr(packet, "to_bytes"):
            packet = packet.to_bytes()
        if isinstance(packet, (bytes, bytearray)):
            text = self.appctl("ofproto/trace", self.bridge, f"in_port={in_port}", bytes(packet).hex())
        else:
            text = self.appctl("ofproto/trace", self.bridge, f"in_port={in_port}," + _flow_text(packet))
        return parse_trace(text, self.dp_to_of)


def _flow_text(fields: Mapping[str, Any] | str) -> str:
    if isinstance(fields, str):
        return fields
    parts = []
    for key, value in fields.items():
        if isinstance(value, int) and key in ("dl_src", "dl_dst"):
            value = int_to_mac(value)
        elif isinstance(value, int) and key in ("nw_src", "nw_dst"):
            value = int_to_ip(value)
        elif isinstance(value, int) and key == "dl_type":
            value = f"0x{value:04x}"
        parts.append(f"{key}={value}")
    return ",".join(parts)
