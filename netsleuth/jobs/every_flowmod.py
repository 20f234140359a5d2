"""`netsleuth fuzz --check-every-flowmod`: the forwarding invariants after every FLOW_MOD a switch applies.

The per-round check says in which round a violation showed; this says which
message produced it.  The World tells a :class:`~netsleuth.world.events.TableObserver`
of every FLOW_MOD (and 1.3 GROUP_MOD) a switch applies, just before and just
after; :class:`EveryFlowMod` is that observer:

* before the message it settles everything else that changed since it last
  looked (inputs, links, ports, connections, flows that timed out), so what
  those changed is blamed on them ("other changes"), not on the message;
* after the message it re-checks what the message can change and notes, per
  finding (persistence's identity, :func:`finding_key`), the message after
  which it first appeared.

OpenFlow 1.0 networks go through :class:`IncrementalHSA` (only the ingresses
whose header classes cross the flow_mod's match are analysed again), 1.3
networks through :class:`IncrementalHSA13` (only the hops of the exploration
whose table lookups the FLOW_MOD's match overlaps, or that ran the GROUP_MOD's
group, are run again); the other located checks (isolation, Faucet's ACLs)
read the incremental engine's 1.3 analysis instead of making their own.

Persistence still decides what is reported: the round's check is the one it
always was, and this only names the message behind each finding it reports.
A finding a later message clears before the round ends never reaches the
round's check; it is recorded in the trace as transient, with both messages.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from netsleuth.invariants import registry
from netsleuth.invariants.forwarding import Finding
from netsleuth.invariants.headerspace.codes import port_state
from netsleuth.invariants.headerspace.incremental import IncrementalHSA
from netsleuth.invariants.headerspace.of13.incremental import IncrementalHSA13, apply_message
from netsleuth.invariants.persistence import finding_key
from netsleuth.invariants.view import NetworkView
from netsleuth.model.of13.oxm import OxmMatch
from netsleuth.openflow.codec import msg_to_json
from netsleuth.rootcause.describe import describe, of_summary
from netsleuth.trace import schema as ts
from netsleuth.world.events import FlowModApplied

LOCATED = ("loops", "blackholes", "reachability", "isolation", "acl")
"""The invariants a FLOW_MOD can break and that are checked after each one.  The others
(liveness, dataplane-loops, delivery) are about processes, connections and packets: they
stay per round, and their findings name no message."""

_HSA = ("loops", "blackholes", "reachability")


@dataclass(frozen=True, slots=True)
class FlowModCause:
    """The event after which a finding first appeared: an applied FLOW_MOD/GROUP_MOD, or
    changes other than one (``kind`` "other": inputs, links, connections, expiries)."""

    kind: str
    seq: int | None
    switch: str | None
    text: str
    round: int

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "seq": self.seq, "switch": self.switch, "text": self.text, "round": self.round}


def flow_mod_words(ev: FlowModApplied) -> str:
    """``s2's FLOW_MOD seq 812: ADD priority=1 in_port=1,dl_dst=... -> output:3``."""
    where = f"{ev.switch}'s {ev.kind}" + (f" seq {ev.seq}" if ev.seq is not None else "")
    if ev.match is not None:  # OpenFlow 1.0: the model's match and actions, in ovs-ofctl words
        from netsleuth.model.actions import action_from_ofp

        head = f"{where}: {ev.command} priority={ev.priority} {str(ev.match) or '*'}"
        if ev.command.startswith("DELETE"):
            return head
        return f"{head} -> {','.join(str(action_from_ofp(a)) for a in ev.msg.actions) or 'drop'}"
    if ev.kind == "GROUP_MOD":
        buckets = len(getattr(ev.msg, "buckets", ()) or ())
        return f"{where}: {ev.command} group_id={ev.msg.group_id} type={ev.msg.type} buckets={buckets}"
    # OpenFlow 1.3: the words every tool uses for the message, its command as the 1.0 line gives it
    text = of_summary(msg_to_json(ev.msg)).removeprefix(ev.kind + " ")
    return f"{where}: {ev.command} {text.partition(' ')[2]}"


def _rule_words(match: object, priority: int) -> tuple[str, ...]:
    """An entry as the findings name it: ``rule <match> priority <p>`` (a catch-all match, whose
    words are empty, either way the two engines put it)."""
    text = str(match)
    if text:
        return (f"rule {text} priority {priority}",)
    return (f"rule catch-all priority {priority}", f"rule  priority {priority}")


def _rules_of(ev: FlowModApplied) -> tuple[str, ...]:
    """The entry an ADD or a strict MODIFY installs, in the findings' words."""
    if ev.match is not None:
        return _rule_words(ev.match, ev.priority or 0)
    return _rule_words(OxmMatch.from_ofp(ev.msg.match), ev.priority or 0)


def _cause_of(ev: FlowModApplied, round_no: int) -> FlowModCause:
    return FlowModCause(ev.kind, ev.seq, ev.switch, flow_mod_words(ev), round_no)


class EveryFlowMod:
    """The table observer of one fuzz job: checks after every applied FLOW_MOD, and remembers
    per finding the message that produced it (see the module docstring).

    ``view``: the World's current NetworkView; ``record``: records a transient finding in
    the trace (``Session.record_finding``)."""

    def __init__(self, view: Callable[[], NetworkView], invariants: Sequence[registry.Invariant],
                 record: Callable[[Finding, bool, dict], Any]) -> None:
        self._view = view
        self._record = record
        self.located = [i for i in invariants if i.name in LOCATED]
        self._hsa = [i.name for i in self.located if i.name in _HSA]
        self._extra = [i for i in self.located if i.name not in _HSA]
        self.inc = IncrementalHSA()
        self.inc13 = IncrementalHSA13()
        self.round = 0                       # the fuzz round under way (0: the bootstrap); the job sets it
        self.present: dict[tuple, Finding] = {}
        self.causes: dict[tuple, FlowModCause] = {}
        self.tracked: set[tuple] = set()     # keys the round checks' persistence tracker follows
        self._key13: tuple | None = None     # the 1.3 path's "anything else changed?" key
        self._mode: int | None = None        # 1 or 4: which path ran last
        self._last_other = "the bootstrap"
        self._last_other_seq: int | None = None
        # switch -> the FLOW_MODs that added or modified entries, in order (with their round, and the
        # rules a non-strict 1.0 MODIFY changed): where rule_origin looks a blamed entry up
        self._installs: dict[str, list[tuple[FlowModApplied, int, tuple[str, ...] | None]]] = {}
        self.messages = 0
        self.other_checks = 0
        self.within_round = 0
        self.seconds = 0.0

    # ------------------------------------------------------------------ the trace's other events
    def observe(self, e: Any) -> None:
        """A Recorder observer: remembers the latest event that is not an OpenFlow message or a
        packet, to name it when a finding appears between two FLOW_MODs."""
        if isinstance(e, (ts.InputEvent, ts.SwitchConnected, ts.SwitchDisconnected, ts.ControllerEvent)) \
                and not isinstance(e, ts.TrafficInjection):
            self._last_other = f"seq {e.seq} {describe(e)}"
            self._last_other_seq = e.seq

    # ------------------------------------------------------------------ TableObserver
    def before_flow_mod(self, switch: str) -> None:
        self.settle()

    def flow_mod_applied(self, event: FlowModApplied) -> None:
        started = time.perf_counter()
        self.messages += 1
        view = self._view()
        if self._is13(view):
            found = self._check13(view, event)
        else:
            if self._mode != 1 or event.match is None:
                found = self._check10(view, None)
            else:
                found = self._check10(view, (event.switch, event.match))
        round_no = self.round
        self._note_installed(view, event, round_no)
        # the words cost more than a 1.0 check (the message's JSON): made only for a finding that needs them
        self._update(found, lambda: _cause_of(event, round_no))
        self.seconds += time.perf_counter() - started

    # ------------------------------------------------------------------ rounds
    def settle(self) -> None:
        """Take in whatever changed since the last look that was not a FLOW_MOD (before each
        message, and at the end of a round, just before the round's check)."""
        started = time.perf_counter()
        view = self._view()
        if self._is13(view):
            key = self._state13(view)
            if key == self._key13 and self._mode == 4:
                self.seconds += time.perf_counter() - started
                return
            found = self._check13(view)
        elif self._mode == 1 and self._hsa:
            got = self._changed10(view)
            if got is None:
                self.seconds += time.perf_counter() - started
                return
            found = self._check10(view, None, got)
        else:
            found = self._check10(view, None)
        self.other_checks += 1
        cause = FlowModCause("other", self._last_other_seq, None,
                             f"changes other than a FLOW_MOD (the latest: {self._last_other})", self.round)
        self._update(found, lambda: cause)
        self.seconds += time.perf_counter() - started

    def cause_of(self, f: Finding) -> FlowModCause | None:
        """The event after which ``f`` first appeared (in the streak persistence follows)."""
        return self.causes.get(finding_key(f))

    def rule_origin(self, f: Finding) -> FlowModCause | None:
        """The FLOW_MOD that installed the entry ``f`` blames (a blackhole's dropping rule, a rule
        on a loop), when the finding names one: a violation a host move or a link failure brought
        out is first seen after that input, but the stale entry came from a message."""
        d = f.details if isinstance(f.details, dict) else {}
        texts = [str(x) for x in (d.get("group") or ()) if isinstance(x, str)]
        texts += [str(x).partition(": ")[2] or str(x) for x in [d.get("rule_text")] if x]
        texts += [str(x).partition(": ")[2] if " table " in str(x).partition(": ")[0] else str(x)
                  for x in d.get("why") or () if isinstance(x, str)]
        switches = [str(d["where"])] if isinstance(d.get("where"), str) else []
        switches += [sw for sw in f.switches if sw not in switches]
        for sw in switches:
            for ev, round_no, rules in reversed(self._installs.get(sw, ())):  # the latest install wins
                for rule in rules if rules is not None else _rules_of(ev):
                    if any(t == rule or t.startswith(rule + " ") for t in texts):
                        return _cause_of(ev, round_no)
        return None

    def _note_installed(self, view: NetworkView, ev: FlowModApplied, round_no: int) -> None:
        """Remember an ADD or MODIFY; its rule's words are made only when a finding asks (a non-strict
        1.0 MODIFY's now, while the table still says which entries it changed)."""
        if ev.kind != "FLOW_MOD" or ev.command.startswith("DELETE"):
            return
        rules = None
        if ev.command == "MODIFY" and ev.match is not None:
            rules = tuple(w for e in view.switches[ev.switch].table.select(ev.match)
                          for w in _rule_words(e.match, e.priority))
        self._installs.setdefault(ev.switch, []).append((ev, round_no, rules))

    def end_round(self, tracked: set[tuple]) -> None:
        """The round's check is done; ``tracked``: the keys persistence follows now.  Causes of
        findings that persistence dropped (or never saw) are forgotten."""
        self.tracked = set(tracked)
        for k in [k for k in self.causes if k not in self.tracked and k not in self.present]:
            del self.causes[k]

    def stats(self) -> dict[str, Any]:
        return {"flow_mods": self.messages, "other_checks": self.other_checks, "full_checks_10":
                self.inc.full_checks, "partial_checks_10": self.inc.partial_checks,
                "full_checks_13": self.inc13.full_checks, "partial_checks_13": self.inc13.partial_checks,
                "cleared_within_round": self.within_round, "check_seconds": round(self.seconds, 3)}

    # ------------------------------------------------------------------ internals
    @staticmethod
    def _is13(view: NetworkView) -> bool:
        return any(s.version == 4 for s in view.switches.values())

    def _changed10(self, view: NetworkView) -> dict[str, list[Finding]] | None:
        """IncrementalHSA's findings when anything but the FLOW_MODs already checked changed (its
        ``check`` starts over exactly then), else None."""
        before = self.inc.full_checks
        got = self.inc.check(view)
        return got if self.inc.full_checks != before else None

    def _check10(self, view: NetworkView, flow_mod: tuple | None,
                 got: dict[str, list[Finding]] | None = None) -> list[Finding]:
        """The located checks on a 1.0 network; ``got``: IncrementalHSA's findings, when taken already."""
        self._mode = 1
        if self._hsa:
            if got is None:
                got = self.inc.flow_mod(view, *flow_mod) if flow_mod is not None else self.inc.check(view)
            found = [f for name in self._hsa for f in got[name] if not registry.intended(view, f)]
        else:
            found = []
        if self._extra:
            found += registry.check(view, self._extra)
        return found

    def _check13(self, view: NetworkView, event: FlowModApplied | None = None) -> list[Finding]:
        """The located checks on a 1.3 network: after ``event`` (an applied message), or after
        anything else (None)."""
        self._mode = 4
        self._key13 = self._state13(view)
        if not self._hsa:
            return registry.check(view, self.located)
        inc = self.inc13
        got = apply_message(inc, view, event.switch, event.msg) if event is not None else inc.check(view)
        found = [f for name in self._hsa for f in got[name] if not registry.intended(view, f)]
        if self._extra:
            found += registry.check(view, self._extra, inc.analysis(view))
        return found

    @staticmethod
    def _state13(view: NetworkView) -> tuple:
        """What the 1.3 checks depend on, flow tables aside, plus each switch's entry and group
        counts: between two FLOW_MODs a table changes only by entries timing out (fewer entries)."""
        return (tuple(sorted(view.link_up.items())), tuple(sorted(view.controllers_alive.items())),
                tuple(sorted(view.connected_dpids)), tuple(sorted(view.switch_up.items())),
                tuple(sorted((k, tuple(v)) for k, v in view.controllers_of.items())),
                tuple(sorted(view.host_at.items())), tuple(sorted(view.cut_from)), tuple(sorted(view.separated)),
                tuple((n, id(s), port_state(s), s.flow_count,
                       len(s.of13.pipeline.groups.groups) if s.of13 is not None else 0)
                      for n, s in sorted(view.switches.items())))

    def _update(self, found: list[Finding], make_cause: Callable[[], FlowModCause]) -> None:
        now: dict[tuple, Finding] = {}
        for f in found:
            now.setdefault(finding_key(f), f)
        cause: FlowModCause | None = None
        for k in now:
            if k not in self.present and k not in self.causes:
                cause = cause or make_cause()
                self.causes[k] = cause
        for k in [k for k in self.present if k not in now]:
            if k in self.tracked:
                continue  # persistence follows it: its cause stays while it may come back by the round's check
            first = self.causes.pop(k, None)
            if first is not None:
                self.within_round += 1
                details = {"round": self.round, "first_seen": first.to_json(), "first_seen_text": f"after {first.text}",
                           "cleared_by": (cause or make_cause()).to_json()}
                self._record(self.present[k], False, details)
        self.present = now
