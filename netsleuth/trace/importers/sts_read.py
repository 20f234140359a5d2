"""Reading an STS ``events.trace``: its lines as records (class, label, time, fields), the event
classes STS defines and what becomes of each, and the import report. Value helpers shared by the
importer (host numbers, STS fingerprints, invariant names) are here too.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netsleuth.errors import TraceFormatError
from netsleuth.model.addr import int_to_ip, int_to_mac, ip_to_int, mac_to_int
from netsleuth.trace import schema as ts

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
