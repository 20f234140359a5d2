"""Read SDNRacer's ``hb.json`` (JSON Lines of Hb* events) into :class:`HbEvent` objects.

Quirks of the format handled here: events are in completion order, not eid
order (the order is kept: SDNRacer's rules depend on it); ``operations`` are
JSON strings; ``in_port`` may be the string "None"; times are strings.

The file is untrusted input (it arrives with bug reports), so this reader is
where it is checked: UTF-8, bounded JSON nesting, every field of the shape
SDNRacer writes, base64 that decodes, flow mods that parse. Any problem is
one TraceFormatError naming the file and line; the race detector and BigBug
above may then trust the events.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from netsleuth.errors import TraceFormatError
from netsleuth.races.events import EXPIRY, KINDS, OTHER, READ, WRITE, FlowOp, HbEvent
from netsleuth.races.poxmatch import PoxFlowMod

_OP_KINDS = {
    "TraceSwitchFlowTableRead": READ,
    "TraceSwitchFlowTableWrite": WRITE,
    "TraceSwitchFlowTableEntryExpiry": EXPIRY,
}


_FIX = "give an SDNRacer hb.json (one Hb* event object per line) or a netsleuth trace.jsonl"
_MAX_DEPTH = 32  # hb.json lines nest 2 levels; deeper is corruption, refused before parsing


class _BadHbField(Exception):
    """A value of the wrong shape; :func:`iter_hb_json` adds the file and line."""


def _int_or_none(d: dict[str, Any], key: str) -> int | None:
    v = d.get(key)
    if v is not None and type(v) is not int:
        raise _BadHbField(f"{key!r} must be an integer or null, got {v!r:.60}")
    return v


def _int_list(d: dict[str, Any], key: str) -> tuple[int, ...]:
    v = d.get(key)
    if v is None:
        return ()
    if not isinstance(v, list) or not all(type(x) is int for x in v):
        raise _BadHbField(f"{key!r} must be a list of integers, got {v!r:.60}")
    return tuple(v)


def _str_or_none(d: dict[str, Any], key: str) -> str | None:
    v = d.get(key)
    if v is not None and not isinstance(v, str):
        raise _BadHbField(f"{key!r} must be a string or null, got {v!r:.60}")
    return v


def _port(value: Any) -> int | None:
    """Ports are ints or text: SDNRacer writes "None", numbers, and for some POX
    apps a MAC address; text that is not a number means "no port", as in SDNRacer."""
    if value is None or value == "None":
        return None
    if type(value) is int:
        return value
    if isinstance(value, str):
        text = value.strip()
        return int(text) if text.isdigit() and len(text) < 20 else None
    raise _BadHbField(f"a port must be an integer, text or null, got {value!r:.60}")


def _b64(value: Any, key: str = "packet") -> bytes | None:
    if not value:
        return None
    if not isinstance(value, str):
        raise _BadHbField(f"{key!r} must be base64 text, got {value!r:.60}")
    try:
        return base64.b64decode(value, validate=True)
    except (ValueError, binascii.Error):
        raise _BadHbField(f"{key!r} is not valid base64") from None


def _time(value: Any) -> float:
    if value is None:
        return 0.0
    if type(value) in (int, float) or isinstance(value, str):
        try:
            t = float(value)
        except ValueError:
            t = math.nan
        if math.isfinite(t):
            return t
    raise _BadHbField(f"an operation's 't' must be a finite number (or its text), got {value!r:.60}")


class _FlowModCache:
    """Flow mods repeat a lot (the same entry in many reads); decode each once."""

    def __init__(self) -> None:
        self._cache: dict[str, PoxFlowMod] = {}

    def get(self, b64: Any) -> PoxFlowMod | None:
        if not b64:
            return None
        fm = self._cache.get(b64) if isinstance(b64, str) else None
        if fm is None:
            data = _b64(b64, "flow_mod")
            try:
                fm = PoxFlowMod.from_wire(data or b"")
            except Exception as exc:  # noqa: BLE001 - the POX-style parser asserts/indexes on bad bytes
                raise _BadHbField(f"'flow_mod' is not an OpenFlow 1.0 FLOW_MOD ({type(exc).__name__}: {exc})") from None
            self._cache[b64] = fm
        return fm


def _op(raw: Any, fms: _FlowModCache) -> FlowOp:
    if isinstance(raw, str):
        if raw.count("[") + raw.count("{") > _MAX_DEPTH and _nesting(raw) > _MAX_DEPTH:
            raise _BadHbField(f"an operation's JSON nests deeper than {_MAX_DEPTH} levels")
        try:
            d = json.loads(raw, parse_constant=_no_constant)
        except (ValueError, RecursionError):
            raise _BadHbField("an operation is not valid JSON text") from None
    else:
        d = raw
    if not isinstance(d, dict):
        raise _BadHbField(f"an operation must be an object (or its JSON text), got {d!r:.60}")
    name = d.get("type", "")
    if not isinstance(name, str):
        raise _BadHbField(f"an operation's 'type' must be a string, got {name!r:.60}")
    kind = _OP_KINDS.get(name, OTHER)
    t = _time(d.get("t"))
    fm = fms.get(d.get("flow_mod")) if kind != OTHER else None
    return FlowOp(kind, t, fm, _int_or_none(d, "eid"), name)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def event_from_json(d: Any, fms: _FlowModCache | None = None) -> HbEvent:
    """One hb.json record as an :class:`HbEvent`; TraceFormatError if it is not one."""
    try:
        return _event(d, fms or _FlowModCache())
    except _BadHbField as exc:
        raise TraceFormatError(f"not an hb.json event: {exc}", _FIX) from None


def _event(d: Any, fms: _FlowModCache) -> HbEvent:
    if not isinstance(d, dict):
        raise _BadHbField(f"an event must be a JSON object, got {type(d).__name__}")
    kind = d.get("type")
    if kind not in KINDS:
        raise _BadHbField(f"unknown event type {kind!r:.60}")
    eid = d.get("eid")
    if type(eid) is not int:
        raise _BadHbField(f"'eid' must be an integer, got {eid!r:.60}")
    ops_raw = d.get("operations")
    if ops_raw is not None and not isinstance(ops_raw, list):
        raise _BadHbField(f"'operations' must be a list, got {ops_raw!r:.60}")
    ops = [_op(o, fms) for o in ops_raw or ()]
    return HbEvent(
        eid=eid, kind=kind, dpid=_int_or_none(d, "dpid"), hid=_int_or_none(d, "hid"),
        msg_type=_str_or_none(d, "msg_type"),
        pid_in=_int_or_none(d, "pid_in"), pid_out=_int_list(d, "pid_out"),
        mid_in=_int_or_none(d, "mid_in"), mid_out=_int_list(d, "mid_out"),
        has_pid_in="pid_in" in d, has_mid_in="mid_in" in d,
        ops=ops, packet=_b64(d.get("packet")), in_port=_port(d.get("in_port")),
        out_port=_port(d.get("out_port")), msg=_b64(d.get("msg"), "msg"))


def iter_hb_json(path: str | Path) -> Iterator[HbEvent]:
    """Events of an hb.json file in file order; every problem is one TraceFormatError naming the line."""
    fms = _FlowModCache()
    p = Path(path)
    try:
        f = p.open("rb")
    except OSError as exc:
        raise TraceFormatError(f"cannot read {p}: {exc.strerror or exc}",
                               "pass the path of an SDNRacer hb.json or a netsleuth trace.jsonl") from None
    with f:
        for lineno, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8").strip()
            except UnicodeDecodeError:
                raise TraceFormatError(f"{p} line {lineno}: the line is not valid UTF-8",
                                       "the file is corrupt or not a trace; " + _FIX) from None
            if not line or line.startswith("#"):
                continue
            if line.count("[") + line.count("{") > _MAX_DEPTH and _nesting(line) > _MAX_DEPTH:
                raise TraceFormatError(f"{p} line {lineno}: JSON nests deeper than {_MAX_DEPTH} levels",
                                       "the line is corrupt; " + _FIX)
            try:
                d = json.loads(line, parse_constant=_no_constant)
            except (ValueError, RecursionError) as exc:
                raise TraceFormatError(f"{p} line {lineno}: not JSON ({str(exc)[:100]})", _FIX) from None
            try:
                yield _event(d, fms)
            except _BadHbField as exc:
                raise TraceFormatError(f"{p} line {lineno}: not an hb.json event: {exc}", _FIX) from None


def _nesting(line: str) -> int:
    """Deepest bracket nesting of a JSON line, brackets in strings not counted."""
    depth = deepest = 0
    for m in _TOKENS.finditer(line):
        c = m.group()
        if c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth -= 1
    return deepest


_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def read_hb_json(path: str | Path) -> list[HbEvent]:
    return list(iter_hb_json(path))
