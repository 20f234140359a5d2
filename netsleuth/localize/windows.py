"""Spectra per handler call: which window of a failing replay went wrong.

A replay's whole coverage cannot separate the lines of a handler every
replay runs (a learning switch's packet-in handler): failing and passing
replays execute the same lines.  The controller's run is finer than that:
each call of an event handler is a *window* with lines of its own (recorded
by controllers/covlaunch.py), and the window that sent the rule a violation
names is where the fault acted (for a violation that is the controller's
exception, the window the exception escaped).  So a failing replay gives one
failing run (the window, or windows, that sent the violation's rule) and passing runs
(its other windows); every window of a passing replay is a passing run.

Sans-I/O: windows, the messages each sent, the replay's controller->switch
messages and the violation in; labels and runs out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from netsleuth.localize.spectrum import Line, Run

_MAC = re.compile(r"\b[0-9a-f]{2}(?::[0-9a-f]{2}){5}\b")
_RULE_MESSAGES = ("FLOW_MOD",)
_ANY_MESSAGES = ("FLOW_MOD", "PACKET_OUT")


@dataclass(frozen=True, slots=True)
class ControllerMessage:
    """A controller->switch message of the replay: its switch, xid, type and body."""

    dpid: int
    xid: int
    type: str
    body: Mapping[str, Any]


def _texts(target: Mapping[str, Any]) -> list[str]:
    """The violation's words that name rules: its group, rule texts and reasons."""
    details = target.get("details") or {}
    out = [str(g) for g in details.get("group", []) or []]
    out += [str(details.get("rule_text", ""))] + [str(r) for r in details.get("rules", []) or []]
    out += [str(w) for w in details.get("why", []) or []]
    return [t for t in out if t]


def _switches(target: Mapping[str, Any], dpids: Mapping[str, int]) -> set[int]:
    names = set(target.get("switches", []) or [])
    where = (target.get("details") or {}).get("where")
    if where:
        names.add(where)
    return {dpids[n] for n in names if n in dpids}


def _match_macs(body: Mapping[str, Any]) -> frozenset[str]:
    """The MAC addresses a FLOW_MOD's match names (1.0 dl_src/dl_dst or 1.3 eth_src/eth_dst)."""
    for value in body.values():
        if isinstance(value, Mapping) and "match" in value:
            return frozenset(_MAC.findall(json.dumps(value["match"]).lower()))
    return frozenset()


def failing_windows(sent_by: Mapping[tuple[int, int], str], messages: Sequence[ControllerMessage],
                    target: Mapping[str, Any], dpids: Mapping[str, int]) -> set[str]:
    """The windows of a failing replay that produced the violation.

    ``sent_by`` maps (dpid, xid) to the window that sent it.  The failing windows are those that sent a
    FLOW_MOD to a switch the violation names whose match names exactly the MAC addresses of one of the
    violation's rules; when none does (a rule without addresses, a violation that names no rule), the
    window that sent the last FLOW_MOD or PACKET_OUT to one of its switches.  Empty: not known."""
    switches = _switches(target, dpids)
    rules = [frozenset(_MAC.findall(t.lower())) for t in _texts(target) if "rule" in t]
    rules = [r for r in rules if r]
    found: set[str] = set()
    last = None
    for m in messages:
        window = sent_by.get((m.dpid, m.xid))
        if m.dpid not in switches or window is None:
            continue
        if m.type in _ANY_MESSAGES:
            last = window
        if m.type in _RULE_MESSAGES and rules and _match_macs(m.body) in rules:
            found.add(window)
    if not found and last is not None:
        found.add(last)
    return found


def raising_windows(windows: Sequence[Mapping[str, Any]], target: Mapping[str, Any]) -> set[str]:
    """For a violation that is the controller's exception: the windows the same exception escaped.

    The call that raised is the one that went wrong; no rule need name it.  Empty for any other
    violation, or when no window recorded the exception (a controller that caught it itself)."""
    if target.get("invariant") != "exceptions":
        return set()
    name = str((target.get("details") or {}).get("exception") or "").rsplit(".", 1)[-1]
    return {str(w["key"]) for w in windows if name and w.get("raised") == name}


def window_runs(windows: Sequence[Mapping[str, Any]], failing: Iterable[str],
                keep: Any = None) -> list[Run]:
    """One run per window (``{"key", "lines": {file: [n...]}, "flows": [...]}``), failing if its key is in
    ``failing``.

    ``flows`` (``[store file, store line, storing window, read file, read line]``) are the app state the call
    read that an earlier call stored: the run's (store line, read line) pairs.  ``keep(file)`` says which files
    count (the controller's own code); None keeps all."""
    bad = set(failing)
    runs = []
    for w in windows:
        lines: set[Line] = set()
        for name, nums in (w.get("lines") or {}).items():
            if keep is None or keep(name):
                lines.update((name, int(n)) for n in nums)
        flows = frozenset(((str(f), int(n)), (str(g), int(m))) for f, n, _, g, m in w.get("flows") or ()
                          if keep is None or keep(f) and keep(g))
        runs.append(Run(w["key"] in bad, frozenset(lines), flows))
    return runs


__all__ = ["ControllerMessage", "failing_windows", "raising_windows", "window_runs"]
