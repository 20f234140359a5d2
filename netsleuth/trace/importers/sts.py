"""Import an STS ``events.trace`` (SDN Troubleshooting System) as a netsleuth trace.

An STS trace is JSON Lines: one ``Event.to_json()`` object per line, its type
in ``"class"`` (the class names of STS's ``sts/replay_event.py``), a unique
``"label"`` (``e<N>`` for inputs, ``i<N>`` for internal events), ``"time"`` as
``[seconds, microseconds]`` of wall-clock time, and -- depending on the STS
version -- ``"round"``, ``"dependent_labels"``, ``"prunable"``,
``"fingerprint"`` and the class's own fields. Three generations are read:
early traces (no ``round``; ``TrafficInjection`` without its packet;
controller ids as ``[ip, port]``; OpenFlow messages only as fingerprints),
2013 traces (``b64_packet`` holds each OpenFlow message's bytes) and late
traces (``round``, ``TrafficInjection.dp_event``, ``DataplaneDrop`` as an
input with ``dpid``).

What becomes what:

* Inputs: ``SwitchFailure``/``SwitchRecovery`` -> ``switch_failure``/
  ``switch_recovery``; ``LinkFailure``/``LinkRecovery`` -> ``link_*`` with
  ``one_way`` (STS cut only the start -> end direction of a link);
  ``ControllerFailure``/``ControllerRecovery`` -> ``controller_crash``/
  ``controller_recovery``; ``ControlChannelBlock``/``Unblock`` ->
  ``channel_block``/``channel_unblock``; ``HostMigration`` ->
  ``host_migration``; ``TrafficInjection`` (with ``dp_event``) -> ``traffic``;
  ``DataplaneDrop`` -> ``dataplane_drop``. Switch dpid N is ``s<N>``, host id
  N is ``h<N>`` (other host ids get the next free ``h<k>``; the mapping is in
  the header's ``extra``).
* Dependencies are explicit, as netsleuth stores them: a recovery depends on
  the failure of the same thing, a host's migration on that host's previous
  one, and STS's ``dependent_labels`` (``A.dependent_labels = [B]``: pruning A
  prunes B) become ``B.deps`` containing A's id.
* ``ControlMessageReceive``/``ControlMessageSend`` (a switch receives from /
  sends to a controller) -> ``of_to_switch``/``of_to_controller``, when the
  line carries the message bytes (``b64_packet``) and the caller passes an
  OpenFlow decoder (the trace layer does not import the codec).
* ``ConnectToControllers`` -> a ``switch_connected`` for every switch and
  every controller (STS connects each switch to all of them); a recovered
  switch reconnects to the live controllers and a recovered controller gets
  every live switch back, as in STS.
* ``InvariantViolation`` -> ``violation`` (named after the last
  ``CheckInvariants`` before it, or the config's check). STS's liveness check
  asks the controller processes whether they run: a controller it names that
  no input crashed is recorded as a ``controller_event`` "exited" just
  before the violation, so the rebuilt state knows that process is gone.
* Everything else (``WaitTime``, ``CheckInvariants``, controller log
  statements, ``gettimeofday`` answers, dataplane permits, controller-pair
  partitions, unknown classes, ...) is counted in the report's ``skipped``
  with the reason, never silently dropped.

Times become injected-clock seconds since the first line. ``path`` may be the
experiment folder or a trace in it; the config files beside the trace
(``orig_config.py``, ``mcs_config.py``, ``replay_config.py``, read by
:mod:`~netsleuth.trace.importers.sts_config` without running them) give the
topology (STS's ``MeshTopology``/``FatTree`` with its own port and host
numbering: ``sts-mesh,N``/``sts-fattree,PODS``), the invariant check and the
controllers. Without a given topology or a config naming one, a topology is
inferred from what the trace mentions (switches, links of link failures,
each host's location before its first migration, host addresses from
injected packets); the header says so.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from netsleuth import __version__
from netsleuth.errors import NetsleuthError, TraceFormatError
from netsleuth.model.addr import BROADCAST_MAC, int_to_ip, int_to_mac, ip_to_int, mac_to_int
from netsleuth.model.packet import Arp, IPv4, Packet
from netsleuth.model.topology import OFPP_MAX, Topology, parse_topo
from netsleuth.trace import schema as ts
from netsleuth.trace.fingerprint import of_fingerprint
from netsleuth.trace.importers.sts_config import StsConfig, read_sts_config, sts_topology_spec

__all__ = ["ImportReport", "import_sts", "STS_CLASSES", "OpenFlowDecoder"]

OpenFlowDecoder = Callable[[bytes], dict[Any, Any]]
"""Raw OpenFlow 1.0 message bytes -> the codec's JSON form ``{"type", "xid", "body"}``."""

INFERRED_SPEC = "sts-inferred"

# Every event class STS's replay_event.py defines, by role. Anything else in a
# trace is reported as unknown.
_INPUT_CLASSES = (
    "SwitchFailure", "SwitchRecovery", "LinkFailure", "LinkRecovery", "ControllerFailure",
    "ControllerRecovery", "HostMigration", "PolicyChange", "TrafficInjection", "WaitTime",
    "CheckInvariants", "ControlChannelBlock", "ControlChannelUnblock", "DataplaneDrop",
    "BlockControllerPair", "UnblockControllerPair", "LinkDiscovery",
)
_INTERNAL_CLASSES = (
    "ControlMessageReceive", "ControlMessageSend", "ConnectToControllers", "ControllerStateChange",
    "DeterministicValue", "DataplanePermit", "ProcessFlowMod",
)
_SPECIAL_CLASSES = ("InvariantViolation",)
STS_CLASSES = _INPUT_CLASSES + _INTERNAL_CLASSES + _SPECIAL_CLASSES
"""The STS event classes this importer knows (converted or deliberately skipped)."""

# Classes kept only as report entries, with the reason.
_NO_COUNTERPART = {
    "WaitTime": "no netsleuth counterpart: the recorded spacing is kept in the events' times",
    "CheckInvariants": "netsleuth checks invariants itself; the check names are kept in "
                       "header.extra.sts.invariant_checks and name the violations",
    "PolicyChange": "never implemented by STS; no netsleuth counterpart",
    "LinkDiscovery": "deprecated STS hack (link notifications pushed into the controller); "
                     "no netsleuth counterpart",
    "BlockControllerPair": "controller-to-controller partitions have no netsleuth input kind",
    "UnblockControllerPair": "controller-to-controller partitions have no netsleuth input kind",
    "ControllerStateChange": "controller log statements are not part of netsleuth traces",
    "DeterministicValue": "netsleuth does not intercept controller system calls (gettimeofday)",
    "DataplanePermit": "STS records only a header fingerprint; netsleuth 'packet' events need the "
                       "whole packet (forwarding is re-observed on replay)",
    "ProcessFlowMod": "switch-local flow_mod buffering has no netsleuth counterpart "
                      "(the flow_mod's of_to_switch delivery is kept)",
}

_FIX_LINE = "fix or delete this line: each line of an STS events.trace is one JSON object written by Event.to_json()"
_HOST_NUM = re.compile(r"^(?:h|host)[-_:]?(\d+)$", re.IGNORECASE)
_IP_IN_TEXT = re.compile(r"(?<![\d.])(\d{1,3}(?:\.\d{1,3}){3})(?![\d])")
_DASHED_DPID = re.compile(r"^[0-9a-fA-F]{2}(?:[-:][0-9a-fA-F]{2}){5,7}$")


# --------------------------------------------------------------------- report
@dataclass
class ImportReport:
    """The imported trace and an account of every STS line.

    ``converted`` and ``skipped`` count lines per STS class; ``reasons`` says,
    per skipped class, why (reason -> count); ``notes`` are the decisions a
    user should know about (inferred topology, renamed hosts, dropped
    dependencies, ...).
    """

    trace: ts.Trace
    converted: dict[str, int]
    skipped: dict[str, int]
    notes: list[str]
    reasons: dict[str, dict[str, int]] = field(default_factory=dict)
    topology_inferred: bool = False

    @property
    def inputs(self) -> int:
        return sum(1 for e in self.trace.events if e.is_input)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON values, keys in a fixed order (for ``result.json``-style output)."""
        return {
            "source": "sts",
            "file": self.trace.header.extra.get("source", ""),
            "events": len(self.trace.events),
            "inputs": self.inputs,
            "topology_inferred": self.topology_inferred,
            "converted": dict(sorted(self.converted.items())),
            "skipped": dict(sorted(self.skipped.items())),
            "reasons": {k: dict(sorted(v.items())) for k, v in sorted(self.reasons.items())},
            "notes": list(self.notes),
        }

    def summary(self) -> list[str]:
        """Short human-readable lines (the CLI prints them)."""
        lines = [f"imported {len(self.trace.events)} events ({self.inputs} inputs) from "
                 f"{sum(self.converted.values())} of {sum(self.converted.values()) + sum(self.skipped.values())} "
                 "STS lines"]
        for cls, n in sorted(self.converted.items()):
            lines.append(f"  converted {cls}: {n}")
        for cls, n in sorted(self.skipped.items()):
            why = "; ".join(self.reasons.get(cls, {}))
            lines.append(f"  skipped   {cls}: {n} ({why})")
        lines += [f"  note: {n}" for n in self.notes]
        return lines


# --------------------------------------------------------------------- reading
@dataclass(slots=True)
class _Rec:
    lineno: int
    cls: str
    label: str
    time: float
    d: dict[str, Any]


def _fail(where: str, problem: str, fix: str) -> TraceFormatError:
    return TraceFormatError(f"{where}: {problem}", fix)


def _parse_time(value: Any) -> float | None:
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(
            type(v) in (int, float) and math.isfinite(v) for v in value):
        return float(value[0]) + float(value[1]) / 1e6
    if type(value) in (int, float) and math.isfinite(value):
        return float(value)
    return None


def _read(path: Path) -> tuple[list[_Rec], int]:
    """Every non-blank line as a record (and the number of blank lines)."""
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        raise TraceFormatError(f"STS trace {path} does not exist",
                               "check the path; STS writes experiments/<name>/events.trace") from None
    except OSError as exc:
        raise TraceFormatError(f"cannot open STS trace {path}: {exc.strerror or exc}",
                               "check that the path is a readable file") from None
    records: list[_Rec] = []
    seen: dict[str, int] = {}
    blank = 0
    with f:
        for lineno, raw in enumerate(f, 1):
            where = f"{path}:{lineno}"
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise _fail(where, "the line is not valid UTF-8",
                            "the file is corrupt or not an STS events.trace") from None
            if not text.strip():
                blank += 1
                continue
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as exc:
                raise _fail(where, f"malformed JSON ({exc.msg} at column {exc.colno})",
                            "the last line was cut off (interrupted STS run?); delete it to import the rest"
                            if not raw.endswith(b"\n") else _FIX_LINE) from None
            if not isinstance(obj, dict):
                raise _fail(where, f"a JSON {type(obj).__name__}, not an event object", _FIX_LINE)
            cls = obj.get("class")
            if not isinstance(cls, str) or not cls:
                if obj.get("format") == ts.FORMAT:
                    raise _fail(where, "this is already a netsleuth trace, not an STS trace",
                                "read it with netsleuth directly; `import sts` is for STS events.trace files")
                raise _fail(where, "the event lacks its \"class\"",
                            'every STS event names its type, e.g. "class": "SwitchFailure"; ' + _FIX_LINE)
            label = obj.get("label")
            if not isinstance(label, str) or not label:
                raise _fail(where, f"{cls} event lacks its \"label\"",
                            'give it the unique label STS assigned, e.g. "label": "e12"')
            if label in seen:
                raise _fail(where, f"label {label!r} was already used on line {seen[label]}",
                            "labels are unique within one STS trace; was the file concatenated from several runs?")
            seen[label] = lineno
            t = _parse_time(obj.get("time"))
            if t is None:
                raise _fail(where, f"{cls} {label}: \"time\" must be [seconds, microseconds], got "
                            f"{obj.get('time')!r}",
                            'write the wall-clock time STS recorded as [seconds, microseconds], '
                            'e.g. "time": [1359738314, 870357]')
            deps = obj.get("dependent_labels")
            if deps is not None and (not isinstance(deps, list) or not all(isinstance(x, str) for x in deps)):
                raise _fail(where, f"{cls} {label}: \"dependent_labels\" must be a list of labels, got {deps!r}",
                            'write e.g. "dependent_labels": ["e7"] (or [])')
            records.append(_Rec(lineno, cls, label, t, obj))
    if not records:
        raise TraceFormatError(f"{path}:1: the STS trace contains no events",
                               "point at the events.trace (or mcs.trace) of an STS experiment")
    return records, blank


# --------------------------------------------------------------------- helpers
def _dpfp_to_fp(value: Any) -> tuple[Any, ...] | None:
    """An STS DPFingerprint dict as a netsleuth packet fingerprint (None if it is not one)."""
    if not isinstance(value, dict):
        return None
    if {"dl_src", "dl_dst", "nw_src", "nw_dst"} <= value.keys():
        try:
            return ("IPv4", int_to_mac(mac_to_int(value["dl_src"])), int_to_mac(mac_to_int(value["dl_dst"])),
                    int_to_ip(ip_to_int(value["nw_src"])), int_to_ip(ip_to_int(value["nw_dst"])))
        except (TypeError, ValueError, AttributeError, OverflowError):
            return None
    klass = value.get("class")
    if klass == "arp":
        return ("ARP",)
    if klass == "lldp":
        return ("LLDP",)
    if type(value.get("dl_type")) is int:
        return ("eth", value["dl_type"])
    return None


def _invariant_name(sts_name: str | None) -> str:
    """netsleuth's registered name for an STS invariant check (``sts:<name>`` if none fits)."""
    if not sts_name:
        return "sts"
    low = sts_name.lower()
    for key, name in (("loop", "loops"), ("blackhole", "blackholes"), ("connectivity", "reachability"),
                      ("liveness", "liveness")):
        if key in low:
            return name
    return "sts:" + sts_name.rsplit(".", 1)[-1]


def _host_number(host_id: Any) -> int | None:
    if type(host_id) is int and host_id >= 0:
        return host_id
    if isinstance(host_id, str):
        s = host_id.strip()
        if s.isdigit():
            return int(s)
        m = _HOST_NUM.match(s)
        if m:
            return int(m.group(1))
    return None


# --------------------------------------------------------------------- importer
class _Importer:
    def __init__(self, path: Path, records: list[_Rec], blank: int, topology: Topology | None,
                 decode: OpenFlowDecoder | None, config: StsConfig | None = None) -> None:
        self.path = path
        self.records = records
        self.given = topology
        self.config = config if config is not None else StsConfig()
        self.switch_down: set[str] = set()
        self.moved_to: dict[tuple[str, int], tuple[str, int]] = {}  # a switch port a host migrated to -> host end
        self.controller_down: set[str] = set()
        self.decode = decode
        self.t0 = records[0].time
        self.events: list[ts.Event] = []
        self.converted: dict[str, int] = {}
        self.skipped: dict[str, int] = {}
        self.reasons: dict[str, dict[str, int]] = {}
        self.notes: list[str] = []
        if blank:
            self.notes.append(f"ignored {blank} blank line(s)")
        self._noted: set[str] = set()
        # names
        self.host_cache: dict[str, str] = {}
        self.host_alias: dict[str, str] = {}     # STS host id (as text) -> h<k>, for the header
        self.reserved: set[int] = set()
        self.controller_alias: dict[str, str] = {}
        self.controller_names: list[str] = []
        self.rec_host: dict[int, str] = {}       # lineno -> host name resolved by the pre-pass
        # inputs and dependencies
        self.next_input = 0
        self.id_of_label: dict[str, str] = {}
        self.deps: dict[str, list[str]] = {}
        self.open_failure: dict[tuple[Any, ...], str] = {}
        self.last_migration: dict[str, str] = {}
        self.unprunable: list[str] = []
        # OpenFlow connections: (dpid, controller) -> conn number
        self.conns: dict[tuple[int, str], int] = {}
        self.stale: set[tuple[int, str]] = set()
        self.next_conn = 0
        # invariants
        self.current_check: str | None = self.config.invariant_check
        self.checks: list[str] = []
        self.of_examples: list[str] = []

    # ------------------------------------------------------------- bookkeeping
    def note_once(self, key: str, text: str) -> None:
        if key not in self._noted:
            self._noted.add(key)
            self.notes.append(text)

    def skip(self, rec: _Rec, reason: str) -> None:
        self.skipped[rec.cls] = self.skipped.get(rec.cls, 0) + 1
        per = self.reasons.setdefault(rec.cls, {})
        per[reason] = per.get(reason, 0) + 1

    def where(self, rec: _Rec) -> str:
        return f"{self.path}:{rec.lineno}"

    def need(self, rec: _Rec, key: str) -> Any:
        if key not in rec.d or rec.d[key] is None:
            raise _fail(self.where(rec), f"{rec.cls} {rec.label} lacks the field {key!r}",
                        f"restore {key!r} (see sts/replay_event.py, {rec.cls}.from_json) or delete the line")
        return rec.d[key]

    def as_int(self, rec: _Rec, key: str, value: Any = None) -> int:
        v = self.need(rec, key) if value is None else value
        if type(v) is int:
            return v
        if isinstance(v, str):
            s = v.strip()
            if s.isdigit():
                return int(s)
            if _DASHED_DPID.match(s):  # POX's dpidToStr: 00-00-00-00-00-03
                return int(s.replace("-", "").replace(":", ""), 16)
        raise _fail(self.where(rec), f"{rec.cls} {rec.label}: {key!r} must be an integer, got {v!r}",
                    f"write {key!r} as a number, e.g. \"{key}\": 3")

    # ------------------------------------------------------------- names
    def switch(self, rec: _Rec, key: str, value: Any = None) -> str:
        dpid = self.as_int(rec, key, value)
        if not 0 < dpid < 1 << 64:
            raise _fail(self.where(rec), f"{rec.cls} {rec.label}: dpid {dpid} is outside 1..2^64-1",
                        "STS dpids are positive 64-bit integers")
        if self.given is not None:
            try:
                return self.given.switch_by_dpid(dpid).name
            except NetsleuthError:
                self.note_once(f"dpid{dpid}", f"dpid {dpid} is not in the given topology; named it s{dpid}")
        return f"s{dpid}"

    def controller(self, rec: _Rec, value: Any) -> str:
        if isinstance(value, str) and value:
            name = value
        elif isinstance(value, (list, tuple)) and len(value) == 2 and all(
                isinstance(x, (str, int)) and not isinstance(x, bool) for x in value):
            name = f"{value[0]}:{value[1]}"  # early STS: (ip, port)
            self.controller_alias[json.dumps(value)] = name
        else:
            raise _fail(self.where(rec), f"{rec.cls} {rec.label}: controller_id {value!r} is neither a name "
                        "nor [ip, port]", 'write e.g. "controller_id": "c1"')
        if name not in self.controller_names:
            self.controller_names.append(name)
        return name

    def _given_host(self, host_id: Any, mac: int | None, ips: list[int]) -> str | None:
        topo = self.given
        assert topo is not None
        if isinstance(host_id, str) and topo.is_host(host_id):
            return host_id
        n = _host_number(host_id)
        if n is not None and topo.is_host(f"h{n}"):
            return f"h{n}"
        if isinstance(host_id, str):
            ips = ips + [ip_to_int(ip) for ip in _IP_IN_TEXT.findall(host_id)
                         if all(int(o) <= 255 for o in ip.split("."))]
        for h in topo.hosts:
            if (mac is not None and h.mac == mac) or h.ip in ips:
                return h.name
        return None

    def host(self, host_id: Any, *, mac: int | None = None, ips: list[int] | None = None,
             location: tuple[str, int] | None = None) -> str:
        """The netsleuth name for an STS host id (or, when there is none, its interface or location)."""
        ips = ips or []
        if host_id is not None:
            key = "id:" + json.dumps(host_id, sort_keys=True)
        elif mac is not None:
            key = f"mac:{mac}"
        else:
            key = f"loc:{location}"
        name = self.host_cache.get(key)
        if name is not None:
            return name
        if self.given is not None:
            name = self._given_host(host_id, mac, ips)
            if name is None and location is not None:
                far = self.given.neighbor(*location) if location[0] in self.given else None
                if far is not None and self.given.is_host(far[0]):
                    name = far[0]
        if name is None:
            n = _host_number(host_id)
            if n is not None:
                name = f"h{n}"
            else:
                k = 1
                while k in self.reserved or f"h{k}" in self.host_cache.values():
                    k += 1
                self.reserved.add(k)
                name = f"h{k}"
                self.host_alias[str(host_id) if host_id is not None else f"mac {int_to_mac(mac)}"
                                if mac is not None else f"at {location[0]}:{location[1]}" if location
                                else key] = name
            if self.given is not None and not self.given.is_host(name):
                self.note_once(f"host:{name}", f"host {name} (STS {host_id!r}) is not in the given topology")
        self.host_cache[key] = name
        return name

    def iface(self, rec: _Rec, dp_event: Any) -> tuple[int | None, list[int], bytes]:
        """(mac, ips, packet bytes) of a TrafficInjection's dp_event."""
        if not isinstance(dp_event, dict) or not isinstance(dp_event.get("packet"), str):
            raise _fail(self.where(rec), f"{rec.cls} {rec.label}: dp_event must be "
                        '{"interface": {...}, "packet": "<base64>"}', "restore dp_event as STS wrote it")
        try:
            raw = base64.b64decode(dp_event["packet"], validate=False)
        except (binascii.Error, ValueError):
            raise _fail(self.where(rec), f"{rec.cls} {rec.label}: dp_event.packet is not base64",
                        "restore the packet bytes as STS wrote them") from None
        intf: dict[str, Any] = dp_event["interface"] if isinstance(dp_event.get("interface"), dict) else {}
        mac = None
        try:
            if isinstance(intf.get("hw_addr"), str):
                mac = mac_to_int(intf["hw_addr"])
            ips = [ip_to_int(ip) for ip in intf.get("ips") or [] if isinstance(ip, str)]
        except (ValueError, TypeError):
            raise _fail(self.where(rec), f"{rec.cls} {rec.label}: dp_event.interface has a malformed address",
                        'write e.g. {"name": "eth0", "hw_addr": "00:00:00:00:00:01", "ips": ["10.0.0.1"]}') from None
        return mac, ips, raw

    # ------------------------------------------------------------- pre-pass
    def collect_controllers(self) -> None:
        """Controllers in order of first mention (else the config's): ConnectToControllers needs them all."""
        for rec in self.records:
            if rec.d.get("controller_id") is not None:
                self.controller(rec, rec.d["controller_id"])
        if not self.controller_names:
            self.controller_names.extend(self.config.controllers)

    def prepass(self) -> None:
        """Resolve host names and collect what an inferred topology needs."""
        for rec in self.records:  # numbered host ids keep their number: reserve them first
            ids = [rec.d.get("host_id")]
            fp = rec.d.get("fingerprint")
            if rec.cls.startswith("Dataplane") and isinstance(fp, list):
                ids += [x for x in fp[1:3] if isinstance(x, str)]  # a host sender is named by a string
            for host_id in ids:
                n = _host_number(host_id)
                if n is not None:
                    self.reserved.add(n)
        self.dpids: list[int] = []
        self.links: list[tuple[str, int, str, int]] = []
        self.first_loc: dict[str, tuple[str, int]] = {}
        self.addrs: dict[str, tuple[int | None, int | None]] = {}
        self.host_order: list[str] = []
        host_at: dict[tuple[str, int], str] = {}

        def seen_dpid(rec: _Rec, key: str, value: Any = None) -> str:
            name = self.switch(rec, key, value)
            dpid = self.as_int(rec, key, value)
            if dpid not in self.dpids:
                self.dpids.append(dpid)
            return name

        def seen_host(name: str, host_id: Any = None, mac: Any = None, ip: int | None = None) -> None:
            if name not in self.host_order:
                self.host_order.append(name)
            if ip is None and isinstance(host_id, str):  # early STS: "host:[IPAddr('10.0.0.1')]"
                found = [x for x in _IP_IN_TEXT.findall(host_id) if all(int(o) <= 255 for o in x.split("."))]
                ip = ip_to_int(found[0]) if len(found) == 1 else None
            if isinstance(mac, str):
                try:
                    mac = mac_to_int(mac)
                except ValueError:
                    mac = None
            old_mac, old_ip = self.addrs.get(name, (None, None))
            self.addrs[name] = (old_mac if old_mac is not None else mac if type(mac) is int else None,
                                old_ip if old_ip is not None else ip)

        for rec in self.records:
            c, d = rec.cls, rec.d
            if c in ("SwitchFailure", "SwitchRecovery", "ControlChannelBlock", "ControlChannelUnblock",
                     "ControlMessageReceive", "ControlMessageSend", "ProcessFlowMod"):
                seen_dpid(rec, "dpid")
            elif c in ("LinkFailure", "LinkRecovery"):
                a = seen_dpid(rec, "start_dpid")
                b = seen_dpid(rec, "end_dpid")
                pa, pb = self.as_int(rec, "start_port_no"), self.as_int(rec, "end_port_no")
                if (a, pa, b, pb) not in self.links and (b, pb, a, pa) not in self.links:
                    self.links.append((a, pa, b, pb))
            elif c == "HostMigration":
                old = (seen_dpid(rec, "old_ingress_dpid"), self.as_int(rec, "old_ingress_port_no"))
                new = (seen_dpid(rec, "new_ingress_dpid"), self.as_int(rec, "new_ingress_port_no"))
                host_id = d.get("host_id")
                if host_id is None and old in host_at:
                    name = host_at[old]
                else:
                    name = self.host(host_id, location=old)
                self.rec_host[rec.lineno] = name
                seen_host(name, host_id)
                self.first_loc.setdefault(name, old)
                host_at.pop(old, None)
                host_at[new] = name
            elif c == "TrafficInjection" and d.get("dp_event") is not None:
                mac, ips, _ = self.iface(rec, d["dp_event"])
                name = self.host(d.get("host_id"), mac=mac, ips=ips)
                self.rec_host[rec.lineno] = name
                seen_host(name, d.get("host_id"), mac, ips[0] if ips else None)
            elif c in ("DataplaneDrop", "DataplanePermit"):
                fp = d.get("fingerprint")
                if isinstance(fp, list) and fp and fp[0] == c:
                    fp = fp[1:]
                if isinstance(fp, list) and len(fp) >= 3:
                    if type(fp[1]) is int:
                        seen_dpid(rec, "fingerprint", fp[1])
                    elif isinstance(fp[1], str) and fp[1]:
                        name = self.host(fp[1])
                        self.rec_host[rec.lineno] = name
                        seen_host(name, fp[1], fp[2])  # a host's "port" is its interface's MAC

    # ------------------------------------------------------------- topology
    def infer_topology(self) -> Topology:
        topo = Topology(INFERRED_SPEC, INFERRED_SPEC)
        for dpid in sorted(self.dpids):
            topo.add_switch(f"s{dpid}", dpid)
        for a, pa, b, pb in self.links:
            try:
                topo.add_link(a, b, pa, pb)
            except NetsleuthError as exc:
                self.notes.append(f"inferred topology: left out link {a}:{pa}-{b}:{pb} ({exc.problem})")
        placed: list[str] = []
        for name in sorted(self.host_order, key=lambda h: (_host_number(h) or 0, h)):
            loc = self.first_loc.get(name)
            if loc is None:
                continue
            sw, port = loc
            if not 1 <= port <= OFPP_MAX or topo.neighbor(sw, port) is not None:
                self.notes.append(f"inferred topology: host {name} left out (its first location {sw}:{port} "
                                  "is not a free switch port)")
                continue
            mac, ip = self.addrs.get(name, (None, None))
            try:
                topo.add_host(name, mac, ip)
            except NetsleuthError:
                topo.add_host(name)
                self.notes.append(f"inferred topology: host {name} got default addresses "
                                  "(the recorded ones clash or are invalid)")
            topo.add_link(name, sw, 0, port)
            placed.append(name)
        missing = [h for h in self.host_order if h not in placed]
        if missing:
            self.notes.append("inferred topology: host(s) " + ", ".join(missing) + " are referenced but their "
                              "location is unknown (STS records host locations only in migrations); "
                              "pass the real topology to place them")
        self.notes.append(f"topology inferred from the trace ({len(topo.switches)} switches, {len(topo.hosts)} hosts, "
                          f"{len(topo.links)} links): only what the trace mentions; pass --topo for the real one")
        return topo

    # ------------------------------------------------------------- emitting
    def at(self, rec: _Rec) -> float:
        """The line's time in seconds since the first line, never earlier than the event before it.

        STS's replays of snapshots restart their clock mid-trace; netsleuth
        traces never go back in time, so such a line keeps its predecessor's time.
        """
        t = round(rec.time - self.t0, 6)
        last = self.events[-1].t if self.events else 0.0
        if t < last:
            self.note_once("clock", f"the STS clock goes back at line {rec.lineno} (and maybe later): such events "
                                    "keep the time of the event before them")
            return last
        return t

    def emit(self, rec: _Rec, cls: type[ts.Event], **fields: Any) -> ts.Event:
        fields.update(seq=len(self.events), t=self.at(rec))
        if cls.is_input:
            self.next_input += 1
            fields["id"] = f"i{self.next_input}"
            self.id_of_label[rec.label] = fields["id"]
            self.deps[fields["id"]] = list(fields.pop("deps", ()))
            if rec.d.get("prunable") is False:
                self.unprunable.append(fields["id"])
        ev = cls(**fields)
        self.events.append(ev)
        self.converted[rec.cls] = self.converted.get(rec.cls, 0) + 1
        return ev

    def failure(self, rec: _Rec, cls: type, key: tuple[Any, ...], **fields: Any) -> None:
        ev = self.emit(rec, cls, **fields)
        self.open_failure[key] = ev.id  # type: ignore[attr-defined]  # failures are inputs: an InputEvent

    def recovery(self, rec: _Rec, cls: type, key: tuple[Any, ...], **fields: Any) -> None:
        dep = self.open_failure.pop(key, None)
        if dep is None:
            self.note_once(f"orphan:{rec.cls}", f"{rec.cls} on line {rec.lineno} (and maybe others) follows no "
                           "matching failure; converted without a dependency")
        self.emit(rec, cls, deps=[dep] if dep else [], **fields)

    def stale_conns(self, dpid: int | None = None, controller: str | None = None) -> None:
        for key in self.conns:
            if (dpid is not None and key[0] == dpid) or (controller is not None and key[1] == controller):
                self.stale.add(key)

    def live_switches(self) -> list[str]:
        return [sw.name for sw in sorted(self.topo.switches, key=lambda sw: sw.dpid) if sw.name not in self.switch_down]

    def connect(self, rec: _Rec, switches: list[str], controllers: list[str]) -> None:
        """``switch_connected`` for each switch and controller (STS's switches connect to every controller)."""
        if not controllers:
            if rec.cls == "ConnectToControllers":
                self.skip(rec, "no controller is named in the trace or its config files: nothing to connect to")
            return
        for name in switches:
            dpid = self.topo.switch(name).dpid
            for ctl in controllers:
                self.events.append(ts.SwitchConnected(seq=len(self.events), t=self.at(rec),
                                                      dpid=dpid, conn=self.conn(dpid, ctl), controller=ctl))
        if rec.cls == "ConnectToControllers":
            self.converted[rec.cls] = self.converted.get(rec.cls, 0) + 1

    def conn(self, dpid: int, controller: str) -> int:
        key = (dpid, controller)
        if key not in self.conns or key in self.stale:
            self.next_conn += 1
            self.conns[key] = self.next_conn
            self.stale.discard(key)
        return self.conns[key]

    # ------------------------------------------------------------- per class
    def convert(self, rec: _Rec) -> None:
        c, d = rec.cls, rec.d
        if c in ("SwitchFailure", "SwitchRecovery"):
            name = self.switch(rec, "dpid")
            if c == "SwitchFailure":
                self.stale_conns(dpid=self.as_int(rec, "dpid"))
                self.failure(rec, ts.SwitchFailure, ("switch", name), switch=name)
                self.switch_down.add(name)
            else:
                self.recovery(rec, ts.SwitchRecovery, ("switch", name), switch=name)
                self.switch_down.discard(name)
                self.connect(rec, [name], [c for c in self.controller_names if c not in self.controller_down])
        elif c in ("LinkFailure", "LinkRecovery"):
            a, b = self.switch(rec, "start_dpid"), self.switch(rec, "end_dpid")
            pa, pb = self.as_int(rec, "start_port_no"), self.as_int(rec, "end_port_no")
            self.orient(a, pa, b, pb)
            # STS's links are one-way objects: a LinkFailure cuts start -> end and takes down only the
            # start's port; the end keeps sending into the link. netsleuth's one_way failure is exactly that.
            if c == "LinkRecovery" and ("link", a, pa) not in self.open_failure \
                    and ("link", b, pb) in self.open_failure:
                a, pa, b, pb = b, pb, a, pa  # names the cut direction from its far end (STS itself never does)
            key = ("link", a, pa)
            fields = dict(node1=a, port1=pa, node2=b, port2=pb, one_way=True)
            if c == "LinkFailure":
                self.failure(rec, ts.LinkFailure, key, **fields)
            else:
                self.recovery(rec, ts.LinkRecovery, key, **fields)
        elif c in ("ControllerFailure", "ControllerRecovery"):
            name = self.controller(rec, self.need(rec, "controller_id"))
            if c == "ControllerFailure":
                self.stale_conns(controller=name)
                self.failure(rec, ts.ControllerCrash, ("controller", name), controller=name)
                self.controller_down.add(name)
            else:
                self.recovery(rec, ts.ControllerRecovery, ("controller", name), controller=name)
                self.controller_down.discard(name)
                self.connect(rec, self.live_switches(), [name])
        elif c == "ConnectToControllers":
            self.connect(rec, self.live_switches(), [n for n in self.controller_names if n not in self.controller_down])
        elif c in ("ControlChannelBlock", "ControlChannelUnblock"):
            sw = self.switch(rec, "dpid")
            ctl = self.controller(rec, self.need(rec, "controller_id"))
            if c == "ControlChannelBlock":
                self.failure(rec, ts.ChannelBlock, ("channel", sw, ctl), switch=sw, controller=ctl)
            else:
                self.recovery(rec, ts.ChannelUnblock, ("channel", sw, ctl), switch=sw, controller=ctl)
        elif c == "HostMigration":
            self.migration(rec)
        elif c == "TrafficInjection":
            self.traffic(rec)
        elif c == "DataplaneDrop":
            self.drop(rec)
        elif c in ("ControlMessageReceive", "ControlMessageSend"):
            self.openflow(rec)
        elif c == "CheckInvariants":
            check_name = d.get("invariant_name") or d.get("invariant_check_name")
            self.current_check = check_name if isinstance(check_name, str) else self.config.invariant_check
            if self.current_check and self.current_check not in self.checks:
                self.checks.append(self.current_check)
            self.skip(rec, _NO_COUNTERPART[c])
        elif c == "InvariantViolation":
            self.violation(rec)
        elif c in _NO_COUNTERPART:
            self.skip(rec, _NO_COUNTERPART[c])
        else:
            self.skip(rec, "unknown STS event class (not defined in sts/replay_event.py)")

    def orient(self, a: str, pa: int, b: str, pb: int) -> tuple[str, int, str, int]:
        """The link as the topology lists it (netsleuth keys links by the topology's orientation)."""
        if (a, pa, b, pb) in self.link_keys:
            return a, pa, b, pb
        if (b, pb, a, pa) in self.link_keys:
            return b, pb, a, pa
        self.note_once(f"link:{a}:{pa}:{b}:{pb}", f"link {a}:{pa}-{b}:{pb} is not in the topology; "
                       "its events keep STS's orientation")
        return a, pa, b, pb

    def migration(self, rec: _Rec) -> None:
        old_sw, old_port = self.switch(rec, "old_ingress_dpid"), self.as_int(rec, "old_ingress_port_no")
        new_sw, new_port = self.switch(rec, "new_ingress_dpid"), self.as_int(rec, "new_ingress_port_no")
        host = self.rec_host[rec.lineno]
        prev = self.last_migration.get(host)
        ev = self.emit(rec, ts.HostMigration, deps=[prev] if prev else [], host=host, old_switch=old_sw,
                       old_port=old_port, new_switch=new_sw, new_port=new_port)
        self.last_migration[host] = ev.id  # type: ignore[attr-defined]  # a HostMigration is an InputEvent
        self.moved_to.pop((old_sw, old_port), None)
        self.moved_to[(new_sw, new_port)] = (host, 0)

    def traffic(self, rec: _Rec) -> None:
        dp_event = rec.d.get("dp_event")
        if dp_event is None:
            self.skip(rec, "recorded without dp_event: the packet is in STS's separate pickled dataplane "
                           "trace (Python 2 pickle of POX objects), which netsleuth cannot read")
            return
        _, _, raw = self.iface(rec, dp_event)
        packet = Packet.from_bytes(raw)
        self.emit(rec, ts.TrafficInjection, host=self.rec_host[rec.lineno], packet=packet.to_json(),
                  dst=self.destination(packet))

    def destination(self, packet: Packet) -> str | None:
        if packet.eth_dst != BROADCAST_MAC and not (packet.eth_dst >> 40) & 1:
            for h in self.topo.hosts:
                if h.mac == packet.eth_dst:
                    return h.name
        l3 = packet.l3
        ip = l3.dst if isinstance(l3, IPv4) else l3.tpa if isinstance(l3, Arp) else None
        if ip is not None:
            for h in self.topo.hosts:
                if h.ip == ip:
                    return h.name
        return None

    def drop(self, rec: _Rec) -> None:
        raw = self.need(rec, "fingerprint")
        fp_list = list(raw) if isinstance(raw, list) else None
        if fp_list and fp_list[0] == "DataplaneDrop":
            fp_list = fp_list[1:]
        if not fp_list or len(fp_list) < 3:
            raise _fail(self.where(rec), f"DataplaneDrop {rec.label}: fingerprint must be "
                        "[\"DataplaneDrop\", {packet fields}, dpid, port]", "restore the fingerprint as STS wrote it")
        fp = _dpfp_to_fp(fp_list[0])
        if fp is None:
            raise _fail(self.where(rec), f"DataplaneDrop {rec.label}: {fp_list[0]!r} is not an STS packet "
                        "fingerprint", 'use {"dl_src", "dl_dst", "nw_src", "nw_dst"}, {"class": "arp"|"lldp"} '
                        'or {"dl_type": N}')
        if fp[0] == "eth":
            self.note_once("ethfp", "a DataplaneDrop names a non-IP packet only by its ethertype; its fingerprint "
                                    "('eth', type) cannot match a netsleuth ('eth', type, src, dst) fingerprint")
        where, port = fp_list[1], fp_list[2]
        if type(where) is int:
            node, nport = self.switch(rec, "fingerprint", where), self.as_int(rec, "fingerprint", port)
        elif isinstance(where, str) and where:
            node, nport = self.rec_host[rec.lineno], 0
        else:
            raise _fail(self.where(rec), f"DataplaneDrop {rec.label}: fingerprint names no switch or host",
                        "restore the fingerprint's dpid and port")
        # STS names the sending end (the DpPacketOut's node and port); netsleuth
        # drops on the link *into* (node, port): use the far end when known.
        far = self.moved_to.get((node, nport)) or (self.topo.neighbor(node, nport) if node in self.topo else None)
        if far is not None:
            node, nport = far
        else:
            self.note_once("dropend", f"DataplaneDrop {rec.label} (and maybe others): the link out of "
                                      f"{node}:{nport} is not in the topology, so the drop names the sending end")
        self.emit(rec, ts.DataplaneDrop, node=node, port=nport, fp=fp)

    def openflow(self, rec: _Rec) -> None:
        dpid = self.as_int(rec, "dpid")
        self.switch(rec, "dpid")
        ctl = self.controller(rec, self.need(rec, "controller_id"))
        b64 = rec.d.get("b64_packet")
        if not b64:
            self.skip(rec, "recorded without b64_packet (STS before mid-2013 kept only a fingerprint of "
                           "each OpenFlow message)")
            return
        if self.decode is None:
            self.skip(rec, "no OpenFlow decoder was given (pass decode_openflow=...; the CLI does)")
            return
        try:
            data = base64.b64decode(b64, validate=True)
        except (binascii.Error, ValueError, TypeError):
            raise _fail(self.where(rec), f"{rec.cls} {rec.label}: b64_packet is not base64",
                        "restore the message bytes as STS wrote them, or delete b64_packet") from None
        try:
            msg = self.decode(data)
            if not isinstance(msg, dict):
                raise TypeError(f"the decoder returned {type(msg).__name__}, not the codec's JSON form")
            fp = of_fingerprint(msg)
        except Exception as exc:  # noqa: BLE001 -- a caller-supplied decoder: report, never abort
            problem = exc.problem if isinstance(exc, NetsleuthError) else str(exc)
            if len(self.of_examples) < 3:
                self.of_examples.append(f"line {rec.lineno}: {problem}")
            self.skip(rec, "the OpenFlow bytes could not be decoded")
            return
        cls = ts.ControlToSwitch if rec.cls == "ControlMessageReceive" else ts.ControlToController
        self.emit(rec, cls, conn=self.conn(dpid, ctl), controller=ctl, dpid=dpid, msg=msg, fp=fp)

    def violation(self, rec: _Rec) -> None:
        raw = self.need(rec, "violations")
        if not isinstance(raw, list):
            raise _fail(self.where(rec), f"InvariantViolation {rec.label}: \"violations\" must be a list",
                        'write e.g. "violations": ["c1"]')
        viols = [v if isinstance(v, str) else json.dumps(v) for v in raw]
        persistent = rec.d.get("persistent")
        if not isinstance(persistent, bool):
            self.note_once("persist", "InvariantViolation line(s) without \"persistent\" (early STS) were "
                                      "imported as transient")
            persistent = False
        text = "\n".join(viols)
        hosts = tuple(h.name for h in self.topo.hosts
                      if re.search(rf"(?<![\d.]){re.escape(int_to_ip(h.ip))}(?!\d)", text)
                      or re.search(rf"(?<![0-9a-f:]){re.escape(int_to_mac(h.mac))}(?![0-9a-f:])", text, re.I))
        first = " ".join(viols[0].split())[:200] if viols else ""
        message = first if len(viols) == 1 else f"{len(viols)} violations; first: {first}"
        details = {"sts_label": rec.label, "sts_round": rec.d.get("round") if type(rec.d.get("round")) is int
                   else None, "sts_invariant": self.current_check, "violations": viols}
        self.controllers_exited(rec, viols)
        self.emit(rec, ts.Violation, invariant=_invariant_name(self.current_check), message=message,
                  persistent=persistent, hosts=hosts, switches=(), details=details)

    def controllers_exited(self, rec: _Rec, viols: list[str]) -> None:
        """Controllers STS found down by asking their processes, that no input crashed: they exited.

        STS's ``check_liveness`` (and the "all controllers dead" test STS runs
        before every other check) answers with controller labels, read from
        each controller process's status. A controller that the trace never
        crashed but STS found down died on its own (the ONOS runs' bug); the
        trace holds no other record of that, so it is kept as a
        ``controller_event`` "exited" at the time STS looked.
        """
        check = (self.current_check or "").rsplit(".", 1)[-1]
        named = [v for v in viols if v in self.controller_names]
        if not named or (check != "check_liveness" and len(set(named)) != len(self.controller_names)):
            return
        if len(named) != len(viols):
            return
        for ctl in dict.fromkeys(named):
            if ctl in self.controller_down:
                continue
            self.controller_down.add(ctl)
            self.stale_conns(controller=ctl)
            self.events.append(ts.ControllerEvent(
                seq=len(self.events), t=self.at(rec), controller=ctl, what="exited",
                detail=f"STS's liveness check found the {ctl} process down (InvariantViolation {rec.label}); "
                       "no input crashed it"))

    # ------------------------------------------------------------- dependencies
    def link_dependent_labels(self) -> None:
        """STS ``A.dependent_labels = [B]`` (prune A => prune B) as ``B.deps`` containing A."""
        seq = {e.id: e.seq for e in self.events if e.is_input}  # type: ignore[attr-defined]  # is_input: InputEvents
        dropped = flipped = 0
        for rec in self.records:
            for other in rec.d.get("dependent_labels") or ():
                a, b = self.id_of_label.get(rec.label), self.id_of_label.get(other)
                if a is None or b is None:
                    dropped += 1
                    continue
                if a == b:
                    continue
                if seq[b] < seq[a]:  # deps point backwards in the trace
                    a, b = b, a
                    flipped += 1
                if a not in self.deps[b]:
                    self.deps[b].append(a)
        if dropped:
            self.notes.append(f"{dropped} STS dependent_labels link(s) involve an event that was not converted; "
                              "dropped")
        if flipped:
            self.notes.append(f"{flipped} STS dependent_labels link(s) pointed at an earlier event; recorded on the "
                              "later event (deps always point backwards)")
        for i, ev in enumerate(self.events):
            if ev.is_input:
                # is_input: an InputEvent
                deps = sorted(set(self.deps[ev.id]), key=seq.__getitem__)  # type: ignore[attr-defined]
                if deps:
                    self.events[i] = replace(ev, deps=tuple(deps))  # type: ignore[call-arg]  # an InputEvent

    # ------------------------------------------------------------- run
    def run(self) -> ImportReport:
        self.collect_controllers()
        self.prepass()
        self.topo = self.given if self.given is not None else self.infer_topology()
        if self.config.files:
            self.notes.append(f"read the experiment's config ({', '.join(self.config.files)}) without running it")
        self.notes.extend(self.config.notes)
        self.link_keys = {(lk.node1, lk.port1, lk.node2, lk.port2) for lk in self.topo.links}
        if not any(rec.cls == "ConnectToControllers" for rec in self.records):
            # STS before it recorded ConnectToControllers still connected every switch at start-up
            self.connect(self.records[0], self.live_switches(), list(self.controller_names))
            if self.controller_names:
                self.notes.append("the trace has no ConnectToControllers line; every switch was connected to every "
                                  "controller at the start, as STS's start-up did")
        for rec in self.records:
            self.convert(rec)
        self.link_dependent_labels()
        if self.of_examples:
            self.notes.append("OpenFlow messages the decoder rejected, e.g. " + "; ".join(self.of_examples))
        if self.host_alias:
            self.notes.append("STS host ids renamed: " + ", ".join(f"{k!r} -> {v}" for k, v in self.host_alias.items()))
        if self.controller_alias:
            self.notes.append("STS controller ids [ip, port] named ip:port: "
                              + ", ".join(sorted(set(self.controller_alias.values()))))
        if self.unprunable:
            self.notes.append(f"{len(self.unprunable)} input(s) STS marked prunable=false (initialization); "
                              "listed in header.extra.sts.unprunable_inputs")
        dropped_inputs = sum(n for c, n in self.skipped.items() if c in _INPUT_CLASSES
                             and c not in ("WaitTime", "CheckInvariants"))
        if dropped_inputs:
            self.notes.append(f"{dropped_inputs} STS input event(s) could not be converted (see skipped)")
        sts_extra = {
            "topology_inferred": self.given is None,
            "hosts": dict(self.host_alias),
            "controllers": dict(self.controller_alias),
            "input_labels": {label: i for label, i in self.id_of_label.items()},
            "unprunable_inputs": list(self.unprunable),
            "invariant_checks": list(self.checks),
            "config": self.config.to_json(),
        }
        header = ts.TraceHeader(
            topology=self.topo.to_json(), topology_spec=self.topo.spec,
            controller=" + ".join(self.controller_names), seed=None, tool_version=__version__,
            command=f"netsleuth import sts {self.path.name}",
            extra={"imported_from": "sts", "source": self.path.name, "sts": sts_extra})
        return ImportReport(trace=ts.Trace(header, self.events), converted=self.converted, skipped=self.skipped,
                            notes=self.notes, reasons=self.reasons, topology_inferred=self.given is None)


def _with_recorded_addresses(topo: Topology, records: list[_Rec], notes: list[str]) -> Topology:
    """The config's topology with the host IPs the trace shows (matched by MAC).

    STS changed its hosts' IP scheme over time (``10.<dpid>.<port>.2`` before
    MeshTopology took an ``ip_format_str``, ``123.123.<dpid>.<port>`` after) and
    a config may override it; the MACs never changed. The interfaces recorded
    with each ``TrafficInjection`` say which scheme the run used.
    """
    seen: dict[int, int] = {}
    for rec in records:
        dp = rec.d.get("dp_event") if rec.cls == "TrafficInjection" else None
        intf = dp.get("interface") if isinstance(dp, dict) else None
        if not isinstance(intf, dict) or not isinstance(intf.get("hw_addr"), str) or not intf.get("ips"):
            continue
        try:
            seen.setdefault(mac_to_int(intf["hw_addr"]), ip_to_int(str(intf["ips"][0])))
        except (ValueError, TypeError):
            continue
    data = topo.to_json()
    changed = []
    taken = {h["ip"] for h in data["hosts"]}
    for h in data["hosts"]:
        ip = seen.get(mac_to_int(h["mac"]))
        if ip is not None and int_to_ip(ip) != h["ip"] and int_to_ip(ip) not in taken:
            changed.append(f"{h['name']} {h['ip']} -> {int_to_ip(ip)}")
            taken.discard(h["ip"])
            h["ip"] = int_to_ip(ip)
            taken.add(h["ip"])
    if not changed:
        return topo
    notes.append("host addresses as the trace's injected packets show them: " + ", ".join(changed))
    return Topology.from_json(data)


def sts_trace_in(path: str | Path) -> Path:
    """The trace an STS path names: the file itself, or a folder's ``events.trace`` (else ``mcs.trace``)."""
    p = Path(path)
    if not p.is_dir():
        return p
    for name in ("events.trace", "mcs.trace"):
        if (p / name).is_file():
            return p / name
    raise TraceFormatError(f"{p} holds no events.trace or mcs.trace",
                           "point at an STS experiment folder (experiments/<name>/) or at its trace file")


def import_sts(path: str | Path, *, topology: Topology | None = None,
               decode_openflow: OpenFlowDecoder | None = None) -> ImportReport:
    """Convert the STS trace at ``path`` into a netsleuth trace plus a report.

    ``path``: an experiment folder or a trace file (its folder's config
    files are read either way). ``topology``: the network the trace was
    recorded on (switch dpids and host names are looked up in it); without
    one, the topology the config names, else one inferred from the trace and
    marked as inferred. ``decode_openflow`` turns raw OpenFlow
    bytes into the codec's JSON form (``msg_to_json(decode(b))``); without it
    the trace's OpenFlow messages are reported as skipped. Raises
    :class:`TraceFormatError` (naming the line and the fix) on a malformed line.
    """
    p = sts_trace_in(path)
    records, blank = _read(p)
    config = read_sts_config(p.parent)
    notes: list[str] = []
    if topology is None:
        spec, notes = sts_topology_spec(config)
        if spec is not None:
            topology = parse_topo(spec)
            notes.insert(0, f"topology {spec} from the config's {config.topology_class}"
                            f"({config.topology_params or ''})")
        if topology is not None:
            topology = _with_recorded_addresses(topology, records, notes)
    report = _Importer(p, records, blank, topology, decode_openflow, config).run()
    report.notes[:0] = notes
    return report
