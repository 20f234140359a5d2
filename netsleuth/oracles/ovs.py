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
import subprocess
import tempfile
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from os_ken.ofproto import ofproto_v1_0 as ofp

from netsleuth.errors import EnvironmentSetupError, NetsleuthError
from netsleuth.model.actions import Action, Output
from netsleuth.model.addr import int_to_ip, int_to_mac, ip_to_int, mac_to_int
from netsleuth.model.match import FIELDS, Match

INSTALL_FIX = "apt-get install openvswitch-switch"
BINARIES = ("ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl", "ovs-ofctl")
_SBIN_DIRS = ("/usr/sbin", "/usr/local/sbin", "/sbin")
_SCHEMA_DIRS = ("/usr/share/openvswitch", "/usr/local/share/openvswitch")

# The OpenFlow 1.0 fields a switch can rewrite, in FIELDS order: the header
# state compared per output.
HEADER_FIELDS = ("dl_src", "dl_dst", "dl_vlan", "dl_vlan_pcp", "nw_tos", "nw_src", "nw_dst",
                 "tp_src", "tp_dst")
_VLAN_NONE = ofp.OFP_VLAN_NONE


class OvsNotInstalledError(EnvironmentSetupError):
    """An Open vSwitch binary or the vswitch schema is missing."""


class OvsSandboxError(NetsleuthError):
    """The sandboxed daemons failed to start, crashed or refused a command."""


class OvsRuleError(NetsleuthError):
    """A rule cannot be rendered for, or was rejected by, ovs-ofctl."""


class OvsTraceError(NetsleuthError):
    """ofproto/trace output that this module cannot read."""


# --------------------------------------------------------------------- results
@dataclass(frozen=True, slots=True)
class OvsOutput:
    """One copy of the packet leaving the switch.

    ``port`` is an OpenFlow port number (OFPP_CONTROLLER for a packet-in,
    OFPP_LOCAL for the bridge's internal port); ``changes`` holds the
    HEADER_FIELDS whose value differs from the input packet, sorted by name.
    """

    port: int
    changes: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class OvsDecision:
    """What OVS does with one packet, normalized from an ofproto/trace."""

    matched: bool                           # False: "No match" (table miss)
    outputs: tuple[OvsOutput, ...]          # in datapath order, controller included
    initial: tuple[tuple[str, int], ...]    # OF1.0 header values OVS parsed from the packet
    trace_text: str = field(default="", compare=False, repr=False)

    @property
    def to_controller(self) -> bool:
        return any(o.port == ofp.OFPP_CONTROLLER for o in self.outputs)

    @property
    def dropped(self) -> bool:
        return not self.outputs


@dataclass(frozen=True, slots=True)
class Normalization:
    """ovs-ofctl changed a match before sending it (dropped fields, usually prerequisites)."""

    before: str
    after: str


# --------------------------------------------------------------------- rendering
_SPECIAL_PORTS = {ofp.OFPP_IN_PORT: "IN_PORT", ofp.OFPP_TABLE: "TABLE", ofp.OFPP_NORMAL: "NORMAL",
                  ofp.OFPP_FLOOD: "FLOOD", ofp.OFPP_ALL: "ALL", ofp.OFPP_LOCAL: "LOCAL"}


def render_match(match: Match) -> str:
    """ovs-ofctl text whose OpenFlow 1.0 encoding has the same wildcards and values.

    Uses the match's ``masks``/``values`` (netsleuth.model.match.Match).  The
    PCP of an untagged (dl_vlan=0xffff) match is left out: OVS ignores it on
    the wire, but its text parser would turn it into "tagged, VLAN id 0".
    """
    masks, values = match.masks, match.values
    parts: list[str] = []
    for i, name in enumerate(FIELDS):
        mask, value = masks[i], values[i]
        if not mask:
            continue
        if name == "dl_vlan_pcp" and masks[3] and values[3] == _VLAN_NONE:
            continue
        if name in ("dl_src", "dl_dst"):
            text = int_to_mac(value)
        elif name in ("nw_src", "nw_dst"):
            text = f"{int_to_ip(value)}/{mask.bit_count()}"
        elif name == "dl_type":
            text = f"0x{value:04x}"
        elif name == "dl_vlan" and value == _VLAN_NONE:
            text = "0xffff"
        else:
            text = str(value)
        parts.append(f"{name}={text}")
    return ",".join(parts)


def render_action(action: Action) -> str:
    """ovs-ofctl text of one netsleuth action (their ``str`` is that syntax)."""
    if isinstance(action, Output):
        port = action.port
        if port == ofp.OFPP_CONTROLLER:
            return f"CONTROLLER:{action.max_len}"
        if port in _SPECIAL_PORTS:
            return _SPECIAL_PORTS[port]
        if port > ofp.OFPP_MAX:
            raise OvsRuleError(f"output to port {port:#x} has no ovs-ofctl spelling",
                               "output to a physical port or IN_PORT/TABLE/NORMAL/FLOOD/ALL/CONTROLLER/LOCAL")
    return str(action)


def render_rule(match: Match, priority: int, actions: Sequence[Action]) -> str:
    """One ``add-flows`` line: ``priority=P,<match>,actions=<actions>``."""
    acts = ",".join(render_action(a) for a in actions) or "drop"
    text = render_match(match)
    return f"priority={priority}" + (f",{text}" if text else "") + f",actions={acts}"


# --------------------------------------------------------------------- trace parsing
def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _num(text: str) -> int:
    """An int, MAC or IPv4 address as printed by OVS."""
    if ":" in text:
        return mac_to_int(text)
    if text.count(".") == 3:
        return ip_to_int(text)
    return int(text, 0)


def parse_flow_line(flow: str) -> dict[str, int]:
    """OpenFlow 1.0 header values from a trace's ``Flow:`` line.

    ARP addresses/opcode and ICMP type/code appear under the 1.0 names
    (nw_src/nw_dst/nw_proto, tp_src/tp_dst), as in an ``ofp_match``.
    """
    kv: dict[str, str] = {}
    for token in _split_top(flow):
        key, sep, value = token.partition("=")
        if sep:
            kv[key] = value
    state = {name: 0 for name in HEADER_FIELDS}
    state["dl_src"] = _num(kv.get("dl_src", "0"))
    state["dl_dst"] = _num(kv.get("dl_dst", "0"))
    if "dl_vlan" in kv:
        state["dl_vlan"] = int(kv["dl_vlan"], 0)
        state["dl_vlan_pcp"] = int(kv.get("dl_vlan_pcp", "0"), 0)
    else:
        tci = int(kv.get("vlan_tci", "0"), 0)
        state["dl_vlan"] = tci & 0xFFF if tci & 0x1000 else _VLAN_NONE
        state["dl_vlan_pcp"] = tci >> 13 if tci & 0x1000 else 0
    aliases = {"nw_src": ("nw_src", "arp_spa"), "nw_dst": ("nw_dst", "arp_tpa"),
               "tp_src": ("tp_src", "icmp_type"), "tp_dst": ("tp_dst", "icmp_code")}
    for name, keys in aliases.items():
        for key in keys:
            if key in kv:
                state[name] = _num(kv[key])
    state["nw_tos"] = int(kv.get("nw_tos", "0"), 0) & 0xFC
    return state


def _masked(old: int, text: str) -> int:
    value, _, mask = text.partition("/")
    if not mask:
        return _num(value)
    m = _num(mask)
    return (old & ~m) | (_num(value) & m)


# datapath set(...) key -> {attribute: OF1.0 field}; others (ttl, proto, frag, ...) ignored
_SET_KEYS: dict[str, dict[str, str]] = {
    "eth": {"src": "dl_src", "dst": "dl_dst"},
    "ipv4": {"src": "nw_src", "dst": "nw_dst", "tos": "nw_tos"},
    "arp": {"sip": "nw_src", "tip": "nw_dst"},
    "tcp": {"src": "tp_src", "dst": "tp_dst"},
    "udp": {"src": "tp_src", "dst": "tp_dst"},
    "sctp": {"src": "tp_src", "dst": "tp_dst"},
    "icmp": {"type": "tp_src", "code": "tp_dst"},
}
_SET_RE = re.compile(r"^set\((\w+)\((.*)\)\)$")
_PUSH_VLAN_RE = re.compile(r"^push_vlan\((.*)\)$")


def _apply_set(state: dict[str, int], key: str, body: str, action: str) -> None:
    attrs = _SET_KEYS.get(key)
    if attrs is None:
        raise OvsTraceError(f"unexpected datapath action {action!r}",
                            "extend netsleuth.oracles.ovs._SET_KEYS if OVS gained a header")
    for item in _split_top(body):
        attr, _, value = item.partition("=")
        name = attrs.get(attr)
        if name is not None:
            state[name] = _masked(state[name], value) & (0xFC if name == "nw_tos" else -1)


def parse_datapath_actions(text: str, initial: Mapping[str, int],
                           dp_to_of: Mapping[int, int]) -> tuple[OvsOutput, ...]:
    """Replay datapath actions on ``initial``; one OvsOutput per copy sent."""
    state = dict(initial)
    outputs: list[OvsOutput] = []

    def emit(port: int) -> None:
        changes = tuple(sorted((k, v) for k, v in state.items() if v != initial[k]))
        outputs.append(OvsOutput(port, changes))

    for action in _split_top(text):
        if action == "drop":
            continue
        if action.isdigit():
            dp_port = int(action)
            if dp_port not in dp_to_of:
                raise OvsTraceError(f"datapath port {dp_port} is not on the bridge",
                                    "the port map is stale: recreate the sandbox")
            emit(dp_to_of[dp_port])
        elif action == "pop_vlan":
            state["dl_vlan"], state["dl_vlan_pcp"] = _VLAN_NONE, 0
        elif m := _PUSH_VLAN_RE.match(action):
            fields = dict(item.partition("=")[::2] for item in _split_top(m.group(1)))
            state["dl_vlan"] = int(fields.get("vid", "0"), 0)
            state["dl_vlan_pcp"] = int(fields.get("pcp", "0"), 0)
        elif m := _SET_RE.match(action):
            _apply_set(state, m.group(1), m.group(2), action)
        elif action.startswith("userspace(") and "controller(" in action:
            emit(ofp.OFPP_CONTROLLER)
        else:
            raise OvsTraceError(f"unexpected datapath action {action!r}",
                                "only OpenFlow 1.0 actions are expected; check the installed rules")
    return tuple(outputs)


def parse_trace(text: str, dp_to_of: Mapping[int, int]) -> OvsDecision:
    """An OvsDecision from the full text of ``ofproto/trace``."""
    flow = re.search(r"^Flow: (.*)$", text, re.M)
    actions = re.search(r"^Datapath actions: (.*)$", text, re.M)
    if flow is None or actions is None:
        raise OvsTraceError("ofproto/trace printed no Flow:/Datapath actions: line",
                            "check the packet and bridge name", details=text)
    initial = parse_flow_line(flow.group(1))
    # "No match." (drop) or "No match, and a "packet-in" is called for."
    matched = re.search(r"^\s*0\. No match\b", text, re.M) is None
    outputs = parse_datapath_actions(actions.group(1), initial, dp_to_of)
    return OvsDecision(matched, outputs, tuple(sorted(initial.items())), text)


def parse_dpif_show(text: str, bridge: str) -> dict[int, int]:
    """{datapath port: OpenFlow port} for ``bridge`` from ``dpif/show``."""
    mapping: dict[int, int] = {}
    current = None
    for line in text.splitlines():
        if re.match(r"^  \S+:$", line):
            current = line.strip()[:-1]
        elif current == bridge and (m := re.match(r"^\s+\S+ (\d+)/(\d+):", line)):
            mapping[int(m.group(2))] = int(m.group(1))
    return mapping


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
    ``openflow`` (OpenFlow 1.0 unless told OpenFlow13; ``oracles/ovs13.py``
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
        self._run("ovs-vsctl", f"--db=unix:{self.dir / 'db.sock'}", "--timeout=20", *args)

    def _read_pid(self, name: str) -> int:
        try:
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
        target = f"unix:{self.dir / (self.bridge + '.mgmt')}"
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
        return tuple(Normalization(a, b) for a, b in zip(pre, post))

    def _wait_for_ofctl_disconnect(self, timeout: float = 5.0) -> None:
        """Wait until ovs-vswitchd has closed its side of ovs-ofctl's connection.

        While any OpenFlow 1.0 connection is open, even ovs-ofctl's, OVS sends
        table misses to "the controller"; without one it drops them.  Traces
        right after ovs-ofctl exits would see either, so replace_flows waits
        until the accepted socket is gone from /proc/net/unix.
        """
        path = str(self.dir / f"{self.bridge}.mgmt")
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
