"""Content checks for trace events: the trust boundary between a trace file and the tools.

Traces travel: a bug report attaches ``trace.jsonl``, and anything in it may
have been cut, edited or corrupted on the way. :mod:`netsleuth.trace.schema`
checks each field's JSON type; this module checks what the fields *say*
against the event's kind and the header's topology, so that every reader
above the trace layer (invariants, races, pcap, diff, step, ...) can trust
an event it is handed instead of guarding each use:

* OpenFlow messages rebuild through the codec's JSON path
  (:func:`netsleuth.openflow.codec.msg_from_json`), encode to wire bytes
  (every field within its bit width), and describe themselves back exactly
  as recorded -- so a tool reading the JSON directly sees the codec's shape.
  Each message travels in the direction OpenFlow 1.0 allows.
* Packets rebuild with ``Packet.from_json`` and encode, so MACs, IPs, VLAN
  ids and ports fit their headers.
* Switch, host and link names exist in the header's topology; port numbers
  are OpenFlow 1.0 port numbers. (Fingerprints are nested lists of scalars
  by the schema; :mod:`netsleuth.trace.io` bounds every line's nesting.)
* ``seq`` strictly increases and ``t`` never decreases, is finite and lies in
  ``[0, MAX_TIME]`` (the injected clock starts at 0; pcap stores 32-bit seconds).

A failed check raises :class:`TraceFormatError`; :mod:`netsleuth.trace.io`
adds the file and line.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from netsleuth.errors import ControllerError, NetsleuthError, TraceFormatError
from netsleuth.model.packet import Packet
from netsleuth.model.topology import Topology
from netsleuth.openflow.codec import encode, msg_from_json, msg_to_json, msg_type_name
from netsleuth.trace import schema as ts
from netsleuth.trace.controller_spec import SEPARATOR, ControllerSpec, Kind

MAX_TIME = float(2**31 - 1)
"""Latest event time, in seconds from the start of the run (a pcap timestamp holds 32 bits)."""

OFPP_MAX = 0xFF00
"""Highest physical port number in OpenFlow 1.0; hosts use port 0."""

MAX_SECONDS = 3600.0
"""Longest recorded delay of a dataplane or control message."""

MAX_CONFIG_BYTES = 1 << 20
"""Largest controller configuration a config change may carry (UTF-8 bytes): a generated Faucet
config for a few hundred switches fits many times over, and a replay writes it to disk."""

CONFIGURABLE_KINDS = (Kind.FAUCET,)
"""Controller spec kinds (``faucet:...``) whose configuration a config change may rewrite."""

# Which way each OpenFlow 1.0 message type may travel (the spec's message tables).
_SYMMETRIC = frozenset({"HELLO", "ERROR", "ECHO_REQUEST", "ECHO_REPLY", "VENDOR"})
_TO_SWITCH = _SYMMETRIC | {"FEATURES_REQUEST", "GET_CONFIG_REQUEST", "SET_CONFIG", "PACKET_OUT", "FLOW_MOD",
                           "PORT_MOD", "STATS_REQUEST", "BARRIER_REQUEST", "QUEUE_GET_CONFIG_REQUEST"}
_TO_CONTROLLER = _SYMMETRIC | {"FEATURES_REPLY", "GET_CONFIG_REPLY", "PACKET_IN", "FLOW_REMOVED", "PORT_STATUS",
                               "STATS_REPLY", "BARRIER_REPLY", "QUEUE_GET_CONFIG_REPLY"}
# And each OpenFlow 1.3 one (1.3 renames VENDOR to EXPERIMENTER and STATS to MULTIPART, and adds
# groups, meters, tables, roles and asynchronous-message configuration).
_SYMMETRIC_13 = frozenset({"HELLO", "ERROR", "ECHO_REQUEST", "ECHO_REPLY", "EXPERIMENTER"})
_TO_SWITCH_13 = _SYMMETRIC_13 | {"FEATURES_REQUEST", "GET_CONFIG_REQUEST", "SET_CONFIG", "PACKET_OUT", "FLOW_MOD",
                                 "GROUP_MOD", "PORT_MOD", "TABLE_MOD", "METER_MOD", "MULTIPART_REQUEST",
                                 "BARRIER_REQUEST", "QUEUE_GET_CONFIG_REQUEST", "ROLE_REQUEST",
                                 "GET_ASYNC_REQUEST", "SET_ASYNC"}
_TO_CONTROLLER_13 = _SYMMETRIC_13 | {"FEATURES_REPLY", "GET_CONFIG_REPLY", "PACKET_IN", "FLOW_REMOVED",
                                     "PORT_STATUS", "MULTIPART_REPLY", "BARRIER_REPLY", "QUEUE_GET_CONFIG_REPLY",
                                     "ROLE_REPLY", "GET_ASYNC_REPLY"}
_ALLOWED = {("to_switch", 1): _TO_SWITCH, ("to_controller", 1): _TO_CONTROLLER,
            ("to_switch", 4): _TO_SWITCH_13, ("to_controller", 4): _TO_CONTROLLER_13}
_MSG_KEYS = frozenset({"type", "xid", "body", "raw", "version"})
_DIRECTIONS = ("to_switch", "to_controller")

_RERECORD = "re-record the trace, or restore this line from the original"

# Contents already found valid, shared by every read in the process (a tool
# often reads the same trace, or traces of the same run, more than once).
# The key is the full content, so a hit is as good as a check.
_CACHE_LIMIT = 4096
_MSGS_OK: dict[tuple[int, str, str], None] = {}
_PACKETS_OK: dict[str, None] = {}
# The same, keyed by the text of the line itself (see _line_key): no re-serializing at all.
# Keys begin with the member's name ('"msg":{', '"packet":{'), so the two kinds never meet.
_LINES_OK: dict[str, None] = {}
_BODY_KEYS: dict[tuple[int, str], frozenset[str]] = {}  # (version, os-ken class) -> the fields the codec writes


def _content_key(value: Any) -> str:
    """A cache key that is equal only for equal JSON content (in file order: a reordered
    copy is merely a miss, and is checked in full)."""
    return json.dumps(value, check_circular=False)


def _line_key(line: str | None, member: str, tail: str) -> str | None:
    """The text of the line from its top-level member ``member`` (``'"msg":{'``) up to ``tail``, or
    None when the line is not laid out so that this text alone determines the member's value.

    Two lines with equal keys have equal values of that member (apart from what ``tail`` holds,
    which the caller checks on every event). The key is only returned when
    * no backslash comes before the member, so no quote there is escaped: the member's opening
      quote is not inside a string (it would close that string, leaving ``msg":`` outside one,
      and the line parsed);
    * exactly one ``{`` comes before it (the line's own), so it is a member of the line's object;
    * the line ends with ``tail``, written from the event's own parsed values, so the rest of the
      line has one fixed shape.
    JSON parses left to right, so the key's text and that fixed rest give the member's value; any
    other layout (a hand-edited line) is merely not keyed this way and gets the content key.
    """
    if line is None:
        return None
    start = line.find(member)
    if start < 0 or line.count("{", 0, start) != 1 or line.find("\\", 0, start) >= 0:
        return None
    end = len(line) - 1 if line.endswith("\n") else len(line)
    if not line.endswith(tail, 0, end):
        return None
    return line[start:end - len(tail)]


def _bad(problem: str, fix: str = _RERECORD) -> TraceFormatError:
    return TraceFormatError(problem, fix)


def _spec_or_none(text: str) -> ControllerSpec | None:
    try:
        return ControllerSpec.parse(text)
    except ControllerError:
        return None


class TraceValidator:
    """Checks the events of one trace, in file order, against its header.

    Stateful only in what ordering needs (the last seq and time). Messages
    and packets already checked are remembered (by content, process-wide): a
    trace repeats the same FLOW_MODs and packets many times, and rebuilding
    each through os-ken is the expensive part of a check.
    """

    def __init__(self, header: ts.TraceHeader) -> None:
        self.header = header
        self.topology: Topology | None = None
        self._topology_error: str = ""
        # c0, c1, ... as the header names them; None for a spec this release cannot read (its events
        # still check, and a replay says what is wrong with the spec)
        self.controllers = [_spec_or_none(t) for t in header.controller.split(SEPARATOR)] if header.controller else []
        if any(s is not None and s.kind is Kind.DEFINED for s in self.controllers):
            # DEFINED runs record their own node graph, not a switch topology.
            self._topology_error = "a DEFINED run has no switch topology"
        else:
            try:
                self.topology = Topology.from_json(header.topology)
            except NetsleuthError as exc:
                raise _bad(f"the header's topology is invalid: {exc.problem}",
                           "restore the header line from the original trace") from None
        openflow = header.openflow
        if not isinstance(openflow, dict) or not all(
                isinstance(k, str) and v in ("1.0", "1.3") for k, v in openflow.items()) or (
                self.topology is not None and not set(openflow) <= {sw.name for sw in self.topology.switches}):
            raise _bad(f"the header's openflow versions {openflow!r:.80} are not switch names -> \"1.0\"/\"1.3\"",
                       "restore the header line from the original trace")
        self._last_seq = -1
        self._last_t = 0.0
        self._line: str | None = None
        topo = self.topology
        # Name and dpid lookups are made on nearly every event: sets, not scans of the topology.
        self._switch_names = frozenset(sw.name for sw in topo.switches) if topo is not None else frozenset()
        self._host_names = frozenset(h.name for h in topo.hosts) if topo is not None else frozenset()
        self._dpids = frozenset(sw.dpid for sw in topo.switches) if topo is not None else frozenset()
        self._msgs_ok = _MSGS_OK
        self._packets_ok = _PACKETS_OK
        self._lines_ok = _LINES_OK
        self._checks: dict[type, Callable[[Any], None]] = {
            ts.ControlToSwitch: lambda e: self._of(e, "to_switch", "controller to switch"),
            ts.ControlToController: lambda e: self._of(e, "to_controller", "switch to controller"),
            ts.SwitchConnected: self._connection,
            ts.SwitchDisconnected: self._connection,
            ts.TrafficInjection: self._traffic,
            ts.PacketArrival: self._packet_arrival,
            ts.PingResult: self._ping,
            ts.Violation: self._violation,
            ts.SwitchFailure: lambda e: self._switch(e.switch, "switch"),
            ts.SwitchRecovery: lambda e: self._switch(e.switch, "switch"),
            ts.LinkFailure: self._link,
            ts.LinkRecovery: self._link,
            ts.ChannelBlock: lambda e: self._switch(e.switch, "switch"),
            ts.ChannelUnblock: lambda e: self._switch(e.switch, "switch"),
            ts.HostMigration: self._migration,
            ts.DataplaneDrop: self._dataplane_input,
            ts.DataplaneDelay: self._dataplane_input,
            ts.ControlDelay: self._control_delay,
            ts.ConfigChange: self._config_change,
        }

    # ------------------------------------------------------------------ entry
    def check(self, ev: ts.Event, line: str | None = None) -> None:
        """Raise TraceFormatError (problem and fix, no line) unless ``ev`` may be trusted.

        ``line`` is the JSON text ``ev`` was parsed from, when there is one: messages and packets
        already checked are then recognised by their text, without serializing them again.
        """
        seq, t = ev.seq, ev.t
        if not (seq > self._last_seq and self._last_t <= t <= MAX_TIME):  # one test for the usual case
            self._order_error(seq, t)
        if ev.is_input and not ev.id:  # type: ignore[attr-defined]
            raise _bad("an input event has an empty 'id'", "give it its recorded id (e.g. \"i7\")")
        check = self._checks.get(type(ev))
        if check is not None:
            self._line = line  # for the check at hand only: each check sets it first
            check(ev)
        self._last_seq, self._last_t = seq, t

    def _order_error(self, seq: int, t: float) -> None:
        if seq < 0 or seq <= self._last_seq:
            raise _bad(f"seq {seq} does not follow seq {self._last_seq}" if seq >= 0
                       else f"seq {seq} is negative",
                       "events are numbered in increasing order; restore the line order or re-record the trace")
        if not 0.0 <= t <= MAX_TIME:
            raise _bad(f"time t={t!r} is outside 0..{MAX_TIME:.0f} seconds",
                       "t counts seconds from the start of the run; restore it from the original trace")
        raise _bad(f"time t={t!r} goes back before the previous event's t={self._last_t!r}",
                   "events are in time order; restore the line order or re-record the trace")

    # ---------------------------------------------------------------- names
    def _topo(self, what: str) -> Topology:
        if self.topology is None:
            raise _bad(f"{what} events need a switch topology; {self._topology_error}",
                       "this event kind does not belong in this trace; delete the line")
        return self.topology

    def _switch(self, name: str, what: str) -> None:
        if name in self._switch_names:
            return
        topo = self._topo(what)
        if not topo.is_switch(name):
            raise _bad(f"{what} {name!r} is not a switch of the trace's topology "
                       f"({', '.join(s.name for s in topo.switches)})",
                       "name a switch of the header's topology, or re-record the trace")

    def _host(self, name: str, what: str) -> None:
        if name in self._host_names:
            return
        topo = self._topo(what)
        if not topo.is_host(name):
            raise _bad(f"{what} {name!r} is not a host of the trace's topology "
                       f"({', '.join(h.name for h in topo.hosts)})",
                       "name a host of the header's topology, or re-record the trace")

    def _node_port(self, node: str, port: int, what: str) -> None:
        if node in self._switch_names and 1 <= port <= OFPP_MAX or node in self._host_names and port == 0:
            return
        topo = self._topo(what)
        if topo.is_switch(node):
            if not 1 <= port <= OFPP_MAX:
                raise _bad(f"{what} port {port} of switch {node!r} is not an OpenFlow 1.0 port (1..{OFPP_MAX})",
                           _RERECORD)
        elif topo.is_host(node):
            if port != 0:
                raise _bad(f"{what} port {port} of host {node!r}: hosts have the one port 0", _RERECORD)
        else:
            raise _bad(f"{what} {node!r} is not a switch or host of the trace's topology",
                       "name a node of the header's topology, or re-record the trace")

    def _dpid(self, dpid: int, what: str) -> None:
        if dpid in self._dpids:
            return
        topo = self._topo(what)
        if not any(s.dpid == dpid for s in topo.switches):
            raise _bad(f"{what} dpid {dpid} is not a switch of the trace's topology",
                       "use the dpid of a switch in the header's topology, or re-record the trace")

    # --------------------------------------------------------------- kinds
    def _connection(self, e: Any) -> None:
        if e.conn < 0:
            raise _bad(f"connection number {e.conn} is negative", _RERECORD)
        self._dpid(e.dpid, "connection")

    def _of(self, e: Any, way: str, direction: str) -> None:
        self._connection(e)
        msg = e.msg
        version = msg.get("version", 1)
        if type(version) is not int or (way, version) not in _ALLOWED:
            raise _bad(f"OpenFlow version {version!r} is not one netsleuth records (1 for 1.0, 4 for 1.3)", _RERECORD)
        allowed = _ALLOWED[(way, version)]
        mtype = msg.get("type")
        if not isinstance(mtype, str) or mtype not in allowed:
            raise _bad(f"OpenFlow message type {mtype!r} is not one a message from {direction} may have",
                       "use the codec's JSON form {\"type\": \"FLOW_MOD\", \"xid\": ..., \"body\": {...}}")
        xid = msg.get("xid")
        if type(xid) is not int or not 0 <= xid <= 0xFFFFFFFF:
            raise _bad(f"OpenFlow xid {xid!r} is not a 32-bit unsigned integer", _RERECORD)
        if not _MSG_KEYS.issuperset(msg):
            raise _bad(f"OpenFlow message has unknown keys {sorted(set(msg) - _MSG_KEYS)}", _RERECORD)
        # The xid is the message's last member and checked above; the rest decides the checks below.
        line_key = _line_key(self._line, '"msg":{', f',"xid":{xid}}},"seq":{e.seq},"t":{e.t!r}}}')
        if line_key is not None:
            if line_key in self._lines_ok:
                return
            key = None
        else:
            try:
                key = (version, mtype, _content_key(msg.get("body")) + "|" + _content_key(msg.get("raw")))
            except (TypeError, ValueError):
                raise _bad("OpenFlow message body is not JSON data", _RERECORD) from None
            if key in self._msgs_ok:
                return
        body = msg.get("body")
        if not isinstance(body, dict) or len(body) != 1:
            raise _bad(f"{mtype} message body must be one {{\"<os-ken class>\": {{...}}}} object, got {body!r:.80}",
                       _RERECORD)
        ((cls_name, attrs),) = body.items()
        try:
            rebuilt = msg_from_json(msg)
            encode(rebuilt)  # every field packs into its bit width
            rebuilt_type = msg_type_name(rebuilt)
            # The first message of each class (and any raw one) must describe
            # itself back exactly; later ones must have its fields, which with
            # the rebuild and encode above pins their shape for tools that
            # read the JSON directly -- at a third of the cost.
            expected = _BODY_KEYS.get((version, cls_name)) if "raw" not in msg else None
            if expected is None:
                same = msg_to_json(rebuilt) == msg
                if same and "raw" not in msg:
                    _BODY_KEYS[(version, cls_name)] = frozenset(attrs)
            else:
                same = isinstance(attrs, dict) and attrs.keys() == expected
        except NetsleuthError as exc:
            raise _bad(f"{mtype} message does not decode: {exc.problem}", _RERECORD) from None
        except Exception as exc:  # noqa: BLE001 - os-ken's parsers raise anything on bad input
            # The one place where any error of the codec on untrusted JSON
            # becomes a format error, so that no reader above has to guard.
            raise _bad(f"{mtype} message does not decode ({type(exc).__name__}: {str(exc)[:120]})",
                       _RERECORD) from None
        if rebuilt_type != mtype:
            raise _bad(f"message type {mtype} but its body is a {rebuilt_type} ({cls_name})", _RERECORD)
        if not same:
            raise _bad(f"{mtype} message is not in the codec's recorded form (fields missing, extra or retyped)",
                       _RERECORD)
        self._remember(line_key, key, self._msgs_ok)

    def _remember(self, line_key: str | None, key: Any, cache: dict[Any, None]) -> None:
        if line_key is not None:
            cache, key = self._lines_ok, line_key
        if len(cache) >= _CACHE_LIMIT:
            cache.clear()
        cache[key] = None

    def _packet(self, d: dict[str, Any], what: str, tail: str) -> None:
        """``tail``: the end of a recorded line after the packet, as the event's fields write it."""
        line_key = _line_key(self._line, '"packet":{', tail)
        if line_key is not None:
            if line_key in self._lines_ok:  # the same packet is recorded at every hop
                return
            key = ""
        else:
            try:
                key = _content_key(d)
            except (TypeError, ValueError):
                raise _bad(f"{what} packet is not JSON data", _RERECORD) from None
            if key in self._packets_ok:
                return
        try:
            Packet.from_json(d).to_bytes()
        except NetsleuthError as exc:
            raise _bad(f"{what} packet is malformed: {exc.problem}", _RERECORD) from None
        except Exception as exc:  # noqa: BLE001 - struct.pack and friends on out-of-range or retyped fields
            raise _bad(f"{what} packet has a field of the wrong type or out of range "
                       f"({type(exc).__name__}: {str(exc)[:120]})", _RERECORD) from None
        self._remember(line_key, key, self._packets_ok)

    def _traffic(self, e: ts.TrafficInjection) -> None:
        self._host(e.host, "traffic source")
        if e.dst is not None:
            self._host(e.dst, "traffic destination")
        self._packet(e.packet, "traffic", f',"seq":{e.seq},"t":{e.t!r}}}')

    def _packet_arrival(self, e: ts.PacketArrival) -> None:
        self._node_port(e.node, e.port, "packet arrival at")
        if e.pid < 0:
            raise _bad(f"packet id {e.pid} is negative", _RERECORD)
        self._packet(e.packet, "arriving", f',"pid":{e.pid},"port":{e.port},"seq":{e.seq},"t":{e.t!r}}}')

    def _ping(self, e: ts.PingResult) -> None:
        self._host(e.src, "ping source")
        self._host(e.dst, "ping destination")
        if e.rtt is not None and not 0.0 <= e.rtt <= MAX_TIME:
            raise _bad(f"ping rtt {e.rtt!r} is outside 0..{MAX_TIME:.0f} seconds", _RERECORD)

    def _violation(self, e: ts.Violation) -> None:
        for h in e.hosts:
            self._host(h, "violation host")
        for s in e.switches:
            self._switch(s, "violation switch")

    def _link(self, e: Any) -> None:
        topo = self._topo("link")
        ends = {(e.node1, e.port1), (e.node2, e.port2)}
        if not any({(link.node1, link.port1), (link.node2, link.port2)} == ends for link in topo.links):
            raise _bad(f"link {e.node1}:{e.port1}-{e.node2}:{e.port2} is not a link of the trace's topology",
                       "name both ends of a link in the header's topology, or re-record the trace")

    def _migration(self, e: ts.HostMigration) -> None:
        self._host(e.host, "migrating host")
        self._switch(e.old_switch, "migration's old switch")
        self._switch(e.new_switch, "migration's new switch")
        self._node_port(e.old_switch, e.old_port, "migration's old")
        self._node_port(e.new_switch, e.new_port, "migration's new")

    def _seconds(self, seconds: float) -> None:
        if not 0.0 <= seconds <= MAX_SECONDS:
            raise _bad(f"delay of {seconds!r} seconds is outside 0..{MAX_SECONDS:.0f}", _RERECORD)

    def _dataplane_input(self, e: Any) -> None:
        self._node_port(e.node, e.port, "dataplane input at")
        if isinstance(e, ts.DataplaneDelay):
            self._seconds(e.seconds)

    def _control_delay(self, e: ts.ControlDelay) -> None:
        self._switch(e.switch, "control delay")
        if e.direction not in _DIRECTIONS:
            raise _bad(f"control delay direction {e.direction!r} is not one of {', '.join(_DIRECTIONS)}",
                       _RERECORD)
        self._seconds(e.seconds)

    def _config_change(self, e: ts.ConfigChange) -> None:
        """The new file is data for the controller to read: a YAML mapping of bounded size whose hash
        is the recorded one, for a controller that reads such a file. Nothing in it is run here; a
        replay only writes it where the controller reads its configuration."""
        texts = self.header.controller.split(SEPARATOR) if self.header.controller else []
        names = {f"c{i}": i for i in range(len(texts))}
        i = names.get(e.controller)
        if i is None:
            raise _bad(f"config change names controller {e.controller!r}, not one of the trace's "
                       f"({', '.join(names)})", "name a controller of the header (c0, c1, ...), or re-record the trace")
        spec = self.controllers[i]
        if spec is None or spec.kind not in CONFIGURABLE_KINDS:
            raise _bad(f"config change for controller {e.controller} ({texts[i]}), which has no configuration file "
                       "netsleuth rewrites", "config changes apply to faucet: controllers; delete the line")
        data = e.config.encode("utf-8", errors="surrogatepass")
        if len(data) > MAX_CONFIG_BYTES:
            raise _bad(f"config change {e.id} carries {len(data)} bytes of configuration, more than "
                       f"{MAX_CONFIG_BYTES}", "a config change holds one controller config file; re-record the trace")
        if hashlib.sha256(data).hexdigest() != e.sha256:
            raise _bad(f"config change {e.id}: the sha256 {e.sha256!r:.80} is not the hash of its config",
                       "the config was edited after recording; restore it from the original trace")
        import yaml  # here: only configs (Faucet's) need YAML; importing it costs every command

        try:
            parsed = yaml.safe_load(e.config)
        except Exception as exc:  # noqa: BLE001 - any parser failure (syntax, nesting) is a bad config
            raise _bad(f"config change {e.id} is not valid YAML ({type(exc).__name__}: {str(exc)[:120]})",
                       "restore the config from the original trace") from None
        if not isinstance(parsed, dict):
            raise _bad(f"config change {e.id} is not a YAML mapping (it is a {type(parsed).__name__})",
                       "a controller config has top-level keys such as vlans: and dps:; restore it from the "
                       "original trace")


def forget_checked() -> None:
    """Forget every message and packet found valid so far, so the next read checks each again
    (what a first read in a new process does; for measuring it)."""
    for cache in (_MSGS_OK, _PACKETS_OK, _LINES_OK, _BODY_KEYS):
        cache.clear()


def config_sha256(config: str) -> str:
    """The hash a config change records for ``config`` (of its UTF-8 bytes)."""
    return hashlib.sha256(config.encode("utf-8", errors="surrogatepass")).hexdigest()


__all__ = ["TraceValidator", "MAX_TIME", "OFPP_MAX", "MAX_SECONDS", "MAX_CONFIG_BYTES", "CONFIGURABLE_KINDS",
           "config_sha256", "forget_checked"]
