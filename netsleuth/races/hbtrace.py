"""Read SDNRacer's ``hb.json`` (JSON Lines of Hb* events) into :class:`HbEvent` objects.

Quirks of the format handled here: events are in completion order, not eid
order (the order is kept: SDNRacer's rules depend on it); ``operations`` are
JSON strings; ``in_port`` may be the string "None"; times are strings.
"""

from __future__ import annotations

import base64
import json
import struct
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


def _port(value: Any) -> int | None:
    if value is None or value == "None":
        return None
    if isinstance(value, int):
        return value
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _b64(value: Any) -> bytes | None:
    return base64.b64decode(value) if value else None


class _FlowModCache:
    """Flow mods repeat a lot (the same entry in many reads); decode each once."""

    def __init__(self) -> None:
        self._cache: dict[str, PoxFlowMod] = {}

    def get(self, b64: str | None) -> PoxFlowMod | None:
        if not b64:
            return None
        fm = self._cache.get(b64)
        if fm is None:
            fm = PoxFlowMod.from_wire(base64.b64decode(b64))
            self._cache[b64] = fm
        return fm


def _op(raw: Any, fms: _FlowModCache) -> FlowOp:
    d = json.loads(raw) if isinstance(raw, str) else raw
    name = d.get("type", "")
    kind = _OP_KINDS.get(name, OTHER)
    t = float(d["t"]) if d.get("t") is not None else 0.0
    fm = fms.get(d.get("flow_mod")) if kind != OTHER else None
    return FlowOp(kind, t, fm, d.get("eid"), name)


def event_from_json(d: dict[str, Any], fms: _FlowModCache | None = None) -> HbEvent:
    """One hb.json record as an :class:`HbEvent`."""
    fms = fms or _FlowModCache()
    kind = d.get("type")
    if kind not in KINDS:
        raise TraceFormatError(f"unknown hb.json event type {kind!r} (eid {d.get('eid')})",
                               "give a trace recorded by SDNRacer (hb.json)")
    ops = [_op(o, fms) for o in d.get("operations") or ()]
    return HbEvent(
        eid=d["eid"], kind=kind, dpid=d.get("dpid"), hid=d.get("hid"), msg_type=d.get("msg_type"),
        pid_in=d.get("pid_in"), pid_out=tuple(d.get("pid_out") or ()),
        mid_in=d.get("mid_in"), mid_out=tuple(d.get("mid_out") or ()),
        has_pid_in="pid_in" in d, has_mid_in="mid_in" in d,
        ops=ops, packet=_b64(d.get("packet")), in_port=_port(d.get("in_port")),
        out_port=_port(d.get("out_port")), msg=_b64(d.get("msg")))


def iter_hb_json(path: str | Path) -> Iterator[HbEvent]:
    """Events of an hb.json file in file order."""
    fms = _FlowModCache()
    p = Path(path)
    try:
        f = p.open(encoding="utf-8")
    except OSError as exc:
        raise TraceFormatError(f"cannot read {p}: {exc.strerror or exc}",
                               "pass the path of an SDNRacer hb.json file") from None
    with f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            try:
                d = json.loads(line)
                yield event_from_json(d, fms)
            except TraceFormatError:
                raise
            except (ValueError, KeyError, TypeError, struct.error) as exc:
                raise TraceFormatError(f"{p}:{lineno}: not an hb.json event ({exc})",
                                       "give a trace recorded by SDNRacer (hb.json)") from None


def read_hb_json(path: str | Path) -> list[HbEvent]:
    return list(iter_hb_json(path))

